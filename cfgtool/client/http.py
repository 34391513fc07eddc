"""The server's HTTP API as clients speak it (docs/http-client.md), and `ServerBackend`, a `ConfigClient`'s backend
through `cfgtool serve`.

This is the one module that speaks the API for every reader: the client, the change feed (`store_state`, `changes`),
the agent (`current_key`, `report_applied`), the consumers list (`consumers`). Each answer's status passes
`checked_status`, the one mapping of 401, 403, 404 and any other refusal to cfgtool's errors. `Connection` is the
transport: one kept-alive connection that bounds what a server can make it do (answer size, a total deadline per
request, redirects to the same origin only). Only the standard library speaks HTTP here: a client needs none of the
server's dependencies.

`ConfigClient("http://host:8750", store="demo")` reads through a server. The rule (`is_server_url`): an http(s)
URL with nothing after the host and port names a cfgtool server, such as `http://host:8750` or `http://host:8750/`.
Every other location is a git repository that the git backend clones, including
`https://git.example.com/configs.git`. A server behind a path prefix is reached with `HttpConfigClient(url, ...)`.

`ServerBackend` pins the store's current version at construction. That takes one conditional GET of
`/v1/{store}/versions`, which also gives the commit. From then on it reads only `versions/{N}/...`, so a pinned
process never mixes versions. Every answer is kept in memory and in the cache (`cache_root()/http`). The cache holds
msgpack plain data sealed with the user's cache key, written atomically. A `versions/{N}/...` answer never changes,
so a cached one is used without asking. The versions list is asked for with `If-None-Match`, so an unchanged one
costs a 304. The server may be unreachable at construction. Then `offline="cache"` (the default) pins the version the
server last named as current, from the cache, and warns (`OfflineWarning`). `offline="error"` raises
`ServerUnavailable`. Secrets arrive as "[hidden]", as the server serves them. `keys` comes from one
`imported-by -r /` answer: every node but the root has the root among its layers. The cache is kept per server,
store and principal (`cache_name`).

Every request says who asks, for the server's list of consumers (docs/serving.md). It sends `Cfgtool-Instance: <id>`
and `User-Agent: cfgtool/<version> (<kind>)`. The id is `instance=`, by default the host name and process id. A
process that applies versions (the agent) also reports the version it applied with `report_applied`. An application
reports the errors it meets on the pinned version with `client.report_error(message)`, for a rollout's consumers gate.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import re
import socket
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple
from urllib.parse import SplitResult, quote, urljoin, urlsplit

from cfgtool._util.atomic import write_atomic_bytes
from cfgtool._util.cacheauth import Sealer
from cfgtool._util.cachedir import cache_root, checked_root, private_dir
from cfgtool._util.codec import DAMAGED, pack, unpack
from cfgtool._version import __version__
from cfgtool.client.local import StoreNotFound, compact_json
from cfgtool.errors import CfgtoolError, SourceError, UsageError
from cfgtool.hocon import Origin
from cfgtool.snapshot.explain import Explanation, LayerValue
from cfgtool.snapshot.layers import intrinsic_origin
from cfgtool.snapshot.model import KeyNotFound, Lookup
from cfgtool.store.keys import ROOT, normalize_key
from cfgtool.versions import VersionNotFound
from cfgtool.versions.artifact_rows import values_at
from cfgtool.versions.names import CURRENT, PREVIOUS, version_spec

Offline = Literal["cache", "error"]
_FORMAT = 2  # the layout of a cache entry: {"format", "path", "etag", "body"}, sealed (cacheauth)


class ServerUnavailable(SourceError):
    """The server cannot be reached (or answered with a server error) and the cache cannot stand in for it."""


class AccessDenied(CfgtoolError):
    """The server refused the request: no or an unknown token (401), or the principal may not read (403)."""


class OfflineWarning(UserWarning):
    """The server was unreachable at construction: the client reads the newest version it has cached."""


def is_server_url(location: str | Path) -> bool:
    """Whether `location` names a cfgtool server: an http(s) URL with no path beyond `/`, no query, no fragment."""
    if not isinstance(location, str):
        return False
    parts = urlsplit(location)
    return (
        parts.scheme in ("http", "https")
        and bool(parts.hostname)
        and parts.path in ("", "/")
        and not parts.query
        and not parts.fragment
    )


def check_http_url(location: str) -> SplitResult:
    """The parts of `location`, an http(s) URL with a host (a path prefix allowed); UsageError naming it when it is
    not one, so a command can refuse a bad `--server` before it starts rather than at each request."""
    try:
        parts = urlsplit(location)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != -1  # a bad port raises
    except ValueError:
        ok = False
    if not ok or not location.isprintable() or " " in location:
        shown = location if location.isprintable() else repr(location)
        raise UsageError(f"{shown}: not an http(s) URL", hint="pass a server URL such as http://host:8750")
    return parts


MAX_BYTES = 64 * 2**20  # the largest answer a client accepts by default
MESSAGE_LIMIT = 500  # characters of a server's error message kept
_REDIRECTS = frozenset((301, 302, 303, 307, 308))
_MAX_REDIRECTS = 5
_CHUNK = 65536


class AnswerTooLarge(ServerUnavailable):
    """The server's answer is larger than the client's `max_bytes`."""


def _origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of an http(s) URL, the default port spelled out: what "same origin" compares."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:  # a port that is not a number
        port = None
    return scheme, (parts.hostname or "").lower(), port


class Connection:
    """One kept-alive HTTP connection to a server at `location` (a prefix path allowed). One thread at a time uses it
    (a lock). `get` retries once on a fresh connection when the server closed the old one.

    It bounds what a server can make it do (docs/http-client.md). An answer over `max_bytes` is AnswerTooLarge.
    `timeout` is a total deadline for each request, redirects and every byte of the answer included. Each read waits
    at most the time left, and a timer cuts the socket at the deadline. So a server that trickles bytes cannot
    stretch it. Redirects are followed only to the same origin (scheme, host and port), at most 5. So a token is
    never sent elsewhere.
    """

    def __init__(self, location: str, timeout: float, max_bytes: int = MAX_BYTES) -> None:
        parts = check_http_url(location)
        self.location = location
        self._prefix = parts.path.rstrip("/")
        self._origin = _origin(location)
        self._kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._address = (parts.hostname or "", parts.port)  # a host: check_http_url refused a URL without one
        self._timeout = timeout
        self._max_bytes = max_bytes
        self._conn: http.client.HTTPConnection | None = None
        self._sock: socket.socket | None = None  # the socket of the request under way, for the watchdog and abort
        self._lock = threading.Lock()
        self._shut = False

    def get(self, path: str, headers: Mapping[str, str]) -> tuple[int, http.client.HTTPMessage, bytes]:
        """(status, headers, body) of GET `path` within the deadline. ServerUnavailable when the server cannot be
        reached, fails to answer in time, or redirects elsewhere. AnswerTooLarge when it answers too much."""
        deadline = time.monotonic() + self._timeout
        target = self._prefix + path
        with self._lock:
            for _ in range(_MAX_REDIRECTS + 1):
                status, reply, body = self._attempt("GET", target, headers, None, deadline)
                location = reply.get("Location") if status in _REDIRECTS else None
                if location is None:
                    return status, reply, body
                url = urljoin(self._url(target), location)
                if _origin(url) != self._origin:
                    raise ServerUnavailable(
                        f"{self._url(target)} redirects to another server ({_origin(url)[1] or url}): not followed",
                        hint="point the client at the server that answers",
                    )
                moved = urlsplit(url)
                target = moved.path + (f"?{moved.query}" if moved.query else "")
        raise ServerUnavailable(f"{self._url(path)}: more than {_MAX_REDIRECTS} redirects", hint="check the server")

    def post(self, path: str, headers: Mapping[str, str], body: bytes) -> tuple[int, http.client.HTTPMessage, bytes]:
        """(status, headers, body) of POST `body` to `path` within the deadline, bounded as `get`. A redirect is an
        answer like any other: a body is never sent on to another place."""
        with self._lock:
            return self._attempt("POST", self._prefix + path, headers, body, time.monotonic() + self._timeout)

    def _url(self, target: str) -> str:
        scheme, host, port = self._origin
        return f"{scheme}://{host}:{port}{target}"

    def _attempt(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes | None, deadline: float
    ) -> tuple[int, http.client.HTTPMessage, bytes]:
        """One request, retried once on a fresh connection when the server closed a kept-alive one."""
        for attempt in (1, 2):
            if self._shut:
                raise ServerUnavailable(f"{self.location}: the connection was shut", hint="make a new one")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._late()
            if self._conn is None:
                self._conn = self._kind(*self._address, timeout=remaining)
            conn = self._conn
            if conn.sock is not None:
                conn.sock.settimeout(remaining)
            watchdog = threading.Timer(remaining, self.abort)
            watchdog.daemon = True
            watchdog.start()
            try:
                conn.request(method, target, body=body, headers=dict(headers))
                # kept here: the connection forgets its socket once an answer says it ends with the connection
                self._sock = conn.sock
                response = conn.getresponse()
                found = response.status, response.headers, self._body(response, deadline)
                if time.monotonic() >= deadline:  # the watchdog cut a body that has no length of its own
                    raise self._late()
                return found
            except ServerUnavailable:  # too large or too late: the rest of the answer is not read
                self._drop()
                raise
            except (OSError, http.client.HTTPException, UnicodeError) as exc:  # UnicodeError: a host IDNA refuses
                self._drop()
                if time.monotonic() >= deadline or isinstance(exc, TimeoutError):
                    raise self._late() from exc
                stale = isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError)
                if attempt == 2 or not stale:
                    raise ServerUnavailable(
                        f"cannot reach {self.location}: {exc or type(exc).__name__}",
                        hint="start the server or check the URL",
                    ) from exc
            finally:
                watchdog.cancel()
                self._sock = None
        raise AssertionError("unreachable")

    def _late(self) -> ServerUnavailable:
        return ServerUnavailable(
            f"{self.location} gave no complete answer within timeout={self._timeout:g} s",
            hint="retry later, or raise timeout=",
        )

    def _body(self, response: http.client.HTTPResponse, deadline: float) -> bytes:
        """The whole body, refused (AnswerTooLarge) past `max_bytes` whatever Content-Length says. It is cut at
        `deadline`: each read takes what has arrived and waits at most the time left. So bytes that keep coming
        slowly cannot stretch it."""
        limit = self._max_bytes
        length = response.getheader("Content-Length")
        if length is not None and _COUNT.fullmatch(length.strip()) and int(length) > limit:
            raise AnswerTooLarge(
                f"{self.location} answers {int(length):,} bytes, more than max_bytes={limit:,}",
                hint="raise max_bytes= if the answer is expected",
            )
        chunks: list[bytes] = []
        size = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._late()
            if self._sock is not None:
                self._sock.settimeout(remaining)
            chunk = response.read1(_CHUNK)
            if not chunk:
                response.close()  # all read: the connection is ready for the next request
                break
            size += len(chunk)
            if size > limit:
                raise AnswerTooLarge(
                    f"{self.location} answers more than max_bytes={limit:,} bytes",
                    hint="raise max_bytes= if the answer is expected",
                )
            chunks.append(chunk)
        return b"".join(chunks)

    def abort(self) -> None:
        """Wake a request blocked in another thread; it fails with ServerUnavailable. It serves to stop a watch, and
        to end a request at its deadline."""
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # a read blocked on it returns at once

    def shut(self) -> None:
        """Cut the request under way for good, from another thread or a signal handler; it takes no lock. The request
        fails with ServerUnavailable instead of being retried, and so does every later one. This stops a follower
        whose long poll must not start again."""
        self._shut = True
        self.abort()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        """Close the connection (the caller holds the lock, or no other thread uses it)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None


