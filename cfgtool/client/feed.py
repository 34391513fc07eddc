"""`ChangeFeed`: follow one store's change feed on a cfgtool server (docs/serving.md). Every reader that must notice
new versions uses it: `cfgtool.watch`, `cfgtool agent`, and any controller that acts on publishes and rollbacks.

The feed's state is the store's `seq` (it grows by one per publish, rollback or restore) and its `current` version. The
first step reads both from `GET /v1/stores`. Every later step long-polls `GET /v1/{store}/changes?since=S&wait=W`.
That answers as soon as the feed moves past `S`, or after `W` seconds with nothing new. Some answers do not move the
feed: a timed-out poll, or a replica that lags behind the one asked before. They keep the state as it was, so
`current` never steps back to a stale value. Every answer passes the client's checks of what a server may send
(`feed_state`). A broken or hostile server is an error, never a crash.

`follow(stop)` is the loop readers use: it yields the state after each answer. On an error it forgets its position,
waits a backoff with jitter that grows from 1 to 120 s, and synchronizes again from `/v1/stores`. An error is the
server down, restarting, failing, or answering nonsense. A reader's own work on an answer may fail, such as reading
the version it names. It then calls `failed(exc)`, and the feed backs off and synchronizes the same way::

    feed = ChangeFeed("http://configs:8750", "demo")
    for change in feed.follow(stop):      # stop: a threading.Event
        try:
            act_on(change.current)
        except CfgtoolError as exc:
            feed.failed(exc)
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Iterator
from typing import NamedTuple

from cfgtool.client.http import MAX_BYTES, Connection, changes, request_headers, store_state
from cfgtool.errors import CfgtoolError

log = logging.getLogger("cfgtool.feed")

MIN_BACKOFF = 1.0
MAX_BACKOFF = 120.0
MAX_WAIT = 55.0  # the longest hold the server grants a long poll


def backoff(failures: int) -> float:
    """Seconds to wait after `failures` consecutive failures: random in [1, min(120, 2**failures)] ("full jitter").
    So the followers of a restarted server do not all come back at once."""
    return random.uniform(MIN_BACKOFF, min(MAX_BACKOFF, 2.0 ** min(failures, 7)))


class Change(NamedTuple):
    """The feed's state after an answer: the store's `seq`, and its `current` version. None means no good version."""

    seq: int
    current: int | None


OnError = Callable[[Exception, float], object]


class ChangeFeed:
    """Follows store `store` of the server at `location` (see the module's docstring).

    `seq` and `current` are the last state read. They are None before the first, and after an error until the feed
    synchronizes again. `failures` is the current run of consecutive errors, `last_error` the latest error. `wait` is
    a long poll's usual hold (0 to 55 s). Each request's deadline is `timeout + wait`. `kind` and `instance` say who
    asks (`User-Agent`, `Cfgtool-Instance`).
    """

    def __init__(
        self,
        location: str,
        store: str,
        *,
        token: str | None = None,
        instance: str | None = None,
        kind: str = "watch",
        wait: float = 30.0,
        timeout: float = 10.0,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        if not 0 <= wait <= MAX_WAIT:
            raise CfgtoolError(
                f"wait={wait} is not between 0 and {MAX_WAIT:g} seconds",
                hint=f"the server holds a poll {MAX_WAIT:g} s at most",
            )
        self.location = location.rstrip("/")
        self.store = store
        self.wait = wait
        self.seq: int | None = None
        self.current: int | None = None
        self.failures = 0
        self.last_error: Exception | None = None
        self._headers = request_headers(token, instance, kind)
        self.instance = self._headers["Cfgtool-Instance"]
        self._http = Connection(self.location, timeout + wait, max_bytes)
        self._pending: Exception | None = None  # a reader's failure, to back off from before the next step

    def next(self, wait: float | None = None) -> Change:
        """One step, not retried. The first step, and the first after an error, synchronizes from `/v1/stores`. Else
        it long-polls the feed for at most `wait` seconds (default `self.wait`). Raises ServerUnavailable: the server
        is unreachable, failing, or answering what no cfgtool server sends. Or raises AccessDenied (401, 403). The
        position is then forgotten, so the next step synchronizes again."""
        try:
            if self.seq is None:
                seq, current = self._sync()
            else:
                seq, current = self._poll(self.seq, self.wait if wait is None else wait)
        except CfgtoolError:
            self.seq = None
            raise
        if self.seq is None or seq > self.seq:  # else nothing new: a timed-out poll, or a lagging replica
            self.seq, self.current = seq, current
        self.failures = 0
        return Change(self.seq, self.current)

    def follow(
        self, stop: threading.Event, *, wait: Callable[[], float] | None = None, on_error: OnError | None = None
    ) -> Iterator[Change]:
        """The state after each answer, until `stop` is set. First the store's state now, then one per long poll. A
        poll that times out repeats the state. Errors, the feed's own and those a reader reports with `failed`, are
        retried after `backoff`. `on_error(exc, delay)` is told of each; by default it logs a warning. `wait()`, if
        given, says how long the next poll may hold (at most `self.wait`)."""
        while not stop.is_set():
            failure, self._pending = self._pending, None
            if failure is None:
                try:
                    change = self.next(None if wait is None else min(self.wait, max(0.0, wait())))
                except CfgtoolError as exc:
                    failure = exc
                else:
                    yield change
                    continue
            if stop.is_set():
                return
            delay = self._failed(failure)
            (on_error or self._log)(failure, delay)
            stop.wait(delay)

    def failed(self, exc: Exception) -> None:
        """Report that a reader's work on the last answer failed: `follow` backs off, then synchronizes again."""
        self._pending = exc

    def interrupt(self) -> None:
        """Cut a long poll in flight and start no other request (safe from a signal handler: it takes no lock)."""
        self._http.shut()

    def close(self) -> None:
        """Close the connection to the server."""
        self._http.close()

    def __repr__(self) -> str:
        return f"<ChangeFeed {self.location} store={self.store!r} seq={self.seq} current={self.current}>"

    def _failed(self, exc: Exception) -> float:
        """Count a failure, forget the position, and return how long to wait before the next step."""
        self.seq = None
        self.failures += 1
        self.last_error = exc
        return backoff(self.failures)

    def _log(self, exc: Exception, delay: float) -> None:
        log.warning("following %s store %r: %s; retrying in %.1f s", self.location, self.store, exc, delay)

    def _sync(self) -> tuple[int, int | None]:
        """(seq, current version) of the store now, from `/v1/stores`."""
        return store_state(self._http, self.store, self._headers)

    def _poll(self, seq: int, wait: float) -> tuple[int, int | None]:
        """(seq, current version) once the feed moves past `seq` or `wait` seconds pass."""
        return changes(self._http, self.store, seq, wait, self._headers)


__all__ = ["MAX_BACKOFF", "MIN_BACKOFF", "Change", "ChangeFeed", "backoff"]
