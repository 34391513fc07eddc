"""The served repository as a whole: its stores, the loader that refreshes them, readiness and access.

The loader runs `refresh()` on a worker thread every `fetch_interval` seconds. It fetches the mirror when the
repository is a URL. Then it refreshes each store and hands its new events to its feed on the event loop. A failed
fetch leaves everything served as it was; `health()` says since when fetching fails.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import ipaddress
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from cfgtool.errors import CfgtoolError, SourceError, UsageError
from cfgtool.serve.consumers import Consumers
from cfgtool.serve.feed import ChangeFeed
from cfgtool.serve.metrics import Metrics, StoreFigures
from cfgtool.serve.mirror import Repository
from cfgtool.serve.options import Options
from cfgtool.serve.store_state import StoreState
from cfgtool.serve.tokens import Tokens

log = logging.getLogger("cfgtool.serve")


@functools.lru_cache(maxsize=1024)  # on every request of a tokenless server: parsing an address costs more than it
def local_name(host: bytes) -> bool:
    """Whether a `Host` header may come from a client of this machine. That is an IP address, `localhost` or a name
    under `.localhost`. Or a name of one label: a local proxy's upstream, as nginx sends it. A dotted name is a
    site's, and a page of that site can point it at 127.0.0.1 (DNS rebinding)."""
    text = host.decode("latin-1").strip().lower()
    if text.startswith("["):
        name = text[1:].partition("]")[0]
    else:
        name = text.rpartition(":")[0] if text.count(":") == 1 else text
    name = name.rstrip(".")
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return "." not in name or name.endswith(".localhost")
    return True


def _iso(t: float | None) -> str | None:
    return None if t is None else datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


