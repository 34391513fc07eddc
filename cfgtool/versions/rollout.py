"""Version selection under staged rollouts (docs/rollout.md): which version each reader gets, from the tags alone.

A version published under a rollout plan carries the plan and a random salt in its tag's metadata. Each step of its
rollout is a tag `config/rollout/vN/<seq>`; an abort is its rollback marker. From these, every reader computes the
same answer: the server, the git-backed client, the Spark loader, the controller. Nothing here reads a clock.

- The **stable** version S is the highest good version that finished: it went out without a plan, or its rollout
  is `done`. With none, the lowest good version counts (nothing older to fall back to).
- The **candidate** C is the lowest good, unfinished version above S. It reaches the cohort of its current step.
  Any unfinished version above C waits for it. One published without a plan above C supersedes it.
- An instance is in C's cohort at `p` percent when `bucket(store, C, salt, instance) < p * 100`. The bucket hashes
  the instance's cohort id: its id up to the first `:`, so a restarted process stays in its cohort.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from cfgtool.store.stores import store_name
from cfgtool.versions.tags import History, Tag, Version

State = Literal["waiting", "rolling", "paused", "baking", "done", "rolled_back", "superseded"]
Action = Literal["step", "pause", "resume", "done"]
ACTIONS: tuple[Action, ...] = ("step", "pause", "resume", "done")
BUCKETS = 10_000  # a percent is 100 buckets
MAX_SALT = 64  # characters: publish writes 16 hex digits, and every reader hashes the salt once per instance it places


def cohort_id(instance: str) -> str:
    """The part of an instance id that picks its cohort: up to the first `:` (the host), else the whole id."""
    return instance.partition(":")[0]


def bucket(store: str, n: int, salt: str, instance: str) -> int:
    """The instance's bucket in [0, 10000) for version N of `store`: the same on every machine."""
    digest = hashlib.sha256(f"{store}:{n}:{salt}:{cohort_id(instance)}".encode()).hexdigest()
    return int(digest[:8], 16) % BUCKETS


def admitted(store: str, n: int, salt: str, instance: str | None, percent: int) -> bool:
    """Whether the instance reads version N at `percent`. A reader without an id is admitted only at 100."""
    if percent >= 100:
        return True
    return instance is not None and bucket(store, n, salt, instance) < percent * (BUCKETS // 100)


def plan_steps(plan: object) -> tuple[int, ...] | None:
    """The steps of a plan as its tag records it: percents strictly increasing, ending at 100. None: not a plan."""
    steps = plan.get("steps") if isinstance(plan, Mapping) else None
    if not isinstance(steps, list) or not steps or steps[-1] != 100:
        return None
    if not all(type(p) is int and 0 < p <= 100 for p in steps):
        return None
    return tuple(steps) if all(a < b for a, b in itertools.pairwise(steps)) else None


@dataclass(frozen=True)
class RolloutEvent:
    """One step tag of a rollout: what was done, at which percent, by whom, when, why, and the gates' evidence."""

    seq: int
    action: Action
    percent: int
    by: str
    date: datetime
    reason: str | None
    evidence: tuple[Mapping[str, Any], ...]
    tag: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "action": self.action,
            "percent": self.percent,
            "by": self.by,
            "date": self.date.isoformat(),
            "reason": self.reason,
            "evidence": [dict(e) for e in self.evidence],
            "tag": self.tag,
        }


@dataclass(frozen=True)
class Rollout:
    """One version under a plan, as its tags say. `stages` are the (percent, since) it went through, in order."""

    store: str
    version: int
    salt: str
    plan: Mapping[str, Any]
    steps: tuple[int, ...]
    events: tuple[RolloutEvent, ...]
    state: State
    started: datetime | None  # when its first step began (None: it waits)
    stages: tuple[tuple[int, datetime], ...] = field(default=())

    @property
    def percent(self) -> int:
        """The share of instances it reaches now (0 while it waits)."""
        return self.stages[-1][0] if self.stages else 0

    @property
    def step(self) -> int:
        """The index of the current step in `steps` (0 while it waits)."""
        return self.steps.index(self.percent) if self.percent in self.steps else 0

    @property
    def since(self) -> datetime | None:
        """When the current step began."""
        return self.stages[-1][1] if self.stages else None

    def admits(self, instance: str | None) -> bool:
        """Whether the instance is in the cohort of the current step."""
        return bool(self.stages) and admitted(self.store, self.version, self.salt, instance, self.percent)

    def joined(self, instance: str | None) -> datetime | None:
        """When the instance entered the cohort (None: it has not)."""
        for percent, since in self.stages:
            if admitted(self.store, self.version, self.salt, instance, percent):
                return since
        return None

    def to_json(self) -> dict[str, Any]:
        """The short form the versions list shows."""
        return {"state": self.state, "percent": self.percent}


@dataclass(frozen=True)
class Selection:
    """One store's version selection: the stable version, the candidate rolling out, and every planned version."""

    store: str
    stable: int | None
    candidate: Rollout | None
    rollouts: Mapping[int, Rollout]
    dates: Mapping[int, datetime]  # every good version's tag date

    def version_for(self, instance: str | None) -> int | None:
        """The version the instance reads as `current` (None: no version is good)."""
        c = self.candidate
        return c.version if c is not None and c.admits(instance) else self.stable

    @property
    def current(self) -> int | None:
        """What a reader without an instance id reads."""
        return self.version_for(None)

    def joined(self, n: int, instance: str | None) -> datetime | None:
        """When version N became a version the instance may read as current (None: not yet, or not a good
        version). A version without a rollout: its tag date."""
        rollout = self.rollouts.get(n)
        return self.dates.get(n) if rollout is None else rollout.joined(instance)

    def next_seq(self, n: int) -> int:
        """The sequence number the next step tag of version N takes."""
        rollout = self.rollouts.get(n)
        return max((e.seq for e in rollout.events), default=0) + 1 if rollout is not None else 1


