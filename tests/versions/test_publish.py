"""`publish` (`cfgtool/versions/publish.py`) against real repositories: a committed copy of the embedded store
pushed to a bare remote, second clones as concurrent publishers, and remotes with pre-receive hooks.

Every test that has a remote ends by checking that no tag on it was ever moved or deleted (`RemoteWatch`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.versions import PublishRefused, RemoteError, RemoteUnavailable, publish, rollback, versions
from cfgtool.versions.messages import parse_message
from cfgtool.versions.publish import RolledBackContent
from tests.remotes import RemoteWatch, bump

if TYPE_CHECKING:
    from tests.conftest import GitRepo


def clone(work: GitRepo, remote: RemoteWatch, name: str) -> GitRepo:
    """Another publisher: a fresh repository tracking the remote's main (tags not fetched)."""
    other = type(work)(work.root.parent / name)
    other.git("remote", "add", "origin", str(remote.bare))
    other.git("fetch", "-q", "--no-tags", "origin", "main")
    other.git("reset", "-q", "--hard", "origin/main")
    return other


def local_version_tags(repo: GitRepo) -> list[str]:
    return repo.git("tag", "--list", "config/*").split()


# ------------------------------------------------------------------------------------------ publishing


def test_publish_embedded_store_creates_version_1_with_metadata(work: GitRepo, remote: RemoteWatch) -> None:
    head = work.git("rev-parse", "HEAD")
    result = publish(work.root, remote="origin", message="first release")
    assert (result.published, result.version, result.tag, result.commit) == (True, 1, "config/v1", head)
    assert result.reason is None and result.attempts == 1
    assert remote.tags() == ["config/v1"]
    assert work.git("rev-parse", "config/v1^{commit}") == head

    text, meta = parse_message(work.git("for-each-ref", "--format=%(contents)", "refs/tags/config/v1"))
    assert text == "first release"
    assert meta["version"] == 1 and meta["commit"] == head and meta["store"] == "store"
    assert meta["digest"] == result.digest and meta["nodes"] == result.nodes > 0
    assert meta["publisher"] == "Test <test@example.com>" and meta["message"] == "first release"
    assert meta["cfgtool_version"]
    doc = result.to_json()
    assert {k: doc[k] for k in ("published", "version", "tag", "commit", "reason")} == {
        "published": True,
        "version": 1,
        "tag": "config/v1",
        "commit": head,
        "reason": None,
    }


def test_publish_broken_commit_is_refused_and_creates_no_tag(work: GitRepo, remote: RemoteWatch) -> None:
    (work.root / "store" / "main.conf").write_text("broken = ${nowhere}\n", encoding="utf-8")
    work.commit("broken")
    with pytest.raises(PublishRefused, match=r"HEAD \(commit [0-9a-f]{7}\) has \d+ errors") as err:
        publish(work.root, remote="origin")
    assert err.value.exit_code == 1
    assert {d.code for d in err.value.diagnostics} == {"E_UNRESOLVED_REF"}
    assert local_version_tags(work) == []
    assert remote.tags() == []


def test_a_refused_publish_is_a_json_document_of_the_library(store_repo: GitRepo) -> None:
    """Every caller (the CLI, a script) gets the same `publish` object of a refusal from the error itself."""
    store_repo.write({"store/main.conf": "a = ${nowhere}\n"})
    head = store_repo.commit("broken")
    with pytest.raises(PublishRefused) as refused:
        publish(store_repo.root)
    doc = json.loads(json.dumps(refused.value.to_json()))
    assert {k: doc[k] for k in ("published", "version", "tag", "commit", "errors", "warnings")} == {
        "published": False, "version": None, "tag": None, "commit": head, "errors": 1, "warnings": 0,
    }  # fmt: skip
    assert doc["reason"] == refused.value.message
    assert [d["code"] for d in doc["diagnostics"]] == ["E_UNRESOLVED_REF"]
    store_repo.write({"store/main.conf": "a = 1\n"})
    store_repo.commit("one")
    publish(store_repo.root)
    store_repo.write({"store/main.conf": "a = 2\n"})
    store_repo.commit("two")
    publish(store_repo.root)
    rollback(store_repo.root, reason="two is bad")
    store_repo.write({"store/b.txt": "unrelated\n"})
    store_repo.commit("unrelated")
    with pytest.raises(RolledBackContent) as held:
        publish(store_repo.root)
    assert json.loads(json.dumps(held.value.to_json())) == {
        "published": False, "version": None, "tag": None, "reason": held.value.message,
        "rolled_back_values": [{"key": "/", "path": "a", "rolled_back_value": 2, "good_value": 1, "version": 2,
                                "reason": "two is bad", "by": "Test <test@example.com>"}],
    }  # fmt: skip


