"""The history of a key, or of one value in it, across a store's versions (docs/console.md), from a per-store index.

The index holds, per key, each version at which its resolved config changed, with that config. The config is as the
server answers it: secrets `[hidden]`. The index grows as versions load. After each refresh, the versions not yet in
it are taken from the answers the server holds in memory. Or they are read in a worker process (`version_changes`,
from the client's snapshot cache). It hands back only what changed since the last version indexed. So a history
request walks one key's few changes, never every version.

A version in which the key has no node of its own reads its nearest node's config, as a client would. The commits
behind each change are `cfgtool audit --key KEY`'s to list. For a key that never had a node, the page asks
`cfgtool.versions.audit.audit_key` itself. It says so, and names a close key. A request may come after a new version
loaded and before the index took it in. It waits for that increment; at a server's start, for the first build.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import logging
import threading
import weakref
from pathlib import Path
from typing import Any

from cfgtool._util.codec import pack, unpack
from cfgtool.client.client import ConfigClient
from cfgtool.errors import CfgtoolError
from cfgtool.serve.store_state import StoreState, View
from cfgtool.serve.worker import Worker
from cfgtool.snapshot.model import canonical_json
from cfgtool.store.keys import ancestors
from cfgtool.versions.audit import KeyHistory, ValueChangeEvent, changed_steps
from cfgtool.versions.diff import ABSENT
from cfgtool.versions.readers import Step

log = logging.getLogger("cfgtool.serve")
Change = tuple[int, bytes | None]  # (version, the key's config from then on; None: no node from then on)


def _digest(config: bytes) -> bytes:
    return hashlib.sha256(config).digest()[:16]


def version_changes(root: str, store: str, cache: str, versions: list[int], before: dict[str, bytes]) -> bytes:
    """For each of `versions` (ascending) of the store: `[version, {key: config or None}]`. Its keys are those whose
    config (canonical JSON, as served) differs from the version before. `before` holds the digests of the last one
    indexed. None is for a key whose node went. `[version, None]` is for a version that does not load. Run in a
    worker process."""
    out: list[list[Any]] = []
    last = dict(before)
    for n in versions:
        try:
            client = ConfigClient(Path(root), store=store or ".", version=n, cache_dir=Path(cache))
            nodes = client.snapshot.nodes
        except CfgtoolError:
            out.append([n, None])
            continue
        now: dict[str, bytes] = {}
        changed: dict[str, bytes | None] = {}
        for key, node in nodes.items():
            if node.config is None:
                continue
            config = canonical_json(node.config).encode("utf-8")
            now[key] = _digest(config)
            if last.get(key) != now[key]:
                changed[key] = config
        changed.update((key, None) for key in last.keys() - now.keys())
        out.append([n, changed])
        last = now
        del client, nodes
    return pack(out)


class HistoryIndex:
    """One store's index: per key, the versions at which its config changed (ascending) and the config since."""

    def __init__(self) -> None:
        self.indexed: set[int] = set()
        self.changes: dict[str, list[Change]] = {}
        self._last: dict[str, bytes] = {}  # the digests of the newest version indexed
        self._newest = 0
        self._lock = threading.Lock()
        self._worker = Worker()

    def covers(self, view: View) -> bool:
        """Whether every servable version of `view` is indexed."""
        return all(n in self.indexed for n in view.versions if n not in view.unservable)

    def update(self, state: StoreState, cache: Path) -> None:
        """Index the servable versions of the store newer than the newest indexed. A version the server holds in
        memory is indexed from its answers, the others in a worker process."""
        with self._lock:
            view = state.view
            new = sorted(n for n in view.versions if n > self._newest and n not in view.unservable)
            waiting: list[int] = []  # versions to read in a worker, in order
            for n in new:
                loaded = view.pinned.get(n)
                if loaded is None:
                    waiting.append(n)
                    continue
                self._read(state, cache, waiting)
                waiting = []
                now = {key: _digest(config) for key, config in loaded.configs.items()}
                changed: dict[str, bytes | None] = {
                    key: config for key, config in loaded.configs.items() if self._last.get(key) != now[key]
                }
                changed.update((key, None) for key in self._last.keys() - now.keys())
                self._take(n, changed)
            self._read(state, cache, waiting)

    def _read(self, state: StoreState, cache: Path, versions: list[int]) -> None:
        """Index `versions` (ascending, after those indexed) from a worker process."""
        if versions:
            args = (str(state.root), state.path, str(cache), versions, self._last)
            for n, changed in unpack(self._worker.run(version_changes, *args)):
                self._take(n, changed)

    def _take(self, n: int, changed: dict[str, bytes | None] | None) -> None:
        """Version `n`'s changes (None: it did not load, and is then not served either) into the index."""
        self.indexed.add(n)
        self._newest = max(self._newest, n)
        for key, config in (changed or {}).items():
            self.changes.setdefault(key, []).append((n, config))
            if config is None:
                self._last.pop(key, None)
            else:
                self._last[key] = _digest(config)

    def history(self, key: str, parts: tuple[str, ...], shown_path: str | None, view: View) -> KeyHistory | None:
        """The history of `key` (at `parts`), newest first, as `audit_key` tells it but without the commits. It lists
        each step readers took (`View.steps`) after which they read another value. In a version where the key has no
        node, it reads its nearest node's config. None when the key never had a node (`audit_key` says so). Only the
        steps that span a version where the key or an ancestor changed are read."""
        if key not in self.changes:
            return None
        above = [key, *ancestors(key)]
        candidates = sorted({n for k in above for n, _ in self.changes.get(k, ())})

        def touched(step: Step) -> bool:  # a version in (before, version] changed the key or an ancestor
            i = bisect.bisect_right(candidates, step.before or 0)
            return i < len(candidates) and candidates[i] <= step.version

        read: dict[int, Any] = {}

        def value(n: int) -> Any:
            if n not in read:
                config, _ = self._config_at(above, n)
                found: Any = ABSENT if config is None else json.loads(config)
                for part in parts:
                    found = found.get(part, ABSENT) if isinstance(found, dict) else ABSENT
                read[n] = found
            return read[n]

        wanted = [s for s in view.steps if s.kind != "publish" or touched(s)]
        events = [_event(view, s, old, new, self._config_at(above, s.version)[1])
                  for s, old, new in changed_steps(wanted, value)]  # fmt: skip
        return KeyHistory(key, shown_path, tuple(reversed(events)))

    def _config_at(self, above: list[str], n: int) -> tuple[bytes | None, bool]:
        """The config the first of `above` (a key, then its ancestors) answers with at version `n`: its own, or its
        nearest node's. Also whether it is its own."""
        for k in above:
            changes = self.changes.get(k, [])
            i = bisect.bisect_right(changes, n, key=lambda change: change[0]) - 1
            if i >= 0 and changes[i][1] is not None:
                return changes[i][1], k == above[0]
        return None, False


