"""On-disk caches, content-addressed and written atomically, so a crash never leaves a half-written file.

- `ParseCache`: parsed `main.conf` trees by (git blob id, path): an unchanged file is never parsed twice,
  whichever commit, branch or working tree it is read from.
- `NodeCache`: a node's resolved config by the fingerprint of everything it resolves from (`cfgtool.build`).

Entries are sharded by the first two hex digits of their key; a shard is read when first needed and
rewritten only when it gained entries. An unreadable shard is a cache miss, never an error.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

from cfgtool import __version__
from cfgtool.hocon import values
from cfgtool.hocon.values import Obj
from cfgtool.snapshot import write_atomic_bytes

FORMAT = 3  # the layout of the cache files
# Pickled trees are instances of cfgtool.hocon.values: a change to that module must not read old ones.
_MODEL = hashlib.sha256(Path(values.__file__).read_bytes()).hexdigest()[:12]

K = TypeVar("K")
V = TypeVar("V")


def cache_root() -> Path:
    """`$CFGTOOL_CACHE_DIR`, else `$XDG_CACHE_HOME/cfgtool`, else `~/.cache/cfgtool`."""
    explicit = os.environ.get("CFGTOOL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cfgtool"


class _Sharded(Generic[K, V]):
    """A dict on disk, in 256 pickled shards chosen by `shard_of(key)`."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._shards: dict[str, dict[K, V]] = {}
        self._dirty: set[str] = set()

    def _shard_of(self, key: K) -> str:
        raise NotImplementedError

    def _shard(self, name: str) -> dict[K, V]:
        shard = self._shards.get(name)
        if shard is None:
            try:
                loaded: Any = pickle.loads((self.directory / f"{name}.pickle").read_bytes())
                shard = loaded if isinstance(loaded, dict) else {}
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError, ImportError):
                shard = {}
            self._shards[name] = shard
        return shard

    def get(self, key: K) -> V | None:
        return self._shard(self._shard_of(key)).get(key)

    def put(self, key: K, value: V) -> None:
        name = self._shard_of(key)
        self._shard(name)[key] = value
        self._dirty.add(name)

    def flush(self) -> None:
        """Write every shard that gained entries; a cache that cannot be written is skipped silently."""
        for name in sorted(self._dirty):
            try:
                write_atomic_bytes(self.directory / f"{name}.pickle", pickle.dumps(self._shards[name], protocol=5))
            except OSError:
                return
        self._dirty.clear()


class ParseCache(_Sharded[tuple[str, str], Obj]):
    """Parsed documents by (blob id, path)."""

    @classmethod
    def default(cls) -> ParseCache:
        """The cache for this cfgtool and this shape of the value model (a change to either starts afresh)."""
        return cls(cache_root() / f"parse-v{FORMAT}-{__version__}-{_MODEL}")

    def _shard_of(self, key: tuple[str, str]) -> str:
        return key[0][:2]


NodeEntry = tuple[Mapping[str, Any], bool, str]  # resolved config, uses intrinsics, content hash


class NodeCache(_Sharded[str, NodeEntry]):
    """Resolved node configs by fingerprint."""

    @classmethod
    def default(cls) -> NodeCache:
        return cls(cache_root() / f"nodes-v{FORMAT}-{__version__}-{_MODEL}")

    def _shard_of(self, key: str) -> str:
        return key[:2]