def test_publish_unchanged_snapshot_publishes_nothing(work: GitRepo, remote: RemoteWatch) -> None:
    publish(work.root, remote="origin")
    again = publish(work.root, remote="origin")
    assert (again.published, again.version, again.tag, again.same_as) == (False, None, None, 1)
    assert again.reason is not None and "already is the current version 1" in again.reason

    (work.root / "README.md").write_text("not part of the store\n", encoding="utf-8")
    work.commit("docs only")
    docs = publish(work.root, remote="origin")
    assert not docs.published
    assert docs.reason is not None and "has the same snapshot" in docs.reason
    assert remote.tags() == ["config/v1"]


def test_publish_refuses_to_go_past_a_version_the_remote_lacks(work: GitRepo, remote: RemoteWatch) -> None:
    publish(work.root)  # local only
    bump(work, "next")
    with pytest.raises(RemoteError, match="config/v1 exists only in this repository, not on 'origin'") as err:
        publish(work.root, remote="origin")  # as v2, it would leave a gap on the remote
    assert err.value.hint is not None and "git push origin refs/tags/config/v1" in err.value.hint
    assert "git tag -d config/v1" in err.value.hint
    assert remote.tags() == []
    work.git("push", "-q", "origin", "refs/tags/config/v1")  # what the hint says
    assert publish(work.root, remote="origin").version == 2
    assert remote.tags() == ["config/v1", "config/v2"]


def test_publish_dry_run_runs_the_checks_and_creates_nothing(work: GitRepo, remote: RemoteWatch) -> None:
    result = publish(work.root, remote="origin", dry_run=True)
    assert (result.published, result.dry_run, result.version, result.tag) == (False, True, 1, "config/v1")
    assert result.reason is not None and result.reason.startswith("dry run: would create config/v1")
    assert local_version_tags(work) == [] and remote.tags() == []


def test_publish_dry_run_of_a_broken_commit_is_refused(work: GitRepo) -> None:
    (work.root / "store" / "main.conf").write_text("a = [1\n", encoding="utf-8")
    work.commit("syntax error")
    with pytest.raises(PublishRefused):
        publish(work.root, dry_run=True)


def test_publish_without_remote_creates_a_local_tag_only(work: GitRepo, remote: RemoteWatch) -> None:
    result = publish(work.root, message="local")
    assert result.published and result.remote is None
    assert local_version_tags(work) == ["config/v1"]
    assert remote.tags() == []


def test_publish_numbers_after_versions_known_only_on_the_remote(work: GitRepo, remote: RemoteWatch) -> None:
    publish(work.root, remote="origin")
    bump(work, "2")
    publish(work.root, remote="origin")
    other = clone(work, remote, "other")
    assert local_version_tags(other) == []
    bump(other, "3")
    result = publish(other.root, remote="origin")
    assert result.version == 3
    assert remote.tags() == ["config/v1", "config/v2", "config/v3"]


def test_publish_never_reuses_a_rolled_back_number(work: GitRepo, remote: RemoteWatch) -> None:
    from cfgtool.versions import rollback

    publish(work.root, remote="origin")
    bump(work, "2")
    publish(work.root, remote="origin")
    rollback(work.root, reason="bad", remote="origin")
    bump(work, "3")
    assert publish(work.root, remote="origin").version == 3


