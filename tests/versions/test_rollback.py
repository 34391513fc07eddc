"""`rollback` (`cfgtool/versions/rollback.py`) on real repositories: versions made by real publishes of a small
store, a bare remote, and a second clone as another operator. Remote tags are never moved or deleted
(`RemoteWatch` checks at every step and when each test ends)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cfgtool.errors import UsageError
from cfgtool.versions import (
    RemoteError,
    RollbackRefused,
    VersionNotFound,
    current_version,
    publish,
    resolve_version,
    rollback,
    versions,
)
from cfgtool.versions.messages import parse_message
from cfgtool.versions.rollback import NotCurrent
from tests.remotes import RemoteWatch, add_origin

if TYPE_CHECKING:
    from tests.conftest import GitRepo


def release(repo: GitRepo, n: int, remote: str | None = "origin") -> int:
    """Commit a change and publish it; returns the version number."""
    repo.write({"store/main.conf": f"release = {n}\n"})
    repo.commit(f"release {n}")
    result = publish(repo.root, remote=remote, message=f"release {n}")
    assert result.published and result.version is not None
    return result.version


@pytest.fixture
def remote(store_repo: GitRepo, tmp_path: Path) -> Iterator[RemoteWatch]:
    store_repo.commit("empty store")
    watch = add_origin(store_repo, tmp_path / "remote.git")
    yield watch
    watch.check()


@pytest.fixture
def three(store_repo: GitRepo, remote: RemoteWatch) -> GitRepo:
    """Versions 1, 2 and 3 published to the remote."""
    for n in (1, 2, 3):
        release(store_repo, n)
    remote.check()
    return store_repo


def statuses(repo: GitRepo) -> list[tuple[int, str]]:
    return [(v.version, v.status) for v in versions(repo.root)]


def test_rollback_marks_the_current_version_and_the_previous_becomes_current(
    three: GitRepo, remote: RemoteWatch
) -> None:
    result = rollback(three.root, reason="retention too short", remote="origin")
    assert (result.rolled_back, result.current, result.tags) == ((3,), 2, ("config/rolledback/v3",))
    assert result.by == "Test <test@example.com>"
    assert result.to_json()["rolled_back"] == [3] and result.to_json()["current"] == 2
    assert statuses(three) == [(3, "rolled_back"), (2, "current"), (1, "good")]
    v3 = versions(three.root)[0]
    assert v3.rolled_back is not None
    assert (v3.rolled_back.by, v3.rolled_back.reason) == ("Test <test@example.com>", "retention too short")
    assert "config/rolledback/v3" in remote.tags()
    assert "config/v3" in remote.tags()  # the version itself stays


def test_rollback_marker_sits_on_the_version_commit_with_metadata(three: GitRepo) -> None:
    rollback(three.root, reason="bad", by="Ops <ops@example.com>")
    assert three.git("rev-parse", "config/rolledback/v3^{commit}") == three.git("rev-parse", "config/v3^{commit}")
    text, meta = parse_message(three.git("for-each-ref", "--format=%(contents)", "refs/tags/config/rolledback/v3"))
    assert text == "roll back config/v3: bad"
    assert (meta["kind"], meta["version"], meta["by"], meta["reason"]) == (
        "rollback",
        3,
        "Ops <ops@example.com>",
        "bad",
    )


def test_rollback_keeps_the_rolled_back_version_readable(three: GitRepo) -> None:
    v3_commit = resolve_version(three.root, 3)
    rollback(three.root, reason="bad")
    assert resolve_version(three.root, 3) == v3_commit
    current = current_version(three.root)
    assert current is not None and current.version == 2


def test_rollback_a_named_version_that_is_not_current(three: GitRepo) -> None:
    result = rollback(three.root, 2, not_current=True, reason="wrong cluster")
    assert (result.rolled_back, result.current) == ((2,), 3)
    assert statuses(three) == [(3, "current"), (2, "rolled_back"), (1, "good")]


def test_rollback_of_a_version_not_current_is_refused_with_its_json_document(store_repo: GitRepo) -> None:
    """Every caller gets the `rollback` object of the refusal from the error: the values the current version still
    holds."""
    for files in ({"store/main.conf": "x = 1\n"}, {"store/main.conf": "x = 2\n"}, {"store/b/main.conf": "y = 1\n"}):
        store_repo.write(files)
        store_repo.commit()
        publish(store_repo.root)
    with pytest.raises(NotCurrent) as refused:
        rollback(store_repo.root, 2, reason="wrong cluster")
    doc = json.loads(json.dumps(refused.value.to_json()))
    assert doc["rolled_back"] == [] and doc["reason"] == refused.value.message
    held = [(h["key"], h["path"], h["rolled_back_value"], h["good_value"], h["version"]) for h in doc["still_held"]]
    assert held == [("/", "x", 2, 1, 2)]


def test_rollback_to_marks_every_good_version_above(three: GitRepo, remote: RemoteWatch) -> None:
    release(three, 4)
    rollback(three.root, 3, not_current=True, reason="earlier problem", remote="origin")
    result = rollback(three.root, to=1, reason="back to the last known good", remote="origin")
    assert (result.rolled_back, result.current) == ((4, 2), 1)
    assert statuses(three) == [(4, "rolled_back"), (3, "rolled_back"), (2, "rolled_back"), (1, "current")]
    assert [t for t in remote.tags() if "rolledback" in t] == [
        "config/rolledback/v2",
        "config/rolledback/v3",
        "config/rolledback/v4",
    ]


def test_rollback_refuses_to_leave_no_good_version(three: GitRepo, remote: RemoteWatch) -> None:
    rollback(three.root, to=1, reason="two bad ones", remote="origin")
    before = remote.tags()
    with pytest.raises(RollbackRefused, match="would leave no good version") as err:
        rollback(three.root, reason="the last one too", remote="origin")
    assert err.value.exit_code == 1
    assert remote.tags() == before
    assert three.git("tag", "--list", "config/rolledback/v1") == ""


def test_rollback_refuses_a_version_already_rolled_back(three: GitRepo) -> None:
    rollback(three.root, 2, not_current=True, reason="first time")
    with pytest.raises(RollbackRefused, match=r"version 2 is already rolled back \(by Test .*: first time\)"):
        rollback(three.root, 2, not_current=True, reason="second time")


def test_rollback_refuses_an_unknown_version(three: GitRepo) -> None:
    with pytest.raises(VersionNotFound, match="version 9 does not exist"):
        rollback(three.root, 9, reason="typo")
    with pytest.raises(VersionNotFound):
        rollback(three.root, to=9, reason="typo")


def test_rollback_to_refuses_a_rolled_back_or_current_target(three: GitRepo) -> None:
    rollback(three.root, 2, not_current=True, reason="bad")
    with pytest.raises(RollbackRefused, match="version 2 is rolled back itself"):
        rollback(three.root, to=2, reason="x")
    with pytest.raises(RollbackRefused, match="no good version above 3"):
        rollback(three.root, to=3, reason="x")


def test_rollback_without_versions_is_refused(store_repo: GitRepo) -> None:
    store_repo.commit("empty store")
    with pytest.raises(RollbackRefused, match="no version has been published yet"):
        rollback(store_repo.root, reason="nothing")


def test_rollback_needs_a_reason_and_not_both_n_and_to(three: GitRepo) -> None:
    with pytest.raises(UsageError, match="needs a reason"):
        rollback(three.root, reason="  ")
    with pytest.raises(UsageError, match="not both"):
        rollback(three.root, 2, to=1, reason="x")


def test_rollback_sees_a_rollback_made_elsewhere_after_fetching(three: GitRepo, remote: RemoteWatch) -> None:
    other = type(three)(three.root.parent / "operator")
    other.git("remote", "add", "origin", str(remote.bare))
    other.git("fetch", "-q", "origin", "main")
    other.git("reset", "-q", "--hard", "origin/main")
    rollback(other.root, reason="seen first by the operator", remote="origin")
    with pytest.raises(RollbackRefused, match=r"already rolled back.*seen first by the operator"):
        rollback(three.root, 3, reason="me too", remote="origin")
    assert statuses(three)[0] == (3, "rolled_back")


def test_rollback_rejected_by_a_hook_leaves_no_local_marker(three: GitRepo, remote: RemoteWatch) -> None:
    hook = remote.bare / "hooks" / "pre-receive"
    hook.write_text('#!/bin/sh\necho "rollbacks need a ticket" >&2\nexit 1\n', encoding="utf-8")
    hook.chmod(0o755)
    before = remote.tags()
    with pytest.raises(RemoteError, match=r"pre-receive hook declined.*rollbacks need a ticket"):
        rollback(three.root, to=1, reason="bad", remote="origin")
    assert three.git("tag", "--list", "config/rolledback/*") == ""
    assert remote.tags() == before
    assert statuses(three)[0] == (3, "current")


def test_rollback_a_version_known_only_on_the_remote(three: GitRepo, remote: RemoteWatch) -> None:
    other = type(three)(three.root.parent / "other")
    other.git("remote", "add", "origin", str(remote.bare))
    other.git("fetch", "-q", "--no-tags", "origin", "main")
    other.git("reset", "-q", "--hard", "origin/main")
    assert versions(other.root) == []
    result = rollback(other.root, reason="from a fresh clone", remote="origin")
    assert result.rolled_back == (3,)
    assert "config/rolledback/v3" in remote.tags()
