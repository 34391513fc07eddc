"""What the console builds once per version in memory (its search index, its tree), shared by every principal.

Each thing is built once per `LoadedVersion` and kept as long as the version is (weakly keyed): right after a refresh
loads the version (`pages.prepare`: on the loader thread, or on a thread of its own for what takes seconds at 100,000
datasets, so the loader's next round does not wait), so no request pays for it; a request that
comes first builds it on a worker thread, and any other request for it waits for that one build.
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
        self._started: weakref.WeakSet[LoadedVersion] = weakref.WeakSet()

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

    def ahead(self, loaded: LoadedVersion) -> None:
        """Start building the thing for `loaded` on a background thread, unless it is built or under way."""
        with self._guard:
            if loaded in self._built or loaded in self._started:
                return
            self._started.add(loaded)
        threading.Thread(target=self.now, args=(loaded,), name="cfgtool-console-prepare", daemon=True).start()

    async def get(self, loaded: LoadedVersion) -> T:
        """The thing for `loaded`, at once when built, else built (or waited for) on a worker thread."""
        found = self._built.get(loaded)
        if found is not None:
            return found
        return await asyncio.to_thread(self.now, loaded)