def test_publish_restores_an_old_version_as_a_new_version(work: GitRepo, remote: RemoteWatch) -> None:
    first = publish(work.root, remote="origin")
    bump(work, "2")
    publish(work.root, remote="origin")
    restored = publish(work.root, ref="config/v1", remote="origin", message="restore v1")
    assert (restored.version, restored.commit, restored.digest) == (3, first.commit, first.digest)
    listed = versions(work.root)
    assert (listed[0].version, listed[0].status, listed[0].message) == (3, "current", "restore v1")
    assert listed[0].metadata["ref"] == "config/v1"


# ------------------------------------------------------------------------------------------ rollout plans

PLAN = "\nrollout:\n  steps: [5, 25, 100]\n  step_time: 30s\n  gates:\n    - consumers: {max_failed: 0}\n"
PLAN_JSON = {
    "steps": [5, 25, 100],
    "step_time": 30.0,
    "bake": 600.0,
    "min_reports": 1,
    "gates": [{"consumers": {"max_failed": 0}}],
}


def with_plan(repo: GitRepo, plan: str = PLAN) -> str:
    """Commit a rollout plan into the store's settings; returns the commit."""
    path = repo.root / "store" / "_CONFIG_STORE"
    path.write_text(path.read_text(encoding="utf-8") + plan, encoding="utf-8")
    return repo.commit("a rollout plan")


def rollout_of(repo: GitRepo, n: int) -> Any:
    """The `rollout` record of version n's tag metadata, read by git itself (absent: None)."""
    _, meta = parse_message(repo.git("for-each-ref", "--format=%(contents)", f"refs/tags/config/v{n}"))
    return meta.get("rollout")


def test_publish_records_the_plan_of_the_versions_own_rules(work: GitRepo) -> None:
    assert publish(work.root).rollout is None
    with_plan(work)  # a plan added in version 2 applies to version 2
    second = publish(work.root)
    bump(work, "3")
    third = publish(work.root)
    assert rollout_of(work, 1) is None
    for result in (second, third):
        record = rollout_of(work, result.version or 0)
        assert record == {"plan": PLAN_JSON, "salt": record["salt"]}
        assert len(record["salt"]) == 16 and int(record["salt"], 16) >= 0
        assert result.rollout == record and result.to_json()["rollout"] == record
    assert rollout_of(work, 2)["salt"] != rollout_of(work, 3)["salt"]
    assert (second.waits_for, third.waits_for) == (None, 2)  # version 3 starts once version 2 is done
    listed = {v.version: v.metadata.get("rollout") for v in versions(work.root)}
    assert listed[1] is None and listed[3] == rollout_of(work, 3)
    path = work.root / "store" / "_CONFIG_STORE"
    path.write_text(path.read_text(encoding="utf-8").replace(PLAN, ""), encoding="utf-8")
    work.commit("no plan any more")
    assert publish(work.root).rollout is None and rollout_of(work, 4) is None


def test_publish_all_at_once_records_that_the_plan_was_skipped(work: GitRepo) -> None:
    with_plan(work)
    dry = publish(work.root, dry_run=True, all_at_once=True)
    assert (dry.published, dry.rollout) == (False, {"skipped": "all-at-once"})
    result = publish(work.root, all_at_once=True)
    assert result.rollout == {"skipped": "all-at-once"} == rollout_of(work, 1)
    assert result.to_json()["rollout"] == {"skipped": "all-at-once"}


def test_publish_of_a_good_versions_commit_is_a_restore_that_skips_the_plan(work: GitRepo, remote: RemoteWatch) -> None:
    from cfgtool.versions import rollback

    with_plan(work)
    publish(work.root, remote="origin")
    bump(work, "2")
    publish(work.root, remote="origin")
    restored = publish(work.root, ref="config/v1", remote="origin", message="restore v1")
    assert (restored.version, restored.rollout) == (3, {"skipped": "restore"})
    assert rollout_of(work, 3) == {"skipped": "restore"}
    rollback(work.root, 2, reason="bad", remote="origin", not_current=True)
    again = publish(work.root, ref="config/v2", remote="origin", allow_rolled_back=True)
    assert again.version == 4 and rollout_of(work, 4)["plan"] == PLAN_JSON  # a rolled-back commit is no restore