KINDS = ("client", "watch", "agent", "cli")  # what a `User-Agent: cfgtool/<version> (<kind>)` names
INSTANCE_LIMIT = 200  # characters of an instance id
# a letter or digit, then visible ASCII but `/` (a path segment of its own): never a space, a newline or a control
INSTANCE = re.compile(rf"[A-Za-z0-9][!-.0-~]{{0,{INSTANCE_LIMIT - 1}}}")


def default_instance() -> str:
    """This process's instance id: its host name and process id (`web-7:4242`), in visible ASCII."""
    host = re.sub(r"[^!-.0-~]", "_", socket.gethostname())[: INSTANCE_LIMIT - 12]
    host = host if host[:1].isalnum() and host.isascii() else f"h{host}"
    return f"{host}:{os.getpid()}"


def checked_instance(instance: str | None) -> str:
    """`instance`, or the default one for None. UsageError when it is not 1 to 200 visible ASCII characters but `/`,
    starting with a letter or digit."""
    if instance is None:
        return default_instance()
    if not INSTANCE.fullmatch(instance):
        raise UsageError(
            f"instance id {instance[:40]!r} is not 1 to {INSTANCE_LIMIT} visible ASCII characters starting with a"
            " letter or digit",
            hint="name the instance with letters, digits and punctuation, without spaces or / (e.g. web-7:4242)",
        )
    return instance


