"""Where cfgtool keeps its caches, and how their directories are made: cheap to import, since a cached read
(`cfgtool get --ref`, a `ConfigClient` start) needs the location before anything else."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """`$CFGTOOL_CACHE_DIR`, else `$XDG_CACHE_HOME/cfgtool`, else `~/.cache/cfgtool`."""
    explicit = os.environ.get("CFGTOOL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cfgtool"


def private_dir(path: Path) -> None:
    """Create `path` and its missing parents with mode 0700 (`mkdir(parents=True)` ignores the mode for the
    parents): a cache is no one else's to read or plant files in."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
