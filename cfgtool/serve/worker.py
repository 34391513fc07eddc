"""Versions are read in a short-lived worker process, not in the server.

Reading a version means loading its whole Snapshot through `ConfigClient`. It is compiled the first time, then read
from the client's snapshot cache. That takes tens of megabytes and a second of CPU for a large store. Done in the
server, that memory would stay as the process's high-water mark. And the compile would hold the interpreter lock
while requests wait. So a worker loads the versions. It is forked from a fork server that has cfgtool imported; it
runs one task, then exits. It builds each node's answer (canonical JSON bytes and ETag). It counts the keys each
version changed, and hands back plain data packed with msgpack. The server keeps only the answers: a tenth of the
snapshot.

If no worker can be started, the same function runs in the server's loader thread.

A key without a node under a node whose config uses the `cfgtool.key` intrinsics needs its config resolved again for
its own name. That takes milliseconds of pure Python over the whole snapshot, for any name a client makes up.
`Resolver` does that in one long-lived worker process. It keeps the snapshot of the store's current version, loaded
as soon as that version is current, and at most one other. So the server's event loop only sends the key and receives
the config's bytes. A client asking for one random name after another costs the server a pipe round trip per name. It
never holds the server's interpreter lock. The server bounds how many such reads wait (`app.py`). Explain
(provenance: which file and line set a value) is answered there too, from the same snapshots. So the server never
loads one.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver
import os
import sys
import threading
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Self, TypeVar

from cfgtool._util.codec import pack, unpack
from cfgtool.client.client import ConfigClient
from cfgtool.errors import CfgtoolError
from cfgtool.snapshot.model import canonical_json, node_hash
from cfgtool.store.queries import pack_relations

log = logging.getLogger("cfgtool.serve")
RESOLVER_NICENESS = 5  # added to the resolver process's nice value
RESOLVE_TIMEOUT = 10.0  # seconds a read waits for the resolver process; past it, 503 and the process is killed
LOAD_TIMEOUT = 300.0  # seconds the resolver may take to load a version's snapshot; past it, the same
LOAD_TRIES = 3  # loads of a version a read asks for while other reads make the resolver keep other versions


def _client(root: str, store: str, version: int, cache: str) -> ConfigClient:
    """Version N of the store. `VersionHasErrors` when its compile, schemas or policies report an error. Such a
    version is never served: a tag made by hand never went through `publish`'s checks."""
    return ConfigClient(Path(root), store=store or ".", version=version, cache_dir=Path(cache))