class Service:
    """Everything the routes read. Built (and the repository checked) before the server starts."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.repository = Repository(options.location, options.remote, options.cache)
        self.tokens = Tokens(options.tokens) if options.tokens is not None else None
        self.fetch_error: str | None = None
        self.failing_since: float | None = None
        self.last_fetch = 0.0
        self.closed = False
        self._fetch()
        if self.fetch_error is not None and not (self.repository.root / "HEAD").exists():
            raise SourceError(
                f"cannot read {self.repository.location}: {self.fetch_error}", hint="check the URL and access"
            )
        with_acl = self.tokens is not None
        self.stores = {
            ref.name: StoreState(
                ref, self.repository.root, options.cache, options.cache_time, with_acl, options.public_cache
            )
            for ref in self.repository.stores(list(options.stores))
        }
        if options.public_cache:
            self._check_public()
        self.feeds = {name: ChangeFeed() for name in self.stores}
        self.consumers = {name: Consumers() for name in self.stores}
        self.store_errors: dict[str, str] = {}
        self.metrics = Metrics(self._figures, lambda: self.last_fetch, self._consumers)
        self.on_refresh: list[Callable[[], None]] = []  # run on the loader thread after each round (the console's
        # indexes of the versions just loaded: built there, so no request pays for them)

    def _check_public(self) -> None:
        """`--public-cache` is refused with tokens: a shared cache would replay one principal's answer to another. It
        is refused too for a store whose current ACL does not let everyone read every key."""
        if self.tokens is not None:
            raise UsageError(
                "--public-cache with --tokens: a shared cache would give one principal's answers to another",
                hint="drop --public-cache, or serve without --tokens a store that everyone may read",
            )
        for name, state in self.stores.items():
            commit = state.current_commit()
            why = state.public_problem(commit) if commit is not None else None
            if why is not None:
                raise UsageError(
                    f"--public-cache: store {name} is not readable by everyone: {why}",
                    hint="allow User:* to read key * in the store's ACL, or drop --public-cache",
                )

    @property
    def ready(self) -> bool:
        return all(state.ready for state in self.stores.values())

    # -- the loader ---------------------------------------------------------------------------------------
    def _fetch(self) -> None:
        try:
            self.repository.fetch()
        except CfgtoolError as exc:
            if self.failing_since is None:
                self.failing_since = time.time()
            if exc.message != self.fetch_error and not self.closed:  # said once, not every round, nor at a stop
                log.warning("fetching %s failed: %s", self.repository.shown_url, exc.message)
            self.fetch_error = exc.message
        else:
            self.failing_since, self.fetch_error = None, None
            self.last_fetch = time.time()

    def refresh(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """One round: re-read the tokens, fetch, then refresh every store (on a worker thread; events go to the
        loop)."""
        self.reload_tokens()
        if self.repository.url is not None:
            self._fetch()
        else:
            self.last_fetch = time.time()
        for name, state in self.stores.items():
            try:
                events = state.refresh(time.time())
            except CfgtoolError as exc:
                if self.store_errors.get(name) != exc.message:
                    log.warning("store %s: %s", name, exc.message)
                self.store_errors[name] = exc.message
                continue
            self.store_errors.pop(name, None)
            if events and loop is not None:
                loop.call_soon_threadsafe(self.feeds[name].extend, events)
            elif events:
                self.feeds[name].extend(events)
        for listener in self.on_refresh:
            try:
                listener()
            except Exception:  # a bug in one must not stop the loader: logged, and the next round runs it again
                log.exception("preparing the loaded versions failed")
        # what is loaded now lives long: keep the collector's full passes (tens of milliseconds over
        # the modules and versions in memory, a latency spike) from rescanning it on every request burst
        gc.freeze()

    def reload_tokens(self) -> None:
        """Re-read the tokens file when it changed; a file that cannot be read leaves the tokens read before."""
        if self.tokens is not None:
            try:
                self.tokens.reload()
            except CfgtoolError as exc:
                log.warning("%s (the tokens read before stay in force)", exc.message)

    async def run_loader(self) -> None:
        """Refresh now and then every `fetch_interval` seconds until closed. The tokens file is also re-read on
        rounds of its own. So a fetch that hangs on a slow remote never delays a revocation."""
        await asyncio.gather(self._refresh_rounds(), self._token_rounds())

    async def _token_rounds(self) -> None:
        while self.tokens is not None and not self.closed:
            await asyncio.sleep(self.options.fetch_interval)
            try:
                await asyncio.to_thread(self.reload_tokens)
            except Exception:  # a bug must not stop the rounds: it is logged, and the next round retries
                log.exception("re-reading the tokens failed")

    async def _refresh_rounds(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.closed:
            try:
                await asyncio.to_thread(self.refresh, loop)
            except Exception:  # a bug must not stop the loader: it is logged, and the next round retries
                log.exception("refreshing the stores failed")
            await asyncio.sleep(self.options.fetch_interval)

    def close(self) -> None:
        """Graceful shutdown: stop refreshing and release every waiting long poll."""
        self.closed = True
        self.repository.close()
        for feed in self.feeds.values():
            feed.close()
        for state in self.stores.values():
            state.close()
        if self.tokens is not None:
            self.tokens.close()

    # -- readiness and metrics ----------------------------------------------------------------------------
    @property
    def status(self) -> str:
        """`starting` until every store's versions are loaded. `failing` while fetching fails, or a store cannot be
        refreshed or judged. Else `ok`."""
        if not self.ready:
            return "starting"
        views = [state.view for state in self.stores.values()]
        if self.fetch_error is not None or self.store_errors or any(v.acl_problem is not None for v in views):
            return "failing"
        return "ok"

    def super_stores(self, who: str | None) -> list[str]:
        """The stores whose details `who` may see in `/healthz`: every store without access control, else
        those whose current ACL names it a super user."""
        if self.tokens is None:
            return list(self.stores)
        if who is None:
            return []
        return [
            name for name, state in self.stores.items()
            if state.view.authorizer is not None and state.view.authorizer.is_super_user(who)
        ]  # fmt: skip

    def health(self, who: str | None = None) -> dict[str, Any]:
        """`/healthz`: `{"status"}` for anyone. A super user (anyone, without access control) also sees each of its
        stores' state and unservable versions, and the fetch state. Never a URL's credentials."""
        shown = self.super_stores(who)
        if not shown:
            return {"status": self.status}
        stores = []
        for name in shown:
            state = self.stores[name]
            view = state.view
            stores.append({
                "name": name,
                "path": state.path,
                "ready": state.ready,
                "current": view.current,
                "seq": self.feeds[name].seq,
                "unservable": [{"version": n, "error": e} for n, e in sorted(view.unservable.items())],
                "acl_error": view.acl_problem,
                "error": self.store_errors.get(name),
            })  # fmt: skip
        fetch = {
            "remote": self.repository.shown_url,
            "ok": self.fetch_error is None,
            "failing_since": _iso(self.failing_since),
            "error": self.fetch_error,
            "last_success": _iso(self.last_fetch or None),
        }
        return {"status": self.status, "ready": self.ready, "stores": stores, "fetch": fetch}

    def _consumers(self) -> dict[str, dict[int, int]]:
        """The metric's instances per version, of the versions each store has. A reported version is client text. One
        series per made-up number would let a client blow up the metric's cardinality."""
        now = time.time()
        found = {}
        for name, consumers in self.consumers.items():
            known = self.stores[name].view.versions
            found[name] = {n: count for n, count in consumers.by_version(now).items() if n in known}
        return found

    def _figures(self) -> dict[str, StoreFigures]:
        return {
            name: StoreFigures(
                state.view.current,
                self.feeds[name].seq,
                len(state.view.pinned),
                len(state.view.unservable),
                self.feeds[name].waiting,
            )
            for name, state in self.stores.items()
        }
