"""Rollbacks stick (README "Versions"): `publish` refuses a ref that still holds a value a rolled-back version
introduced, lists each one, and `--allow-rolled-back` publishes it on purpose; change-aware policies do not judge
the revert (W_POLICY_SKIPPED_REVERT); publish names a dirty store and records `--principal`. Every scenario runs
the real CLI in subprocesses against a real repository with a bare remote; no remote tag ever moves."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cfgtool.snapshot.hidden import ENVELOPE, HIDDEN
from cfgtool.versions import history
from cfgtool.versions.sticky import compile_checked
from tests.conftest import GitRepo
from tests.remotes import RemoteWatch, add_origin

Run = Callable[..., subprocess.CompletedProcess[str]]

SETTINGS = """name: demo
tag_roots: [/tags]
policies:
  - class: cfgtool.policies:MonotonicPaths
    config:
      paths: [partitions]
"""


def ok(proc: subprocess.CompletedProcess[str], status: int = 0) -> str:
    assert proc.returncode == status, f"exit {proc.returncode}, expected {status}\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr
    return proc.stdout + proc.stderr


def conf(partitions: int, retention: int = 7, extra: str = "") -> str:
    return f"partitions = {partitions}\nretention.days = {retention}\n{extra}"


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[GitRepo, RemoteWatch]]:
    """A small store: /data/a (64 partitions) and /data/b, committed, with a bare remote `origin`."""
    repo = GitRepo(tmp_path / "repo")
    repo.write({"_CONFIG_STORE": SETTINGS, "main.conf": "owner = ops\n", "data/a/main.conf": conf(64),
                "data/b/main.conf": conf(8)}, under="store")  # fmt: skip
    repo.commit("store")
    watch = add_origin(repo, tmp_path / "remote.git")
    yield repo, watch
    watch.check()


def change(repo: GitRepo, files: dict[str, str | None], message: str) -> None:
    repo.write(files, under="store/")
    repo.commit(message)


def publish(run: Run, repo: GitRepo, *args: str, status: int = 0) -> str:
    return ok(run("publish", "--remote", "origin", *args, cwd=repo.root), status)


def metadata(repo: GitRepo, version: int, store: str = "store") -> dict[str, Any]:
    return dict(history(repo.root, store).tag(version).metadata)


def release_bad_partitions(run: Run, repo: GitRepo) -> None:
    """v1 (64 partitions), v2 (96), v2 rolled back, then an unrelated commit on the branch."""
    publish(run, repo, "-m", "v1")
    change(repo, {"data/a/main.conf": conf(96)}, "more partitions")
    publish(run, repo, "-m", "v2")
    ok(run("rollback", "-m", "bad partitions", "--remote", "origin", cwd=repo.root))
    change(repo, {"main.conf": "owner = platform\n"}, "unrelated")


def test_a_rollback_sticks_after_an_unrelated_change(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    repo, remote = demo
    release_bad_partitions(run_cfgtool, repo)
    out = publish(run_cfgtool, repo, status=1)
    assert "still holds 1 value that rolled-back version 2 (config/v2) introduced" in out
    assert "\n  introduced by version 2, rolled back by Test <test@example.com>: bad partitions\n" in out
    assert "\n    /data/a partitions = 96 (good: 64)\n" in out
    assert ": bad partitions" in out and "--allow-rolled-back" in out and "Nothing was published" in out
    assert remote.tags() == ["config/rolledback/v2", "config/v1", "config/v2"]
    doc = json.loads(run_cfgtool("publish", "--format", "json", cwd=repo.root).stdout)
    assert doc["published"] is False
    assert doc["rolled_back_values"] == [{"key": "/data/a", "path": "partitions", "rolled_back_value": 96,
                                          "good_value": 64, "version": 2, "reason": "bad partitions",
                                          "by": "Test <test@example.com>"}]  # fmt: skip
    # on purpose: published, and the tag records it; a release made so ends the watch
    assert "re-releases values of rolled-back version 2" in publish(run_cfgtool, repo, "--allow-rolled-back")
    assert metadata(repo, 3)["allow_rolled_back"] == [2]
    listed = json.loads(ok(run_cfgtool("versions", "--format", "json", cwd=repo.root)))
    assert [(v["version"], v["allow_rolled_back"]) for v in listed][:3] == [(3, [2]), (2, []), (1, [])]
    assert "current (re-released v2)" in ok(run_cfgtool("versions", cwd=repo.root))
    change(repo, {"main.conf": "owner = data\n"}, "another unrelated change")
    assert "published version 4" in publish(run_cfgtool, repo)


def test_a_later_different_change_is_fine(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    repo, _ = demo
    release_bad_partitions(run_cfgtool, repo)
    assert "/data/a partitions = 96" in publish(run_cfgtool, repo, status=1)
    change(repo, {"data/a/main.conf": conf(128)}, "a different count")
    assert "published version 3" in publish(run_cfgtool, repo)


def test_the_watch_ends_once_a_revert_ships(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    repo, _ = demo
    release_bad_partitions(run_cfgtool, repo)
    assert "/data/a partitions = 96" in publish(run_cfgtool, repo, status=1)
    change(repo, {"data/a/main.conf": conf(64)}, "revert")
    assert "published version 3" in publish(run_cfgtool, repo)
    change(repo, {"data/a/main.conf": conf(96)}, "96 again, decided anew")
    assert "published version 4" in publish(run_cfgtool, repo)
    change(repo, {"data/a/main.conf": conf(64)}, "64 once more")
    assert "published version 5" in publish(run_cfgtool, repo)
    # restoring the rolled-back version itself needs no --allow-rolled-back once the revert has shipped
    assert "published version 6" in publish(run_cfgtool, repo, "--ref", "config/v2")


def test_several_rolled_back_versions_with_rollback_to(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    repo, _ = demo
    publish(run_cfgtool, repo)
    change(repo, {"data/a/main.conf": conf(96)}, "more partitions")
    publish(run_cfgtool, repo)
    change(repo, {"data/b/main.conf": conf(8, retention=3)}, "shorter retention")
    publish(run_cfgtool, repo)
    ok(run_cfgtool("rollback", "--to", "1", "-m", "bad week", "--remote", "origin", cwd=repo.root))
    out = publish(run_cfgtool, repo, status=1)
    assert "still holds 2 values that rolled-back versions 2 (config/v2), 3 (config/v3) introduced" in out
    assert (
        "introduced by version 2, rolled back by Test <test@example.com>: bad week\n    /data/a partitions = 96" in out
    )
    assert (
        "introduced by version 3, rolled back by Test <test@example.com>: bad week\n    /data/b retention.days = 3"
        in out
    )
    change(repo, {"data/a/main.conf": conf(64)}, "revert partitions")
    out = publish(run_cfgtool, repo, status=1)
    assert "/data/b retention.days" in out and "/data/a" not in out
    change(repo, {"data/b/main.conf": conf(8)}, "revert retention")
    assert "as the current version 1" in publish(run_cfgtool, repo)  # both reverted: version 1 again


def test_values_added_and_removed_with_nodes_are_watched(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    repo, _ = demo
    publish(run_cfgtool, repo)
    change(repo, {"data/c/main.conf": "partitions = 4\n", "data/b/main.conf": None}, "add c, drop b")
    publish(run_cfgtool, repo)
    ok(run_cfgtool("rollback", "-m", "b is still read", "--remote", "origin", cwd=repo.root))
    change(repo, {"main.conf": "owner = platform\n"}, "unrelated")
    out = publish(run_cfgtool, repo, status=1)
    assert "/data/b partitions = (unset) (good: 8)" in out
    assert "/data/b retention.days = (unset) (good: 7)" in out
    assert "/data/c partitions = 4 (good: (unset))" in out
    change(repo, {"data/b/main.conf": conf(8)}, "b is back")
    out = publish(run_cfgtool, repo, status=1)
    assert "/data/c partitions" in out and "/data/b" not in out
    change(repo, {"data/c/main.conf": None}, "c is gone")
    assert "published version 3" in publish(run_cfgtool, repo)


def test_each_store_reads_only_its_own_versions(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    repo, remote = demo
    other = SETTINGS.replace("name: demo", "name: other") + (
        "version_tag_prefix: other/v\nrollback_tag_prefix: other/rolledback/v\n"
    )
    repo.write({"_CONFIG_STORE": other, "data/a/main.conf": conf(64)}, under="other/")
    repo.commit("a second store")
    release_bad_partitions(run_cfgtool, repo)
    assert "/data/a partitions = 96" in publish(run_cfgtool, repo, status=1)
    # the other store gets the same value: its own history has no rollback
    other_publish = ("--store", "other", "publish", "--remote", "origin")
    ok(run_cfgtool(*other_publish, cwd=repo.root))
    repo.write({"data/a/main.conf": conf(96)}, under="other/")
    repo.commit("other: more partitions")
    assert "published version 2 (other/v2)" in ok(run_cfgtool(*other_publish, cwd=repo.root))
    assert "other/rolledback/v2" not in remote.tags()


def test_a_secret_is_shown_hidden(run_cfgtool: Run, work: GitRepo, remote: RemoteWatch) -> None:
    planted = "planted-Secret-51ab"
    target, path = "/data/databases/identity", "database.credentials.password"
    publish(run_cfgtool, work)
    ok(run_cfgtool("secret", "set", target, path, cwd=work.root, input=planted))
    work.commit("a new password")
    publish(run_cfgtool, work)
    ok(run_cfgtool("rollback", "-m", "wrong password", "--remote", "origin", cwd=work.root))
    out = publish(run_cfgtool, work, status=1)
    assert f'{target} {path} = "{HIDDEN}"' in out and "wrong password" in out
    envelope = ENVELOPE.search((work.root / "store/data/databases/identity/main.conf").read_text(encoding="utf-8"))
    assert envelope is not None and envelope.group(2) not in out and planted not in out
    doc = run_cfgtool("publish", "--format", "json", cwd=work.root).stdout
    assert planted not in doc and envelope.group(2) not in doc and HIDDEN in doc


def test_a_revert_is_not_judged_by_change_aware_policies(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    repo, _ = demo
    release_bad_partitions(run_cfgtool, repo)
    repo.git("checkout", "-q", "-b", "revert")
    change(repo, {"data/a/main.conf": "# back to the good value\n" + conf(64)}, "revert partitions")
    out = ok(run_cfgtool("compile", "--base", "main", cwd=repo.root))
    assert "W_POLICY_SKIPPED_REVERT" in out and "partitions (rolled back in version 2)" in out
    assert "store/data/a/main.conf:2:14: W_POLICY_SKIPPED_REVERT" in out  # where it is set, not the comment
    assert "E_POLICY" not in out
    # any other change is still judged: shrinking below the good value, or shrinking another dataset
    change(repo, {"data/a/main.conf": conf(32), "data/b/main.conf": conf(4)}, "shrink")
    out = ok(run_cfgtool("compile", "--base", "main", "--format", "json", cwd=repo.root), 1)
    codes = sorted((d["code"], d["key"]) for d in json.loads(out)["diagnostics"])
    assert codes == [("E_POLICY", "/data/a"), ("E_POLICY", "/data/b")]


def test_compile_checked_lets_policies_skip_a_revert(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    """The library decides what a checked compile runs with, so every caller, not only the command, skips it."""
    repo, _ = demo
    release_bad_partitions(run_cfgtool, repo)
    repo.git("checkout", "-q", "-b", "revert")
    change(repo, {"data/a/main.conf": conf(64)}, "revert partitions")
    result = compile_checked(repo.root, "store", None, base="main")
    assert [(d.code, d.key) for d in result.diagnostics] == [("W_POLICY_SKIPPED_REVERT", "/data/a")]
    assert compile_checked(repo.root, "store", None).ok()  # no base: no change to judge


def test_publish_names_uncommitted_store_changes(run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]) -> None:
    repo, remote = demo
    publish(run_cfgtool, repo)
    repo.write({"data/a/main.conf": conf(65)}, under="store/")
    out = publish(run_cfgtool, repo, status=1)
    assert "store/ has uncommitted changes; commit them or publish --ref" in out
    assert remote.tags() == ["config/v1"]
    assert "nothing to publish" in publish(run_cfgtool, repo, "--ref", "HEAD")
    repo.commit("65")
    assert "published version 2" in publish(run_cfgtool, repo)


def test_publish_records_the_principal_and_versions_shows_it(
    run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]
) -> None:
    repo, _ = demo
    out = publish(run_cfgtool, repo, "--principal", "User:alice")
    assert "  publisher  Test <test@example.com>\n  principal  User:alice\n" in out
    meta = metadata(repo, 1)
    assert (meta["publisher"], meta["principal"]) == ("Test <test@example.com>", "User:alice")
    listed = json.loads(ok(run_cfgtool("versions", "--format", "json", cwd=repo.root)))
    assert (listed[0]["publisher"], listed[0]["principal"]) == ("Test <test@example.com>", "User:alice")
    assert "User:alice" in ok(run_cfgtool("versions", cwd=repo.root)).splitlines()[1]


def test_a_damaged_or_foreign_watch_cache_entry_is_a_miss(
    run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch], tmp_path: Path
) -> None:
    repo, _ = demo
    env = {"CFGTOOL_CACHE_DIR": str(tmp_path / "own-cache")}
    for args in (("-m", "v1"), ("-m", "v2")):
        ok(run_cfgtool("publish", "--remote", "origin", *args, cwd=repo.root, env=env))
        change(repo, {"data/a/main.conf": conf(96)}, "more partitions")
    ok(run_cfgtool("rollback", "-m", "bad partitions", cwd=repo.root, env=env))
    first = ok(run_cfgtool("publish", cwd=repo.root, env=env), 1)
    assert "/data/a partitions = 96 (good: 64)" in first
    (entry,) = (tmp_path / "own-cache").glob("watches-v*/*.json")
    sealed = entry.read_bytes()
    for planted in (sealed[: len(sealed) // 2], b"not json", sealed[:-1] + b"]", b""):
        entry.write_bytes(planted)
        assert ok(run_cfgtool("publish", cwd=repo.root, env=env), 1) == first


def test_a_forged_watch_list_does_not_let_a_rolled_back_value_through(
    run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch], tmp_path: Path
) -> None:
    """Whoever can write the cache rewrites the entry to say the rolled-back version introduced nothing, with
    every checksum right (in the layout of a checksummed entry, and with a checksum where the key's tag goes):
    publish still refuses."""
    repo, _ = demo
    env = {"CFGTOOL_CACHE_DIR": str(tmp_path / "own-cache")}
    ok(run_cfgtool("publish", "--remote", "origin", "-m", "v1", cwd=repo.root, env=env))
    change(repo, {"data/a/main.conf": conf(96)}, "more partitions")
    ok(run_cfgtool("publish", "--remote", "origin", "-m", "v2", cwd=repo.root, env=env))
    ok(run_cfgtool("rollback", "-m", "bad partitions", cwd=repo.root, env=env))
    change(repo, {"main.conf": "owner = platform\n"}, "unrelated")
    first = ok(run_cfgtool("publish", cwd=repo.root, env=env), 1)
    assert "/data/a partitions = 96 (good: 64)" in first
    (entry,) = (tmp_path / "own-cache").glob("watches-v*/*.json")
    raw = entry.read_bytes()
    stored = json.loads(raw[raw.index(b'{"format"') :].partition(b"\n")[0])
    stored.pop("sha256", None)
    head = json.dumps(stored)
    checksummed = json.dumps({**stored, "sha256": hashlib.sha256(b"[]").hexdigest()}) + "\n[]"
    data = (head + "\n[]").encode()
    for planted in (checksummed.encode(), hashlib.sha256(data).digest() + data):
        entry.write_bytes(planted)
        assert ok(run_cfgtool("publish", cwd=repo.root, env=env), 1) == first


def test_a_watched_number_is_matched_by_value_and_a_boolean_is_not_a_number(
    run_cfgtool: Run, demo: tuple[GitRepo, RemoteWatch]
) -> None:
    repo, _ = demo
    publish(run_cfgtool, repo, "-m", "v1")
    change(repo, {"data/a/main.conf": conf(64, extra="ttl = 5184000000\nflag = 1\n")}, "longer ttl")
    publish(run_cfgtool, repo, "-m", "v2")
    ok(run_cfgtool("rollback", "-m", "bad ttl", "--remote", "origin", cwd=repo.root))
    change(repo, {"data/a/main.conf": conf(64, extra="ttl = 5184000000.0\nflag = true\n")}, "the same ttl, respelled")
    out = publish(run_cfgtool, repo, status=1)
    assert "/data/a ttl = " in out and "/data/a flag" not in out
    assert "still holds 1 value that rolled-back version 2" in out  # ttl, not flag: true is not 1
