"""Writing rollout steps: create-only tags, so two controllers racing for one step cannot both take it."""

from __future__ import annotations

from pathlib import Path

from cfgtool.versions.rollout_tags import current, record
from tests.conftest import GitRepo
from tests.versions.test_rollout import PLAN, Tags


def _clone(remote: Path, at: Path) -> GitRepo:
    clone = GitRepo(at)
    clone.git("remote", "add", "origin", str(remote))
    clone.git("fetch", "-q", "origin", "main")
    clone.git("checkout", "-q", "main")
    return clone


def test_two_controllers_racing_for_one_step_cannot_both_take_it(repo: GitRepo, tmp_path: Path) -> None:
    tags = Tags(repo)
    tags.version(1)
    tags.version(2, PLAN)
    remote = tmp_path / "remote.git"
    repo.git("init", "-q", "--bare", str(remote))
    repo.git("push", "-q", str(remote), "main", "refs/tags/*:refs/tags/*")
    a, b = _clone(remote, tmp_path / "a"), _clone(remote, tmp_path / "b")
    seen = [current(c.root, remote="origin") for c in (a, b)]  # both read the tags before either steps
    taken = []
    for c, who, (known, chosen) in zip((a, b), ("ctl-a", "ctl-b"), seen, strict=True):
        assert chosen.candidate is not None
        taken.append(record(c.root, known, chosen, chosen.candidate, "step", 25, by=who, remote="origin"))
    assert taken == ["config/rollout/v2/1", None]
    known, chosen = current(b.root, remote="origin")  # the loser re-reads: the step is there, taken once
    assert chosen.candidate is not None and chosen.candidate.percent == 25 and chosen.next_seq(2) == 2
    assert [e.by for e in chosen.candidate.events] == ["ctl-a"]
    again = record(b.root, known, chosen, chosen.candidate, "step", 100, by="ctl-b", reason="why", remote="origin")
    assert again == "config/rollout/v2/2"
    on_remote = GitRepo.existing(remote).git("tag", "-l", "config/rollout/*").split()
    assert on_remote == ["config/rollout/v2/1", "config/rollout/v2/2"]


def test_a_local_step_is_create_only(repo: GitRepo) -> None:
    tags = Tags(repo)
    tags.version(1)
    tags.version(2, PLAN)
    known, chosen = current(repo.root)
    assert chosen.candidate is not None
    assert record(repo.root, known, chosen, chosen.candidate, "pause", 5, by="ann", reason="look first") is not None
    assert record(repo.root, known, chosen, chosen.candidate, "step", 25, by="bob") is None  # same seq: refused
    assert current(repo.root)[1].rollouts[2].state == "paused"
