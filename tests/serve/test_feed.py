"""The change feed: numbered events, long polls registered before the check, release on shutdown."""

from __future__ import annotations

import asyncio

from cfgtool.serve.feed import ChangeFeed, Event


def _event(version: int) -> Event:
    return Event("publish", version, 1000.0 + version, 1, 1060.0 + version)


def test_feed_numbers_events_from_one_and_seq_only_grows() -> None:
    feed = ChangeFeed()
    feed.extend([_event(1), _event(2)])
    feed.extend([])
    feed.extend([_event(3)])
    assert [e.seq for e in feed.events] == [1, 2, 3]
    assert feed.seq == 3
    assert [e.version for e in feed.after(1)] == [2, 3]
    assert feed.after(3) == [] and feed.after(7) == []


def test_feed_wait_answers_at_once_when_seq_is_past_since() -> None:
    async def run() -> list[Event]:
        feed = ChangeFeed()
        feed.extend([_event(1)])
        return await asyncio.wait_for(feed.wait(0, 30), 1)

    assert [e.seq for e in asyncio.run(run())] == [1]


def test_feed_wait_is_woken_by_an_event_and_times_out_empty() -> None:
    async def run() -> tuple[list[Event], list[Event], int]:
        feed = ChangeFeed()
        waiting = asyncio.ensure_future(feed.wait(0, 30))
        await asyncio.sleep(0.01)
        registered = feed.waiting
        feed.extend([_event(1)])
        woken = await asyncio.wait_for(waiting, 1)
        timed_out = await feed.wait(1, 0.05)
        return woken, timed_out, registered

    woken, timed_out, registered = asyncio.run(run())
    assert registered == 1
    assert [e.version for e in woken] == [1]
    assert timed_out == []


def test_feed_waiter_is_registered_before_the_check() -> None:
    """An event appended between the waiter's registration and its check still wakes it: the check sees
    it, or the wake-up finds the waiter (here the event lands while the coroutine runs its first step)."""

    class Racing(ChangeFeed):
        landed = False

        @property
        def seq(self) -> int:
            if not self.landed and self.waiting:  # the waiter is registered: an event lands now
                self.landed = True
                self.extend([_event(1)])
            return len(self.events)

    async def run() -> list[Event]:
        return await asyncio.wait_for(Racing().wait(0, 30), 1)

    assert [e.version for e in asyncio.run(run())] == [1]


def test_feed_close_releases_every_waiter_at_once() -> None:
    async def run() -> list[list[Event]]:
        feed = ChangeFeed()
        waiters = [asyncio.ensure_future(feed.wait(0, 30)) for _ in range(100)]
        await asyncio.sleep(0.01)
        feed.close()
        return await asyncio.wait_for(asyncio.gather(*waiters), 1)

    assert asyncio.run(run()) == [[]] * 100
