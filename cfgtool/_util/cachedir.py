"""Where cfgtool keeps its caches, and how their directories are made. It is cheap to import. A cached read
(`cfgtool get --ref`, a `ConfigClient` start) needs the location before anything else.

A cache directory owned by another user, or writable by group or others, is not used. ssh refuses such a key file
too. Whoever else can write it could plant entries. `checked_root` warns once and hands out a private temporary
directory for this process instead. So every cache still works, without reuse between runs.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

MB = 1024 * 1024
STALE_TEMPORARY_S = 24 * 3600  # a temporary cache file older than this was left by a killed writer

_warned: set[str] = set()
_stand_in: list[Path] = []


def cache_root() -> Path:
    """`$CFGTOOL_CACHE_DIR`, else `$XDG_CACHE_HOME/cfgtool`, else `~/.cache/cfgtool` (`checked_root`)."""
    explicit = os.environ.get("CFGTOOL_CACHE_DIR")
    if explicit:
        return checked_root(Path(explicit))
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return checked_root(Path(base) / "cfgtool")


def checked_root(path: Path) -> Path:
    """`path`, the root of a cache directory, unless another user owns it or group or others may write it. Then a
    private temporary directory of this process, removed when it exits (warned about once)."""
    try:
        info = os.stat(path)
    except OSError:
        return path  # nothing there yet: private_dir creates it 0700
    why = loose(info, directory=True) if stat.S_ISDIR(info.st_mode) else "it is not a directory"
    if why is None:
        return path
    warn_once(f"dir {path}", f"cache directory {path} is not used: {why} (make it yours, mode 0700)")
    if not _stand_in:
        _stand_in.append(Path(tempfile.mkdtemp(prefix="cfgtool-cache-")))
        atexit.register(shutil.rmtree, _stand_in[0], True)
    return _stand_in[0]


def loose(info: os.stat_result, *, directory: bool) -> str | None:
    """Why a file or directory with these attributes is not this user's alone, None when it is. It may be owned by
    another user, or writable by group or others. A file must not be readable by them either."""
    if info.st_uid != os.geteuid():
        return f"it is owned by uid {info.st_uid}, not by you"
    if info.st_mode & (0o022 if directory else 0o077):
        return f"its mode is {stat.S_IMODE(info.st_mode):04o}, open to group or others"
    return None


def warn_once(subject: str, message: str) -> None:
    """Print `message` on stderr the first time this process says something about `subject`."""
    if subject not in _warned:
        _warned.add(subject)
        print(f"cfgtool: warning: {message}", file=sys.stderr, flush=True)


def private_dir(path: Path) -> None:
    """Create `path` and its missing parents with mode 0700; `mkdir(parents=True)` ignores the mode for the parents.
    A cache is no one else's to read or plant files in."""
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
    """Remove the least recently used files named `*{suffix}` in `directory` beyond `limit` files or `budget` bytes.
    The count includes `keep`, the file just written. Also remove the temporary files (`.*`) a killed writer left
    there more than a day ago. `keep` is never removed, even when it alone is over the budget. Returns what was
    removed. Every cache that keeps files by recent use prunes here; `mark_used` records a read.

    Safe beside readers and writers in other processes. A reader keeps reading the file it has open. A writer renames
    its file into place after writing it. A file that vanished meanwhile is skipped."""
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