def selection(known: History, store: str | None = None) -> Selection:
    """The version selection of `known`'s store from its tags. `store` is its name as URLs spell it (default: as
    its tags name it), which the cohorts hash."""
    if store is None:
        store = store_name(known.scheme.name, known.scheme.path or "")
    good = [n for n in known.numbers if not known.is_rolled_back(n)]
    planned: dict[int, tuple[str, Mapping[str, Any], tuple[int, ...]]] = {}
    done: dict[int, datetime] = {}
    events: dict[int, tuple[RolloutEvent, ...]] = {}
    for n in known.numbers:
        found = _planned(known.tag(n))
        if found is not None:
            planned[n] = found
            events[n] = tuple(_events(known.rollout_tags(n)))
            first_done = [e.date for e in events[n] if e.action == "done"]
            if first_done:
                done[n] = first_done[0]
    finished = [n for n in good if n not in planned or n in done]
    stable = max(finished) if finished else min(good, default=None)
    waiting = [n for n in good if stable is not None and n > stable and n not in finished]
    candidate_n = waiting[0] if waiting else None
    ended = [*done.items(), *((n, known.markers[n].date) for n in planned if known.is_rolled_back(n))]
    rollouts: dict[int, Rollout] = {}
    for n, (salt, plan, steps) in planned.items():
        if n == stable and n not in done:
            continue  # the first good version: nothing older to fall back to, so it reached everyone
        date = known.tag(n).date
        if n == candidate_n:  # it waited for the versions before it to end
            date = max([date, *(d for k, d in ended if k < n)])
        waits = n in waiting and n != candidate_n
        stages = () if waits else _stages(steps, date, events[n])
        state = _state(n, known, done, stable, waits, stages, events[n])
        rollouts[n] = Rollout(store, n, salt, plan, steps, events[n], state, None if waits else date, stages)
    dates = {n: known.tag(n).date for n in good}
    candidate = rollouts.get(candidate_n) if candidate_n is not None else None
    return Selection(store, stable, candidate, rollouts, dates)


def _planned(tag: Tag) -> tuple[str, Mapping[str, Any], tuple[int, ...]] | None:
    """(salt, plan, steps) when the version's tag says it rolls out by a plan. A plan the tag does not spell right
    (a tag made by hand), or a salt over MAX_SALT characters, counts as none: the version goes out as it would
    without one."""
    found = tag.metadata.get("rollout")
    if not isinstance(found, Mapping):
        return None
    salt, plan = found.get("salt"), found.get("plan")
    steps = plan_steps(plan)
    if not isinstance(salt, str) or not 0 < len(salt) <= MAX_SALT or steps is None or not isinstance(plan, Mapping):
        return None
    return salt, plan, steps


def _events(tags: Sequence[Tag]) -> list[RolloutEvent]:
    """The step tags that say what they did; others (made by hand, damaged) are skipped."""
    out = []
    for tag in tags:
        meta = tag.metadata
        action, percent = meta.get("action"), meta.get("percent")
        seq = int(tag.name.rpartition("/")[2])
        if action not in ACTIONS or type(percent) is not int:
            continue
        by, reason, evidence = meta.get("by"), meta.get("reason"), meta.get("evidence")
        shown = tuple(e for e in evidence if isinstance(e, Mapping)) if isinstance(evidence, list) else ()
        who = by if isinstance(by, str) and by else (tag.tagger or "unknown")
        why = reason if isinstance(reason, str) else None
        out.append(RolloutEvent(seq, action, percent, who, tag.date, why, shown, tag.name))
    return out


Stages = tuple[tuple[int, datetime], ...]


def _stages(steps: tuple[int, ...], started: datetime, events: Sequence[RolloutEvent]) -> Stages:
    """The percents the version went through and when each began. A step only ever grows the share: a step tag
    at or below the current percent changes nothing, and one between two steps counts as the lower of them."""
    stages = [(steps[0], started)]
    for e in events:
        if e.action in ("step", "done"):
            percent = 100 if e.action == "done" else max((p for p in steps if p <= e.percent), default=0)
            if percent > stages[-1][0]:
                stages.append((percent, max(e.date, started)))
    return tuple(stages)


def _state(
    n: int,
    known: History,
    done: Mapping[int, datetime],
    stable: int | None,
    waits: bool,
    stages: Sequence[tuple[int, datetime]],
    events: Sequence[RolloutEvent],
) -> State:
    """The state the tags say; `holding` (gates inconclusive) is the controller's to say, not the tags'."""
    if known.is_rolled_back(n):
        return "rolled_back"
    if n in done:
        return "done"
    if stable is not None and n < stable:
        return "superseded"
    if waits:
        return "waiting"
    held = [e.action for e in events if e.action in ("pause", "resume")]
    if held and held[-1] == "pause":
        return "paused"
    return "baking" if stages and stages[-1][0] >= 100 else "rolling"


def listing(known: History, store: str | None = None, *, all: bool = False) -> list[Version]:
    """`known.listing(...)` with each version's rollout, and `current` the version readers without an id get (the
    stable one while another rolls out)."""
    chosen = selection(known, store)
    out = []
    for v in known.listing(all=all):
        rollout = chosen.rollouts.get(v.version)
        status = v.status
        if v.good:
            status = "current" if v.version == chosen.current else "good"
        if rollout is None and status == v.status:
            out.append(v)  # as it was: a copy of each of 10,000 versions would cost more than reading them
        else:
            out.append(replace(v, status=status, rollout=rollout.to_json() if rollout is not None else None))
    return out