def request_headers(token: str | None, instance: str | None = None, kind: str = "client") -> dict[str, str]:
    """The headers of every request: JSON, and cfgtool's user agent naming the client's kind (`client`, `watch`,
    `agent` or `cli`). Also the instance id (`Cfgtool-Instance`: who reads which version, docs/serving.md) and the
    bearer token if any."""
    if kind not in KINDS:
        raise UsageError(f"kind={kind!r} is not one of {', '.join(KINDS)}", hint="kind='client'")
    headers = {
        "Accept": "application/json",
        "User-Agent": f"cfgtool/{__version__} ({kind})",
        "Cfgtool-Instance": checked_instance(instance),
    }
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return headers


class Check(NamedTuple):
    """The outcome of an instance's last attempt to apply a version. It says which one, whether it worked and the
    keys it rendered. It says why not in a short text, at most 500 characters. The server shows the text only to
    those who may read every one of those keys, since it may quote their values. With no keys named, it shows it to
    super users only."""

    version: int
    ok: bool
    message: str | None = None
    keys: tuple[str, ...] | None = None


def report_applied(
    location: str,
    store: str,
    applied: int | None,
    check: Check | None = None,
    *,
    instance: str | None = None,
    kind: str = "agent",
    token: str | None = None,
    timeout: float = 10.0,
) -> None:
    """Tell the server at `location` which version of `store` this instance has applied (None: none yet). Also tell
    it how its last attempt went. It posts to `/v1/{store}/consumers/{instance}`, which needs `describe` on the
    store. `GET /v1/{store}/consumers` then shows it. Raises ServerUnavailable when the server cannot be reached or
    refuses the report, AccessDenied for 401 and 403. A caller that must go on catches CfgtoolError."""
    headers = request_headers(token, instance, kind)
    doc: dict[str, Any] = {"applied": applied}
    if check is not None:
        message = check.message[:500] if check.message else None
        doc["last_check"] = {"version": check.version, "ok": check.ok, "message": message}
        if check.keys is not None:
            doc["last_check"]["keys"] = list(check.keys)
    connection = Connection(location.rstrip("/"), timeout)
    try:
        post_report(connection, store, headers, doc)
    finally:
        connection.close()