def test_publish_an_unknown_ref_is_a_source_error(work: GitRepo) -> None:
    from cfgtool.errors import SourceError

    with pytest.raises(SourceError, match="unknown ref 'nope'"):
        publish(work.root, ref="nope")


# ------------------------------------------------------------------------------------------ remotes


def test_publish_rejected_by_a_hook_gives_a_clear_error_and_leaves_no_local_tag(
    work: GitRepo, remote: RemoteWatch
) -> None:
    publish(work.root, remote="origin")
    remote.add_hook('echo "tag pushes are frozen until Monday" >&2\nexit 1\n')
    bump(work, "2")
    with pytest.raises(RemoteError) as err:
        publish(work.root, remote="origin")
    message = str(err.value)
    assert "refused the version tag config/v2" in message
    assert "pre-receive hook declined" in message
    assert "tag pushes are frozen until Monday" in message
    assert local_version_tags(work) == ["config/v1"]
    assert remote.tags() == ["config/v1"]


def test_every_line_a_hook_prints_is_in_the_message_of_a_watched_push(work: GitRepo, remote: RemoteWatch) -> None:
    """A file:// remote's transfers are watched, with git's progress reports on: none of the hook's own lines
    may be taken for one of them and dropped."""
    publish(work.root, remote="origin")
    remote.add_hook('echo "Policy violations: 2 (see store/main.conf)" >&2\necho "Errors: 3" >&2\nexit 1\n')
    bump(work, "2")
    with pytest.raises(RemoteError) as err:
        publish(work.root, remote=f"file://{remote.bare}")
    message = str(err.value)
    assert "Policy violations: 2 (see store/main.conf)" in message and "Errors: 3" in message, message
    assert "Writing objects" not in message and "Total " not in message, message


