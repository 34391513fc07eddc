"""The HTTP API of docs/serving.md as an ASGI application.

The hot reads are `GET /v1/{store}/current/keys/{key}` and `GET /v1/{store}/versions/{N}/keys/{key}`. They go through
a raw ASGI path (`Api.__call__`) that answers prebuilt bytes after a few dictionary lookups. That is faster than
routing them (docs/serving.md#speed-and-memory). Starlette routes everything else (`routes.py`). Both share `Api`'s
helpers for access control, so the two kinds of route answer errors alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import Request

from cfgtool.errors import CfgtoolError
from cfgtool.hocon import HoconError, read_path, split_path
from cfgtool.serve.accesslog import NOTHING_SENT, PRINCIPAL, SENT, AccessLog, Exchange
from cfgtool.serve.answers import (
    Answer,
    Bounded,
    Denied,
    ErrorPage,
    Headers,
    answer,
    error,
    etag_matches,
    internal,
    not_found,
    unservable,
    url_version,
)
from cfgtool.serve.cohorts import INSTANCE
from cfgtool.serve.consumers import kind_of
from cfgtool.serve.loaded import LoadedVersion
from cfgtool.serve.service import Service, local_name
from cfgtool.serve.store_state import StoreState, View
from cfgtool.serve.timeline import visible
from cfgtool.serve.tokens import REFUSED_DELAY, TooManyChecks
from cfgtool.serve.visibility import Visibility
from cfgtool.serve.worker import ResolverUnavailable
from cfgtool.store.keys import MAX_KEY, BadKeyError, KeyTooLongError, normalize_key
from cfgtool.versions.names import VERSION_NAMES, version_number

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

JSON = b"application/json"
IMMUTABLE = b"private, max-age=31536000, immutable"
PUBLIC_IMMUTABLE = b"public, max-age=31536000, immutable"
STALE_IF_ERROR = 86400  # seconds a cache may serve a `current` answer while the server fails
NO_STORE = b"no-store"
NO_NODE = (b"cfgtool-node", b"none")  # the header of every answer about a key without a node
VARY_INSTANCE = (b"vary", b"Cfgtool-Instance")  # on `current` answers while a staged rollout is live
MAX_WAIT = 55.0
DEFAULT_WAIT = "30"
CACHED_KEY = 128  # URL keys up to this length are remembered normalized (hostile long ones are not kept)
MAX_POLLS = 100  # long polls waiting at once per principal (per client address without tokens)
RESOLVING_PER_PRINCIPAL = 4  # keys without a node waiting for the resolver per principal (or client address)
RESOLVING = 64  # ... and in all
Part = Callable[["Api"], Sequence[Any]]  # more Starlette routes, built for an application (see `Api`)
Routes = Callable[["Api", Sequence[Any]], "ASGIApp"]  # the application behind the hot reads, with the parts' routes

log = logging.getLogger("cfgtool.serve")


class Api:
    """The application: the fast path, then Starlette for everything else."""

    def __init__(self, service: Service, routes: Routes, parts: Sequence[Part] = ()) -> None:
        """`routes` builds the application for everything but the hot reads (`routes.starlette_app`). `parts` add
        routes beside the API's, such as the console under /ui/. Each is given this application. It may show the
        errors answered before its routes run as its own pages (`error_pages`)."""
        self.service = service
        self.metrics = service.metrics
        self.error_pages: dict[str, ErrorPage] = {}  # path prefix -> a part's page for such errors (console: /ui)
        self.starlette = routes(self, [route for part in parts for route in part(self)])
        self._keys: Bounded[str, str] = Bounded(65536)  # URL text -> normalized key, for the hot path
        self._feeds: Bounded[tuple[str, int, int, int | None, bool], Answer] = Bounded(256)  # the feed's answers
        self._polls: Counter[str | None] = Counter()  # waiting long polls per principal (or client address)
        self._resolving: Counter[str | None] = Counter()  # keys waiting for the resolver, per principal (or address)
        self._resolving_total = 0
        self._local_only = service.options.local_only  # refuse Host names of other sites (DNS rebinding)
        self.access: AccessLog | None = None  # set by the server: the access log

    def error_page(self, path: str) -> ErrorPage | None:
        """How an error answered before any route runs (405, 421, 431) is shown at `path`. It is the page of the part
        whose prefix it is under (the console's HTML under /ui). None for the API's JSON error."""
        for prefix, page in self.error_pages.items():
            if path == prefix or path.startswith(prefix + "/"):
                return page
        return None

    def key(self, text: str) -> str:
        """The normalized key of a URL's `{key}` (Denied 400 for a bad one, 414 past `MAX_KEY` characters)."""
        found = self._keys.get(text)
        if found is not None:
            return found
        if len(text) > MAX_KEY:  # "/" + text, less a trailing "/", is longer still
            raise Denied(error(414, "key_too_long", f"a key has at most {MAX_KEY} characters"))
        try:
            key = normalize_key("/" + text, None)
        except KeyTooLongError as exc:
            raise Denied(error(414, "key_too_long", f"a key has at most {MAX_KEY} characters")) from exc
        except BadKeyError as exc:
            raise Denied(error(400, "bad_key", exc.message)) from exc
        return self._keys.put(text, key) if len(text) <= CACHED_KEY else key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.starlette(scope, receive, send)
        started = time.perf_counter()
        host = instance = None
        for name, value in scope["headers"]:  # one pass: the first Host, the last Cfgtool-Instance
            if name == b"host":
                host = value if host is None else host
            elif name == b"cfgtool-instance":
                instance = value
        try:
            if self._local_only and not local_name(host or b""):
                what = "this server answers its own machine's clients only: address it as 127.0.0.1 or localhost"
                found, page = error(421, "misdirected_request", what), self.error_page(scope["path"])
                if page is not None:  # the console's page under /ui
                    return await page(found, Request(scope))(scope, receive, Exchange(scope, send))
                return await respond(scope, send, found, [(b"cache-control", NO_STORE)])
            await self._route(scope, receive, send, instance)
        except Exception as exc:  # a bug: never a traceback to the client, one line in the log
            found = internal(exc, scope)
            if SENT not in scope:
                await respond(scope, send, found, [(b"cache-control", NO_STORE)])
        finally:
            status, _, version = scope.get(SENT, NOTHING_SENT)
            if instance is not None and 0 < status < 400:
                self._note(scope, version, instance)
            if self.access is not None:
                self.access.request(scope, started, instance)

    def _note(self, scope: Scope, version: bytes | None, ident: bytes) -> None:
        """Remember the instance `ident` (its `Cfgtool-Instance`) behind an answered request of a store
        (docs/serving.md "Consumers"). `version` is the `Cfgtool-Version` the answer named."""
        if not INSTANCE.fullmatch(ident):
            return
        parts = scope["path"].split("/", 5)  # '', v1, store, versions, N, ...
        consumers = self.service.consumers.get(parts[2]) if len(parts) > 2 and parts[1] == "v1" else None
        if consumers is None or (len(parts) > 3 and parts[3] == "consumers"):  # asking who reads is no reading
            return
        number = version_number(parts[4]) if len(parts) > 4 and parts[3] == "versions" else None
        if number is None and version is not None:
            number = int(version)
        agent = dict(scope["headers"]).get(b"user-agent")  # the last, as for the instance
        consumers.note(ident.decode("ascii"), PRINCIPAL.get(), kind_of(agent), _host(scope), number, time.time())

    def _route(self, scope: Scope, receive: Receive, send: Send, instance: bytes | None) -> Awaitable[None]:
        """The handler of a request. Key reads, the change feed and the version names get the fast path's own.
        Everything else gets Starlette's, noting what it sends for the access log. `instance` is the request's
        `Cfgtool-Instance`."""
        if scope["method"] in ("GET", "HEAD"):
            parts = scope["path"].split("/", 6)  # '', v1, store, current|versions, keys|N, key... | keys, key...
            if len(parts) == 4 and parts[1] == "v1" and parts[3] == "changes":
                return self._changes(scope, send, parts[2])
            if len(parts) >= 5 and parts[1] == "v1":
                if parts[3] == "current" and parts[4] == "keys":
                    return self._key(scope, send, parts[2], None, "/".join(parts[5:]), instance)
                if parts[3] == "versions" and len(parts) >= 6 and parts[4] in VERSION_NAMES:
                    return self._named(scope, send, parts[2], parts[4])
                if parts[3] == "versions" and len(parts) >= 6 and parts[5] == "keys":
                    return self._key(scope, send, parts[2], parts[4], parts[6] if len(parts) > 6 else "")
        return self.starlette(scope, receive, Exchange(scope, send))

    # -- shared helpers -----------------------------------------------------------------------------------
    async def principal(self, headers: list[tuple[bytes, bytes]]) -> str | None:
        """The request's principal (None without tokens). Denied 401 for a missing, unknown or revoked token. A
        refused token is answered after `REFUSED_DELAY`, whatever made it wrong. Denied 429 while too many checks of
        older (scrypt) tokens wait; `Tokens.check` never blocks the event loop."""
        tokens = self.service.tokens
        if tokens is None:
            return None
        sent = False
        for name, value in headers:
            if name == b"authorization":
                scheme, _, token = value.decode("latin-1").partition(" ")
                token = token.strip()
                if scheme.lower() == "bearer":
                    sent = True
                    try:
                        who = await tokens.check(token)
                    except TooManyChecks:
                        raise Denied(
                            error(429, "too_many_requests", "too many token checks are waiting: retry shortly"),
                            [(b"retry-after", b"1")],
                        ) from None
                    if who is not None:
                        PRINCIPAL.set(who)
                        return who
                    await asyncio.sleep(REFUSED_DELAY)  # a client trying tokens waits, and costs next to nothing
                break
        what = "unknown or revoked token" if sent else "this server needs a token: send `Authorization: Bearer <token>`"
        raise Denied(
            error(401, "unauthorized", what),
            [(b"www-authenticate", b'Bearer realm="cfgtool"')],
        )

    def store(self, name: str, who: str | None) -> tuple[StoreState, View]:
        """The store named `name` and the view this request reads. 503 while it loads. 503 `E_NO_ACL` while it has no
        current version, and with access control on, while the current version's ACL does not load. Never fail
        open."""
        state = self.service.stores.get(name)
        if state is None:
            listed = "" if self.service.tokens is not None else f" (stores: {', '.join(self.service.stores)})"
            raise not_found(f"no store named {name!r}{listed}")
        if not state.ready:
            raise Denied(error(503, "not_ready", f"store {name} is still loading its versions"))
        view = state.view
        if view.acl_problem is not None:
            raise Denied(error(503, "E_NO_ACL", view.acl_problem))
        return state, view

    def described_store(self, name: str, who: str | None, host: str | None) -> tuple[StoreState, View]:
        """The store named `name` and the view this request reads (`store`). It is for an answer about the store as a
        whole: its versions, change feed, consumers. It is 404, as a store that does not exist, unless `who` may
        describe it (`may_describe`)."""
        state, view = self.store(name, who)
        if not self.may_describe(state, view, who, host):
            raise not_found(f"no store named {name!r}")
        return state, view

    @staticmethod
    def may_describe(state: StoreState, view: View, who: str | None, host: str | None) -> bool:
        """The one rule of who may describe a store. Without access control (`who` None), anyone may. With it, a
        principal may when the store's current ACL grants `describe` on the store. `describe` on any of its keys
        implies that. Nobody may while the store cannot judge: still loading, or no ACL to judge by."""
        if who is None:
            return True
        judge = view.authorizer
        return state.ready and judge is not None and judge.authorize(who, "describe", None, host).allowed

    def check(
        self,
        view: View,
        loaded: LoadedVersion,
        who: str | None,
        operation: str,
        key: str,
        host: str | None,
        missing: str,
    ) -> Visibility:
        """The access rules for an answer about `key` from version `loaded` (`Visibility.verdict`). Denied 404 (as
        `missing`) when `who` may not describe it. Denied 403 when it may describe but not `operation` it. The
        rights, for filtering the rest of the answer."""
        seen = Visibility.of(view, loaded, who, host)
        status = seen.verdict(key, operation)
        if status == 404:
            raise not_found(missing)
        if status == 403:
            raise Denied(error(403, "forbidden", f"{who} may not {operation} {key}"))
        return seen

    def listed_stores(self, who: str | None, host: str | None) -> list[StoreState]:
        """The stores `/v1/stores` lists to `who`: those that can judge requests and that it may describe."""
        listed = []
        for state in self.service.stores.values():
            view = state.view
            if view.acl_problem is None and self.may_describe(state, view, who, host):
                listed.append(state)
        return listed

    async def version(self, state: StoreState, number: int) -> LoadedVersion:
        """Version N in memory, loaded off the event loop when it is not. 404 when it cannot be served, without why
        (`unservable`)."""
        view = state.view
        found = view.pinned.get(number)
        if found is not None:
            return found
        if number not in view.versions:
            raise not_found(f"store {state.name} has no version {number}")
        if number in view.unservable:
            raise unservable(number)
        try:
            return await asyncio.to_thread(state.loaded, number)
        except CfgtoolError as exc:
            raise unservable(number) from exc

    @contextlib.contextmanager
    def long_poll(self, who: str | None, scope: Scope) -> Iterator[None]:
        """One long poll waiting on a change feed: the API's, or the console's live timeline. Denied 429 past
        `MAX_POLLS` at once per principal (per client address without tokens)."""
        holder = who if who is not None else (scope["client"][0] if scope.get("client") else None)
        if self._polls[holder] >= MAX_POLLS:
            message = f"at most {MAX_POLLS} long polls may wait at once per principal"
            raise Denied(error(429, "too_many_long_polls", message), [(b"retry-after", b"1")])
        self._polls[holder] += 1
        try:
            yield
        finally:
            self._polls[holder] -= 1
            if not self._polls[holder]:
                del self._polls[holder]

    # -- the change feed ----------------------------------------------------------------------------------
    async def _changes(self, scope: Scope, send: Send, store: str) -> None:
        """`GET /v1/{store}/changes?since=S&wait=W`: the events after S, held up to W seconds for one. The
        answers of long polls woken together are built once."""
        try:
            found = await self._changes_answer(scope, store)
            headers: Headers = [(b"cache-control", NO_STORE)]
        except Denied as exc:
            found, headers = exc.answer, [*exc.headers, (b"cache-control", NO_STORE)]
        self.metrics.count("changes", found.status)
        await respond(scope, send, found, headers)

    async def _changes_answer(self, scope: Scope, store: str) -> Answer:
        who = await self.principal(scope["headers"])
        state, view = self.described_store(store, who, _host(scope))
        feed = self.service.feeds[state.name]
        query = parse_qs(scope["query_string"].decode("latin-1"))
        try:
            since = int(query.get("since", ["0"])[-1])
            wait = min(max(float(query.get("wait", [DEFAULT_WAIT])[-1]), 0.0), MAX_WAIT)
        except ValueError as exc:
            raise Denied(error(400, "bad_request", "since is an integer and wait a number of seconds")) from exc
        deadline = time.monotonic() + wait
        if feed.seq > since or wait <= 0 or feed.closed:
            events = feed.after(since)
        else:  # a long poll: at most MAX_POLLS waiting per principal
            with self.long_poll(who, scope):
                events = await feed.wait(since, wait)
                while not events and feed.seq <= since and not feed.closed:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    events = await feed.wait(since, left)  # woken by an event that is still not past `since`
        seq = max(feed.seq, since)  # a `since` ahead of this server: never back
        current = state.view.current_for(instance_of(scope["headers"]))
        seen = Visibility.of_store(view, who, _host(scope))  # changed-key counts only to who sees every key
        return self._feeds.get_or_build(
            (store, since, seq, current, seen.counts),
            lambda: answer({"seq": seq, "current": current, "events": [e.to_json(seen.count) for e in events]}),
        )

    async def _named(self, scope: Scope, send: Send, store: str, name: str) -> None:
        """`versions/current/...` and `versions/previous/...`: a redirect to `versions/{N}/...` of the version
        the name stands for now (never cached: it moves with every publish and rollback)."""
        headers: Headers = [(b"cache-control", NO_STORE)]
        try:
            who = await self.principal(scope["headers"])
            _, view = self.described_store(store, who, _host(scope))
            number = view.named(name, instance_of(scope["headers"]))
            if number is None:
                raise not_found(f"store {store} has no {name} version that can be served")
            pieces = (scope.get("raw_path") or scope["path"].encode()).split(b"/", 5)  # as sent: still quoted
            if len(pieces) != 6:
                raise not_found(f"no such path under /v1/{store}/versions/{name}/")
            query = b"?" + scope["query_string"] if scope["query_string"] else b""
            location = b"/v1/%s/versions/%d/%s%s" % (pieces[2], number, pieces[5], query)
            found = answer({"store": store, "name": name, "version": number, "location": location.decode()}, 307)
            version = str(number).encode()
            headers += [(b"location", location), (b"cfgtool-version", version)]
        except Denied as exc:
            found, headers, version = exc.answer, [*exc.headers, *headers], None
        self.metrics.count("named", found.status)
        await respond(scope, send, found, headers, version)

    # -- the hot path -------------------------------------------------------------------------------------
    async def _key(
        self, scope: Scope, send: Send, store: str, number: str | None, text: str, instance: bytes | None = None
    ) -> None:
        route = "current" if number is None else "version"
        headers: Headers = []
        version = None
        try:
            found, headers, version = await self._key_answer(scope, store, number, text, instance)
        except Denied as exc:
            found, headers = exc.answer, exc.headers
        if found.status == 200:
            headers = [(b"etag", found.etag), *headers]
            if etag_matches(_header(scope, b"if-none-match"), found.etag):
                found = Answer(304, b"", found.etag)
        else:
            headers.append((b"cache-control", NO_STORE))
        self.metrics.count(route, found.status)
        await respond(scope, send, found, headers, version)

    async def _key_answer(
        self, scope: Scope, store: str, asked: str | None, text: str, instance: bytes | None
    ) -> tuple[Answer, Headers, bytes | None]:
        """The answer to a key read, its headers, and the version a `current` read names (`Cfgtool-Version`) for
        `instance` (its `Cfgtool-Instance`)."""
        who = None if self.service.tokens is None else await self.principal(scope["headers"])
        number = None if asked is None else url_version(asked)
        state, view = self.store(store, who)
        key = self.key(text)
        query = parse_qs(scope["query_string"].decode("latin-1")) if scope["query_string"] else {}
        if number is None:
            now = time.time()
            live = view.cohorts  # a staged rollout: the instance's own timeline (docs/serving.md)
            published = view.published if live is None else live.published(instance)
            seen = visible(published, now, state.cache_time, store, key)
            if seen.version is None:
                raise not_found(f"store {store} has no version that can be served")
            number = seen.version
            location = f"/v1/{store}/versions/{number}/keys/{key[1:]}".encode()
            version = str(number).encode()
            headers: Headers = [
                (b"cfgtool-version", version),
                (b"content-location", location),
                (b"cache-control", b"%s, must-revalidate, max-age=%d, stale-if-error=%d"
                 % (b"public" if view.public else b"private", seen.max_age, STALE_IF_ERROR)),
            ]  # fmt: skip
            if live is not None:  # the answer differs per instance: a cache keeps one per Cfgtool-Instance
                headers.append(VARY_INSTANCE)
        else:
            headers, version = [(b"cache-control", PUBLIC_IMMUTABLE if view.public else IMMUTABLE)], None
        loaded = view.pinned.get(number) or await self.version(state, number)
        rights = None
        if who is not None:  # (anyone may read everything without tokens)
            rights = self.check(view, loaded, who, "read", key, _host(scope), f"store {store} has no key {key}")
        plain = loaded.keys.get(key)
        if plain is None:  # a key without a node: say so in a header, and name a close node it may describe
            plain = await self.key_answer(state, loaded, key, who, _host(scope))
            if not loaded.near_known(key):  # a folder's first miss indexes its names: off the event loop
                await asyncio.to_thread(loaded.near_node, key)
            plain = self._suggesting(loaded, key, plain, rights)
            headers.append(NO_NODE)
        if query:
            sealed = query.get("secrets") == ["sealed"]
            if sealed:
                plain = loaded.sealed_answer(key, plain)
            if "path" in query:
                return self._value(loaded, key, query["path"][-1], plain, sealed), headers, version
        return plain, headers, version

    async def key_answer(
        self, state: StoreState, loaded: LoadedVersion, key: str, who: str | None, host: str | None
    ) -> Answer:
        """The answer for `key` from version `loaded`, a node or not; access is already judged. Denied 409 when its
        node did not resolve: the version compiled with errors elsewhere.

        A key without a node under a node whose config uses the intrinsics is resolved for its own name by
        the store's resolver process, one name after another. Any name may be asked for, so the wait is bounded. At
        most `RESOLVING_PER_PRINCIPAL` such reads wait per principal (per client address without tokens), and
        `RESOLVING` in all. Beyond that: Denied 429. Each waits at most `worker.RESOLVE_TIMEOUT`, and past it: Denied
        503. The hung process is then killed and started again. The answers are cached (bounded)."""
        try:
            found = loaded.key_answer(key)
            if found is not None:
                return found
            with self.resolving(who, host):
                config = await state.resolve(loaded.version, key)
        except ResolverUnavailable as exc:
            raise Denied(error(503, "resolver_unavailable", exc.message), [(b"retry-after", b"1")]) from exc
        except CfgtoolError as exc:
            raise Denied(error(409, "unresolved", exc.message)) from exc
        return loaded.resolved(key, config)

    @contextlib.contextmanager
    def resolving(self, who: str | None, host: str | None) -> Iterator[None]:
        """One of the reads that wait for the store's resolver process: a key without a node under the intrinsics, or
        an explain. Denied 429 when `RESOLVING` reads in all wait already. Also when `RESOLVING_PER_PRINCIPAL` of the
        principal's wait (the client address's without tokens)."""
        holder = who if who is not None else host
        if self._resolving[holder] >= RESOLVING_PER_PRINCIPAL or self._resolving_total >= RESOLVING:
            message = "too many reads wait for the resolver process (keys without a node, explain): retry shortly"
            raise Denied(error(429, "too_many_requests", message), [(b"retry-after", b"1")])
        self._resolving[holder] += 1
        self._resolving_total += 1
        try:
            yield
        finally:
            self._resolving_total -= 1
            self._resolving[holder] -= 1
            if not self._resolving[holder]:
                del self._resolving[holder]

    @staticmethod
    def _suggesting(loaded: LoadedVersion, key: str, plain: Answer, seen: Visibility | None) -> Answer:
        """The answer `plain` for `key` (which has no node) with `did_you_mean`. That is a node with a close key that
        the principal may describe, if any (`Visibility.near_node`)."""
        near = (seen or Visibility((), None, None)).near_node(loaded, key)
        if near is None:
            return plain
        return loaded.cached(("near", key, near), lambda: {**json.loads(plain.body), "did_you_mean": near})

    def _value(self, loaded: LoadedVersion, key: str, path: str, plain: Answer, sealed: bool) -> Answer:
        """The value at `path` of the key answer `plain`, with its `exists` and `did_you_mean`. Its secrets are
        sealed envelopes when `sealed`. When `path` is not set, a 404 that says which quoted path is."""
        try:
            parts = split_path(path)
        except HoconError as exc:
            raise Denied(error(400, "bad_path", f"{path!r} is not a HOCON path: {exc.message}")) from exc
        doc = json.loads(plain.body)
        found, exists, near = read_path(doc["config"], parts), doc["exists"], doc.get("did_you_mean")
        value = found.value
        if not found.found:
            said = f"{path} is not set in the config of {key} (version {loaded.version})"
            if not exists:
                said += f"; {key} has no node" + (f" (did you mean {near}?)" if near else "")
            quoted = found.did_you_mean
            raise Denied(error(404, "not_found", said, quoted), [] if exists else [NO_NODE])
        return loaded.cached(
            ("value", key, path, sealed, near),
            lambda: {"store": loaded.store, "key": key, "version": loaded.version, "path": path, "value": value,
                     "exists": exists, **({"did_you_mean": near} if near else {})},
        )  # fmt: skip


def _host(scope: Scope) -> str | None:
    """The client's address (the socket's peer, or `X-Forwarded-For` from a proxy that `--forwarded-allow-ips`
    names: see `server.ForwardedFor`), for ACL `host`."""
    client = scope.get("client")
    return str(client[0]) if client else None


def instance_of(headers: Sequence[tuple[bytes, bytes]]) -> bytes | None:
    """The request's `Cfgtool-Instance` (the last one, as the consumers and the access log take it)."""
    found = None
    for name, value in headers:
        if name == b"cfgtool-instance":
            found = value
    return found


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


async def respond(scope: Scope, send: Send, found: Answer, headers: Headers, version: bytes | None = None) -> None:
    """Send a prebuilt answer: a 304, or an answer to HEAD without its body. Note it in the scope for the access log
    (`version`: the `Cfgtool-Version` it names)."""
    body = b"" if found.status == 304 or scope["method"] == "HEAD" else found.body
    start = [(b"content-type", JSON), *headers]
    if found.status != 304:
        start.append((b"content-length", str(len(found.body)).encode()))
    scope[SENT] = (found.status, len(body), version)
    await send({"type": "http.response.start", "status": found.status, "headers": start})
    await send({"type": "http.response.body", "body": body})


__all__ = ["Api", "Denied", "answer", "respond"]