def report_error(
    location: str,
    store: str,
    version: int,
    message: str | None,
    *,
    instance: str | None = None,
    kind: str = "client",
    token: str | None = None,
    timeout: float = 10.0,
) -> None:
    """Tell the server at `location` that this instance met an error on `version` of `store`: a value its code could
    not use, a request that failed after a change. The server counts them per version and a rollout's consumers
    gate fails on them. `message` (at most 500 characters kept) shows to super users only, as it may quote config
    values. Errors as `report_applied`."""
    connection = Connection(location.rstrip("/"), timeout)
    try:
        post_report(connection, store, request_headers(token, instance, kind), error_report(version, message))
    finally:
        connection.close()


def error_report(version: int, message: str | None) -> dict[str, Any]:
    """The body of an error report on `version`."""
    return {"error": {"version": version, "message": message[:500] if message else None}}


def post_report(connection: Connection, store: str, headers: Mapping[str, str], doc: Mapping[str, Any]) -> None:
    """POST a report `doc` about the instance `headers` name to `/v1/{store}/consumers/{instance}`."""
    path = f"/v1/{quote(store, safe='')}/consumers/{quote(headers['Cfgtool-Instance'], safe='')}"
    body = json.dumps(doc).encode()
    status, _, data = connection.post(path, {**headers, "Content-Type": "application/json"}, body)
    checked_status(status, data, path, ok=(200, 204))


def cache_name(location: str, store: str, token: str | None) -> str:
    """The cache directory's name for one server, store and principal. Answers fetched with one token (or none) never
    serve a client holding another. The server may allow that one less. The token is hashed twice over, never
    written."""
    principal = hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest() if token is not None else ""
    return hashlib.sha256(f"{location}\0{store}\0{principal}".encode()).hexdigest()[:32]


def consumers(
    location: str, store: str, *, token: str | None = None, timeout: float = 10.0, instance: str | None = None
) -> dict[str, Any]:
    """`GET /v1/{store}/consumers` of the server at `location`: `{"instances": [...], "by_version": {"N": n}}`,
    the client instances this server heard from (docs/serving.md). StoreNotFound for a store it does not serve, or
    that the principal may not describe. AccessDenied for 401 and 403. ServerUnavailable otherwise."""
    path = f"/v1/{quote(store, safe='')}/consumers"
    connection = Connection(location.rstrip("/"), timeout)
    try:
        status, _, data = connection.get(path, request_headers(token, instance, "cli"))
    finally:
        connection.close()
    checked_status(
        status, data, path, missing=lambda said: StoreNotFound(
            said or f"{location} serves no store {store!r}", hint="GET /v1/stores lists them"
        ),
    )  # fmt: skip
    body = _json(data, path)
    if not isinstance(body, dict) or not isinstance(body.get("instances"), list):
        raise ServerUnavailable(f"{path}: the server's answer is not a list of consumers", hint="upgrade the server")
    return body


class _Answer(NamedTuple):
    """An answer's parsed JSON body, from the server or the cache. It is wrapped, so a cached `null` is not a miss."""

    body: Any


