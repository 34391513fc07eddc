"""What readers saw (docs/versions.md#what-changed-is-what-readers-saw). That is every publish, rollback and
cancelled rollback of a store, in the order they happened. Each comes with the version new readers had just before
and just after it.

A version's changes are counted against the version readers had when it was published (`seen_before`). They are never
counted against a rolled-back version readers no longer read. After version 3 is rolled back and version 4 reverts
it, 4 changed what 2 had. A rollback is a step of its own (readers went from 3 back to 2), and so is the cancelling
of one. `cfgtool audit --key` takes its "previous version" from here. So do the console's timeline, diff links and
key history, and the server's change feed.

The order comes from the tags alone, so every reader of the same tags agrees. Version N is published after N - 1. A
rollback or restored marker records the highest version that existed when it was written (`after` in its metadata).
So it comes after that version's publish and before the next one's. It also records how many markers existed then
(`markers`). That orders markers between the same two publishes; then their dates do. A marker made by hand, without
these records, comes after every version tagged before it.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from cfgtool.versions.tags import History, Tag

StepKind = Literal["publish", "rollback", "restore"]


@dataclass(frozen=True)
class Step:
    """One event readers could notice: `version` published, rolled back or restored at `date`. Also the version new
    readers had just `before` and just `after` it (None: none was good). A step that changes nothing for readers (the
    rollback of a version that was not current) has `before == after`."""

    kind: StepKind
    version: int
    date: datetime
    before: int | None
    after: int | None


def steps(known: History, skip: Collection[int] = ()) -> list[Step]:
    """Every publish, rollback and restore of `known`'s versions, oldest first. Versions in `skip` (ones a
    server never serves) are left out: no reader ever had them."""
    tags = known.tags
    numbers = [n for n in sorted(tags) if n not in skip]
    dated = _dated(known)
    order: list[tuple[int, int, int, datetime, int, StepKind]] = []  # (after, 0 / 1, markers before, date, N, kind)
    order += [(n, 0, 0, tags[n].date, n, "publish") for n in numbers]
    kept = set(numbers)
    markers: list[tuple[StepKind, Mapping[int, Tag]]] = [
        ("rollback", known.rollback_markers),
        ("restore", known.restorations),
    ]
    for kind, found in markers:
        for n, marker in found.items():
            if n in kept:
                earlier = marker.metadata.get("markers")  # how many markers existed when it was made
                count = earlier if isinstance(earlier, int) and not isinstance(earlier, bool) else 0
                order.append((marker_after(known, marker, n, dated), 1, count, marker.date, n, kind))
    order.sort(key=lambda item: (*item[:5], item[5] == "restore"))
    good: set[int] = set()
    heap: list[int] = []  # the good versions negated, and some that no longer are (dropped when on top)
    out: list[Step] = []
    current: int | None = None
    for _, _, _, date, n, kind in order:
        if kind == "rollback":
            good.discard(n)
        else:
            good.add(n)
            heapq.heappush(heap, -n)
        while heap and -heap[0] not in good:
            heapq.heappop(heap)
        before, current = current, -heap[0] if heap else None
        out.append(Step(kind, n, date, before, current))
    return out


def seen_before(known: History, skip: Collection[int] = ()) -> dict[int, int | None]:
    """Version N -> the version readers had when N was published (None: none), for every version not skipped. N's
    changes are counted against it."""
    return {s.version: s.before for s in steps(known, skip) if s.kind == "publish"}


def marker_after(known: History, marker: Tag, n: int, dated: _Dated | None = None) -> int:
    """The highest version published before `marker` (of version N, so at least N). That is the `after` its metadata
    records. For a marker made by hand, it is the highest version tagged before the marker's date. `dated` is
    `_dated(known)`, when already at hand."""
    after = marker.metadata.get("after")
    if not isinstance(after, int) or isinstance(after, bool):
        dates, highest = dated if dated is not None else _dated(known)
        i = bisect.bisect_left(dates, marker.date)
        after = highest[i - 1] if i else n
    return max(after, n)


_Dated = tuple[list[datetime], list[int]]


def _dated(known: History) -> _Dated:
    """The versions' dates, sorted, and the highest version tagged at or before each."""
    pairs = sorted((tag.date, n) for n, tag in known.tags.items())
    return [date for date, _ in pairs], list(itertools.accumulate((n for _, n in pairs), max))
