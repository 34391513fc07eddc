"""The search of one version (docs/console.md): keys, paths and values containing a text. It reads an index built
once per version and shared by every principal. Each hit is then judged by the principal's `Visibility`, the JSON
API's one filter.

The index is one lowercase text with a record per node, in key order. A record is the key, then each leaf as its path
and its value. Every part ends with a separator a query cannot hold, so no match spans two parts. The values are
those the server answers (`LoadedVersion.configs`). A secret reads `[hidden]` there. So neither its envelope nor
anything in it can be found. A query walks the text with `str.find`, one jump to the next record per matching key. So
a query costs what its matching keys cost (counted up to `COUNTED` of them), never a pass over every config.

Building an index reads every config of the version: seconds of pure Python at 10,000 datasets. So it runs in a
worker process (`INDEXES`), and the server's interpreter lock stays free for the pages asked meanwhile. The server
only decodes the text it hands back. The current version's index is built ahead, as soon as the version loads. Any
other version's is built when it is first searched.
"""

from __future__ import annotations

import bisect
import json
import logging
import multiprocessing
import os
import re
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool._util.codec import pack, unpack
from cfgtool.client.client import ConfigClient
from cfgtool.errors import CfgtoolError
from cfgtool.serve.loaded import LoadedVersion
from cfgtool.serve.store_state import StoreState
from cfgtool.serve.visibility import Visibility
from cfgtool.serve.worker import Worker
from cfgtool.snapshot.model import canonical_json

log = logging.getLogger("cfgtool.serve")

RESULTS = 100  # keys listed at once
COUNTED = 1000  # matching keys counted at most (past this many, the page says "1,000 or more")
MAX_MATCHES = 20  # matching paths listed per key
MAX_QUERY = 200  # characters of a query read at most

_PART = "\x00"  # ends a key, a path or a value
_UNSEARCHABLE = re.compile(r"[\x00-\x1f]")
_PLAIN = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class SearchIndex:
    """The searchable text of one version: `keys[i]`'s record starts at `starts[i]`, its config part at
    `values[i]`."""

    keys: tuple[str, ...]
    text: str
    starts: tuple[int, ...]
    values: tuple[int, ...]


def index_of(nodes: Iterable[str], configs: Mapping[str, str | bytes]) -> SearchIndex:
    """The index of a version's `nodes` from their `configs`, canonical JSON as served. A node that did not resolve
    has no config; it is indexed by its key alone."""
    keys = tuple(sorted(nodes))
    parts: list[str] = []
    starts: list[int] = []
    values: list[int] = []
    at = 0
    for key in keys:
        starts.append(at)
        head = f"{key.lower()}{_PART}"
        parts.append(head)
        at += len(head)
        values.append(at)
        config = configs.get(key)
        if config is not None:
            for path, value in _leaves(json.loads(config), ""):
                part = f"{path.lower()}{_PART}{_text(value).lower()}{_PART}"
                parts.append(part)
                at += len(part)
    return SearchIndex(keys, "".join(parts), tuple(starts), tuple(values))


def built_index(root: str, store: str, version: int, cache: str) -> bytes:
    """Version N's index, packed. It runs in a worker process at a low CPU priority, from the version's snapshot. The
    snapshot is read from the client's snapshot cache, where loading the version put it. Its configs are those the
    server answers (`cfgtool.serve.worker`), secrets `[hidden]`."""
    if multiprocessing.parent_process() is not None:
        os.nice(10)
    nodes = ConfigClient(Path(root), store=store or ".", version=version, cache_dir=Path(cache)).snapshot.nodes
    configs = {key: canonical_json(node.config) for key, node in nodes.items() if node.config is not None}
    index = index_of(nodes, configs)
    return pack([index.keys, index.text, index.starts, index.values])


