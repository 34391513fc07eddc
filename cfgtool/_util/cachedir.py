"""Where cfgtool keeps its caches, and how their directories are made: cheap to import, since a cached read
(`cfgtool get --ref`, a `ConfigClient` start) needs the location before anything else."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

MB = 1024 * 1024
STALE_TEMPORARY_S = 24 * 3600  # a temporary cache file older than this was left by a killed writer


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


def budget_bytes(variable: str, default_mb: int) -> int:
    """The size budget in bytes that the environment variable `variable` gives in megabytes (`default_mb`
    when unset or empty)."""
    from cfgtool.errors import UsageError

    text = os.environ.get(variable, "").strip()
    if not text:
        return default_mb * MB
    try:
        megabytes = float(text)
    except ValueError:
        megabytes = -1.0
    if not megabytes >= 0:  # also refuses nan
        raise UsageError(
            f"{variable}={text!r}: expected a size in megabytes", hint=f"for example {variable}={default_mb}"
        )
    return int(megabytes * MB)


def mark_used(path: Path) -> None:
    """Record that `path` was just read (its modification time), so `prune` drops it last. Best effort: a
    cache on a read-only file system is still read."""
    with contextlib.suppress(OSError):
        os.utime(path)


def prune(
    directory: Path, suffix: str, keep: Path, *, budget: int | None = None, limit: int | None = None
) -> list[Path]:
    """Remove the least recently used files named `*{suffix}` in `directory` beyond `limit` files or `budget`
    bytes (`keep`, the file just written, included), and the temporary files (`.*`) a killed writer left there
    more than a day ago. `keep` is never removed, even when it alone is over the budget. Returns what was
    removed. Every cache that keeps files by recent use prunes here; `mark_used` records a read.

    Safe beside readers and writers in other processes: a reader keeps reading the file it has open, a
    writer renames its file into place after writing it, and a file that vanished meanwhile is skipped."""
    try:
        listing = list(os.scandir(directory))
    except OSError:
        return []
    cutoff = time.time() - STALE_TEMPORARY_S
    doomed: list[Path] = []
    used: list[tuple[float, int, Path]] = []
    room, slots = budget, None if limit is None else limit - 1
    for entry in listing:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if entry.name.startswith("."):
            if info.st_mtime < cutoff:
                doomed.append(Path(entry.path))
        elif entry.name == keep.name:
            room = None if room is None else room - info.st_size
        elif entry.name.endswith(suffix):
            used.append((info.st_mtime, info.st_size, Path(entry.path)))
    full = False
    for _, size, path in sorted(used, key=lambda u: u[0], reverse=True):  # the most recently used first
        full = full or (slots is not None and slots <= 0) or (room is not None and size > room)
        if full:
            doomed.append(path)
            continue
        slots = None if slots is None else slots - 1
        room = None if room is None else room - size
    removed: list[Path] = []
    for path in doomed:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed.append(path)
    return removed
