"""Keystone timelines under staged rollouts (docs/serving.md "Staged rollouts"): what each instance may see as
`current`, and from when.

The versions instance `i` may see are the servable, good versions, each dated when it became visible to `i`
(`Selection.joined`). A version without a rollout keeps its tag date. A rolling one takes the date of the step that
admitted `i`, and is left out while it has not. Keystone's spread (`timeline.visible`) then runs from that date, so
it applies inside the cohort, and a rollback still applies at once.

Instances fall in few classes: for each *live* rollout, the first of its stages that admits them, or none. Each
class gets one timeline, built at refresh. An instance's class costs one sha256 per live rollout, remembered per
cohort id. A rollout is live while instances can see it differently. It is not live once it reached everyone longer
than `T` ago (every checkpoint is past each instance's date), nor below a version everyone has seen for `T`, nor
once rolled back. Without a live rollout every reader shares one timeline, the same as without rollouts.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass, field

from cfgtool.serve.timeline import Published, window
from cfgtool.versions.rollout import BUCKETS, Rollout, Selection, bucket

INSTANCE = re.compile(rb"[A-Za-z0-9][!-.0-~]{0,199}")  # the client's rule (cfgtool.client.http.INSTANCE), on bytes
MEMO = 65_536  # cohort ids whose class is remembered; past it the memo starts again (hostile ids cannot grow it)
MAX_CLASSES = 4096  # timelines one refresh builds (`_bounded`)
Class = tuple[int, ...]  # per live rollout, the index of the first stage that admits the instance (len: none)
Timeline = tuple[Published, ...]


def reader(instance: bytes | None) -> str | None:
    """The cohort id of a `Cfgtool-Instance` header's value (what the cohorts hash), None when there is none or
    it is not an instance id's: such a reader counts as one without an id."""
    if instance is None:
        return None
    cohort = instance.partition(b":")[0]
    return cohort.decode("ascii") if INSTANCE.fullmatch(cohort) else None


@dataclass(frozen=True)
class Live:
    """A rollout instances see differently: its version, salt, and stages as (bucket bound, date in Unix seconds)."""

    version: int
    salt: str
    stages: tuple[tuple[int, float], ...]

    def first(self, found: int) -> int:
        """The index of the first stage that admits bucket `found` (len(stages): none)."""
        return next((i for i, (bound, _) in enumerate(self.stages) if found < bound), len(self.stages))


@dataclass
class Memo:
    """The classes (indexes into `Cohorts.timelines`) of the cohort ids seen so far. Valid while the live rollouts
    and their stages stay the same, so it is kept from one refresh to the next."""

    signature: tuple[Live, ...]
    classes: dict[bytes, int] = field(default_factory=dict)


class Cohorts:
    """The timelines of one refresh while rollouts are live, one per class, and each class's current version."""

    __slots__ = ("_index", "anonymous", "currents", "memo", "store", "timelines")

    def __init__(self, store: str, memo: Memo, classes: list[Class], anonymous: Class, timelines: list[Timeline]):
        self.store = store
        self.memo = memo
        self._index = {c: i for i, c in enumerate(classes)}
        self.anonymous = self._index[anonymous]  # the class of a reader without an instance id
        self.timelines = tuple(timelines)
        self.currents = tuple(max((p.version for p in t if p.rolled_back_at is None), default=None) for t in timelines)

    def of(self, instance: bytes | None) -> int:
        """The class of the `Cfgtool-Instance` header's value. None, or an id whose cohort part is not an instance
        id, is a reader without an id."""
        if instance is None:
            return self.anonymous
        cohort = instance.partition(b":")[0]
        found = self.memo.classes.get(cohort)
        return self._classify(cohort) if found is None else found

    def _classify(self, cohort: bytes) -> int:
        text = reader(cohort)
        if text is None:
            return self.anonymous
        found = self._index[
            tuple(live.first(bucket(self.store, live.version, live.salt, text)) for live in self.memo.signature)
        ]
        classes = self.memo.classes
        if len(classes) >= MEMO:
            classes.clear()
        classes[cohort] = found
        return found

    def published(self, instance: bytes | None) -> Timeline:
        """The timeline the instance reads `current` by (the hot path: `of`, written out)."""
        if instance is None:
            return self.timelines[self.anonymous]
        cohort = instance.partition(b":")[0]
        found = self.memo.classes.get(cohort)
        return self.timelines[self._classify(cohort) if found is None else found]

    def current(self, instance: bytes | None) -> int | None:
        """The newest good version the instance may see (the name `current`, the change feed's `current`)."""
        return self.currents[self.of(instance)]

    def window(self, now: float, cache_time: int) -> set[int]:
        """Every version some key of some instance can see from `now` until `now + T` (`timeline.window`)."""
        return {n for published in self.timelines for n in window(published, now, cache_time)}


