"""Version selection under staged rollouts: cohorts by the published formula, and what each reader gets, from the
tags alone (docs/rollout.md)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from cfgtool.errors import SourceError
from cfgtool.store.stores import tag_name_part
from cfgtool.versions.messages import format_message
from cfgtool.versions.refs import fetch_tags
from cfgtool.versions.rollout import admitted, bucket, cohort_id, selection
from cfgtool.versions.tags import StoreTags, TagScheme, read_history
from tests.conftest import GitRepo
from tests.versions.conftest import commit_at, git_at

PLAN = {"steps": [5, 25, 100], "step_time": 600, "bake": 600, "min_reports": 1, "gates": []}
SALT = "0123456789abcdef"
HOSTS = [f"web-{i}" for i in range(400)]


class Tags:
    """A store's tags written by hand, as publish, the controller and rollback write them."""

    def __init__(self, repo: GitRepo) -> None:
        self.repo = repo
        repo.write({"store/_CONFIG_STORE": ""})
        self.commit = commit_at(repo, "2026-01-01T09:00:00+00:00", "the store")
        self.day = 1

    def _tag(self, name: str, metadata: dict[str, object], text: str = "tag", hour: int | None = None) -> None:
        self.day += 1
        date = f"2026-01-{self.day:02d}T{hour or 10}:00:00+00:00"
        git_at(self.repo, date, "tag", "-a", name, self.commit, "-m", format_message(text, metadata))

    def version(self, n: int, plan: object = None, salt: str = SALT) -> None:
        meta: dict[str, object] = {"kind": "version", "version": n, "store": "store"}
        if plan is not None:
            meta["rollout"] = {"plan": plan, "salt": salt}
        self._tag(f"config/v{n}", meta)

    def step(self, n: int, seq: int, action: str, percent: int) -> None:
        meta = {"action": action, "percent": percent, "by": "controller", "evidence": [], "store": "store"}
        self._tag(f"config/rollout/v{n}/{seq}", meta)

    def rollback(self, n: int) -> None:
        self._tag(f"config/rolledback/v{n}", {"kind": "rollback", "version": n, "reason": "auto: consumers"})

    def selection(self):  # type: ignore[no-untyped-def]
        return selection(read_history(self.repo.root, StoreTags("store", None)), "store")


@pytest.fixture
def tags(repo: GitRepo) -> Tags:
    return Tags(repo)


def test_the_bucket_is_the_published_formula_of_the_host_part() -> None:
    for instance in ("web-3:4242", "web-3", "db:1:2", "x"):
        host = instance.split(":")[0]
        expected = int(hashlib.sha256(f"store:7:{SALT}:{host}".encode()).hexdigest()[:8], 16) % 10000
        assert bucket("store", 7, SALT, instance) == expected
    assert cohort_id("web-3:4242") == "web-3" and cohort_id("web-3") == "web-3"
    assert bucket("store", 7, SALT, "web-3:1") == bucket("store", 7, SALT, "web-3:2")  # a restart keeps the cohort


def test_membership_only_grows_and_a_reader_without_an_id_waits_for_100() -> None:
    cohorts = [{h for h in HOSTS if admitted("store", 7, SALT, h, p)} for p in (5, 25, 50, 100)]
    assert cohorts[0] <= cohorts[1] <= cohorts[2] <= cohorts[3] == set(HOSTS)
    assert 5 <= len(cohorts[0]) <= 40 and 60 <= len(cohorts[1]) <= 140  # about 5% and 25% of 400
    assert not admitted("store", 7, SALT, None, 99) and admitted("store", 7, SALT, None, 100)
    other = {h for h in HOSTS if admitted("store", 7, "fedcba9876543210", h, 5)}
    assert other != cohorts[0]  # the salt draws a new cohort for each version


def test_the_cohort_reads_the_candidate_and_everyone_else_the_stable_version(tags: Tags) -> None:
    tags.version(1)
    tags.version(2, PLAN)
    chosen = tags.selection()
    assert chosen.stable == 1 and chosen.candidate is not None and chosen.candidate.version == 2
    assert chosen.candidate.state == "rolling" and chosen.candidate.percent == 5
    inside = [h for h in HOSTS if admitted("store", 2, SALT, h, 5)]
    outside = [h for h in HOSTS if not admitted("store", 2, SALT, h, 25)]
    assert {chosen.version_for(h + ":1") for h in inside} == {2}
    assert {chosen.version_for(h) for h in outside} == {1}
    assert chosen.current == 1 and chosen.version_for(None) == 1
    assert chosen.joined(2, outside[0]) is None and chosen.joined(1, outside[0]) is not None


