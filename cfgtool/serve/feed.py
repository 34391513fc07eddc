"""The change feed of one store (docs/serving.md; Kafka's sequence-numbered config change notifications).

`seq` counts the events the server knows: publish tags, rollback and restored markers, and the step tags of
staged rollouts. It only grows, because tags are never moved or deleted. A long poll registers its waiter *before*
it checks `seq` (Apollo's lesson). So an event that lands between the check and the wait still wakes it. All
methods run on the event loop's thread; the loader hands events over with
`loop.call_soon_threadsafe(feed.extend, ...)`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal


@dataclass(frozen=True)
class Event:
    """One event: a version published, rolled back, restored (its rollback cancelled) or a step of its staged
    rollout taken, and when. Also how many keys changed for readers, and when every key sees it."""

    kind: Literal["publish", "rollback", "restore", "rollout"]
    version: int
    date: float
    changed_keys: int
    effective_by: float
    seq: int = 0

    def to_json(self, count: Callable[[int], int | None] = int) -> dict[str, Any]:
        """The event as the feed answers it, its `changed_keys` as `count` shows it to the asker. `Visibility.count`
        is null for one that may not describe every key."""
        return {
            "seq": self.seq,
            "kind": self.kind,
            "version": self.version,
            "date": _iso(self.date),
            "changed_keys": count(self.changed_keys),
            "effective_by": _iso(self.effective_by),
        }


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat()


class ChangeFeed:
    """The events of one store, numbered from 1, and the long polls waiting for the next one."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._waiters: set[asyncio.Future[None]] = set()
        self.closed = False

    @property
    def seq(self) -> int:
        return len(self.events)

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    def extend(self, events: Sequence[Event]) -> None:
        """Append new events (numbered on) and wake every waiter."""
        if not events:
            return
        base = self.seq
        self.events.extend(
            Event(e.kind, e.version, e.date, e.changed_keys, e.effective_by, base + i + 1) for i, e in enumerate(events)
        )
        self._wake()

    def after(self, since: int) -> list[Event]:
        """The events after `since`, oldest first (none when `since` is at or beyond `seq`)."""
        return self.events[max(since, 0) :] if since < self.seq else []

    async def wait(self, since: int, timeout: float) -> list[Event]:
        """The events after `since`, waiting up to `timeout` seconds for one (empty on timeout or shutdown)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)  # registered before the check: no wake-up between the two is lost
        try:
            if self.seq <= since and not self.closed and timeout > 0:
                await asyncio.wait_for(waiter, timeout)
        except TimeoutError:
            pass
        finally:
            self._waiters.discard(waiter)
        return self.after(since)

    def close(self) -> None:
        """Release every waiter (graceful shutdown): they answer at once with what they have."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