class Indexes:
    """Each version's search index, built once in a worker process (`built_index`). It is kept as long as the version
    is (weakly keyed). There is one build per version, shared by every request that asks meanwhile. And one build at
    a time, since each worker holds a whole snapshot."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._one = threading.Lock()  # held by the build under way
        self._built: weakref.WeakKeyDictionary[LoadedVersion, SearchIndex] = weakref.WeakKeyDictionary()
        self._running: weakref.WeakKeyDictionary[LoadedVersion, Future[SearchIndex]] = weakref.WeakKeyDictionary()
        self._worker = Worker()

    def ask(self, state: StoreState, loaded: LoadedVersion, cache: Path) -> Future[SearchIndex]:
        """The index of `loaded` (a version of `state`): done when built, else its build, started now unless under
        way."""
        with self._lock:
            found = self._built.get(loaded)
            if found is not None:
                done: Future[SearchIndex] = Future()
                done.set_result(found)
                return done
            running = self._running.get(loaded)
            if running is None:
                running = self._running[loaded] = Future()
                args = (state, loaded, cache, running)
                threading.Thread(target=self._build, args=args, name="cfgtool-console-search", daemon=True).start()
            return running

    def _build(self, state: StoreState, loaded: LoadedVersion, cache: Path, future: Future[SearchIndex]) -> None:
        try:
            args = (str(state.root), state.path or ".", loaded.version, str(cache))
            with self._one:
                packed = self._worker.run(built_index, *args)
            keys, text, starts, values = unpack(packed)
            found = SearchIndex(tuple(keys), text, tuple(starts), tuple(values))
        except CfgtoolError as exc:  # the snapshot cannot be read there now: built here, from the answers
            log.warning("indexing version %s of store %s in a worker: %s", loaded.version, state.name, exc.message)
            found = index_of(loaded.nodes, loaded.configs)
        except Exception as exc:  # a bug: logged; the next search tries again
            log.exception("indexing version %s of store %s failed", loaded.version, state.name)
            with self._lock:
                self._running.pop(loaded, None)
            future.set_exception(exc)
            return
        with self._lock:
            self._built[loaded] = found
            self._running.pop(loaded, None)
        future.set_result(found)


INDEXES = Indexes()


def prepare(state: StoreState, cache: Path) -> None:
    """Start building the index of the store's current version, unless built or under way. It is called on the loader
    thread after each refresh. So the first search of the version most searched finds it ready."""
    current = state.view.current
    loaded = state.view.pinned.get(current) if current is not None else None
    if loaded is not None:
        INDEXES.ask(state, loaded, cache)


@dataclass(frozen=True)
class Match:
    key: str
    by_key: bool  # the key itself matches
    values: list[tuple[str, Any]]  # (path, value) whose path or value matches


@dataclass(frozen=True)
class Found:
    matches: list[Match]
    count: int  # keys that match and may be shown (only the first `RESULTS` are listed), at most `COUNTED`
    more: bool = False  # the count stopped at `COUNTED`: more keys match


def query_text(q: str) -> str:
    """The text a query looks for: at most `MAX_QUERY` characters, without control characters, trimmed."""
    return _UNSEARCHABLE.sub("", q)[:MAX_QUERY].strip()


def search(index: SearchIndex, loaded: LoadedVersion, q: str, seen: Visibility) -> Found:
    """The keys whose name contains `q` (case-insensitive) where the principal may describe them. Also those whose
    paths or values contain it, where it may read them. Secrets read `[hidden]`."""
    needle = q.lower()
    text, starts, keys = index.text, index.starts, index.keys
    matches: list[Match] = []
    count = 0
    at = text.find(needle)
    while at >= 0:
        i = bisect.bisect_right(starts, at) - 1
        key = keys[i]
        by_key = at < index.values[i]
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        if seen.describes(key) and (by_key or seen.may("read", key)):
            if count == COUNTED:  # one more that may be shown: say "or more" (a query matching most keys stops here)
                return Found(matches, count, more=True)
            if len(matches) < RESULTS:
                readable = seen.may("read", key)
                config = loaded.configs.get(key) if readable else None
                found = list(_matching(json.loads(config), needle, "")) if config is not None else []
                matches.append(Match(key, by_key, found[:MAX_MATCHES]))
            count += 1
        at = text.find(needle, end)
    return Found(matches, count)


def _leaves(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """(path, value) of each leaf, a list's items at the list's path (as the key page names them)."""
    if isinstance(value, dict):
        for name, item in value.items():
            part = name if _PLAIN.fullmatch(name) else json.dumps(name)
            yield from _leaves(item, f"{path}.{part}" if path else part)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)
    else:
        yield path, value


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _matching(config: Any, needle: str, path: str) -> Iterator[tuple[str, Any]]:
    """(path, value) of each leaf whose path or value contains `needle` (lowercase)."""
    for leaf, value in _leaves(config, path):
        if needle in leaf.lower() or needle in _text(value).lower():
            yield leaf, value