@dataclass(frozen=True, slots=True)
class VersionAnswers:
    """What the server keeps of a version it serves, built by the worker. That is every resolved node's key answer:
    `{"commit", "config", "exists", "key", "store", "version"}` as canonical JSON bytes, with its ETag. Also what a
    key without a node needs to be answered, and the import relations the queries read (`pack_relations`)."""

    commit: str
    name: str | None  # the store's `_CONFIG_STORE` name
    head: bytes  # a key answer's bytes before its config ...
    tail: bytes  # ... and after its key (`build_body`)
    configs: dict[str, bytes]  # canonical JSON of each resolved node's config
    bodies: dict[str, list[bytes]]  # each resolved node's answer: [body, ETag]
    failed: list[str]  # the nodes that did not resolve
    intrinsic: list[str]  # the nodes whose config uses the `cfgtool.key` intrinsics
    secrets: dict[str, dict[str, str | None]]  # node -> path -> sealed envelope (None: not sealed)
    tag_roots: list[str]
    relations: dict[str, Any]  # `pack_relations`

    def wire(self) -> dict[str, Any]:
        """The record as plain data, for msgpack across the process boundary (no pickled classes)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Self:
        return cls(**data)


@dataclass(frozen=True, slots=True)
class VersionLoad:
    """The worker's report on one version: why it cannot be served (`error`). Or the number of keys it changed since
    its base, the version readers had before it. When asked to keep it, also its answers."""

    version: int
    error: str | None = None
    changed: int = 0
    answers: VersionAnswers | None = None

    def wire(self) -> list[Any]:
        """The report as plain data, for msgpack."""
        shipped = None if self.answers is None else self.answers.wire()
        return [self.version, self.error, self.changed, shipped]

    @classmethod
    def from_wire(cls, data: list[Any]) -> Self:
        version, error, changed, shipped = data
        return cls(version, error, changed, None if shipped is None else VersionAnswers.from_wire(shipped))


def _answers(client: ConfigClient, name: str) -> VersionAnswers:
    """The answers of the version `client` reads, as the store `name` serves them."""
    snapshot = client.snapshot
    head = f'{{"commit":{json.dumps(client.commit)},"config":'.encode()
    tail = f',"store":{json.dumps(name)},"version":{client.version}}}'.encode()
    configs: dict[str, bytes] = {}
    bodies: dict[str, list[bytes]] = {}
    failed, intrinsic = [], []
    for key, node in snapshot.nodes.items():
        if node.config is None:
            failed.append(key)
            continue
        if node.intrinsic:
            intrinsic.append(key)
        config = configs[key] = canonical_json(node.config).encode("utf-8")
        body = build_body(head, tail, key, True, config)
        bodies[key] = [body, etag(body)]
    return VersionAnswers(
        commit=client.commit,
        name=snapshot.name,
        head=head,
        tail=tail,
        configs=configs,
        bodies=bodies,
        failed=failed,
        intrinsic=intrinsic,
        secrets={k: dict(v) for k, v in snapshot.secrets.items()},
        tag_roots=list(snapshot.tag_roots),
        relations=pack_relations(snapshot),
    )


def build_body(head: bytes, tail: bytes, key: str, exists: bool, config: bytes) -> bytes:
    """A key answer's body, in canonical (sorted) order. It is re-encoded canonically when it is not ASCII. The key
    and store parts are written with `json.dumps`' escapes, the config without."""
    flag = b"true" if exists else b"false"
    body = b"".join((head, config, b',"exists":', flag, b',"key":', json.dumps(key).encode(), tail))
    return body if body.isascii() else canonical_json(json.loads(body)).encode("utf-8")


def etag(body: bytes) -> bytes:
    return b'"sha256:' + hashlib.sha256(body).hexdigest().encode("ascii") + b'"'


def load(
    root: str, store: str, name: str, cache: str, versions: list[int], keep: list[int], bases: list[int | None]
) -> bytes:
    """Load `versions` (ascending) of a store as `VersionLoad`s, plain data packed with msgpack. Per version that is
    its error, or the number of keys it changed since its base. `bases` has one per version: the version readers had
    before it (`readers.seen_before`). None means every key counts. For those in `keep`, it also holds the answers. A
    base that does not load counts every key too."""
    out: list[list[Any]] = []
    wanted = Counter(b for b in bases if b is not None)  # how many versions still need each base's hashes
    kept: dict[int, Mapping[str, str] | None] = {}
    for n, base in zip(versions, bases, strict=True):
        before: Mapping[str, str] | None = None
        if base is not None:
            if base not in kept:
                try:
                    kept[base] = _hashes(_client(root, store, base, cache))
                except CfgtoolError:
                    kept[base] = None
            before = kept[base]
            wanted[base] -= 1
            if not wanted[base]:
                del kept[base]
        try:
            client = _client(root, store, n, cache)
        except CfgtoolError as exc:
            out.append(VersionLoad(n, exc.message).wire())
            continue
        hashes = _hashes(client)
        answers = _answers(client, name) if n in keep else None
        out.append(VersionLoad(n, None, changed(before or {}, hashes), answers).wire())
        if wanted[n]:
            kept[n] = hashes
        del client
    return pack(out)


def changes_between(root: str, store: str, cache: str, pairs: list[tuple[int, int]]) -> list[int]:
    """For each pair (a, b), the keys whose config differs between versions a and b (0 when either does not
    load)."""
    hashes: dict[int, dict[str, str] | None] = {}
    for n in sorted({n for pair in pairs for n in pair}):
        try:
            hashes[n] = _hashes(_client(root, store, n, cache))
        except CfgtoolError:
            hashes[n] = None
    return [changed(hashes[a] or {}, hashes[b] or {}) if hashes[a] and hashes[b] else 0 for a, b in pairs]


