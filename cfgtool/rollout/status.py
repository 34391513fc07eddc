"""The status of a staged rollout (docs/rollout.md "Status"): one object that `rollout status`, the controller and
`GET /v1/{store}/rollouts` all show.

Its `state` is what the tags say (`waiting`, `rolling`, `paused`, `baking`, `done`, `rolled_back`, `superseded`),
except `holding`: a rolling or baking version whose last round of gates was inconclusive. Only fresh gate results
say that; the gates recorded in a step tag are the evidence that let the rollout take that step. `why` says in one
sentence what the rollout waits for.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cfgtool.errors import CfgtoolError
from cfgtool.rollout.gates import GateResult, ServerReport, cohort
from cfgtool.store.rollout_plan import DEFAULT_BAKE, DEFAULT_STEP_TIME, RolloutPlan
from cfgtool.versions.rollout import Rollout, RolloutEvent, Selection
from cfgtool.versions.tags import History

GATE_FIELDS = ("gate", "result", "detail")


class NoRollout(CfgtoolError):
    """The version has no staged rollout: it went out without a plan, or there is none to show (exit 1)."""


def status(
    known: History,
    chosen: Selection,
    n: int,
    *,
    reports: Sequence[ServerReport] | None = None,
    gates: Sequence[GateResult] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The status of version N's rollout from the store's tags (`known`) and their selection (`chosen`).

    `reports` are the servers' consumers reports, summed for the cohort counts (None: the counts are null).
    `gates` are fresh gate results (None: the evidence of the newest step tag). `now` decides whether the
    step time or the bake has elapsed (default: the clock). NoRollout when N has no rollout; VersionNotFound
    when there is no version N."""
    rollout = rollout_of(known, chosen, n)
    judged = [g.to_json() for g in gates] if gates is not None else _recorded(rollout.events)
    state: str = rollout.state
    held = [g for g in judged if g.get("result") == "inconclusive"]
    if gates is not None and held and state in ("rolling", "baking"):
        state = "holding"
    counts = None
    if reports is not None:
        found = cohort(reports, n, rollout.admits)
        counts = {"instances": found.instances, "applied": found.applied, "failed": found.failed}
    return {
        "store": chosen.store,
        "version": n,
        "stable": chosen.stable,
        "state": state,
        "percent": rollout.percent,
        "step": rollout.step,
        "steps": list(rollout.steps),
        "since": _when(rollout.since),
        "cohort": counts,
        "gates": judged,
        "why": _why(known, chosen, rollout, state, held, now or datetime.now(UTC)),
        "events": [e.to_json() for e in rollout.events],
    }


def statuses(
    known: History, chosen: Selection, *, reports: Sequence[ServerReport] | None = None, now: datetime | None = None
) -> list[dict[str, Any]]:
    """The status of every version with a rollout, newest first (`GET /v1/{store}/rollouts`). The cohort is counted
    for the version `rollout status` shows by default only (`default_version`): counting hashes every instance, and
    a store's rollouts only grow in number, so counting each would cost a request more with every one."""
    if not chosen.rollouts:
        return []
    counted = default_version(chosen)
    return [
        status(known, chosen, n, reports=reports if n == counted else None, now=now)
        for n in sorted(chosen.rollouts, reverse=True)
    ]


def rollout_of(known: History, chosen: Selection, n: int) -> Rollout:
    """Version N's rollout; NoRollout saying why it has none (VersionNotFound when there is no version N)."""
    found = chosen.rollouts.get(n)
    if found is not None:
        return found
    version = known.require(n)
    said = version.metadata.get("rollout")
    skipped = said.get("skipped") if isinstance(said, Mapping) else None
    if skipped == "all-at-once":
        why = "it was published with --all-at-once"
    elif skipped == "restore":
        why = "it restores an earlier version, and going back never waits for a plan"
    elif isinstance(said, Mapping) and "plan" in said and n == chosen.stable:
        why = "it is the store's first version under a plan: with nothing to fall back to, it went to everyone"
    else:
        why = "its rules have no rollout plan"
    raise NoRollout(
        f"version {n} has no staged rollout: {why}",
        hint="`cfgtool rollout status` shows the version rolling out now; `cfgtool versions` lists them all",
    )


def default_version(chosen: Selection) -> int:
    """The version `rollout status` shows without one named: the candidate, else the newest with a rollout."""
    if chosen.candidate is not None:
        return chosen.candidate.version
    if chosen.rollouts:
        return max(chosen.rollouts)
    raise NoRollout(
        f"no version of store {chosen.store} has a staged rollout",
        hint="a version rolls out by stages when its _CONFIG_STORE has a `rollout` plan (docs/rollout.md)",
    )


def cli_command(text: str, store: str | Path) -> str:
    """`cfgtool TEXT` to copy, with `--store DIR` for a store other than the default `store/`."""
    where = "" if str(store).strip("/") in ("", "store") else f" --store {shlex.quote(str(store))}"
    return f"cfgtool {text}{where}"


def plan_of(rollout: Rollout) -> RolloutPlan:
    """The plan recorded in the version's tag; its defaults where a field does not read."""
    return RolloutPlan.from_json(rollout.plan) or RolloutPlan(rollout.steps, DEFAULT_STEP_TIME, DEFAULT_BAKE)


def _recorded(events: Sequence[RolloutEvent]) -> list[dict[str, Any]]:
    """The gates of the newest step tag that recorded any (an entry the tag does not spell right is left out)."""
    for event in reversed(events):
        found = [{k: g.get(k) for k in GATE_FIELDS} for g in event.evidence]
        if found:
            return [g for g in found if all(isinstance(v, str) for v in g.values())]
    return []


def _why(
    known: History, chosen: Selection, rollout: Rollout, state: str, held: Sequence[Mapping[str, Any]], now: datetime
) -> str | None:
    """One sentence on what the rollout waits for, or how it ended (None: done)."""
    if state == "rolled_back":
        marker = known.require(rollout.version).rolled_back
        return f"rolled back by {marker.by} at {_when(marker.date)}: {marker.reason}" if marker else "rolled back"
    if state == "waiting":
        first = chosen.candidate.version if chosen.candidate is not None else None
        return f"waits for version {first} to finish" if first is not None else "waits for the version before it"
    if state == "superseded":
        return f"superseded by version {chosen.stable}, published without a plan: its readers moved on to it"
    if state == "paused":
        pause = next(e for e in reversed(rollout.events) if e.action == "pause")
        return f"paused by {pause.by} at {_when(pause.date)}" + (f": {pause.reason}" if pause.reason else "")
    if state == "holding":
        return "holds: gates inconclusive: " + "; ".join(f"{g.get('gate')}: {g.get('detail')}" for g in held)
    if state not in ("rolling", "baking") or rollout.since is None:
        return None
    plan = plan_of(rollout)
    if state == "baking":
        until = rollout.since + timedelta(seconds=plan.bake)
        if now < until:
            return f"bakes until {_when(until)}"
        return "baked: done at the controller's next round if the gates pass"
    due = rollout.since + timedelta(seconds=plan.step_time)
    upcoming = rollout.steps[rollout.step + 1] if rollout.step + 1 < len(rollout.steps) else 100
    if now < due:
        return f"next step ({upcoming}%) at {_when(due)} if the gates pass"
    return f"next step ({upcoming}%) at the controller's next round if the gates pass"


def _when(date: datetime | None) -> str | None:
    return date.isoformat(timespec="seconds") if date is not None else None


__all__ = ["NoRollout", "cli_command", "default_version", "plan_of", "rollout_of", "status", "statuses"]