class ServerBackend:
    """A `ConfigClient`'s backend through a cfgtool server (`cfgtool.client.backend.Backend`): one version, pinned at
    construction from `/v1/{store}/versions`, then read key by key from `versions/{N}/...`.

    `requests` counts the HTTP requests made. `not_modified` counts the 304 answers among them: cache revalidations
    that cost no body. `offline` is True when the client pinned from the cache because the server was down.
    """

    def __init__(
        self,
        location: str,
        store: str,
        *,
        version: int | str | None = None,
        cache_dir: str | Path | None = None,
        offline: Offline = "cache",
        token: str | None = None,
        timeout: float = 10.0,
        max_bytes: int = MAX_BYTES,
        instance: str | None = None,
        kind: str = "client",
    ) -> None:
        if offline not in ("cache", "error"):
            raise UsageError(f"offline={offline!r} is not one of 'cache', 'error'", hint="offline='cache' or 'error'")
        self.location = location.rstrip("/")
        self.store = store
        self.variables: Mapping[str, str] = {}
        self.requests = 0
        self.not_modified = 0
        self.offline = False
        self._http = Connection(self.location, timeout, max_bytes)
        self._headers = request_headers(token, instance, kind)
        self.instance = self._headers["Cfgtool-Instance"]
        self._memory: dict[str, Any] = {}
        root = checked_root(Path(cache_dir)) if cache_dir is not None else cache_root()
        self._dir = root / "http" / cache_name(self.location, store, token)
        self._dir_name = str(self._dir)  # entries' paths are joined as text: pathlib costs more than a cached read
        self._sealer = Sealer()
        self._purpose_head = f"http {self._dir.name} "
        self.version, self.commit = self._choose(version, offline)

    # -- reads -------------------------------------------------------------------------------------------
    def normalize(self, key: str) -> str:
        return normalize_key(key, self.store)

    def lookup(self, key: str, strict: bool, *, sealed: bool = False) -> Lookup:
        """The config of `key` at the pinned version and whether it has a node
        (docs/resolution.md#keys-without-a-node). `sealed`: its secrets as their sealed envelopes instead of
        `[hidden]` (`?secrets=sealed`)."""
        body = self._read(f"keys{_tail(key)}" + ("?secrets=sealed" if sealed else ""))
        exists = bool(body.get("exists"))
        # a key without a node reads as its nearest ancestor, the first layer of its linearization
        # (docs/resolution.md#keys-without-a-node)
        node = key if exists else str(body.get("node") or next(iter(self.imports(key, recursive=True)), ""))
        config = body.get("config") or {}
        if not node or not isinstance(config, dict):
            raise ServerUnavailable(
                f"the server's answer for {key} names no node or no config object", hint="is this a cfgtool server?"
            )
        if strict and not exists:
            raise KeyNotFound.no_node(key, self.store, node, self.near(key))
        return Lookup(key, node, exists, config)

    def near(self, key: str) -> str | None:
        """The server's did-you-mean for `key` (which has no node): a node it may describe with a close key."""
        near = self._read(f"keys{_tail(key)}").get("did_you_mean")
        return near if isinstance(near, str) else None

    def explain(self, key: str, path: str) -> Explanation:
        """The server's explanation of the value at `path` (docs/resolution.md#provenance)."""
        tail = f"explain{_tail(key)}?path={quote(path, safe='')}"
        try:
            return _explanation(self._read(tail))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ServerUnavailable(
                f"the server's {tail} answer is not an explanation", hint="is this a cfgtool server?"
            ) from exc

    def imports(self, key: str, recursive: bool) -> list[str]:
        return self._query("imports", key, "imports", recursive)

    def imported_by(self, key: str, recursive: bool) -> list[str]:
        return self._query("imported-by", key, "imported_by", recursive)

    def tags(self, key: str) -> list[str]:
        return self._query("tags", key, "tags", False)

    def datasets(self, tag: str) -> list[str]:
        return self._query("datasets", tag, "datasets", False)

    def keys(self, prefix: str) -> list[str]:
        """From one `imported-by -r /` answer. That is the root and every node that has the root among its layers:
        every node that resolved."""
        every = {ROOT, *self.imported_by(ROOT, recursive=True)}
        under = prefix.rstrip("/") + "/"
        return sorted(k for k in every if k == prefix or k.startswith(under))

    def children(self, key: str) -> list[str]:
        return [k for k in self.keys(key) if k != key and k.rpartition("/")[0] in (key, "")]

    def report_error(self, message: str) -> None:
        """Tell the server that this instance met an error on the pinned version (`report_error`)."""
        post_report(self._http, self.store, self._headers, error_report(self.version, message))

    def config_json(self) -> Mapping[str, str]:
        """One request per key not yet cached."""
        return {key: compact_json(self.lookup(key, True).config) for key in self.keys(ROOT)}

    def config_values(self, paths: Sequence[tuple[str, ...]]) -> tuple[list[str], list[list[Any]]]:
        """From every node's config (one request per key not yet cached); secrets arrive `[hidden]`."""
        keys = self.keys(ROOT)
        configs = [self.lookup(key, True).config for key in keys]
        return keys, [values_at(configs, parts) for parts in paths]

    def close(self) -> None:
        """Close the connection to the server (a later read opens a new one)."""
        self._http.close()

    def describe(self) -> str:
        mode = ", offline" if self.offline else ""
        return f"{self.location!r}, store={self.store!r}, version={self.version}{mode}"

    # -- pinning -----------------------------------------------------------------------------------------
    def _choose(self, version: int | str | None, offline: Offline) -> tuple[int, str]:
        """(version, commit): `version` (N, `current` or `previous`), else the store's current one. From the cache
        when the server is down."""
        wanted = version_spec(version) if isinstance(version, str) else version
        path = f"/v1/{quote(self.store, safe='')}/versions"
        try:
            answer = self._get(path, revalidate=True, missing=self._no_store)
        except ServerUnavailable as exc:
            if offline == "error":
                raise ServerUnavailable(
                    f"{exc.message}; cannot pin a version of store {self.store!r}",
                    hint="start the server or check the URL; offline='cache' reads the newest cached version",
                ) from exc
            cached = self._cached(path)
            if cached is None:
                raise ServerUnavailable(
                    f"{exc.message}, and nothing of store {self.store!r} is cached",
                    hint="start the server or check the URL (a client caches what it reads once it has connected)",
                ) from exc
            answer, self.offline = cached, True
        versions = [v for v in answer.body if isinstance(v, dict)] if isinstance(answer.body, list) else []
        current = next((v for v in versions if v.get("status") == "current"), None)
        if wanted is None or wanted == CURRENT:
            chosen = self._rolled_out(versions) or current
            if chosen is None:
                raise StoreNotFound(f"store {self.store!r} has no current version", hint="publish one first")
        elif wanted == PREVIOUS:
            below = [v for v in versions if v.get("status") == "good" and v.get("servable", True)]
            chosen = max(below, key=lambda v: answer_int(v.get("version"), path)) if below and current else None
            if chosen is None:
                raise VersionNotFound(
                    f"store {self.store!r} has no previous version (no good version below the current one)",
                    hint="GET /v1/{store}/versions lists every version",
                )
        else:
            chosen = next((v for v in versions if v.get("version") == wanted), None)
            if chosen is None:
                raise VersionNotFound(f"store {self.store!r} has no version {wanted}", hint="GET /v1/{store}/versions")
        number = answer_int(chosen.get("version"), f"{path}: version")
        if self.offline:
            warnings.warn(
                f"{self.location} is unreachable: reading store {self.store!r} version {number} from the"
                " cache (the newest version it holds)",
                OfflineWarning,
                stacklevel=6,  # the HttpConfigClient(...) call
            )
        return number, str(chosen.get("commit", ""))

    def _rolled_out(self, versions: list[dict[str, Any]]) -> dict[str, Any] | None:
        """While a version rolls out, the one the server gives this instance as `current` (the list marks the stable
        version, which readers without an id get; docs/rollout.md). None without a rollout, or offline."""
        rolling = ("rolling", "paused", "baking")
        if self.offline or not any(isinstance(v.get("rollout"), dict) and v["rollout"].get("state") in rolling
                                   for v in versions):  # fmt: skip
            return None
        try:
            _, number = feed_state(self._store_entry(), f"/v1/stores: store {self.store!r}")
        except CfgtoolError:
            return None  # the list's current, as a reader without an id
        return next((v for v in versions if v.get("version") == number), None)

    def _store_entry(self) -> Any:
        stores = self._get("/v1/stores", revalidate=True).body
        listed = stores if isinstance(stores, list) else []
        return next((s for s in listed if isinstance(s, dict) and s.get("name") == self.store), None)

    def _no_store(self, said: str | None) -> StoreNotFound:
        return StoreNotFound(f"{self.location} serves no store {self.store!r}", hint=self._stores_hint())

    def _stores_hint(self) -> str:
        try:
            stores = self._get("/v1/stores", revalidate=True).body
            names = ", ".join(sorted(str(s.get("name")) for s in stores if isinstance(s, dict)))
        except (CfgtoolError, TypeError, AttributeError):
            return "check the store's name (GET /v1/stores lists them)"
        return f"the server's stores: {names or 'none'}"

    # -- HTTP and the cache ------------------------------------------------------------------------------
    def _query(self, query: str, key: str, field: str, recursive: bool) -> list[str]:
        body = self._read(f"{query}{_tail(key)}" + ("?recursive=1" if recursive else ""))
        found = body.get(field)
        if not isinstance(found, list):
            raise ServerUnavailable(f"the server's {query} answer has no {field!r} list", hint="upgrade the server")
        return [str(k) for k in found]

    def _read(self, tail: str) -> Any:
        """The JSON answer for `versions/{N}/<tail>`: from memory, the cache, else the server."""
        path = f"/v1/{quote(self.store, safe='')}/versions/{self.version}/{tail}"
        found = self._memory.get(path)
        if found is not None:
            return found
        answer = self._get(
            path, revalidate=False, missing=lambda said: KeyNotFound(
                said or f"{path}: not found", hint="check the key and your access"
            ),
        )  # fmt: skip
        if not isinstance(answer.body, dict):
            raise ServerUnavailable(f"{path}: the server's answer is not a JSON object", hint="upgrade the server")
        self._memory[path] = answer.body
        return answer.body

    def _get(self, path: str, *, revalidate: bool, missing: Missing | None = None) -> _Answer:
        """GET `path`. A cached answer is used as it is (`revalidate=False`: immutable) or sent as If-None-Match.
        A refusal raises as `checked_status` says (`missing` makes the error of a 404)."""
        entry = self._entry(path)
        cached = _decode(entry)
        if cached is not None and not revalidate:
            return cached
        headers = dict(self._headers)
        etag = entry.get("etag") if cached is not None and entry is not None else None
        if isinstance(etag, str):
            headers["If-None-Match"] = etag
        status, reply_headers, data = self._http.get(path, headers)
        self.requests += 1
        if status == 304 and cached is not None:
            self.not_modified += 1
            return cached
        checked_status(status, data, path, missing=missing)
        body = _json(data, path)
        self._store(path, reply_headers.get("ETag"), data)
        return _Answer(body)

    def _file(self, path: str) -> str:
        return f"{self._dir_name}/{hashlib.sha256(path.encode()).hexdigest()[:40]}.msgpack"

    def _purpose(self, path: str) -> str:
        """What a cache entry is sealed for: this server, store and principal (the directory), and `path`."""
        return self._purpose_head + path

    def _entry(self, path: str) -> dict[str, Any] | None:
        """The cache entry of `path`; a missing, damaged, forged or foreign one is None (a miss). An answer is
        used without asking the server, so only a sealed one is believed (`cacheauth`)."""
        try:
            with open(self._file(path), "rb") as file:
                data = self._sealer.unseal(self._purpose(path), file.read())
            entry = unpack(data) if data is not None else None
        except (OSError, *DAMAGED):
            return None
        if not isinstance(entry, dict) or entry.get("format") != _FORMAT or entry.get("path") != path:
            return None
        return entry if isinstance(entry.get("body"), bytes) else None

    def _cached(self, path: str) -> _Answer | None:
        return _decode(self._entry(path))

    def _store(self, path: str, etag: str | None, data: bytes) -> None:
        """Keep an answer in the cache (atomically; a cache that cannot be written costs time only)."""
        try:
            entry = pack({"format": _FORMAT, "path": path, "etag": etag, "body": data})
            sealed = self._sealer.seal(self._purpose(path), entry)
            if sealed is not None:
                private_dir(self._dir)
                write_atomic_bytes(Path(self._file(path)), sealed)
        except (OSError, ValueError, TypeError):
            pass