def test_no_message_shows_the_credentials_of_a_remote_url(
    work: GitRepo, run_cfgtool: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    done = run_cfgtool("publish", "--remote", "https://deploy:tok3n@127.0.0.1:9/cfg.git", cwd=work.root)
    assert done.returncode == 2, done.stderr
    assert "could not fetch version tags from 'https://127.0.0.1:9/cfg.git'" in done.stderr, done.stderr
    assert "tok3n" not in done.stdout + done.stderr and "deploy" not in done.stdout + done.stderr


def test_publish_with_an_unreachable_remote_fails_before_creating_a_tag(work: GitRepo, tmp_path: Path) -> None:
    with pytest.raises(RemoteUnavailable, match="could not fetch version tags from") as err:
        publish(work.root, remote=str(tmp_path / "missing.git"))
    assert err.value.exit_code == 2
    assert local_version_tags(work) == []


def test_publish_reports_a_local_tag_that_differs_from_the_remote(work: GitRepo, remote: RemoteWatch) -> None:
    other = clone(work, remote, "other")
    bump(other, "theirs")
    publish(other.root, remote="origin")  # the remote's config/v1
    bump(work, "mine")
    publish(work.root)  # a local config/v1 that was never pushed
    mine = work.git("rev-parse", "refs/tags/config/v1")
    with pytest.raises(RemoteError, match=r"local tag config/v1 differs") as err:
        publish(work.root, remote="origin")
    assert err.value.hint is not None and "git tag -d config/v1" in err.value.hint
    assert work.git("rev-parse", "refs/tags/config/v1") == mine  # reported, not replaced
    assert remote.tags() == ["config/v1"]


_PUBLISH = """
import json, sys
from pathlib import Path
from cfgtool.versions import publish
result = publish(Path(sys.argv[1]), remote="origin", message=sys.argv[2])
print(json.dumps(result.to_json()))
"""


def publish_at_once(clones: list[GitRepo]) -> list[dict[str, Any]]:
    """Start one publishing process per clone at once (each with --remote origin); their results, in order."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PUBLISH, str(other.root), f"from {other.root.name}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for other in clones
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    return results


def test_two_processes_publishing_at_once_get_consecutive_versions(
    work: GitRepo, remote: RemoteWatch, tmp_path: Path
) -> None:
    publish(work.root, remote="origin")
    before = remote.check()
    # Both pushes wait in the remote's hook until the other has arrived: both processes fetched before either
    # tag existed, so they pick the same number and exactly one push of it can win.
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    remote.add_hook(
        f'touch "{barrier}/$$"\ni=0\n'
        f'while [ "$(ls "{barrier}" | wc -l)" -lt 2 ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done\n'
    )
    clones = [clone(work, remote, f"publisher{i}") for i in (1, 2)]
    for i, other in enumerate(clones):
        bump(other, f"publisher{i}")
    results = publish_at_once(clones)
    assert sorted(r["version"] for r in results) == [2, 3]
    assert all(r["published"] for r in results)
    assert sorted(r["attempts"] for r in results) == [1, 2]  # the loser fetched, recomputed and retried
    after = remote.check()
    assert {k: after[k] for k in before} == before
    assert remote.tags() == ["config/v1", "config/v2", "config/v3"]
    on_remote = remote.check()
    for other, r in zip(clones, results, strict=True):
        assert on_remote[f"refs/tags/config/v{r['version']}^{{}}"] == other.git("rev-parse", "HEAD")
        for name in local_version_tags(other):  # no local tag that the remote does not have
            assert on_remote[f"refs/tags/{name}"] == other.git("rev-parse", f"refs/tags/{name}")


def test_eight_publishers_from_separate_clones_get_distinct_contiguous_versions(
    work: GitRepo, remote: RemoteWatch
) -> None:
    publish(work.root, remote="origin")
    clones = [clone(work, remote, f"crowd{i}") for i in range(8)]
    for i, other in enumerate(clones):
        bump(other, f"crowd{i}")
    results = publish_at_once(clones)
    assert sorted(r["version"] for r in results) == list(range(2, 10))
    assert remote.tags() == [f"config/v{n}" for n in range(1, 10)]
    on_remote = remote.check()
    for other, r in zip(clones, results, strict=True):
        assert on_remote[f"refs/tags/config/v{r['version']}^{{}}"] == other.git("rev-parse", "HEAD")


def test_no_command_rewrites_the_index_so_a_kill_leaves_no_lock_behind(
    work: GitRepo, remote: RemoteWatch, run_cfgtool: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    """Reads such as `git status` rewrite a stale index under `.git/index.lock` unless told not to; a command
    killed then (a CI runner cancelling a job) would leave the lock, and the user's next `git commit` fails.
    Every file's timestamp is bumped before each command, so a git that may refresh the index does."""
    index = work.root / ".git" / "index"
    commands = [
        ("compile",),
        ("get", "data/tracking/PageViewEvent"),
        ("diff", "HEAD"),
        ("publish", "--remote", "origin", "-m", "first"),
        ("bump",),
        ("publish", "--remote", "origin", "-m", "second"),
        ("versions",),
        ("rollback", "-m", "bad", "--remote", "origin"),
    ]
    for args in commands:
        if args == ("bump",):
            bump(work, "second")
            continue
        before = index.read_bytes()
        later = time.time() + 5
        for path in (work.root / "store").rglob("*"):
            os.utime(path, (later, later))
        done = run_cfgtool(*args, cwd=work.root)
        assert done.returncode == 0, (args, done.stderr)
        assert index.read_bytes() == before, f"cfgtool {' '.join(args)} rewrote the index"
    assert remote.tags() == ["config/rolledback/v2", "config/v1", "config/v2"]
    assert not list((work.root / ".git").rglob("*.lock"))