def _hashes(client: ConfigClient) -> dict[str, str]:
    return {key: node_hash(node) for key, node in client.snapshot.nodes.items()}


def changed(before: Mapping[str, str], after: Mapping[str, str]) -> int:
    """Keys whose config (node hash) differs, added and removed keys included."""
    return sum(1 for k in before.keys() | after.keys() if before.get(k) != after.get(k))


def _context() -> multiprocessing.context.ForkServerContext:
    """Where the worker and resolver processes come from: forks of a fork server that has imported this module, so
    each starts with cfgtool imported."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def start_processes() -> None:
    """Start the fork server of the worker processes now, before the server's own start-up, not at its first load.
    Its start is a fresh interpreter importing cfgtool, a few tenths of a second. Started here it overlaps the
    server's start-up instead of delaying readiness. When it cannot start, the first load says so (`Worker.run`)."""
    _context()
    with contextlib.suppress(OSError):
        multiprocessing.forkserver.ensure_running()


class Worker:
    """Runs `load`, `changes_between` and the console's diffs in a fresh process per call. When no process can be
    started, they run in the calling thread."""

    def __init__(self) -> None:
        self._processes = True

    def load(self, *args: Any) -> list[VersionLoad]:
        data: bytes = self.run(load, *args)
        return [VersionLoad.from_wire(entry) for entry in unpack(data)]

    def changes_between(self, *args: Any) -> list[int]:
        found: list[int] = self.run(changes_between, *args)
        return found

    def run(self, func: Any, *args: Any) -> Any:
        """`func(*args)` in a fresh worker process (a module-level function; arguments and result picklable)."""
        if self._processes:
            try:
                with ProcessPoolExecutor(1, mp_context=_context(), max_tasks_per_child=1) as pool:
                    return pool.submit(func, *args).result()
            except (OSError, BrokenProcessPool) as exc:
                log.warning("cannot run a worker process (%s): versions are read in the server", exc)
                self._processes = False
        return func(*args)


Ident = tuple[str, str, int, str]  # (repository, store, version, cache directory)
_resolving: dict[Ident, ConfigClient] = {}  # in the resolver: the current version, and at most one other
_current: list[Ident] = []  # the version `keep` was last told is current (never dropped for another one)


def keep(root: str, store: str, version: int, cache: str, current: bool = False) -> None:
    """Load version N's snapshot in the resolver and keep it (two at most: they are large). `current`: the
    store's current version, kept until another is current; any other one replaces the other one kept."""
    ident = (root, store, version, cache)
    if current:
        _current[:] = [ident]
    if ident in _resolving:
        return
    for other in [k for k in _resolving if k not in _current]:
        del _resolving[other]
    client = _client(root, store, version, cache)
    client.snapshot  # noqa: B018 (loaded now)
    _resolving[ident] = client


RESOLVED_FLOOR = 1024 * 1024  # characters a config resolved for a made-up name may always hold ...
RESOLVED_TIMES = 4  # ... beyond this many times what its nearest node's own config holds


def resolve(root: str, store: str, version: int, cache: str, key: str) -> bytes | None:
    """The canonical JSON config of `key`, which has no node, in version N. The resolver process runs it. The
    snapshot it keeps remembers the newest few such keys itself. None when the process does not keep N (`keep` it
    first). CfgtoolError when it would be far larger than its nearest node's own config. The intrinsics repeat the
    name. A config that doubles it a few times turned a 1,000-character name into a 500 MB answer. That was a
    gigabyte in the server, for one request."""
    client = _resolving.get((root, store, version, cache))
    if client is None:
        return None
    snapshot = client.snapshot
    found = snapshot.lookup(key)
    own = snapshot.nodes[found.node].config or {}
    allowed = RESOLVED_FLOOR + RESOLVED_TIMES * _characters(own, sys.maxsize)
    if _characters(found.config, allowed) > allowed:
        snapshot.forget(key)
        raise CfgtoolError(
            f"the config of {key} would hold more than {allowed} characters, far more than that of {found.node}"
            " (its values repeat the key's name)",
            hint="read a shorter key",
        )
    return canonical_json(found.config).encode("utf-8")


