"""The status of a staged rollout from real tags in a real repository (docs/rollout.md "Status")."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

import pytest

from cfgtool.errors import SourceError
from cfgtool.rollout.gates import GateResult, ServerReport
from cfgtool.rollout.status import NoRollout, default_version, status, statuses
from cfgtool.versions.rollout import admitted
from cfgtool.versions.tags import StoreTags, read_history
from tests.conftest import GitRepo
from tests.versions.test_rollout import HOSTS, PLAN, SALT, Tags

EVIDENCE = [{"gate": "consumers", "result": "pass", "detail": "3 of 3 instances failed --check on version 2: none"}]


class Steps(Tags):
    """`Tags` with step tags that carry who, why and the gates' evidence."""

    def event(self, n: int, seq: int, action: str, percent: int, **more: Any) -> None:
        meta = {"action": action, "percent": percent, "by": "controller", "evidence": [], "store": "store", **more}
        self._tag(f"config/rollout/v{n}/{seq}", meta)

    def status(self, n: int, **kwargs: Any) -> dict[str, Any]:
        known = read_history(self.repo.root, StoreTags("store", None))
        return status(known, self.selection(), n, **kwargs)


@pytest.fixture
def steps(repo: GitRepo) -> Steps:
    return Steps(repo)


def test_the_status_of_a_rolling_version_has_every_field(steps: Steps) -> None:
    steps.version(1)
    steps.version(2, PLAN)
    steps.event(2, 1, "step", 25, evidence=EVIDENCE)
    since = steps.selection().rollouts[2].since
    assert since is not None
    found = steps.status(2, now=since + timedelta(minutes=1))
    assert json.loads(json.dumps(found)) == found  # plain JSON
    assert {k: found[k] for k in ("store", "version", "stable", "state", "percent", "step", "steps", "cohort")} == {
        "store": "store", "version": 2, "stable": 1, "state": "rolling", "percent": 25, "step": 1,
        "steps": [5, 25, 100], "cohort": None,
    }  # fmt: skip
    assert found["since"] == since.isoformat() and found["gates"] == EVIDENCE
    assert found["why"] == f"next step (100%) at {(since + timedelta(minutes=10)).isoformat()} if the gates pass"
    assert [(e["seq"], e["action"], e["percent"]) for e in found["events"]] == [(1, "step", 25)]
    late = steps.status(2, now=since + timedelta(days=1))
    assert late["why"] == "next step (100%) at the controller's next round if the gates pass"


def test_fresh_inconclusive_gates_hold_and_say_why(steps: Steps) -> None:
    steps.version(1)
    steps.version(2, PLAN)
    fresh = [GateResult("consumers", "pass", "ok"), GateResult("prometheus", "inconclusive", "up: no data")]
    found = steps.status(2, gates=fresh)
    assert found["state"] == "holding" and found["why"] == "holds: gates inconclusive: prometheus: up: no data"
    assert found["gates"] == [g.to_json() for g in fresh]
    assert steps.status(2, gates=fresh[:1])["state"] == "rolling"


def test_the_cohort_counts_sum_the_servers_reports_of_the_cohort_only(steps: Steps) -> None:
    steps.version(1)
    steps.version(2, PLAN)
    inside = [h for h in HOSTS if admitted("store", 2, SALT, h, 5)][:3]
    outside = next(h for h in HOSTS if not admitted("store", 2, SALT, h, 5))
    one = {"instances": [
        {"id": f"{inside[0]}:1", "version": 2, "last_contact": "2026-01-05T10:00:00Z"},
        {"id": f"{inside[1]}:1", "version": 1, "last_contact": "2026-01-05T10:00:00Z"},
        {"id": f"{outside}:1", "version": 2, "last_contact": "2026-01-05T10:00:00Z"},
    ]}  # fmt: skip
    two = {"instances": [
        {"id": f"{inside[2]}:1", "version": None, "last_contact": "2026-01-05T10:00:00Z",
         "last_check": {"version": 2, "ok": False, "at": "2026-01-05T10:00:00Z"}},
    ]}  # fmt: skip
    reports = [ServerReport("http://one", one), ServerReport("http://two", two)]
    assert steps.status(2, reports=reports)["cohort"] == {"instances": 3, "applied": 2, "failed": 1}


def test_why_a_rollout_pauses_waits_bakes_or_ended(steps: Steps) -> None:
    steps.version(1)
    steps.version(2, PLAN)
    steps.version(3, PLAN, salt="fedcba9876543210")
    steps.event(2, 1, "pause", 5, by="User:alice", reason="watching the error rate")
    paused = steps.status(2)
    assert paused["state"] == "paused" and paused["why"].startswith("paused by User:alice at 2026-01-")
    assert paused["why"].endswith(": watching the error rate")
    assert steps.status(3)["state"] == "waiting" and steps.status(3)["why"] == "waits for version 2 to finish"
    steps.event(2, 2, "resume", 5)
    steps.event(2, 3, "step", 100)
    since = steps.selection().rollouts[2].since
    assert since is not None
    baking = steps.status(2, now=since)
    assert baking["state"] == "baking" and baking["why"] == f"bakes until {(since + timedelta(minutes=10)).isoformat()}"
    steps.rollback(2)
    ended = steps.status(2)
    assert ended["state"] == "rolled_back" and ended["why"].endswith(": auto: consumers")
    assert default_version(steps.selection()) == 3  # the candidate now


def test_a_version_without_a_rollout_says_why(steps: Steps) -> None:
    steps.version(1, PLAN)
    with pytest.raises(NoRollout, match="first version under a plan"):
        steps.status(1)
    with pytest.raises(NoRollout, match="no version of store store has a staged rollout"):
        default_version(steps.selection())
    steps.version(2)
    steps._tag("config/v3", {"kind": "version", "version": 3, "store": "store", "rollout": {"skipped": "restore"}})
    with pytest.raises(NoRollout, match="no rollout plan"):
        steps.status(2)
    with pytest.raises(NoRollout, match="restores an earlier version"):
        steps.status(3)
    with pytest.raises(SourceError, match="version 9 does not exist"):
        steps.status(9)
    old = steps.status(1)  # the first version rolls out once another one can be fallen back to
    assert old["state"] == "superseded" and old["why"].startswith("superseded by version 3, published without")


def test_a_listing_counts_only_the_cohort_rollout_status_shows(steps: Steps) -> None:
    """`GET /v1/{store}/rollouts` lists every rollout the store ever had. Counting each one's cohort hashed every
    instance the server heard from once per rollout: a request cost more with each rollout, seconds per request
    with 100,000 instances and ten rolled back versions, for anyone who may describe the store."""
    steps.version(1)
    for n in range(2, 12):
        steps.version(n, PLAN)
        steps.rollback(n)
    steps.version(12, PLAN)
    heard = {"instances": [{"id": f"host-{i}:1", "version": 12} for i in range(100_000)]}
    known = read_history(steps.repo.root, StoreTags("store", None))
    started = time.process_time()
    found = statuses(known, steps.selection(), reports=[ServerReport("this server", heard)])
    assert time.process_time() - started < 3
    assert [s["version"] for s in found] == list(range(12, 1, -1))
    assert found[0]["cohort"]["applied"] == found[0]["cohort"]["instances"] > 1000  # the candidate's, at 5%
    assert [s["cohort"] for s in found[1:]] == [None] * 10