def test_steps_grow_the_cohort_pause_holds_it_and_done_makes_it_stable(tags: Tags) -> None:
    tags.version(1)
    tags.version(2, PLAN)
    started = tags.selection().candidate
    assert started is not None and started.since is not None
    tags.step(2, 1, "step", 25)
    grown = tags.selection()
    assert grown.candidate is not None and grown.candidate.percent == 25 and grown.candidate.step == 1
    late = next(h for h in HOSTS if admitted("store", 2, SALT, h, 25) and not admitted("store", 2, SALT, h, 5))
    early = next(h for h in HOSTS if admitted("store", 2, SALT, h, 5))
    assert grown.version_for(late) == 2
    assert grown.joined(2, early) == started.since and grown.joined(2, late) == grown.candidate.since
    assert grown.candidate.since > started.since  # the Keystone spread starts when the instance joins
    tags.step(2, 2, "pause", 25)
    paused = tags.selection()
    assert paused.candidate is not None and paused.candidate.state == "paused" and paused.version_for(late) == 2
    tags.step(2, 3, "resume", 25)
    tags.step(2, 4, "step", 100)
    baking = tags.selection()
    assert baking.candidate is not None and baking.candidate.state == "baking" and baking.current == 2
    assert baking.next_seq(2) == 5
    tags.step(2, 5, "done", 100)
    done = tags.selection()
    assert done.stable == 2 and done.candidate is None and done.rollouts[2].state == "done"


def test_a_rolled_back_candidate_sends_its_cohort_back(tags: Tags) -> None:
    tags.version(1)
    tags.version(2, PLAN)
    tags.step(2, 1, "step", 25)
    tags.rollback(2)
    chosen = tags.selection()
    assert chosen.candidate is None and chosen.rollouts[2].state == "rolled_back"
    assert {chosen.version_for(h) for h in HOSTS} == {1}


def test_a_version_published_during_a_rollout_waits_for_it(tags: Tags) -> None:
    tags.version(1)
    tags.version(2, PLAN)
    tags.version(3, PLAN, salt="fedcba9876543210")
    waiting = tags.selection()
    assert waiting.rollouts[3].state == "waiting" and waiting.rollouts[3].percent == 0
    assert 3 not in {waiting.version_for(h) for h in HOSTS}
    assert waiting.joined(3, "web-1") is None
    tags.step(2, 1, "step", 100)
    tags.step(2, 2, "done", 100)
    moved = tags.selection()
    assert moved.stable == 2 and moved.candidate is not None and moved.candidate.version == 3
    done_at = moved.rollouts[2].events[-1].date
    assert moved.candidate.started == done_at  # its first step began when version 2 finished


def test_a_version_without_a_plan_supersedes_the_rolling_one(tags: Tags) -> None:
    tags.version(1)
    tags.version(2, PLAN)
    tags.version(3)
    chosen = tags.selection()
    assert chosen.stable == 3 and chosen.candidate is None and chosen.rollouts[2].state == "superseded"
    assert {chosen.version_for(h) for h in HOSTS} == {3}


@pytest.mark.parametrize(
    "plan",
    [{"steps": [5, 25]}, {"steps": [25, 5, 100]}, {"steps": []}, {"steps": [0, 100]}, {"steps": ["5", 100]}, "5,100"],
)
def test_a_plan_the_tag_does_not_spell_right_counts_as_none(tags: Tags, plan: object) -> None:
    tags.version(1)
    tags.version(2, plan)
    chosen = tags.selection()
    assert chosen.stable == 2 and chosen.rollouts == {}


def test_a_salt_longer_than_a_salt_counts_as_no_plan(tags: Tags) -> None:
    """Every reader hashes the salt for each instance it places: the server on each new id, the controller and the
    console for each instance heard from. A megabyte salt in a tag made by hand made each of those hashes a
    thousand times dearer."""
    tags.version(1)
    meta = {"kind": "version", "version": 2, "store": "store", "rollout": {"plan": PLAN, "salt": "ab" * 500_000}}
    hand_made(tags, "config/v2", format_message("v2", meta))
    chosen = tags.selection()
    assert chosen.stable == 2 and chosen.rollouts == {}
    tags.version(3, PLAN, salt="f" * 64)  # the longest salt read
    assert tags.selection().candidate.version == 3


