"""`cfgtool.watch`: follow a server's change feed and hand over a NEW pinned client for each new version.

A process that must pick up new versions without restarting watches the store. The callback receives a fresh
`ConfigClient` pinned at the new current version. It swaps it in where the program reads configs. Clients already
handed out never move, so a request that started on one version finishes on it::

    import cfgtool

    state = {}

    def use(client):                      # runs in the watch's thread
        state["client"] = client          # later reads see the new version; earlier ones keep theirs

    watcher = cfgtool.watch("http://configs:8750", "demo", use)
    ...
    watcher.stop()                        # or: with cfgtool.watch(...) as watcher: ...

The watch follows the store's change feed: `ChangeFeed`, a long poll of `GET /v1/{store}/changes?since=S&wait=W`
(docs/serving.md). An answer with a new `seq` names the store's current version. It may differ from the last one
handed over: a publish, or a rollback to an older one. Then one client pinned at it is made and handed over. A jump
over several events (a gap, or a batch) simply pins the newest, never replaying the versions in between. Errors are
the server down, restarting or failing, or a version the client cannot pin. On errors the watch retries after a
backoff with jitter, growing from 1 to 120 s, and goes on where it was. The first client, for the version current
when the watch starts, is handed over too (`initial=False` skips it). A callback that raises is logged and the watch
goes on. Each handed-over version is reported to the server as this instance's applied one (`report_applied`). A
callback that raised reports a failed check. So the server's consumers list shows which version every watching
process runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from cfgtool.client.client import HttpConfigClient
from cfgtool.client.feed import ChangeFeed, backoff
from cfgtool.client.http import MAX_BYTES, Check, report_applied
from cfgtool.errors import CfgtoolError

log = logging.getLogger("cfgtool.watch")


class Watcher:
    """A running watch (see the module's docstring). It is a daemon thread, stopped by `stop()` or a `with` block.

    `version` and `client` are the last version and client handed over (None before the first). `failures` is the
    current run of consecutive errors, `last_error` the latest error.
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
        self._on_change = on_change
        self._initial = initial
        self._token, self._cache_dir, self._timeout, self._max_bytes = token, cache_dir, timeout, max_bytes
        self._feed = ChangeFeed(
            self.location, store, token=token, instance=instance, kind="watch", wait=wait, timeout=timeout,
            max_bytes=max_bytes,
        )  # fmt: skip
        self.instance = self._feed.instance
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cfgtool-watch-{store}", daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    @property
    def failures(self) -> int:
        """The current run of consecutive errors."""
        return self._feed.failures

    @property
    def last_error(self) -> Exception | None:
        """The latest error."""
        return self._feed.last_error

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop watching (a long poll in flight is cut) and wait up to `timeout` seconds for the thread."""
        self._stopped.set()
        self._feed.interrupt()
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        self._feed.close()

    def __enter__(self) -> Watcher:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return f"<Watcher {self.location} store={self.store!r} version={self.version} {state}>"

    def _run(self) -> None:
        skip = not self._initial  # the version current at the start is not handed over: only later ones are
        for change in self._feed.follow(self._stopped, on_error=self._retrying):
            if skip:
                self.version, skip = change.current, False
            elif change.current is not None and change.current != self.version:
                try:
                    self._hand_over(change.current)
                except (CfgtoolError, ValueError, KeyError, TypeError) as exc:  # the client could not pin it
                    self._feed.failed(exc)

    def _retrying(self, exc: Exception, delay: float) -> None:
        log.warning("watching %s store %r: %s; retrying in %.1f s", self.location, self.store, exc, delay)

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
        """Tell the server what this instance runs. A failed report costs a log line, never the watch."""
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
    """Follow store `store` of the server at `location`. Call `on_change(client)` with a new client pinned at each
    new current version (see this module's docstring). Returns the running `Watcher`.

    `wait` is each long poll's hold (the server allows at most 55 s). `initial=False` skips the client of the version
    current at the start. `token`, `cache_dir`, `timeout`, `max_bytes` and `instance` are given to every client. The
    feed's requests get them too; their deadline is `timeout + wait`. `instance` is the `Cfgtool-Instance` id,
    default host name and process id.
    """
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