def _decode(entry: Mapping[str, Any] | None) -> _Answer | None:
    """A cache entry's answer. None when there is no entry or its body is damaged (a miss)."""
    if entry is None:
        return None
    try:
        return _Answer(json.loads(entry["body"]))
    except ValueError:
        return None


def _tail(key: str) -> str:
    """A key as the URL tail of docs/serving.md: without its leading `/` (`/` itself is the empty tail)."""
    return "/" + key.lstrip("/")


def _json(data: bytes, path: str) -> Any:
    """A server's JSON answer. ServerUnavailable for one that is not JSON or nests past the parser's recursion."""
    try:
        return json.loads(data) if data else None
    except (ValueError, RecursionError) as exc:
        raise ServerUnavailable(f"{path}: the server's answer is not JSON", hint="is this a cfgtool server?") from exc


Missing = Callable[[str | None], CfgtoolError]  # the error of a 404, given the server's message if any


def checked_status(
    status: int, data: bytes, path: str, ok: tuple[int, ...] = (200,), *, missing: Missing | None = None
) -> None:
    """The one mapping of a server's refusals to cfgtool's errors. Every reader uses it: the client, the change feed,
    the agent, the consumers list. Nothing for a status in `ok`. AccessDenied for 401 (no or an unknown token) and
    403 (the principal may not). For 404, the caller's `missing(message)`: a store, a key, a version, as the caller
    knows what was asked for. Else ServerUnavailable, as for any other status. The server's own message is kept when
    its body has one. (An unreachable server and a missed deadline are ServerUnavailable already: `Connection`.)"""
    if status in ok:
        return
    try:
        body = json.loads(data) if data else None
    except (ValueError, RecursionError):
        body = None
    said = _message(body, "") or None
    message = said or f"{path}: HTTP {status}"
    if status == 401:
        raise AccessDenied(message, hint="pass a token (token=..., --token-file; `cfgtool token add` makes one)")
    if status == 403:
        raise AccessDenied(message, hint="ask for access in the store's ACL")
    if status == 404 and missing is not None:
        raise missing(said)
    raise ServerUnavailable(message, hint="see the server's /healthz")