def test_the_first_version_reaches_everyone_having_nothing_to_fall_back_to(tags: Tags) -> None:
    tags.version(1, PLAN)
    chosen = tags.selection()
    assert chosen.stable == 1 and chosen.current == 1 and chosen.candidate is None


def test_step_tags_are_fetched_with_the_version_tags(tags: Tags, tmp_path: Path) -> None:
    tags.version(1)
    tags.version(2, PLAN)
    tags.step(2, 1, "step", 25)
    tags.repo.git("init", "-q", "--bare", str(tmp_path / "remote.git"))
    tags.repo.git("push", "-q", str(tmp_path / "remote.git"), "main", "refs/tags/*:refs/tags/*")
    clone = GitRepo(tmp_path / "clone")
    clone.git("remote", "add", "origin", str(tmp_path / "remote.git"))
    clone.git("fetch", "-q", "origin", "main")
    fetch_tags(clone.root, "origin", StoreTags("store", None))
    assert clone.git("tag", "-l", "config/rollout/*") == "config/rollout/v2/1"
    known = read_history(clone.root, StoreTags("store", None))
    assert [t.name for t in known.rollout_tags(2)] == ["config/rollout/v2/1"]
    assert json.loads(json.dumps(selection(known, "store").rollouts[2].to_json())) == {
        "state": "rolling",
        "percent": 25,
    }


def test_rollout_prefixes_follow_the_rollback_prefix_and_the_name_is_reserved() -> None:
    assert TagScheme().rollout_tag(7, 3) == "config/rollout/v7/3"
    assert StoreTags("teams/a", "a").named().rollout_prefix == "config/a/rollout/v"
    assert TagScheme("rel/v", "rel/rb/v").rollout_prefix == "rel/rb/rollout/v"
    with pytest.raises(SourceError):
        tag_name_part("rollout", "teams/rollout")


def test_versions_shows_the_rollout_and_current_is_the_stable_version(tags: Tags, run_cfgtool) -> None:  # type: ignore[no-untyped-def]
    tags.version(1)
    tags.version(2, PLAN)
    tags.step(2, 1, "step", 25)
    listed = json.loads(run_cfgtool("versions", "--format", "json", cwd=tags.repo.root).stdout)
    assert [(v["version"], v["status"], v["rollout"]) for v in listed] == [
        (2, "good", {"state": "rolling", "percent": 25}),
        (1, "current", None),
    ]
    table = run_cfgtool("versions", cwd=tags.repo.root).stdout
    assert "good (rollout: rolling at 25%)" in table


def hand_made(tags: Tags, name: str, message: str, date: str = "2026-01-20T10:00:00+00:00") -> None:
    """A tag pushed by hand with any message (read from a file: no argument is that long) and tagger date."""
    path = tags.repo.root.parent / "message.txt"
    path.write_text(message)
    git_at(tags.repo, date, "tag", "-a", name, tags.commit, "-F", str(path))


@pytest.mark.parametrize(
    ("name", "message", "date"),
    [
        ("config/rollout/v2/2", "step\n\ncfgtool-metadata: " + "[" * 100_000, "2026-01-20T10:00:00+00:00"),
        ("config/v3", "v3\n\ncfgtool-metadata: " + '{"a":' * 100_000, "2026-01-20T10:00:00+00:00"),
        ("config/rollout/v2/2", format_message("step", {"action": "step", "percent": 100}), "@253402300700 +0000"),
    ],
    ids=["deep step metadata", "deep version metadata", "a step dated in the year 9999"],
)
def test_hostile_tags_are_read_without_a_crash(tags: Tags, run_cfgtool, name: str, message: str, date: str) -> None:  # type: ignore[no-untyped-def]
    tags.version(1)
    tags.version(2, PLAN)
    tags.step(2, 1, "step", 25)
    hand_made(tags, name, message, date)
    for args in (("versions",), ("rollout", "status"), ("rollout", "status", "--format", "json")):
        done = run_cfgtool(*args, cwd=tags.repo.root)
        assert done.returncode == 0, done.stderr
    chosen = tags.selection()
    if name == "config/v3":  # a version tag whose metadata cannot be read has no plan: it went out to everyone
        assert (chosen.stable, chosen.rollouts[2].state) == (3, "superseded")
    else:  # a step tag that cannot be read changes nothing; one with an unreadable date steps at once
        assert (chosen.stable, chosen.candidate.version) == (1, 2)
