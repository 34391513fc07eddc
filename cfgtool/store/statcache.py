"""The stat cache: the blob ids of a working tree's files, kept between compiles by what `lstat` says of each file. A
compile after a one-file change then reads and hashes that file only. git's index does the same.

An entry maps a repo-relative path to (size, mtime_ns, ctime_ns, inode, device) and the blob id of the content
read. It answers only when all five still match. A file rewritten in place changes its ctime, even when its size
stays and its mtime is set back. A file replaced by a rename is another inode.

Timestamps have a granularity: a clock tick on Linux, a second or two on some file systems. So a file written twice
within one tick keeps its timestamps. An entry read in the same tick as the file's last change could later describe
other content. This is git's "racy timestamp" problem, and the answer is git's. An entry is trusted only when the
file's mtime and ctime are older, by a margin (`settled`), than two moments. One is when its content was read; it is
not kept otherwise. The other is when the cache file was written, checked on reading as the cache file's own mtime. A
file too recent is simply read and hashed again, on every compile until it is old enough. The margin covers one
machine's clocks. A network file system whose server's clock runs behind by more than the margin could fool it.

There is one cache file per working tree and store directory, in the private cache directory. The `KEEP` most
recently written are kept. It is msgpack (plain data), written to a temporary file and renamed. It is sealed with the
user's cache key (`cacheauth`), since a blob id decides which content a path compiles as. A damaged, truncated,
forged or foreign file is a miss, and so is an entry of the wrong shape. The files are then read and hashed as if
there were no cache.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

import msgpack  # type: ignore[import-untyped]

from cfgtool._util.cacheauth import seal, unseal
from cfgtool._util.cachedir import cache_root, private_dir, prune

FORMAT = 2  # 2: sealed with the user's cache key
MAGIC = "cfgtool-stat-cache"
# How much older than the read of a file's content (and the writing of the cache) its timestamps must be for
# an entry to be trusted: more than a clock tick and a file system's granularity. A file system that keeps whole
# seconds (FAT keeps two) shows it by whole-second timestamps; the others keep 10 ms or finer.
COARSE_MARGIN_NS = 2_000_000_000
FINE_MARGIN_NS = 100_000_000
# Working trees (and stores) whose caches are kept, the most recently written: a file's time is never set when
# it is only read, since that time is the one the racy rule checks entries against.
KEEP = 32
# What a damaged or foreign cache file raises as it is decoded: all of it is a miss.
_DAMAGED = (ValueError, TypeError, IndexError, KeyError, OverflowError, msgpack.UnpackException)


def signature(info: os.stat_result) -> tuple[int, int, int, int, int]:
    """What an entry must match: the file's size, mtime, ctime, inode and device."""
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev


def settled(mtime_ns: int, ctime_ns: int, at: int) -> bool:
    """Whether a file with these timestamps cannot change at time `at` (ns) or later without changing one of them.
    That holds when both are older than `at` by more than the margin (git's racy-timestamp rule)."""
    coarse = mtime_ns % 1_000_000_000 == 0 or ctime_ns % 1_000_000_000 == 0
    return max(mtime_ns, ctime_ns) + (COARSE_MARGIN_NS if coarse else FINE_MARGIN_NS) < at


class StatCache:
    """Blob ids of one working tree's files by their `lstat` signature; see the module docstring.

    Entries are stored as `{path: [size, mtime_ns, ctime_ns, inode, device, blob id]}`. Each is checked when asked
    for, since a store may have 200,000 files. `save` writes the entries this process found or made: those of the
    files a compile asked for. So the entries of deleted files go."""

    def __init__(self, root: Path, store: str, directory: Path | None = None) -> None:
        """The cache of the store directory `store` (repo-relative) of the working tree at `root`. It is kept in
        `directory`, by default `stat-v{FORMAT}` under the cache root."""
        self.root = str(root)
        self.store = store
        self.directory = directory if directory is not None else cache_root() / f"stat-v{FORMAT}"
        name = hashlib.sha256(f"{self.root}\0{store}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
        self.path = self.directory / f"{name}.msgpack"
        self._stored: dict[str, Any] | None = None  # the file's entries as read, unchecked (None: not read yet)
        self._written = 0  # when the file was written (its mtime)
        self._kept: dict[str, list[Any]] = {}  # entries checked and found good, or made, by this process
        self._changed = False  # whether `_kept` holds entries the file lacks

    def get(self, path: str, info: os.stat_result) -> str | None:
        """The blob id of `path` when the cache knows its content for this `lstat` result, else None."""
        entry = self._kept.get(path)
        if entry is None:
            stored = self._stored if self._stored is not None else self._load()
            entry = stored.get(path)
            if type(entry) is not list or len(entry) != 6 or type(entry[5]) is not str or len(entry[5]) != 40:
                return None  # none, or not an entry
            if not settled(entry[1], entry[2], self._written):
                return None  # racily clean when the file was written: its content may have changed since
        if entry[:5] != [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev]:
            return None
        self._kept[path] = entry
        oid: str = entry[5]
        return oid

    def put(self, path: str, info: os.stat_result, oid: str, read_at: int) -> None:
        """Record that `path`, as `info` described it, held content with blob id `oid` when read after `read_at`.
        `read_at` is `time.time_ns()` before the read. A racily clean file is not recorded."""
        if settled(info.st_mtime_ns, info.st_ctime_ns, read_at):
            self._kept[path] = [*signature(info), oid]
        else:
            self._kept.pop(path, None)
        self._changed = True

    def save(self) -> None:
        """Write the entries this process checked or made, when they are not what the file holds. A cache that
        cannot be written is skipped."""
        stored = self._stored if self._stored is not None else self._load()
        if not self._changed and len(self._kept) == len(stored):
            return
        sealed = seal(f"stat {self.path.name}", _pack([MAGIC, FORMAT, self.root, self.store, self._kept]))
        if sealed is None:
            return
        try:
            private_dir(self.directory)
            fd, tmp = tempfile.mkstemp(prefix=".stat.", dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(sealed)
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return
        self._changed = False
        prune(self.directory, ".msgpack", keep=self.path, limit=KEEP)

    def _load(self) -> dict[str, Any]:
        """The file's entries, unchecked (`get` checks each): none when it is missing, damaged or foreign."""
        self._stored = {}
        try:
            with open(self.path, "rb") as handle:
                written = os.fstat(handle.fileno()).st_mtime_ns
                data = handle.read()
            payload = unseal(f"stat {self.path.name}", data)
            if payload is None:
                return self._stored  # damaged, forged, or another tree's file moved here
            magic, version, root, store, entries = msgpack.unpackb(payload, raw=False)
            ours = magic == MAGIC and version == FORMAT and root == self.root and store == self.store
            if ours and type(entries) is dict:  # not another tree's
                self._stored, self._written = entries, written
        except (OSError, *_DAMAGED):
            pass
        return self._stored


def _pack(value: Any) -> bytes:
    data: bytes = msgpack.packb(value, use_bin_type=True)
    return data
