"""On-disk caches, content-addressed and written atomically, so a crash never leaves a half-written file.

The parse cache keeps parsed `main.conf` trees by (git blob id, path): an unchanged file is never parsed
twice, whichever commit, branch or working tree it is read from. Entries are sharded by the blob id's first
two hex digits; a shard is read when first needed and rewritten only when it gained entries.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from pathlib import Path

from cfgtool import __version__
from cfgtool.hocon import values
from cfgtool.hocon.values import Obj
from cfgtool.snapshot import write_atomic_bytes

FORMAT = 2  # the layout of the cache files
# The pickled trees are instances of cfgtool.hocon.values: a change to that module must not read old ones.
_MODEL = hashlib.sha256(Path(values.__file__).read_bytes()).hexdigest()[:12]


def cache_root() -> Path:
    """`$CFGTOOL_CACHE_DIR`, else `$XDG_CACHE_HOME/cfgtool`, else `~/.cache/cfgtool`."""
    explicit = os.environ.get("CFGTOOL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cfgtool"


class ParseCache:
    """Parsed documents by (blob id, path); `flush()` writes the shards that changed."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._shards: dict[str, dict[tuple[str, str], Obj]] = {}
        self._dirty: set[str] = set()

    @classmethod
    def default(cls) -> ParseCache:
        """The cache for this cfgtool and this shape of the value model (a change to either starts afresh)."""
        return cls(cache_root() / f"parse-v{FORMAT}-{__version__}-{_MODEL}")

    def _shard(self, oid: str) -> dict[tuple[str, str], Obj]:
        name = oid[:2]
        shard = self._shards.get(name)
        if shard is None:
            try:
                shard = pickle.loads((self.directory / f"{name}.pickle").read_bytes())
            except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError, TypeError):
                shard = {}  # missing or unreadable: start the shard afresh
            self._shards[name] = shard
        return shard

    def get(self, oid: str, path: str) -> Obj | None:
        return self._shard(oid).get((oid, path))

    def put(self, oid: str, path: str, doc: Obj) -> None:
        self._shard(oid)[(oid, path)] = doc
        self._dirty.add(oid[:2])

    def flush(self) -> None:
        """Write every shard that gained entries; a cache that cannot be written is skipped silently."""
        for name in sorted(self._dirty):
            try:
                write_atomic_bytes(self.directory / f"{name}.pickle", pickle.dumps(self._shards[name], protocol=5))
            except OSError:
                return
        self._dirty.clear()
