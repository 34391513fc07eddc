"""What the console builds once per version in memory (its tree), shared by every principal.

Each thing is built once per `LoadedVersion` and kept as long as the version is (weakly keyed). It is built right
after a refresh loads the version (`pages.prepare`, on the loader thread), so no request pays for it. A request that
comes first builds it on a worker thread. Any other request for it waits for that one build. (A version's search
index is built in a worker process instead: `search.Indexes`.)
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

from cfgtool.serve.loaded import LoadedVersion

T = TypeVar("T")


class Prepared(Generic[T]):
    """`build(loaded)`, built once per version and kept while the version is."""

    def __init__(self, build: Callable[[LoadedVersion], T]) -> None:
        self._build = build
        self._built: weakref.WeakKeyDictionary[LoadedVersion, T] = weakref.WeakKeyDictionary()
        self._locks: weakref.WeakKeyDictionary[LoadedVersion, threading.Lock] = weakref.WeakKeyDictionary()
        self._guard = threading.Lock()

    def now(self, loaded: LoadedVersion) -> T:
        """The thing for `loaded`, built now if needed (blocking: call it off the event loop)."""
        found = self._built.get(loaded)
        if found is not None:
            return found
        with self._guard:
            lock = self._locks.setdefault(loaded, threading.Lock())
        with lock:  # one build per version: a second caller waits for the first's
            found = self._built.get(loaded)
            if found is None:
                found = self._built[loaded] = self._build(loaded)
            return found

    async def get(self, loaded: LoadedVersion) -> T:
        """The thing for `loaded`, at once when built, else built (or waited for) on a worker thread."""
        found = self._built.get(loaded)
        if found is not None:
            return found
        return await asyncio.to_thread(self.now, loaded)