def get_json(connection: Connection, path: str, headers: Mapping[str, str]) -> Any:
    """The JSON answer of `GET path`, such as the change feed or the list of stores. AccessDenied for 401 and 403.
    ServerUnavailable for any other status but 200, and for an answer that is not JSON."""
    status, _, data = connection.get(path, headers)
    checked_status(status, data, path)
    return _json(data, path)


_COUNT = re.compile(r"[0-9]{1,18}")


def answer_int(value: object, what: str) -> int:
    """A version or sequence number read from a server's answer (a JSON number, or header text such as
    `Cfgtool-Version`). Anything else is ServerUnavailable: text, a float, a boolean, thousands of digits. So are the
    digits of another script that `int()` would take. So a broken or hostile server costs a retry, not a crash."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**18:
        return value
    if isinstance(value, str) and _COUNT.fullmatch(value):
        return int(value)
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
    raise ServerUnavailable(f"{what} is not a version or sequence number: {shown}", hint="is this a cfgtool server?")


def feed_state(doc: object, what: str) -> tuple[int, int | None]:
    """(seq, current version) of a store's entry in `/v1/stores` or of a change feed's answer. This is the one
    reading of both, checked (`answer_int`)."""
    if not isinstance(doc, dict):
        raise ServerUnavailable(f"{what} is not a JSON object", hint="is this a cfgtool server?")
    seq, current = answer_int(doc.get("seq"), f"{what}: seq"), doc.get("current")
    return seq, None if current is None else answer_int(current, f"{what}: current")


def store_state(connection: Connection, store: str, headers: Mapping[str, str]) -> tuple[int, int | None]:
    """(seq, current version) of `store` now, from `GET /v1/stores`: where a change feed starts. ServerUnavailable
    when the server does not list the store."""
    stores = get_json(connection, "/v1/stores", headers)
    listed = stores if isinstance(stores, list) else []
    entry = next((s for s in listed if isinstance(s, dict) and s.get("name") == store), None)
    if entry is None:
        raise ServerUnavailable(f"{connection.location} serves no store {store!r}", hint="GET /v1/stores lists them")
    return feed_state(entry, f"/v1/stores: store {store!r}")


def changes(
    connection: Connection, store: str, seq: int, wait: float, headers: Mapping[str, str]
) -> tuple[int, int | None]:
    """(seq, current version) of `store` once its change feed moves past `seq`, or after `wait` seconds (a long
    poll of `GET /v1/{store}/changes`)."""
    path = f"/v1/{quote(store, safe='')}/changes?since={seq}&wait={wait:.3f}"
    return feed_state(get_json(connection, path, headers), path)


_MAX_AGE = re.compile(r"max-age=([0-9]{1,9})\b")


class KeyState(NamedTuple):
    """What the server says of a key now: the answer's ETag, the version the key sees (a staged rollout may show it
    an older one than the store's current), and for how many seconds that holds (`Cache-Control: max-age`)."""

    etag: str | None
    version: int
    max_age: int


