"""`cfgtool.watch`: follow a server's change feed and hand over a NEW pinned client for each new version.

A process that must pick up new versions without restarting watches the store: the callback receives a fresh
`ConfigClient` pinned at the new current version, and swaps it in where the program reads configs. Clients
already handed out never move, so a request that started on one version finishes on it::

    import cfgtool

    state = {}

    def use(client):                      # runs in the watch's thread
        state["client"] = client          # later reads see the new version; earlier ones keep theirs

    watcher = cfgtool.watch("http://configs:8750", "demo", use)
    ...
    watcher.stop()                        # or: with cfgtool.watch(...) as watcher: ...

The watch long-polls `GET /v1/{store}/changes?since=S&wait=W` (docs/serving.md). An answer with a new `seq` names the
store's current version: when it differs from the last one handed over (a publish, or a rollback to an older
one), one client pinned at it is made and handed over; a jump over several events (a gap, or a batch) simply
pins the newest, never replaying the versions in between. On errors (server down, restarting, failing) the watch
retries after a backoff with jitter, growing from 1 to 120 s, and goes on where it was. The first client, for
the version current when the watch starts, is handed over too (`initial=False` skips it). A callback that raises
is logged and the watch goes on. Each handed-over version is reported to the server as this instance's applied
one (`report_applied`; a callback that raised reports a failed check), so the server's consumers list shows
which version every watching process runs.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

from cfgtool.client.http import (
    MAX_BYTES,
    Check,
    Connection,
    HttpConfigClient,
    ServerUnavailable,
    feed_state,
    get_json,
    report_applied,
    request_headers,
)
from cfgtool.errors import CfgtoolError

log = logging.getLogger("cfgtool.watch")

MIN_BACKOFF = 1.0
MAX_BACKOFF = 120.0


def backoff(failures: int) -> float:
    """Seconds to wait after `failures` consecutive failures: random in [1, min(120, 2**failures)] ("full
    jitter"), so that the watchers of a restarted server do not all come back at once."""
    return random.uniform(MIN_BACKOFF, min(MAX_BACKOFF, 2.0 ** min(failures, 7)))


class Watcher:
    """A running watch (see the module's docstring): a daemon thread, stopped by `stop()` or a `with` block.

    `version` and `client` are the last version and client handed over (None before the first), `failures`
    the current run of consecutive errors, `last_error` the latest error.
    """

    def __init__(
        self,
        location: str,
        store: str,
        on_change: Callable[[HttpConfigClient], object],
        *,
        wait: float,
        initial: bool,
        token: str | None,
        cache_dir: str | Path | None,
        timeout: float,
        max_bytes: int = MAX_BYTES,
        instance: str | None = None,
    ) -> None:
        self.location = location.rstrip("/")
        self.store = store
        self.version: int | None = None
        self.client: HttpConfigClient | None = None
        self.failures = 0
        self.last_error: Exception | None = None
        self._on_change = on_change
        self._wait = wait
        self._initial = initial
        self._token, self._cache_dir, self._timeout, self._max_bytes = token, cache_dir, timeout, max_bytes
        self._headers = request_headers(token, instance, "watch")
        self.instance = self._headers["Cfgtool-Instance"]
        self._http = Connection(self.location, timeout + wait, max_bytes)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cfgtool-watch-{store}", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop watching (a long poll in flight is cut) and wait up to `timeout` seconds for the thread."""
        self._stopped.set()
        self._http.abort()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        self._http.close()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<Watcher {self.location} store={self.store!r} version={self.version} {state}>"

    def _run(self) -> None:
        seq: int | None = None  # None: (re)synchronize from /v1/stores, at the start and after any error
        while not self._stopped.is_set():
            try:
                seq, current = self._sync() if seq is None else self._poll(seq)
                self.failures = 0
                if current is not None and current != self.version:
                    self._hand_over(current)
            except (CfgtoolError, ValueError, KeyError, TypeError) as exc:
                if self._stopped.is_set():
                    break
                seq = None
                self.failures += 1
                self.last_error = exc
                delay = backoff(self.failures)
                log.warning("watching %s store %r: %s; retrying in %.1f s", self.location, self.store, exc, delay)
                self._stopped.wait(delay)

    def _sync(self) -> tuple[int, int | None]:
        """(seq, current version) of the store now, from `/v1/stores`."""
        stores = get_json(self._http, "/v1/stores", self._headers)
        listed = stores if isinstance(stores, list) else []
        entry = next((s for s in listed if isinstance(s, dict) and s.get("name") == self.store), None)
        if entry is None:
            raise ServerUnavailable(f"the server has no store {self.store!r}", hint="GET /v1/stores lists them")
        seq, current = feed_state(entry, f"/v1/stores: store {self.store!r}")
        if not self._initial and self.version is None:
            self.version = current  # not handed over: only later versions are
        return seq, current

    def _poll(self, seq: int) -> tuple[int, int | None]:
        """(seq, current version) once the feed moves past `seq`; (seq, the last version) when the poll times out."""
        path = f"/v1/{quote(self.store, safe='')}/changes?since={seq}&wait={self._wait:g}"
        new_seq, current = feed_state(get_json(self._http, path, self._headers), path)
        if new_seq <= seq:
            return seq, self.version  # timed out, or a lagging replica: nothing new
        return new_seq, current  # current None: no good version left to pin

    def _hand_over(self, version: int) -> None:
        client = HttpConfigClient(
            self.location,
            self.store,
            version=version,
            offline="error",
            token=self._token,
            cache_dir=self._cache_dir,
            timeout=self._timeout,
            max_bytes=self._max_bytes,
            instance=self.instance,
            kind="watch",
        )
        before = self.version
        self.version, self.client = version, client
        try:
            self._on_change(client)
        except Exception as exc:  # the user's callback: report it, keep watching
            log.exception("watching %s store %r: the callback failed on version %d", self.location, self.store, version)
            self._report(before, Check(version, False, f"the callback raised {type(exc).__name__}"))
        else:
            self._report(version, Check(version, True))

    def _report(self, applied: int | None, check: Check) -> None:
        """Tell the server what this instance runs; a failed report costs a log line, never the watch."""
        try:
            report_applied(
                self.location, self.store, applied, check, instance=self.instance, kind="watch",
                token=self._token, timeout=self._timeout,
            )  # fmt: skip
        except CfgtoolError as exc:
            log.info("watching %s store %r: reporting version %s failed: %s", self.location, self.store, applied, exc)


def watch(
    location: str,
    store: str,
    on_change: Callable[[HttpConfigClient], object],
    *,
    wait: float = 30.0,
    initial: bool = True,
    token: str | None = None,
    cache_dir: str | Path | None = None,
    timeout: float = 10.0,
    max_bytes: int = MAX_BYTES,
    instance: str | None = None,
) -> Watcher:
    """Follow store `store` of the server at `location` and call `on_change(client)` with a new client pinned
    at each new current version (see this module's docstring); returns the running `Watcher`.

    `wait` is each long poll's hold (the server allows at most 55 s); `initial=False` skips the client of the
    version current at the start; `token`, `cache_dir`, `timeout`, `max_bytes` and `instance` (the
    `Cfgtool-Instance` id, default host name and process id) are given to every client (and the feed's
    requests, whose deadline is `timeout + wait`).
    """
    if not 0 <= wait <= 55:
        raise CfgtoolError(f"wait={wait} is not between 0 and 55 seconds", hint="the server holds a poll 55 s at most")
    return Watcher(
        location,
        store,
        on_change,
        wait=wait,
        initial=initial,
        token=token,
        cache_dir=cache_dir,
        timeout=timeout,
        max_bytes=max_bytes,
        instance=instance,
    )


__all__ = ["Watcher", "backoff", "watch"]
