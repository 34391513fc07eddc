"""Reading version tags and rollback markers (`cfgtool/versions/tags.py`) and the create-only tag writes
(`cfgtool/versions/refs.py`), on real repositories with tags made by `create_tag` or by plain git."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.errors import SourceError
from cfgtool.store.git import git_env
from cfgtool.versions import (
    TagScheme,
    Version,
    VersionNotFound,
    current_version,
    history,
    resolve_version,
    versions,
)
from cfgtool.versions.messages import format_message, parse_message
from cfgtool.versions.names import DEFAULT_SHOWN
from cfgtool.versions.refs import Identity, clear_stale_locks, create_tag, identity, make_tag, write_tags
from cfgtool.versions.tags import read_history, scheme_for

if TYPE_CHECKING:
    from tests.conftest import GitRepo

ALICE = Identity("Alice", "alice@example.com")
BOB = Identity("Bob", "bob@example.com")


@pytest.fixture
def repo_with_commit(store_repo: GitRepo) -> GitRepo:
    store_repo.commit("empty store")
    return store_repo


def make_version(repo: GitRepo, n: int, commit: str | None = None, **meta: Any) -> str:
    """Version tag n as publish writes it (metadata line included); returns the tag object id."""
    commit = commit or repo.git("rev-parse", "HEAD")
    data = {"kind": "version", "version": n, "commit": commit, "digest": f"sha256:{n:064x}", **meta}
    oid = create_tag(repo.root, f"config/v{n}", commit, format_message(meta.get("message") or f"v{n}", data), ALICE)
    assert oid
    return oid


def make_marker(repo: GitRepo, n: int, reason: str = "broken", by: str = "Bob <bob@example.com>") -> str:
    commit = repo.git("rev-parse", f"config/v{n}^{{commit}}")
    data = {"kind": "rollback", "version": n, "by": by, "reason": reason}
    oid = create_tag(repo.root, f"config/rolledback/v{n}", commit, format_message(f"roll back: {reason}", data), BOB)
    assert oid
    return oid


# ------------------------------------------------------------------------------------------ messages


def test_format_message_round_trips_metadata_and_multiline_text() -> None:
    meta = {"version": 3, "message": "first line\nsecond: line ✓", "nodes": 48}
    text, parsed = parse_message(format_message("first line\nsecond: line ✓", meta))
    assert text == "first line\nsecond: line ✓"
    assert parsed == meta


def test_parse_message_without_metadata_keeps_the_whole_text() -> None:
    assert parse_message("made by hand\n\nwith a body\n") == ("made by hand\n\nwith a body", {})


def test_parse_message_with_damaged_metadata_keeps_the_text() -> None:
    text, meta = parse_message("hello\n\ncfgtool-metadata: {not json\n")
    assert meta == {}
    assert text.startswith("hello")


# ------------------------------------------------------------------------------------------ reading


def test_history_of_repo_without_tags_is_empty(repo_with_commit: GitRepo) -> None:
    found = history(repo_with_commit.root)
    assert list(found) == []
    assert found.current is None
    assert found.highest == 0
    assert current_version(repo_with_commit.root) is None


def test_history_reads_metadata_statuses_and_rollback_details(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    first = repo.git("rev-parse", "HEAD")
    make_version(repo, 1, publisher="Carol <carol@example.com>", message="first", store="store", nodes=3)
    second = repo.commit("second")
    make_version(repo, 2, message="second")
    make_version(repo, 3, message="third")
    make_marker(repo, 3, reason="retention too short")

    listed = versions(repo.root)
    assert [(v.version, v.status) for v in listed] == [(3, "rolled_back"), (2, "current"), (1, "good")]
    v3, v2, v1 = listed
    assert v3.rolled_back is not None
    assert v3.rolled_back.by == "Bob <bob@example.com>"
    assert v3.rolled_back.reason == "retention too short"
    assert v3.rolled_back.tag == "config/rolledback/v3"
    assert v2.commit == second and v1.commit == first
    assert v1.publisher == "Carol <carol@example.com>"
    assert v2.publisher == "Alice <alice@example.com>"  # no publisher in the metadata: the tagger
    assert (v1.message, v1.store, v1.nodes, v1.digest) == ("first", "store", 3, f"sha256:{1:064x}")
    assert v1.date.tzinfo is not None
    doc = v3.to_json()
    assert set(doc) >= {"version", "tag", "commit", "date", "status", "publisher", "message", "digest", "rolled_back"}
    assert doc["rolled_back"]["reason"] == "retention too short"
    assert current_version(repo.root) == v2


def test_history_versions_equal_ones_built_by_the_dataclass(repo_with_commit: GitRepo) -> None:
    make_version(repo_with_commit, 1, message="one", nodes=4)
    make_marker(repo_with_commit, 1)
    (v1,) = versions(repo_with_commit.root)
    every = {f.name: getattr(v1, f.name) for f in dataclasses.fields(Version)}  # all set by the fast path
    assert Version(**every) == v1
    assert repr(Version(**every)) == repr(v1)


def test_history_exposes_tags_and_markers_by_number(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    make_version(repo, 1)
    make_version(repo, 2)
    make_marker(repo, 2, reason="bad")
    found = history(repo.root)
    assert sorted(found.tags) == [1, 2] and list(found.markers) == [2]
    assert found.markers[2].metadata["reason"] == "bad"
    assert found.markers[2].tagger == "Bob" and found.markers[2].tagger_email == "bob@example.com"
    assert found.tags[1].commit == repo.git("rev-parse", "HEAD")
    assert found.tags[1].object == repo.git("rev-parse", "refs/tags/config/v1")
    assert len(found) == 2 and found.is_rolled_back(2) and not found.is_rolled_back(1)


def test_history_ignores_tags_that_are_not_version_numbers(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    make_version(repo, 2)
    for name in ("config/v01", "config/vx", "config/v3-rc1", "config/v", "other/v9", "v7"):
        repo.git("tag", "-a", "-m", "not a version", name)
    repo.git("tag", "config/v4")  # lightweight, made by hand: a version without metadata
    blob = repo.git("hash-object", "-w", "store/_CONFIG_STORE")
    repo.git("tag", "-a", "-m", "a blob", "config/v9", blob)  # not a commit: ignored

    found = history(repo.root)
    assert found.numbers == [2, 4]
    v4 = found.require(4)
    assert v4.commit == repo.git("rev-parse", "HEAD")
    assert v4.digest is None and v4.status == "current"
    assert v4.date.isoformat() == repo.git("log", "-1", "--format=%cI")


def test_history_handles_a_tag_made_by_hand_with_a_plain_message(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    repo.git("tag", "-a", "-m", "hand made\n\nbody text", "config/v1")
    v1 = history(repo.root).require(1)
    assert v1.message == "hand made\n\nbody text"
    assert v1.publisher == "Test <test@example.com>"


def test_history_decodes_each_tag_when_one_metadata_line_is_damaged(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    make_version(repo, 1, message="good one")
    commit = repo.git("rev-parse", "HEAD")
    create_tag(repo.root, "config/v2", commit, "broken\n\ncfgtool-metadata: {nope\n", ALICE)
    make_version(repo, 3, message="good three")
    listed = {v.version: v for v in versions(repo.root)}
    assert listed[1].message == "good one" and listed[3].message == "good three"
    assert listed[2].digest is None


def test_current_is_the_highest_version_without_a_marker(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    for n in (1, 2, 3):
        make_version(repo, n)
    make_marker(repo, 3)
    make_marker(repo, 2)
    found = history(repo.root)
    assert found.current_number == 1
    assert found.highest == 3


def test_a_marker_without_its_version_still_reserves_the_number(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    make_version(repo, 1)
    commit = repo.git("rev-parse", "HEAD")
    create_tag(repo.root, "config/rolledback/v5", commit, "orphan marker\n", BOB)
    found = history(repo.root)
    assert found.numbers == [1]
    assert found.highest == 5


def test_versions_default_lists_the_newest_and_always_the_current(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    total = DEFAULT_SHOWN + 5
    for n in range(1, total + 1):
        make_version(repo, n)
    for n in range(6, total + 1):  # everything above 5 rolled back: 5 is current but not among the newest
        make_marker(repo, n)
    shown = versions(repo.root)
    assert [v.version for v in shown] == [*range(total, 5, -1), 5]
    assert shown[-1].status == "current"
    assert len(versions(repo.root, all=True)) == total


def test_history_reads_the_prefixes_set_in_the_store(store_repo: GitRepo) -> None:
    repo = store_repo
    repo.write({"store/_CONFIG_STORE": "version_tag_prefix: release/\nrollback_tag_prefix: withdrawn/\n"})
    commit = repo.commit("custom prefixes")
    create_tag(repo.root, "release/1", commit, format_message("r1", {"version": 1}), ALICE)
    create_tag(repo.root, "release/2", commit, format_message("r2", {"version": 2}), ALICE)
    create_tag(repo.root, "withdrawn/2", commit, format_message("bad", {"reason": "bad", "by": "Bob"}), BOB)
    create_tag(repo.root, "config/v9", commit, "default prefix: not ours\n", ALICE)
    assert scheme_for(repo.root, "store").custom == TagScheme("release/", "withdrawn/", "store")
    listed = versions(repo.root)
    assert [(v.version, v.tag, v.status) for v in listed] == [
        (2, "release/2", "rolled_back"),
        (1, "release/1", "current"),
    ]


def test_history_of_a_missing_store_is_a_source_error(repo_with_commit: GitRepo) -> None:
    with pytest.raises(SourceError, match="no store at elsewhere/"):
        history(repo_with_commit.root, "elsewhere")


def test_resolve_version_gives_the_commit_even_when_rolled_back(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    first = repo.git("rev-parse", "HEAD")
    make_version(repo, 1)
    repo.commit("two")
    make_version(repo, 2)
    make_marker(repo, 1)
    assert resolve_version(repo.root, 1) == first
    with pytest.raises(VersionNotFound, match=r"version 7 does not exist.*versions are 1 to 2") as err:
        resolve_version(repo.root, 7)
    assert err.value.exit_code == 2


def test_read_history_from_a_bare_clone(repo_with_commit: GitRepo, tmp_path: Path) -> None:
    make_version(repo_with_commit, 1)
    bare = tmp_path / "clone.git"
    repo_with_commit.git("clone", "-q", "--bare", str(repo_with_commit.root), str(bare))
    assert [v.version for v in versions(bare)] == [1]
    assert read_history(bare, TagScheme()).current_number == 1


# ------------------------------------------------------------------------------------------ writing


def test_create_tag_never_overwrites_an_existing_tag(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    first = make_version(repo, 1)
    commit = repo.commit("another")
    assert create_tag(repo.root, "config/v1", commit, "again\n", ALICE) == ""
    assert repo.git("rev-parse", "refs/tags/config/v1") == first


def test_create_tag_writes_an_annotated_tag_with_the_tagger(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    oid = create_tag(repo.root, "config/v1", repo.git("rev-parse", "HEAD"), "hello\n", ALICE)
    assert repo.git("cat-file", "-t", oid) == "tag"
    assert repo.git("for-each-ref", "--format=%(taggername) %(taggeremail)", "refs/tags/config/v1") == (
        "Alice <alice@example.com>"
    )


def test_write_tags_writes_all_or_none_and_never_moves_a_tag(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    head = repo.git("rev-parse", "HEAD")
    first = make_version(repo, 1)
    two = make_tag(repo.root, "config/v2", head, "two\n", ALICE)
    other_one = make_tag(repo.root, "config/v1", head, "another one\n", ALICE)
    assert repo.git("tag", "--list", "config/v2") == ""  # an object only: no ref yet
    assert not write_tags(repo.root, {"config/v1": other_one, "config/v2": two})
    assert repo.git("rev-parse", "refs/tags/config/v1") == first
    assert repo.git("tag", "--list", "config/v2") == ""  # none written
    assert write_tags(repo.root, {"config/v1": first, "config/v2": two})  # v1 already there: fine
    assert repo.git("rev-parse", "refs/tags/config/v2") == two


def test_a_stale_lock_left_by_a_killed_git_is_cleared(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    make_version(repo, 1)
    lock = repo.root / ".git/refs/tags/config/v2.lock"
    lock.write_text("", encoding="utf-8")
    fresh = repo.root / ".git/refs/tags/config/v3.lock"
    fresh.write_text("", encoding="utf-8")
    os.utime(lock, (time.time() - 60, time.time() - 60))
    assert clear_stale_locks(repo.root, TagScheme()) == ["refs/tags/config/v2.lock"]
    assert not lock.exists() and fresh.exists()  # a lock git may still hold is left alone
    head = repo.git("rev-parse", "HEAD")
    assert create_tag(repo.root, "config/v2", head, "two\n", ALICE)


def test_identity_prefers_git_config(repo_with_commit: GitRepo) -> None:
    repo = repo_with_commit
    assert identity(repo.root) == Identity("Test", "test@example.com")
    repo.git("config", "user.name", "Dana")
    assert identity(repo.root).name == "Dana"


def test_identity_falls_back_to_USER(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.setenv("USER", "ci-bot")
    monkeypatch.delenv("GIT_COMMITTER_NAME", raising=False)
    monkeypatch.delenv("GIT_COMMITTER_EMAIL", raising=False)
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True, env=git_env())
    who = identity(tmp_path / "r")
    assert who.name == "ci-bot"
    assert who.email.startswith("ci-bot@")


@pytest.mark.parametrize(
    ("version", "rollback", "restored"),
    [
        ("config/v", "config/rolledback/v", "config/restored/v"),
        ("config/other/v", "config/other/rolledback/v", "config/other/restored/v"),
        ("release/", "withdrawn/", "withdrawn/restored/"),
        ("rel/v", "rel/rb/v", "rel/rb/restored/v"),
        ("rel/restored/v", "rel/rolledback/v", "rel/rolledback/vrestored-"),  # never the version prefix
    ],
)
def test_the_restored_prefix_follows_the_rollback_prefix(version: str, rollback: str, restored: str) -> None:
    from cfgtool.versions.tags import marker_prefix

    assert marker_prefix(version, rollback) == restored
    assert TagScheme(version, rollback).restored_tag(3) == f"{restored}3"


def test_readers_name_the_stable_version_current_while_another_rolls_out(
    repo: GitRepo, run_cfgtool: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    from cfgtool.versions.current import named
    from cfgtool.versions.rollout import admitted
    from tests.versions.conftest import commit_at
    from tests.versions.test_rollout import HOSTS, PLAN, SALT, Tags

    tags = Tags(repo)
    for n in (1, 2, 3):  # 3 rolls out at 5%
        repo.write({"store/data/a/main.conf": f"retention = {n}\n"})
        tags.commit = commit_at(repo, f"2026-01-01T1{n}:00:00+00:00", f"retention {n}")
        tags.version(n, PLAN if n == 3 else None)
    inside = next(h for h in HOSTS if admitted("store", 3, SALT, h, 5))
    known = history(repo.root, "store")
    assert (named(known, "current").version, named(known, "previous").version) == (2, 1)
    assert (named(known, "current", inside).version, named(known, "previous", inside).version) == (3, 2)
    # what publish and rollback build on stays the newest good version
    assert known.current_number == 3 and known.named("previous").version == 2
    assert current_version(repo.root) == named(known, "current")
    assert resolve_version(repo.root, "current") == named(known, "current").commit
    proc = run_cfgtool("get", "/data/a", "retention", "--version", "current", cwd=repo.root)
    assert proc.returncode == 0 and proc.stdout.strip() == "2", proc.stderr
    proc = run_cfgtool("diff", "previous", "current", "--format", "json", cwd=repo.root)
    assert proc.returncode == 0 and '"retention"' in proc.stdout and "config/v2" in proc.stdout, proc.stdout
