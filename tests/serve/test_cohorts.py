"""Each instance's Keystone timeline under staged rollouts: which versions it may see and from when, which rollouts
are live (instances see them differently), and the class memo kept across refreshes."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from cfgtool.serve.cohorts import MAX_CLASSES, cohorts
from cfgtool.serve.timeline import Published, last_checkpoint, visible
from cfgtool.versions.rollout import Rollout, Selection, admitted

NOW = 1_800_000_000.0
T = 60
SALT = "0123456789abcdef"
PLAN = {"steps": [5, 25, 100]}
IDS = [f"web-{i}" for i in range(200)]


def _at(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _rollout(n: int, stages: list[tuple[int, float]], state: str = "rolling") -> Rollout:
    started = _at(stages[0][1]) if stages else None
    return Rollout("s", n, SALT, PLAN, (5, 25, 100), (), state, started, tuple((p, _at(t)) for p, t in stages))  # type: ignore[arg-type]


def _selection(stable: int, rollouts: list[Rollout], candidate: int | None = None) -> Selection:
    found = {r.version: r for r in rollouts}
    return Selection("s", stable, found.get(candidate) if candidate else None, found, {})


def _servable(*versions: tuple[int, float, float | None]) -> tuple[Published, ...]:
    return tuple(Published(n, d, m) for n, d, m in sorted(versions, reverse=True))


def test_without_a_rollout_every_reader_shares_the_timeline_of_the_tags() -> None:
    servable = _servable((1, NOW - 900, None), (2, NOW - 30, None))
    published, live = cohorts(_selection(2, []), servable, NOW, T)
    assert published == servable and live is None


def test_a_rolling_version_is_dated_by_the_step_that_admitted_each_instance() -> None:
    rollout = _rollout(2, [(5, NOW - 600), (25, NOW - 20)])
    servable = _servable((1, NOW - 900, None), (2, NOW - 600, None))
    published, live = cohorts(_selection(1, [rollout], 2), servable, NOW, T)
    assert live is not None and [p.version for p in published] == [1]  # no id: only at 100%
    early = next(i for i in IDS if admitted("s", 2, SALT, i, 5))
    late = next(i for i in IDS if admitted("s", 2, SALT, i, 25) and not admitted("s", 2, SALT, i, 5))
    outside = next(i for i in IDS if not admitted("s", 2, SALT, i, 25))
    assert live.published(early.encode())[0] == Published(2, NOW - 600)
    assert live.published(f"{late}:42".encode())[0] == Published(2, NOW - 20)  # the host part picks the cohort
    assert [p.version for p in live.published(outside.encode())] == [1]
    assert (live.current(early.encode()), live.current(outside.encode()), live.current(None)) == (2, 1, 1)
    assert live.published(b"/not an id") == published  # not an instance id: a reader without one
    assert live.window(NOW, T) == {1, 2}
    key = "/data/x"  # the joining instance's key switches at its first checkpoint after the step, as for a publish
    assert visible(live.published(late.encode()), NOW, T, "s", key).version == (
        2 if last_checkpoint("s", key, NOW, T) >= NOW - 20 else 1
    )


def test_a_rollout_that_reached_everyone_longer_than_t_ago_is_not_live() -> None:
    servable = _servable((1, NOW - 900, None), (2, NOW - 600, None))
    settled = _rollout(2, [(5, NOW - 600), (100, NOW - 120)], "baking")
    published, live = cohorts(_selection(1, [settled], 2), servable, NOW, T)
    assert live is None and published[0] == Published(2, NOW - 120)
    recent = _rollout(2, [(5, NOW - 600), (100, NOW - 10)], "baking")
    assert cohorts(_selection(1, [recent], 2), servable, NOW, T)[1] is not None  # early members: at their own date
    assert cohorts(_selection(1, [recent], 2), servable, NOW, 0)[1] is None  # T = 0: dates do not matter


def test_waiting_superseded_and_rolled_back_versions() -> None:
    superseded = _rollout(2, [(5, NOW - 900)], "superseded")
    waiting = _rollout(4, [], "waiting")
    rolling = _rollout(3, [(5, NOW - 300)])
    servable = _servable((1, NOW - 1000, None), (2, NOW - 900, None), (3, NOW - 300, None), (4, NOW - 100, None))
    plain_over = cohorts(_selection(1, [superseded, rolling, waiting], 3), servable, NOW, T)
    assert plain_over[1] is not None and sorted(x.version for x in plain_over[1].memo.signature) == [2, 3]
    assert all(4 not in [p.version for p in t] for t in plain_over[1].timelines)  # waiting: nobody reads it
    after = _servable((1, NOW - 1000, None), (2, NOW - 900, None), (5, NOW - 120, None))
    published, live = cohorts(_selection(5, [superseded]), after, NOW, T)  # a plain version everyone has seen
    assert live is None and [p.version for p in published] == [5, 1]
    back = _servable((1, NOW - 1000, None), (3, NOW - 300, NOW - 5))
    published, live = cohorts(_selection(1, [rolling]), back, NOW, T)
    assert live is None and published[0] == Published(3, NOW - 300, NOW - 5)  # out for everyone, at once


def test_the_class_memo_is_kept_while_the_stages_stay_and_dropped_at_a_step() -> None:
    servable = _servable((1, NOW - 900, None), (2, NOW - 600, None))
    first = cohorts(_selection(1, [_rollout(2, [(5, NOW - 600)])], 2), servable, NOW, T)[1]
    assert first is not None
    first.published(b"web-1:1")
    again = cohorts(_selection(1, [_rollout(2, [(5, NOW - 600)])], 2), servable, NOW + 5, T, first.memo)[1]
    assert again is not None and again.memo is first.memo and b"web-1" in again.memo.classes
    stepped = _rollout(2, [(5, NOW - 600), (25, NOW)])
    grown = cohorts(_selection(1, [stepped], 2), servable, NOW + 5, T, first.memo)[1]
    assert grown is not None and grown.memo is not first.memo


def test_step_tags_cannot_make_a_refresh_build_millions_of_timelines() -> None:
    """Three versions stepped through 60 steps each within T were 61**3 classes, a timeline each: seconds and
    hundreds of MB per refresh, a million past 100 steps. Bounded, each instance still reads what its cohort
    admits, and no version becomes visible to an instance later than its step said."""
    steps = tuple(range(1, 61))
    stages = tuple((p, _at(NOW - 50 + p / 2)) for p in steps)
    rollouts = [
        Rollout("s", n, SALT, PLAN, (*steps, 100), (), state, _at(NOW - 50), stages)  # type: ignore[arg-type]
        for n, state in ((2, "superseded"), (4, "superseded"), (6, "rolling"))
    ]
    servable = _servable(*((n, NOW - 60 + n, None) for n in range(1, 7)))
    started = time.process_time()
    _, live = cohorts(_selection(5, rollouts, 6), servable, NOW, T)
    assert time.process_time() - started < 1 and live is not None and len(live.timelines) <= MAX_CLASSES
    for ident in IDS:
        dates = {p.version: p.date for p in live.published(ident.encode())}
        for rollout in rollouts:
            joined = rollout.joined(ident)
            assert (rollout.version in dates) == (joined is not None)
            assert joined is None or dates[rollout.version] <= joined.timestamp()
