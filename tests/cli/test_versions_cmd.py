"""`cfgtool publish`, `rollback` and `versions`, run as real subprocesses of the installed script against a
committed copy of the embedded store with a bare remote. Every remote tag is checked never to move."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cfgtool.versions import publish, rollback
from cfgtool.versions.messages import parse_message
from tests.conftest import GitRepo, copy_embedded, copy_template
from tests.remotes import RemoteWatch, bump

Run = Callable[..., subprocess.CompletedProcess[str]]  # the run_cfgtool fixture (conftest.py)

PUBLISH_KEYS = {"published", "version", "tag", "commit", "reason"}
VERSION_KEYS = {"version", "tag", "commit", "date", "status", "publisher", "message", "digest", "rolled_back"}


def run_json(run: Run, repo: GitRepo, *args: str) -> tuple[int, Any]:
    proc = run(*args, "--format", "json", cwd=repo.root)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# ------------------------------------------------------------------------------------------ publish


def test_publish_text_reports_the_new_version(run_cfgtool: Run, work: GitRepo, remote: RemoteWatch) -> None:
    proc = run_cfgtool("publish", "--remote", "origin", "-m", "first", cwd=work.root)
    assert proc.returncode == 0, proc.stderr
    head = work.git("rev-parse", "HEAD")
    assert proc.stdout.splitlines()[0] == f"published version 1 (config/v1) on commit {head[:7]}, pushed to origin"
    assert "  digest     sha256:" in proc.stdout
    assert remote.tags() == ["config/v1"]


def test_publish_json_contract_and_nothing_to_publish(run_cfgtool: Run, work: GitRepo, remote: RemoteWatch) -> None:
    code, doc = run_json(run_cfgtool, work, "publish", "--remote", "origin")
    assert code == 0
    assert set(doc) >= PUBLISH_KEYS
    head = work.git("rev-parse", "HEAD")
    assert {k: doc[k] for k in PUBLISH_KEYS} == {
        "published": True,
        "version": 1,
        "tag": "config/v1",
        "commit": head,
        "reason": None,
    }
    code, again = run_json(run_cfgtool, work, "publish", "--remote", "origin")
    assert code == 0
    assert (again["published"], again["version"], again["tag"], again["commit"]) == (False, None, None, head)
    assert "nothing to publish" in again["reason"]
    proc = run_cfgtool("publish", cwd=work.root)
    assert proc.returncode == 0
    assert proc.stdout.startswith("nothing to publish: HEAD")


def test_publish_dry_run_json_creates_nothing(run_cfgtool: Run, work: GitRepo, remote: RemoteWatch) -> None:
    code, doc = run_json(run_cfgtool, work, "publish", "--dry-run", "--remote", "origin")
    assert code == 0
    assert (doc["published"], doc["dry_run"], doc["version"], doc["tag"]) == (False, True, 1, "config/v1")
    assert doc["reason"].startswith("dry run")
    assert work.git("tag", "--list") == "" and remote.tags() == []


def test_publish_says_how_a_version_rolls_out_and_records_it(run_cfgtool: Run, work: GitRepo) -> None:
    code, doc = run_json(run_cfgtool, work, "publish")
    assert (code, doc["version"], doc["rollout"]) == (0, 1, None)
    path = work.root / "store" / "_CONFIG_STORE"
    path.write_text(path.read_text(encoding="utf-8") + "rollout: {steps: [5, 25, 100], bake: 1h}\n", "utf-8")
    work.commit("a rollout plan")
    proc = run_cfgtool("publish", cwd=work.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "version 2 rolls out by its plan: 5% -> 25% -> 100% (step time 10m, bake 1h);"
        " `cfgtool rollout status 2` follows it"
    )
    bump(work, "3")
    code, doc = run_json(run_cfgtool, work, "publish", "--dry-run")
    assert doc["rollout"]["plan"]["steps"] == [5, 25, 100] and len(doc["rollout"]["salt"]) == 16
    code, doc = run_json(run_cfgtool, work, "publish", "--all-at-once")
    assert (code, doc["version"], doc["rollout"]) == (0, 3, {"skipped": "all-at-once"})
    _, meta = parse_message(work.git("for-each-ref", "--format=%(contents)", "refs/tags/config/v3"))
    assert meta["rollout"] == {"skipped": "all-at-once"}
    proc = run_cfgtool("publish", "--ref", "config/v2", cwd=work.root)
    assert proc.stdout.splitlines()[-1] == (
        "version 4 skips the rollout plan (a restore: going back is never slowed down)"
    )
    bump(work, "5")
    proc = run_cfgtool("publish", "--all-at-once", cwd=work.root)
    assert proc.stdout.splitlines()[-1] == "version 5 skips the rollout plan (--all-at-once)"


def test_a_first_version_with_a_plan_is_said_to_go_to_everyone_at_once(run_cfgtool: Run, work: GitRepo) -> None:
    path = work.root / "store" / "_CONFIG_STORE"
    path.write_text(path.read_text(encoding="utf-8") + "rollout: {steps: [5, 100]}\n", "utf-8")
    work.commit("a rollout plan from the start")
    dry = run_cfgtool("publish", "--dry-run", cwd=work.root)  # says what the real publish then does
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines()[-1] == (
        "version 1 would go to every reader at once, plan or not: there is no good version before it to fall back to"
    )
    assert json.loads(run_cfgtool("publish", "--dry-run", "--format", "json", cwd=work.root).stdout)["at_once"]
    proc = run_cfgtool("publish", cwd=work.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "version 1 goes to every reader at once, plan or not: there is no good version before it to fall back to"
    )
    assert run_cfgtool("rollout", "status", "1", cwd=work.root).returncode == 1  # indeed no rollout to follow
    bump(work, "2")
    code, doc = run_json(run_cfgtool, work, "publish")
    assert (code, doc["version"], doc["at_once"], doc["waits_for"]) == (0, 2, False, None)
    assert "plan" in doc["rollout"]


def test_publish_names_the_store_in_the_status_command_it_suggests(run_cfgtool: Run, work: GitRepo) -> None:
    work.write({"second/_CONFIG_STORE": "name: second\nrollout: {steps: [10, 100]}\n", "second/x/main.conf": "a = 1\n"})
    work.commit("a second store, with a plan")
    for value in ("2", "3"):
        assert run_cfgtool("publish", "--store", "second", cwd=work.root).returncode == 0
        work.write({"second/x/main.conf": f"a = {value}\n"})
        work.commit(f"a = {value}")
    proc = run_cfgtool("publish", "--store", "second", cwd=work.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-2:] == [
        "version 3 rolls out by its plan: 10% -> 100% (step time 10m, bake 10m); `cfgtool rollout status 3 --store"
        " second` follows it",
        "version 3 waits until version 2 is done or rolled back (it rolls out now: `cfgtool rollout status 2 --store"
        " second` follows it)",
    ]
    assert run_cfgtool("rollout", "status", "2", "--store", "second", cwd=work.root).returncode == 0


def test_publish_while_another_version_rolls_out_says_it_waits(run_cfgtool: Run, work: GitRepo) -> None:
    run_cfgtool("publish", cwd=work.root)
    path = work.root / "store" / "_CONFIG_STORE"
    path.write_text(path.read_text(encoding="utf-8") + "rollout: {steps: [10, 100]}\n", "utf-8")
    work.commit("a rollout plan")
    code, doc = run_json(run_cfgtool, work, "publish")
    assert (code, doc["version"], doc["waits_for"]) == (0, 2, None)
    bump(work, "3")
    proc = run_cfgtool("publish", cwd=work.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == (
        "version 3 waits until version 2 is done or rolled back (it rolls out now: `cfgtool rollout status 2`"
        " follows it)"
    )
    bump(work, "4")
    code, doc = run_json(run_cfgtool, work, "publish")
    assert (code, doc["version"], doc["waits_for"]) == (0, 4, 2)


def test_publish_broken_commit_exits_1_with_diagnostics(run_cfgtool: Run, work: GitRepo, remote: RemoteWatch) -> None:
    (work.root / "store" / "main.conf").write_text("broken = ${nowhere}\n", encoding="utf-8")
    work.commit("broken")
    proc = run_cfgtool("publish", "--remote", "origin", cwd=work.root)
    assert proc.returncode == 1
    assert "store/main.conf:1:10: E_UNRESOLVED_REF" in proc.stdout
    assert "cfgtool: error: HEAD (commit" in proc.stderr and "nothing was published" in proc.stderr
    assert "Traceback" not in proc.stderr
    code, doc = run_json(run_cfgtool, work, "publish")
    assert code == 1
    assert (doc["published"], doc["version"], doc["tag"]) == (False, None, None)
    assert doc["errors"] > 0 and {d["code"] for d in doc["diagnostics"]} == {"E_UNRESOLVED_REF"}
    assert work.git("tag", "--list") == "" and remote.tags() == []


def test_publish_rejected_by_the_remote_exits_1_and_leaves_no_tag(
    run_cfgtool: Run, work: GitRepo, remote: RemoteWatch
) -> None:
    remote.add_hook('echo "no tags on Fridays" >&2\nexit 1\n')
    proc = run_cfgtool("publish", "--remote", "origin", cwd=work.root)
    assert proc.returncode == 1
    assert "pre-receive hook declined" in proc.stderr and "no tags on Fridays" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert work.git("tag", "--list") == "" and remote.tags() == []


def test_publish_an_unknown_ref_exits_2(run_cfgtool: Run, work: GitRepo) -> None:
    proc = run_cfgtool("publish", "--ref", "no-such-branch", cwd=work.root)
    assert proc.returncode == 2
    assert "unknown ref 'no-such-branch'" in proc.stderr


@pytest.mark.parametrize("args", [[], ["--ref", "HEAD"], ["--dry-run"]], ids=["head", "ref-head", "dry-run"])
def test_publish_before_the_first_commit_says_to_commit(run_cfgtool: Run, store_repo: GitRepo, args: list[str]) -> None:
    store_repo.git("add", "-A")  # staged or not, nothing is committed yet
    proc = run_cfgtool("publish", "-m", "first", *args, cwd=store_repo.root)
    assert proc.returncode == 2 and "unknown ref" not in proc.stderr, proc.stderr
    assert "has no commit yet" in proc.stderr and "hint: commit the store first (git add store &&" in proc.stderr
    assert store_repo.git("tag") == ""


def test_two_cli_publishers_at_the_same_moment_both_succeed(
    run_cfgtool: Run, work: GitRepo, remote: RemoteWatch, tmp_path: Path
) -> None:
    assert run_cfgtool("publish", "--remote", "origin", cwd=work.root).returncode == 0
    before = remote.check()
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    remote.add_hook(  # each push waits until both have arrived, so both pick the same number
        f'touch "{barrier}/$$"\ni=0\n'
        f'while [ "$(ls "{barrier}" | wc -l)" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n'
    )
    clones = []
    for name in ("alice", "bob"):
        other = type(work)(tmp_path / name)
        other.git("remote", "add", "origin", str(remote.bare))
        other.git("fetch", "-q", "--no-tags", "origin", "main")
        other.git("reset", "-q", "--hard", "origin/main")
        bump(other, name)
        clones.append(other)
    procs = [
        subprocess.Popen(
            [*cfgtool_command(), "publish", "--remote", "origin", "-m", f"from {other.root.name}", "-f", "json"],
            cwd=other.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for other in clones
    ]
    docs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        docs.append(json.loads(out))
    assert sorted(d["version"] for d in docs) == [2, 3]
    assert sorted(d["attempts"] for d in docs) == [1, 2]
    after = remote.check()
    assert {k: after[k] for k in before} == before
    assert remote.tags() == ["config/v1", "config/v2", "config/v3"]
    for other, doc in zip(clones, docs, strict=True):
        assert after[f"refs/tags/config/v{doc['version']}^{{}}"] == other.git("rev-parse", "HEAD")


def cfgtool_command() -> list[str]:
    """The installed script (as the run_cfgtool fixture runs it), for starting processes in parallel."""
    script = Path(sysconfig.get_path("scripts")) / "cfgtool"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cfgtool"]


# ------------------------------------------------------------------------------------------ rollback


def _publish_two(root: Path) -> None:
    """Versions 1 ("one") and 2 ("two", a bump at the root) of the embedded store, on top of its commit."""
    repo = copy_embedded(root)
    assert publish(root, message="one").version == 1
    bump(repo, "2")
    assert publish(root, message="two").version == 2


def replaced_by_template(work: GitRepo, name: str, build: Callable[[Path], object]) -> GitRepo:
    """`work` replaced by a copy of this worker's template `name`, pushed to `work`'s remote (if it has one) with
    its tags: as the publishes through the CLI would leave it, in a tenth of their time (they are tested above)."""
    origin = work.git("remote") == "origin" and work.git("remote", "get-url", "origin")
    shutil.rmtree(work.root)
    repo = copy_template(name, build, work.root)
    if origin:
        repo.git("remote", "add", "origin", origin)
        repo.git("push", "-q", "origin", "main", "refs/tags/*:refs/tags/*")
    return repo


@pytest.fixture
def two(work: GitRepo, remote: RemoteWatch) -> GitRepo:
    """Versions 1 and 2 published to the remote."""
    return replaced_by_template(work, "cli-two", _publish_two)


def test_rollback_json_contract_then_versions_shows_it(run_cfgtool: Run, two: GitRepo, remote: RemoteWatch) -> None:
    code, doc = run_json(run_cfgtool, two, "rollback", "-m", "bad retention", "--remote", "origin")
    assert code == 0
    assert (doc["rolled_back"], doc["current"]) == ([2], 1)
    assert "config/rolledback/v2" in remote.tags()

    code, listed = run_json(run_cfgtool, two, "versions")
    assert code == 0
    assert [(v["version"], v["status"]) for v in listed] == [(2, "rolled_back"), (1, "current")]
    assert all(set(v) >= VERSION_KEYS for v in listed)
    assert listed[0]["rolled_back"]["reason"] == "bad retention"
    assert listed[0]["rolled_back"]["by"] == "Test <test@example.com>"
    assert listed[1]["rolled_back"] is None and listed[1]["message"] == "one"

    text = run_cfgtool("versions", cwd=two.root).stdout.splitlines()
    assert text[0].split() == ["VERSION", "DATE", "COMMIT", "STATUS", "PUBLISHER", "MESSAGE"]
    assert "rolled back" in text[1] and text[1].startswith("2 ")
    assert text[2].strip().startswith("rolled back by Test on ")  # the email is in --format json
    assert text[2].endswith(": bad retention")
    assert "current" in text[3] and text[3].endswith("one")


def test_rollback_text_and_refusals(run_cfgtool: Run, two: GitRepo, remote: RemoteWatch) -> None:
    proc = run_cfgtool("rollback", "2", "-m", "wrong cluster", cwd=two.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("rolled back version 2 (local only")
    assert "current version is now 1" in proc.stdout

    last = run_cfgtool("rollback", "-m", "the last one", cwd=two.root)
    assert last.returncode == 1
    assert "would leave no good version" in last.stderr and "Traceback" not in last.stderr

    again = run_cfgtool("rollback", "2", "-m", "again", cwd=two.root)
    assert again.returncode == 1 and "already rolled back" in again.stderr

    unknown = run_cfgtool("rollback", "7", "-m", "typo", cwd=two.root)
    assert unknown.returncode == 2 and "version 7 does not exist" in unknown.stderr

    no_reason = run_cfgtool("rollback", cwd=two.root)
    assert no_reason.returncode == 2 and "-m" in no_reason.stderr

    both = run_cfgtool("rollback", "2", "--to", "1", "-m", "x", cwd=two.root)
    assert both.returncode == 2 and "not both" in both.stderr


def test_the_rollback_trap_refuses_and_restoring_takes_a_flag(
    run_cfgtool: Run, two: GitRepo, remote: RemoteWatch
) -> None:
    assert run_cfgtool("rollback", "-m", "bad retention", "--remote", "origin", cwd=two.root).returncode == 0
    # the next merge still holds version 2's change: publishing main must not silently re-release it
    trapped = run_cfgtool("publish", "--remote", "origin", cwd=two.root)
    assert trapped.returncode == 1, trapped.stdout
    # `bump` is set at the root, so every node inherits it: each one is listed
    assert "still holds 48 values that rolled-back version 2 (config/v2) introduced" in trapped.stderr
    assert "\n  introduced by version 2, rolled back by Test <test@example.com>: bad" in trapped.stderr
    assert "\n    / bump = 2 (good: (unset))\n" in trapped.stderr
    assert "Nothing was published" in trapped.stderr
    assert "git revert" in trapped.stderr and "--allow-rolled-back" in trapped.stderr
    assert remote.tags() == ["config/rolledback/v2", "config/v1", "config/v2"]
    code, doc = run_json(run_cfgtool, two, "publish", "--ref", "config/v2", "-m", "restore v2", "--remote", "origin",
                         "--allow-rolled-back")  # fmt: skip
    assert code == 0
    assert (doc["published"], doc["version"]) == (True, 3)
    assert doc["commit"] == two.git("rev-parse", "config/v2^{commit}")
    code, listed = run_json(run_cfgtool, two, "versions")
    assert [(v["version"], v["status"]) for v in listed] == [(3, "current"), (2, "rolled_back"), (1, "good")]


# ------------------------------------------------------------------------------------------ versions


def test_versions_without_any_version(run_cfgtool: Run, work: GitRepo) -> None:
    proc = run_cfgtool("versions", cwd=work.root)
    assert proc.returncode == 0
    assert proc.stdout == "no version has been published yet (cfgtool publish creates version 1)\n"
    code, doc = run_json(run_cfgtool, work, "versions")
    assert (code, doc) == (0, [])


def test_versions_lists_the_newest_unless_all(run_cfgtool: Run, work: GitRepo) -> None:
    for n in range(1, 24):  # tags made by hand: versions without metadata
        work.git("tag", "-a", "-m", f"hand made {n}", f"config/v{n}")
    proc = run_cfgtool("versions", cwd=work.root)
    lines = proc.stdout.splitlines()
    assert lines[1].startswith("23 ") and "current" in lines[1]
    assert lines[-1] == "(20 of 23 versions shown; --all lists every one)"
    code, every = run_json(run_cfgtool, work, "versions", "--all")
    assert code == 0
    assert [v["version"] for v in every] == list(range(23, 0, -1))


def test_versions_with_another_store_directory(run_cfgtool: Run, work: GitRepo) -> None:
    proc = run_cfgtool("--store", "nowhere", "versions", cwd=work.root)
    assert proc.returncode == 2
    assert "no store at nowhere/" in proc.stderr


@pytest.mark.parametrize("command", ["publish", "rollback", "versions"])
def test_every_version_command_has_help_with_examples(run_cfgtool: Run, command: str) -> None:
    proc = run_cfgtool(command, "--help")
    assert proc.returncode == 0
    assert "Examples:" in proc.stdout
    assert f"cfgtool {command}" in proc.stdout


LONG_MESSAGE = "a message that goes on " * 10
LONG_NAME = "Maximilian Alexander von Somewhere-Very-Long"


def _long_rows(root: Path) -> None:
    _publish_two(root)
    two = GitRepo.existing(root)
    two.git("config", "user.name", LONG_NAME)
    assert rollback(root, reason="a reason that goes on and on " * 8).rolled_back == (2,)
    bump(two, "three")
    assert publish(root, message=LONG_MESSAGE).version == 3


@pytest.fixture
def long_rows(work: GitRepo, remote: RemoteWatch) -> GitRepo:
    """`two` with a long rollback reason, then a third version by a long name with a long message."""
    return replaced_by_template(work, "cli-long-rows", _long_rows)


@pytest.mark.parametrize("columns", [100, 80])
def test_the_versions_table_fits_the_terminal(run_cfgtool: Run, long_rows: GitRepo, columns: int) -> None:
    text = run_cfgtool("versions", cwd=long_rows.root, env={"COLUMNS": str(columns)}).stdout.splitlines()
    assert max(len(line) for line in text) <= columns, text
    assert text[1].endswith("...") and "Maximili" in text[1]
    whole = json.loads(run_cfgtool("versions", "--format", "json", cwd=long_rows.root).stdout)
    assert whole[0]["message"] == LONG_MESSAGE


def test_the_versions_table_cuts_only_what_does_not_fit(run_cfgtool: Run, long_rows: GitRepo) -> None:
    wide = run_cfgtool("versions", cwd=long_rows.root, env={"COLUMNS": "400"}).stdout.splitlines()
    assert LONG_NAME in wide[1] and wide[1].endswith(LONG_MESSAGE.rstrip()), wide
    assert max(len(line) for line in wide) <= 400
    piped = run_cfgtool("versions", cwd=long_rows.root, env={"COLUMNS": ""}).stdout.splitlines()  # no terminal
    assert LONG_NAME in piped[1] and piped[1].endswith(LONG_MESSAGE.rstrip()), piped
    assert "a reason that goes on and on " * 7 in piped[3]


def test_audit_says_when_since_excludes_everything_and_refuses_unknown_keys(run_cfgtool: Run, two: GitRepo) -> None:
    later = run_cfgtool("audit", "--since", "2099-01-01", cwd=two.root)
    assert later.returncode == 0
    assert later.stdout == "no version was published or rolled back since 2099-01-01 00:00 +0000 (--since)\n"
    key = run_cfgtool("audit", "--key", "/data/tracking/PageViewEvent", "--since", "2099-01-01", cwd=two.root)
    assert key.stdout.endswith("no version changed it since 2099-01-01 00:00 +0000 (--since)\n")
    typo = run_cfgtool("audit", "--key", "/data/trackin", cwd=two.root)
    assert typo.returncode == 1 and "has no node in any published version" in typo.stderr
    assert "did you mean /data/tracking?" in typo.stderr


def test_imports_and_datasets_refuse_what_they_cannot_answer(run_cfgtool: Run, two: GitRepo) -> None:
    no_node = run_cfgtool("imports", "/data/trackin", cwd=two.root)
    assert no_node.returncode == 1 and "has no node, so it imports nothing" in no_node.stderr
    assert "did you mean /data/tracking?" in no_node.stderr
    not_a_tag = run_cfgtool("datasets", "/data/tracking", cwd=two.root)
    assert not_a_tag.returncode == 1 and "/data/tracking is not a tag" in not_a_tag.stderr
    assert run_cfgtool("datasets", "/tags/retention/LONG", cwd=two.root).returncode == 0


def test_get_of_a_key_without_a_node_suggests_a_close_sibling(run_cfgtool: Run, two: GitRepo) -> None:
    typo = run_cfgtool("get", "/data/tracking/PageViewEvnt", "owner", cwd=two.root)
    assert typo.returncode == 1  # a typo never reads what its ancestor has (docs/resolution.md#keys-without-a-node)
    assert "did you mean /data/tracking/PageViewEvent?" in typo.stderr
    new = run_cfgtool("get", "/data/tracking/BrandNewTopic", "owner", "--nearest", cwd=two.root)
    assert new.returncode == 0 and "did you mean" not in new.stderr


# ------------------------------------------------------------------------------------------ rolling back an old version


def release(run: Run, repo: GitRepo, files: dict[str, str], message: str) -> None:
    """Commit `files` and publish them through the CLI."""
    repo.write(files)
    repo.commit(message)
    proc = run("publish", "-m", message, cwd=repo.root)
    assert proc.returncode == 0, proc.stderr


FOUR = (
    ({"store/_CONFIG_STORE": "", "store/a/main.conf": "x = 1\n", "store/b/main.conf": "y = 0\n"}, "one"),
    ({"store/a/main.conf": "x = 2\n", "store/b/main.conf": "y = 1\n"}, "two"),
    ({"store/b/main.conf": "y = 5\n"}, "three"),
    ({"store/c/main.conf": "z = 1\n"}, "four"),
)


def _publish_four(root: Path) -> None:
    repo = GitRepo(root)
    for version, (files, message) in enumerate(FOUR, start=1):
        repo.write(files)
        repo.commit(message)
        assert publish(root, message=message).version == version


@pytest.fixture
def four(store_repo: GitRepo) -> GitRepo:
    """Versions 1 to 4 of a small store: v2 sets /a x = 2 and /b y = 1, v3 changes /b y, v4 adds /c."""
    return replaced_by_template(store_repo, "cli-four", _publish_four)


def test_rolling_back_an_old_version_needs_not_current(run_cfgtool: Run, four: GitRepo) -> None:
    tags = four.git("tag", "--list")
    refused = run_cfgtool("rollback", "2", "-m", "wrong cluster", cwd=four.root)
    assert refused.returncode == 2, refused.stderr
    assert "version 2 is not the current version (4 is)" in refused.stderr
    assert "still holds 1 value version 2 introduced" in refused.stderr
    assert "/a x = 2 (good: 1)" in refused.stderr  # /b y was changed again by v3: no longer v2's
    assert "/b" not in refused.stderr and "--not-current" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert four.git("tag", "--list") == tags  # nothing changed

    code, doc = run_json(run_cfgtool, four, "rollback", "2", "-m", "wrong cluster")
    assert code == 2 and doc["rolled_back"] == []
    assert [(h["key"], h["path"], h["rolled_back_value"], h["good_value"]) for h in doc["still_held"]] == [
        ("/a", "x", 2, 1)
    ]

    done = run_cfgtool("rollback", "2", "--not-current", "-m", "wrong cluster", cwd=four.root)
    assert done.returncode == 0, done.stderr
    assert "config/rolledback/v2" in four.git("tag", "--list")
    four.write({"store/d/main.conf": "w = 1\n"})
    four.commit("five")
    held = run_cfgtool("publish", "-m", "five", cwd=four.root)
    assert held.returncode == 1 and "/a x = 2 (good: 1)" in held.stderr  # as the refusal said


def test_a_cancelled_rollback_makes_the_version_good_again(run_cfgtool: Run, four: GitRepo, tmp_path: Path) -> None:
    from tests.remotes import add_origin

    remote = add_origin(four, tmp_path / "remote.git")
    four.git("push", "-q", "origin", "refs/tags/*:refs/tags/*")
    rolled = run_cfgtool("rollback", "-m", "looked bad", "--remote", "origin", cwd=four.root)
    assert rolled.returncode == 0, rolled.stderr
    four.write({"store/c/main.conf": "z = 1\nw = 2\n"})
    four.commit("five, still with v4's /c")
    assert run_cfgtool("publish", "--dry-run", cwd=four.root).returncode == 1  # the watch on v4's values

    code, doc = run_json(run_cfgtool, four, "rollback", "--cancel", "4", "-m", "it was fine", "--remote", "origin")
    assert code == 0, doc
    assert (doc["rolled_back"], doc["restored"], doc["current"], doc["tags"]) == ([], [4], 4, ["config/restored/v4"])
    assert "config/restored/v4" in remote.tags() and "config/rolledback/v4" in remote.tags()  # nothing deleted
    listed = json.loads(run_cfgtool("versions", "--format", "json", cwd=four.root).stdout)
    assert (listed[0]["version"], listed[0]["status"], listed[0]["rolled_back"]) == (4, "current", None)
    assert listed[0]["restored"]["reason"] == "it was fine"
    assert listed[0]["restored"]["rolled_back"]["reason"] == "looked bad"
    text = run_cfgtool("versions", cwd=four.root).stdout.splitlines()
    assert "current (restored)" in text[1] and "restored by Test" in text[2] and text[2].endswith(": it was fine")
    events = json.loads(run_cfgtool("audit", "--format", "json", cwd=four.root).stdout)["events"]
    assert [(e["kind"], e["version"]) for e in events[:3]] == [("restore", 4), ("rollback", 4), ("publish", 4)]
    assert run_cfgtool("publish", "--dry-run", cwd=four.root).returncode == 0  # the watch ended

    again = run_cfgtool("rollback", "-m", "bad after all", cwd=four.root)
    assert again.returncode == 1 and "cannot be rolled back again" in again.stderr
    over = run_cfgtool("rollback", "--to", "3", "-m", "bad after all", cwd=four.root)
    assert over.returncode == 1 and "version 4 was rolled back once already" in over.stderr
    twice = run_cfgtool("rollback", "--cancel", "4", "-m", "x", cwd=four.root)
    assert twice.returncode == 1 and "already cancelled" in twice.stderr
    good = run_cfgtool("rollback", "--cancel", "3", "-m", "x", cwd=four.root)
    assert good.returncode == 1 and "version 3 is not rolled back" in good.stderr
    mixed = run_cfgtool("rollback", "3", "--cancel", "4", "-m", "x", cwd=four.root)
    assert mixed.returncode == 2 and "--cancel N" in mixed.stderr
    remote.check()


def test_a_cancel_killed_after_its_push_is_finished_by_running_it_again(
    run_cfgtool: Run, four: GitRepo, tmp_path: Path
) -> None:
    from tests.remotes import add_origin

    remote = add_origin(four, tmp_path / "remote.git")
    four.git("push", "-q", "origin", "refs/tags/*:refs/tags/*")
    assert run_cfgtool("rollback", "-m", "looked bad", "--remote", "origin", cwd=four.root).returncode == 0
    cancel = ("rollback", "--cancel", "4", "-m", "it was fine", "--remote", "origin")
    assert run_cfgtool(*cancel, cwd=four.root).returncode == 0
    # as if killed between the push and the local tag: the remote has the marker, this clone does not
    four.git("tag", "-d", "config/restored/v4")
    journal = four.root / ".git" / "cfgtool" / "rollback-journal.json"
    state = json.loads(journal.read_text(encoding="utf-8"))
    journal.write_text(json.dumps({k: v for k, v in state.items() if k != "done"}), encoding="utf-8")

    other = run_cfgtool("rollback", "-m", "something else", "--remote", "origin", cwd=four.root)
    assert other.returncode == 1, other.stderr
    assert "an interrupted cancelling of the rollback of version 4" in other.stderr
    assert 'cfgtool rollback --cancel 4 -m "it was fine" --remote origin' in other.stderr
    again = run_cfgtool(*cancel, "--format", "json", cwd=four.root)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["restored"] == [4]
    assert four.git("rev-parse", "config/restored/v4") == remote.check()["refs/tags/config/restored/v4"]


# ------------------------------------------------------------------------------------------ what readers saw


def test_a_revert_after_a_rollback_is_compared_with_what_readers_had(run_cfgtool: Run, four: GitRepo) -> None:
    """v5 sets /b y = 7, is rolled back (readers back on v4's 5), and v6 reverts it and changes /a x: v6 is
    compared with v4, so it changed /a only, and /b y's history is v5's change and its rollback."""
    release(run_cfgtool, four, {"store/b/main.conf": "y = 7\n"}, "five")
    assert run_cfgtool("rollback", "-m", "y = 7 is bad", cwd=four.root).returncode == 0
    release(run_cfgtool, four, {"store/b/main.conf": "y = 5\n", "store/a/main.conf": "x = 3\n"}, "six")

    b = json.loads(run_cfgtool("audit", "--key", "/b", "--path", "y", "--format", "json", cwd=four.root).stdout)
    assert [(h["kind"], h["version"], h.get("old"), h["new"], h["previous"], h["current"]) for h in b["history"]] == [
        ("rollback", 5, 7, 5, 5, 4),
        ("publish", 5, 5, 7, 4, 5),
        ("publish", 3, 1, 5, 2, 3),
        ("publish", 2, 0, 1, 1, 2),
        ("publish", 1, None, 0, None, 1),
    ]
    a = json.loads(run_cfgtool("audit", "--key", "/a", "--path", "x", "--format", "json", cwd=four.root).stdout)
    six = a["history"][0]
    assert (six["version"], six["previous"], six["old"], six["new"]) == (6, 4, 2, 3)
    text = run_cfgtool("audit", "--key", "/b", "--path", "y", cwd=four.root).stdout
    assert "v5 rolled back" in text and "(readers went from v5 to v4)" in text and "v6" not in text


@pytest.mark.long
def test_a_refused_publish_of_2000_topics_is_bounded_in_text_and_whole_in_json(
    run_cfgtool: Run, store_repo: GitRepo
) -> None:
    topics = {f"store/data/t{i:04}/main.conf": "partitions = 8\n" for i in range(2000)}
    store_repo.write({"store/_CONFIG_STORE": "name: big\n", **topics})
    store_repo.commit("2,000 topics")
    assert run_cfgtool("publish", "-m", "one", cwd=store_repo.root).returncode == 0
    store_repo.write({"store/main.conf": "bump = 2\n"})  # every topic inherits it
    store_repo.commit("bump")
    assert run_cfgtool("publish", "-m", "two", cwd=store_repo.root).returncode == 0
    assert run_cfgtool("rollback", "-m", "bad bump", cwd=store_repo.root).returncode == 0
    trapped = run_cfgtool("publish", cwd=store_repo.root)
    assert trapped.returncode == 1
    lines = trapped.stderr.splitlines()
    assert len(lines) < 60, len(lines)  # not 2,002 lines each repeating who rolled back and why
    assert sum("bad bump" in line for line in lines) == 1
    assert "  introduced by version 2, rolled back by Test <test@example.com>: bad bump" in lines
    assert "    /data/t0000 bump = 2 (good: (unset))" in lines
    assert "... and 1,952 more values: run with --all to list them all" in lines  # 2,002 nodes inherit it
    every = run_cfgtool("publish", "--all", cwd=store_repo.root)
    assert every.returncode == 1 and sum(" bump = 2 (good: (unset))" in ln for ln in every.stderr.splitlines()) == 2002
    code, doc = run_json(run_cfgtool, store_repo, "publish")
    assert code == 1 and len(doc["rolled_back_values"]) == 2002
    # the odd topics fail one way (one cause), each even one its own way (1,000 more)
    broken = {p: "x = ${nope}\n" if i % 2 else f"x = ${{gone.t{i}}}\n" for i, p in enumerate(topics)}
    store_repo.write({"store/main.conf": None, **broken})
    store_repo.commit("2,000 broken topics")
    refused = run_cfgtool("publish", cwd=store_repo.root)
    assert refused.returncode == 1
    assert len(refused.stdout.splitlines()) < 260, len(refused.stdout.splitlines())
    assert "... and 951 more causes: run with --all to list them all" in refused.stdout
    assert "  = the same at 999 more places: store/data/t0003/main.conf:1:5 (/data/t0003), " in refused.stdout
    code, doc = run_json(run_cfgtool, store_repo, "publish")
    assert code == 1 and sum(d["code"] == "E_UNRESOLVED_REF" for d in doc["diagnostics"]) == 2000


@pytest.mark.parametrize("args", [["01"], ["--to", "01"], ["--cancel", "01"], ["+1"], ["1_0"]])
def test_rollback_takes_only_a_version_number_as_written_in_tags(
    args: list[str], run_cfgtool: Run, work: GitRepo
) -> None:
    one = replaced_by_template(work, "cli-one", _publish_one)
    proc = run_cfgtool("rollback", *args, "-m", "oops", cwd=one.root)
    assert proc.returncode == 2, proc.stderr
    assert "is not a version number" in proc.stderr and "Traceback" not in proc.stderr
    assert one.git("tag", "--list", "config/rolledback/*") == ""


def _publish_one(root: Path) -> None:
    copy_embedded(root)
    assert publish(root, message="first").version == 1