def explanation(root: str, store: str, version: int, cache: str, key: str, path: str) -> dict[str, Any] | None:
    """`cfgtool explain --format json` of `key` at `path` in version N. The resolver process runs it. The first one
    of a key computes its layers' provenance from their files. None when the process does not keep N."""
    client = _resolving.get((root, store, version, cache))
    return None if client is None else client.explain(key, path).to_json()


def _characters(value: Any, limit: int) -> int:
    """About how many characters `value`'s JSON holds: its strings, names and one per other value. It counts up to
    just past `limit` only. A repeated string counts each time, as JSON writes it."""
    total, todo = 0, [value]
    while todo and total <= limit:
        item = todo.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, Mapping):
            total += sum(len(name) + 4 for name in item) + 1
            todo.extend(item.values())
        elif isinstance(item, list):
            total += 1 + len(item)
            todo.extend(item)
        else:
            total += 5
    return total


def _late(what: str) -> str:
    """The message of a read the resolver did not answer in time."""
    return f"the process resolving {what} did not answer within {RESOLVE_TIMEOUT:g} s: read it again shortly"


def _background() -> None:
    """The resolver yields the processor to the server: its work is for names clients make up."""
    with contextlib.suppress(OSError):
        os.nice(RESOLVER_NICENESS)


class ResolverUnavailable(CfgtoolError):
    """The resolver process did not answer within `RESOLVE_TIMEOUT`, did not load a version within `LOAD_TIMEOUT`, or
    stopped. The read may be made again; the next one starts another process."""


T = TypeVar("T")