def cohorts(
    chosen: Selection, servable: tuple[Published, ...], now: float, cache_time: int, memo: Memo | None = None
) -> tuple[tuple[Published, ...], Cohorts | None]:
    """The timeline of readers without an instance id, and the cohorts' timelines (None: no rollout is live, and
    every reader reads the first). `servable` are the servable versions at their tag dates, newest first. `memo` is
    the last refresh's, kept when its rollouts are still the live ones."""
    settled = now - cache_time if cache_time > 0 else math.inf  # a date at or before it is past every checkpoint
    everyone = {n: _everyone(r, settled) for n, r in chosen.rollouts.items()}
    seen_by_all = [everyone.get(p.version, p.date) for p in servable]  # None: not by every instance alike
    floor = max(
        (
            p.version
            for p, d in zip(servable, seen_by_all, strict=True)
            if p.rolled_back_at is None and d is not None and d <= settled
        ),
        default=0,
    )  # a version every instance has seen for T: nothing below it is visible any more
    fixed: list[Published | Live] = []
    for p in servable:
        rollout = chosen.rollouts.get(p.version)
        if rollout is None or (p.rolled_back_at is not None and p.rolled_back_at <= now):
            fixed.append(p)  # no rollout (its tag date), or rolled back: out for good
        elif p.version < floor or not rollout.stages:
            continue  # hidden below a settled version, or waiting for the one before it
        elif (date := everyone[p.version]) is not None:
            fixed.append(Published(p.version, date, p.rolled_back_at))
        else:
            fixed.append(Live(p.version, rollout.salt, _bounds(rollout)))
    fixed = _bounded(fixed, {p.version: p.rolled_back_at for p in servable})
    live = tuple(x for x in fixed if isinstance(x, Live))
    anonymous = tuple(next((i for i, (b, _) in enumerate(x.stages) if b >= BUCKETS), len(x.stages)) for x in live)
    classes = list(itertools.product(*(range(len(x.stages) + 1) for x in live)))
    lines = [_timeline(fixed, live, c, servable) for c in classes]
    if not live:
        return lines[0], None
    kept = memo if memo is not None and memo.signature == live else Memo(live)
    found = Cohorts(chosen.store, kept, classes, anonymous, lines)
    return found.timelines[found.anonymous], found


def _classes(fixed: list[Published | Live]) -> int:
    return math.prod(len(x.stages) + 1 for x in fixed if isinstance(x, Live))


def _bounded(fixed: list[Published | Live], marker: dict[int, float | None]) -> list[Published | Live]:
    """`fixed` with at most MAX_CLASSES classes. Step tags can make more: three versions stepped through 100 steps
    each within T are a million. Past the bound, who reads a version stays exact and only Keystone's spread
    shortens: a live rollout that reached 100% counts for everyone from its first step, then adjacent stages merge
    into the earlier one, the closest in date first (an instance sees the version from an earlier date, never a
    later one). Rollouts still below 100% with one stage each beyond that drop out, the oldest first: their
    cohorts read the good version below until everyone reads the newer one."""
    out = list(fixed)
    if _classes(out) <= MAX_CLASSES:
        return out
    out = [
        Published(x.version, x.stages[0][1], marker[x.version]) if isinstance(x, Live) and x.stages[-1][0] >= BUCKETS
        else x
        for x in out
    ]  # fmt: skip
    while _classes(out) > MAX_CLASSES:
        live = [(i, x) for i, x in enumerate(out) if isinstance(x, Live)]
        i, x = max(live, key=lambda found: len(found[1].stages))
        if len(x.stages) == 1:
            del out[max(i for i, _ in live)]  # `fixed` is newest first: the oldest live rollout is the last
            continue
        j = min(range(len(x.stages) - 1), key=lambda k: x.stages[k + 1][1] - x.stages[k][1])
        merged = (x.stages[j + 1][0], x.stages[j][1])
        out[i] = Live(x.version, x.salt, (*x.stages[:j], merged, *x.stages[j + 2 :]))
    return out


def _everyone(rollout: Rollout, settled: float) -> float | None:
    """The date that stands for every instance's joined date, when all are alike for the timeline: the first stage
    reached everyone, or every stage began at or before `settled` and the last reached everyone. None: they differ."""
    if not rollout.stages:
        return None
    if rollout.stages[0][0] >= 100:
        return rollout.stages[0][1].timestamp()
    last = max(d.timestamp() for _, d in rollout.stages)
    return last if rollout.stages[-1][0] >= 100 and last <= settled else None


def _bounds(rollout: Rollout) -> tuple[tuple[int, float], ...]:
    return tuple((percent * (BUCKETS // 100), since.timestamp()) for percent, since in rollout.stages)


def _timeline(
    fixed: list[Published | Live], live: tuple[Live, ...], cls: Class, servable: tuple[Published, ...]
) -> tuple[Published, ...]:
    """The timeline of class `cls`: each live version dated by the stage that admitted the class, or left out."""
    stage = dict(zip((x.version for x in live), cls, strict=True))
    marker = {p.version: p.rolled_back_at for p in servable}
    out = []
    for x in fixed:
        if isinstance(x, Published):
            out.append(x)
        elif stage[x.version] < len(x.stages):
            out.append(Published(x.version, x.stages[stage[x.version]][1], marker[x.version]))
    return tuple(out)