def _event(view: View, step: Step, old: Any, new: Any, exists: bool) -> ValueChangeEvent:
    version = view.versions[step.version]
    return ValueChangeEvent(
        version=step.version,
        tag=version.tag,
        commit=version.commit,
        date=step.date,
        old=old,
        new=new,
        commits=(),
        previous=step.before,
        exists=exists,
        rolled_back=version.rolled_back is not None,
        kind=step.kind,
        current=step.after,
    )


INDEXES: weakref.WeakKeyDictionary[StoreState, HistoryIndex] = weakref.WeakKeyDictionary()
_BUSY: set[int] = set()  # ids of the stores being indexed now
_BUSY_LOCK = threading.Lock()


def index_of(state: StoreState) -> HistoryIndex:
    """The store's history index (empty until its first update)."""
    with _BUSY_LOCK:
        found = INDEXES.get(state)
        if found is None:
            found = INDEXES[state] = HistoryIndex()
        return found


def prepare(state: StoreState, cache: Path) -> None:
    """Index the store's new versions on a background thread (called on the loader thread after each refresh)."""
    index = index_of(state)
    if index.covers(state.view):
        return
    with _BUSY_LOCK:
        if id(state) in _BUSY:
            return
        _BUSY.add(id(state))

    def run() -> None:
        try:
            index.update(state, cache)
        except Exception:  # a bug: logged; the pages ask `audit_key` meanwhile and the next round tries again
            log.exception("indexing the history of store %s failed", state.name)
        finally:
            with _BUSY_LOCK:
                _BUSY.discard(id(state))

    threading.Thread(target=run, name="cfgtool-console-history", daemon=True).start()
