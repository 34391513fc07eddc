"""RefMemo (cfgtool/store/refmemo.py): answers remembered while the refs stay, forgotten when any ref, HEAD or
packed-refs changes; never written for refs that changed a moment ago; a damaged memo is a miss."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import pytest

from cfgtool.store import git
from cfgtool.store.refmemo import SETTLED_NS, RefMemo, memoizable
from tests.conftest import GitRepo


@pytest.mark.parametrize(
    ("ref", "kept"),
    [("HEAD", True), ("main", True), ("config/v12", True), ("refs/tags/x", True), ("a" * 40, True),
     ("abc1234", False), ("HEAD~1", False), ("main^", False), ("main@{1}", False), ("@{yesterday}", False),
     (":/fix", False), ("a..b", False), ("-x", False)],
)  # fmt: skip
def test_only_names_that_depend_on_refs_alone_are_remembered(ref: str, kept: bool) -> None:
    assert memoizable(ref) is kept


@pytest.fixture
def settled(repo: GitRepo) -> GitRepo:
    repo.write({"a": "1"})
    repo.commit()
    time.sleep(SETTLED_NS / 1e9 + 0.1)
    return repo


def head(memo: RefMemo) -> str:
    commit: str = memo.answer("ref HEAD", lambda: git.resolve_commit(memo.repo.root, "HEAD"))
    memo.save()
    return commit


def remembered(repo: GitRepo, cache: Path) -> bool:
    """Whether a new memo answers HEAD without asking git."""
    memo = RefMemo(repo.root, cache)
    return memo.answer("ref HEAD", lambda: None) is not None


def test_an_answer_is_remembered_until_a_ref_changes(settled: GitRepo, tmp_path: Path) -> None:
    assert head(RefMemo(settled.root, tmp_path)) == settled.git("rev-parse", "HEAD")
    assert remembered(settled, tmp_path)
    settled.git("tag", "t1")  # any new ref: forgotten
    assert not remembered(settled, tmp_path)


@pytest.mark.parametrize(
    "change",
    [
        ["commit", "-q", "--allow-empty", "-m", "x"],  # the branch moves
        ["checkout", "-q", "-b", "other"],  # HEAD names another branch
        ["pack-refs", "--all"],  # refs move into packed-refs
        ["update-ref", "refs/heads/main", "HEAD"],  # rewritten in place, same value
    ],
)
def test_every_kind_of_ref_change_forgets(settled: GitRepo, tmp_path: Path, change: list[str]) -> None:
    head(RefMemo(settled.root, tmp_path))
    assert remembered(settled, tmp_path)
    time.sleep(0.01)
    settled.git(*change)
    assert not remembered(settled, tmp_path)


def test_a_memo_of_refs_changed_a_moment_ago_is_not_written(repo: GitRepo, tmp_path: Path) -> None:
    repo.write({"a": "1"})
    repo.commit()
    head(RefMemo(repo.root, tmp_path))
    assert not remembered(repo, tmp_path)  # the same clock tick could hide a second change
    assert not list(tmp_path.rglob("*.json"))


@pytest.mark.parametrize("content", ["", "garbage", "[]", '{"format": 1}', '{"format": 1, "start": 3}'])
def test_a_damaged_memo_is_a_miss(settled: GitRepo, tmp_path: Path, content: str) -> None:
    head(RefMemo(settled.root, tmp_path))
    (memo_file,) = tmp_path.rglob("*.json")
    memo_file.write_text(content)
    assert not remembered(settled, tmp_path)
    assert head(RefMemo(settled.root, tmp_path)) == settled.git("rev-parse", "HEAD")


def test_a_forged_memo_is_a_miss(settled: GitRepo, tmp_path: Path) -> None:
    """Whoever can write the cache rewrites the memo to name another commit for HEAD (plain JSON, or with a
    checksum where the key's tag goes): git answers instead."""
    head(RefMemo(settled.root, tmp_path))
    (memo_file,) = tmp_path.rglob("*.json")
    raw = memo_file.read_bytes()
    data = json.loads(raw[raw.index(b'{"format"') :])
    data["answers"]["ref HEAD"] = "0" * 40
    forged = json.dumps(data).encode()
    for planted in (forged, hashlib.sha256(forged).digest() + forged):
        memo_file.write_bytes(planted)
        assert head(RefMemo(settled.root, tmp_path)) == settled.git("rev-parse", "HEAD")