class Resolver:
    """Runs `resolve` and `explanation` in one long-lived worker process. When no process can be started, they run in
    worker threads of the server. A call waits at most `RESOLVE_TIMEOUT`. A process that hangs past it is killed, and
    the calls waiting on it fail at once. The next call starts another. So a hung resolver cannot hold the server's
    bounded number of such reads for ever. Loading a version's snapshot is not part of that time. It takes seconds of
    a busy machine for a large store, so it has its own bound (`LOAD_TIMEOUT`). A call is sent only once the loads
    sent before it are done, so it never waits behind one."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._processes = True
        self._lock = threading.RLock()
        self._loading: dict[Future[None], ProcessPoolExecutor] = {}  # loads sent and not done, and their process
        self._current: Ident | None = None  # the current version (a new process loads it first)
        self._other: Ident | None = None  # the other version the process keeps, as `keep` decides

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(1, mp_context=_context(), initializer=_background)
                self._other = None
                if self._current is not None:  # a new process: the current version first
                    self._send_load(self._pool, self._current, True)
            return self._pool

    def _send_load(self, pool: ProcessPoolExecutor, ident: Ident, current: bool) -> Future[None]:
        with self._lock:
            future = pool.submit(keep, *ident, current)
            self._loading[future] = pool
            if current:  # what `keep` keeps besides: the former current version, when it kept this one as the other
                self._other, self._current = (self._current if ident == self._other else None), ident
            elif ident != self._current:
                self._other = ident
        future.add_done_callback(self._loaded)
        return future

    def _loaded(self, future: Future[None]) -> None:
        with self._lock:
            self._loading.pop(future, None)

    def warm(self, root: str, store: str, version: int, cache: str) -> None:
        """Have the process load version N, the store's current version, now, and keep it while it is current. So the
        first read or explain finds it loaded. Call it on the loader thread when the current version changes."""
        if not self._processes:
            return
        try:
            with self._lock:
                if self._pool is not None:
                    self._send_load(self._pool, (root, store, version, cache), True)
                else:
                    self._current = (root, store, version, cache)
                    self._executor()  # loads the current version first
        except (OSError, RuntimeError, BrokenProcessPool) as exc:
            log.warning("cannot run a resolver process (%s): keys are resolved in the server", exc)
            self._processes = False

    async def config(self, root: str, store: str, version: int, cache: str, key: str) -> bytes:
        """The config of `key` in version N as canonical JSON. CfgtoolError when it does not resolve.
        ResolverUnavailable when the resolver does not answer in time or stopped."""
        found: bytes = await self._call(resolve, (root, store, version, cache), (key,), key)
        return found

    async def explain(self, root: str, store: str, version: int, cache: str, key: str, path: str) -> dict[str, Any]:
        """The explain JSON of `key` at `path` in version N; ResolverUnavailable as `config`."""
        found: dict[str, Any] = await self._call(explanation, (root, store, version, cache), (key, path), key)
        return found

    async def _call(self, func: Any, ident: Ident, args: tuple[str, ...], what: str) -> Any:
        """`func(*ident, *args)` in the resolver, loading that version first when the process does not keep it. It
        loads it again, a few times, when it answers None: other reads made it keep other versions meanwhile."""
        if ident not in (self._current, self._other):
            await self._load(ident, what)
        for _ in range(LOAD_TRIES):
            found = await self._timed(func, (*ident, *args), what)
            if found is not None:
                return found
            await self._load(ident, what)
        raise ResolverUnavailable(f"the process resolving {what} keeps other versions: read it again shortly")

    async def _timed(self, func: Any, args: tuple[Any, ...], what: str) -> Any:
        if not self._processes:
            try:
                return await asyncio.wait_for(asyncio.to_thread(func, *args), RESOLVE_TIMEOUT)
            except TimeoutError:  # the thread cannot be stopped; its answer is dropped
                raise ResolverUnavailable(_late(what)) from None
        while True:  # sent once no load is pending, so the time counted is the call's own
            with self._lock:
                pool = self._executor()  # a new process loads the current version first
                pending = list(self._loading.items())
                if not pending:
                    break
            for load, owner in pending:
                with contextlib.suppress(Exception):  # another read's load: what became of it is that read's
                    await self._wait(load, owner, what)
        try:
            future: Future[Any] = pool.submit(func, *args)
            return await _result(future, RESOLVE_TIMEOUT)
        except TimeoutError:  # hung (stopped, looping): kill it, the next read starts another
            self._discard(pool, kill=True)
            raise ResolverUnavailable(_late(what)) from None
        except BrokenProcessPool:  # it died (killed, out of memory): the next read starts another
            self._discard(pool)
            raise ResolverUnavailable(f"the process resolving {what} stopped: read it again shortly") from None

    async def _load(self, ident: Ident, what: str) -> None:
        if not self._processes:
            await asyncio.to_thread(keep, *ident)
            return
        with self._lock:
            pool = self._executor()
            try:
                load = self._send_load(pool, ident, False)
            except (OSError, RuntimeError, BrokenProcessPool):
                load = None
        if load is None:
            self._discard(pool)
            raise ResolverUnavailable(f"the process resolving {what} stopped: read it again shortly")
        await self._wait(load, pool, what)

    async def _wait(self, load: Future[None], pool: ProcessPoolExecutor, what: str) -> None:
        """Wait for a load sent to `pool` (at most `LOAD_TIMEOUT`: past it, the process is killed)."""
        try:
            await _result(load, LOAD_TIMEOUT)
        except TimeoutError:
            self._discard(pool, kill=True)
            raise ResolverUnavailable(f"the process resolving {what} did not load its version in time") from None
        except BrokenProcessPool:
            self._discard(pool)
            raise ResolverUnavailable(f"the process resolving {what} stopped: read it again shortly") from None

    def _discard(self, pool: ProcessPoolExecutor, kill: bool = False) -> None:
        """Forget `pool` (if still the current one) so the next call starts another; `kill` its process."""
        with self._lock:
            if self._pool is not pool:
                return  # another call discarded it already
            self._pool = None
        if kill:
            for process in list((pool._processes or {}).values()):  # the executor has no public way to kill
                process.kill()
                log.warning("the resolver process %s did not answer in time: killed", process.pid)
        pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the resolver process (at shutdown)."""
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None


async def _result(future: Future[T], timeout: float) -> T:
    """`future`'s result, waiting at most `timeout` seconds (TimeoutError) without cancelling it; others may wait for
    it too. BrokenProcessPool when it was cancelled: its process was discarded before running it."""
    try:
        return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), timeout)
    except asyncio.CancelledError:
        if future.cancelled():
            raise BrokenProcessPool("the resolver process was discarded") from None
        raise