def current_key(
    connection: Connection, store: str, key: str, headers: Mapping[str, str], etag: str | None = None
) -> KeyState:
    """`GET /v1/{store}/current/keys/{key}`, conditional on `etag` (an unchanged answer is a 304). AccessDenied for
    401 and 403; ServerUnavailable for any other status but 200 and 304, and for a version that is no number."""
    path = f"/v1/{quote(store, safe='')}/current/keys/{quote(key.lstrip('/'))}"
    asked = dict(headers) if etag is None else {**headers, "If-None-Match": etag}
    status, reply, data = connection.get(path, asked)
    checked_status(status, data, path, ok=(200, 304))
    version = answer_int(reply.get("Cfgtool-Version"), f"{path}: the Cfgtool-Version header")
    max_age = _MAX_AGE.search(reply.get("Cache-Control") or "")
    return KeyState(reply.get("ETag"), version, int(max_age.group(1)) if max_age else 0)


def _message(body: Any, default: str) -> str:
    """The `message` of a server's error answer: one line of at most MESSAGE_LIMIT printable characters. A server
    does not choose what a log or a terminal shows beyond that (a forged log line, an escape sequence)."""
    message = body.get("message") if isinstance(body, dict) else None
    if not message:
        return default
    text = "".join(c if c.isprintable() else " " for c in str(message)[:MESSAGE_LIMIT])
    return text + (" ..." if len(str(message)) > MESSAGE_LIMIT else "")


def _explanation(body: Mapping[str, Any]) -> Explanation:
    """An Explanation from its JSON form (`Explanation.to_json`)."""

    def origin(o: Any) -> Origin | None:
        if not isinstance(o, dict):
            return None
        if "intrinsic" in o:  # a value built from `${cfgtool.name}`: no file
            return intrinsic_origin(str(o["intrinsic"]))
        return Origin(str(o["file"]), int(o["line"]), int(o["col"]))

    layers = tuple(
        LayerValue(str(lv["layer"]), str(lv.get("reached", "")), lv.get("value"), origin(lv.get("origin")))
        for lv in body.get("layers", [])
    )
    sources = tuple(o for o in (origin(s) for s in body.get("sources", [])) if o is not None)
    return Explanation(
        key=str(body["key"]),
        node=str(body.get("node", body["key"])),
        exists=bool(body.get("exists")),
        path=str(body.get("path", "")),
        found=bool(body.get("found")),
        value=body.get("value"),
        origin=origin(body.get("origin")),
        sources=sources,
        layers=layers,
        did_you_mean=str(body["did_you_mean"]) if isinstance(body.get("did_you_mean"), str) else None,
    )


__all__ = [
    "AccessDenied",
    "AnswerTooLarge",
    "Check",
    "Connection",
    "KeyState",
    "OfflineWarning",
    "ServerBackend",
    "ServerUnavailable",
    "answer_int",
    "changes",
    "check_http_url",
    "checked_status",
    "consumers",
    "current_key",
    "default_instance",
    "feed_state",
    "get_json",
    "is_server_url",
    "post_report",
    "report_applied",
    "report_error",
    "request_headers",
    "store_state",
]
