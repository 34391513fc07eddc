"""The change feed: numbered events, long polls registered before the check, release on shutdown; and a real
server's events, each counting the keys that changed for readers."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from typing import Any

import httpx

from cfgtool.serve.feed import ChangeFeed, Event
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change

Run = Callable[..., subprocess.CompletedProcess[str]]


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


# ------------------------------------------------------------------------------------------ a real server


def _events(http: httpx.Client, count: int) -> list[dict[str, Any]]:
    """The feed's events once the server has `count` of them."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        answer = http.get("/v1/small/changes", params={"since": 0, "wait": 10}).json()
        if answer["seq"] >= count:
            return list(answer["events"])
        time.sleep(0.2)
    raise AssertionError(f"the server never reached {count} events")


def test_changed_keys_count_what_readers_had_before_rollbacks_and_restores_included(
    small: GitRepo, start_server: StartServer, run_cfgtool: Run
) -> None:
    """v3 (/data/b) is rolled back and v4 reverts it and changes /data/a: v4 changed 1 key for readers (against
    v2), not 2 (against v3). Then v4 is rolled back and v3's rollback cancelled: readers go 4 -> 2 -> 3."""
    publish_change(small, {"store/data/a/main.conf": "size = 5\n"}, "v2")
    publish_change(small, {"store/data/b/main.conf": "size = 9\n"}, "v3")
    assert run_cfgtool("rollback", "-m", "b too big", cwd=small.root).returncode == 0
    publish_change(small, {"store/data/b/main.conf": "size = 2\n", "store/data/a/main.conf": "size = 6\n"}, "v4")
    server = start_server(small.root, "--fetch-interval", "0.2")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert [(e["kind"], e["version"], e["changed_keys"]) for e in _events(http, 5)[1:]] == [
            ("publish", 2, 1),
            ("publish", 3, 1),
            ("rollback", 3, 1),
            ("publish", 4, 1),  # /data/a only: /data/b is back to what readers had in v2
        ]
        assert run_cfgtool("rollback", "-m", "a too big", cwd=small.root).returncode == 0
        assert run_cfgtool("rollback", "--cancel", "3", "-m", "b was fine", cwd=small.root).returncode == 0
        later = _events(http, 7)[5:]
        assert [(e["kind"], e["version"], e["changed_keys"]) for e in later] == [("rollback", 4, 1), ("restore", 3, 1)]
        listed = {v["version"]: v for v in http.get("/v1/small/versions").json()}
        assert listed[3]["status"] == "current" and listed[3]["restored"]["reason"] == "b was fine"
