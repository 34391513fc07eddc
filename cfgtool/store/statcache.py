"""The stat cache: the blob ids of a working tree's files, kept between compiles by what `lstat` says of each
file, so that a compile after a one-file change reads and hashes that file only (git's index does the same).

An entry maps a repo-relative path to (size, mtime_ns, ctime_ns, inode, device) and the blob id of the content
read. It answers only when all five still match: a file rewritten in place changes its ctime even when its
size stays and its mtime is set back, and a file replaced by a rename is another inode.

Timestamps have a granularity (a clock tick on Linux, a second or two on some file systems), so a file written
twice within one tick keeps its timestamps: an entry read in the same tick as the file's last change could
later describe other content. This is git's "racy timestamp" problem, and the answer is git's: an entry is
trusted only when the file's mtime and ctime are older, by a margin (`settled`), than the moment its content
was read (it is not kept otherwise) and than the time the cache file was written (checked when read: the cache
file's own mtime). Such a file is simply read and hashed again, on every compile until it is old enough. The
margin covers one machine's clocks: a network file system whose server's clock runs behind this machine's by
more than the margin could fool it.

One cache file per working tree and store directory, in the private cache directory: msgpack (plain data)
with a CRC-32, written to a temporary file and renamed. A damaged, truncated or foreign file, or an entry of
the wrong shape, is a miss: the files are read and hashed as if there were no cache.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgpack  # type: ignore[import-untyped]

from cfgtool.cachedir import cache_root, private_dir

FORMAT = 1
MAGIC = "cfgtool-stat-cache"
# How much older than the read of a file's content (and the writing of the cache) its timestamps must be for
# an entry to be trusted: more than a clock tick and a file system's granularity. A file system that keeps whole
# seconds (FAT keeps two) shows it by whole-second timestamps; the others keep 10 ms or finer.
COARSE_MARGIN_NS = 2_000_000_000
FINE_MARGIN_NS = 100_000_000
# What a damaged or foreign cache file raises as it is decoded: all of it is a miss.
_DAMAGED = (ValueError, TypeError, IndexError, KeyError, OverflowError, msgpack.UnpackException)

Signature = tuple[int, int, int, int, int]  # size, mtime_ns, ctime_ns, inode, device


def signature(info: os.stat_result) -> Signature:
    """What an entry must match: the file's size, mtime, ctime, inode and device."""
    return info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, info.st_dev


def settled(mtime_ns: int, ctime_ns: int, at: int) -> bool:
    """Whether a file with these timestamps cannot change at time `at` (ns) or later without changing one of
    them: both are older than `at` by more than the margin (git's racy-timestamp rule)."""
    coarse = mtime_ns % 1_000_000_000 == 0 or ctime_ns % 1_000_000_000 == 0
    return max(mtime_ns, ctime_ns) + (COARSE_MARGIN_NS if coarse else FINE_MARGIN_NS) < at


class StatCache:
    """Blob ids of one working tree's files by their `lstat` signature; see the module docstring."""

    def __init__(self, root: Path, store: str, directory: Path | None = None) -> None:
        """The cache of the store directory `store` (repo-relative) of the working tree at `root`, kept in
        `directory` (default: `stat-v{FORMAT}` under the cache root)."""
        self.root = str(root)
        self.store = store
        self.directory = directory if directory is not None else cache_root() / f"stat-v{FORMAT}"
        name = hashlib.sha256(f"{self.root}\0{store}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
        self.path = self.directory / f"{name}.msgpack"
        self._entries: dict[str, tuple[Signature, str]] | None = None  # as read: trusted ones only
        self._new: dict[str, tuple[Signature, str]] = {}  # read and hashed by this process, not racy

    def get(self, path: str, info: os.stat_result) -> str | None:
        """The blob id of `path` when the cache knows its content for this `lstat` result, else None."""
        entries = self._entries if self._entries is not None else self._load()
        entry = self._new.get(path) or entries.get(path)
        if entry is None or entry[0] != signature(info):
            return None
        return entry[1]

    def put(self, path: str, info: os.stat_result, oid: str, read_at: int) -> None:
        """Record that `path`, as `info` described it, held content with blob id `oid` when it was read after
        `read_at` (`time.time_ns()` before the read); a racily clean file is not recorded."""
        if settled(info.st_mtime_ns, info.st_ctime_ns, read_at):
            self._new[path] = (signature(info), oid)

    @property
    def pending(self) -> int:
        """Entries recorded since the cache was last written."""
        return len(self._new)

    def save(self, listed: Iterable[str]) -> None:
        """Write the cache: the new entries and the old ones, for the paths among `listed` (the working tree's
        files now: entries of files that are gone are dropped). A cache that cannot be written is skipped."""
        entries = self._entries if self._entries is not None else self._load()
        kept = {p: e for p in listed if (e := self._new.get(p) or entries.get(p)) is not None}
        paths = list(kept)
        columns = [[e[0][i] for e in kept.values()] for i in range(5)]
        payload = _pack([self.root, self.store, paths, *columns, [e[1] for e in kept.values()]])
        try:
            private_dir(self.directory)
            fd, tmp = tempfile.mkstemp(prefix=".stat.", dir=self.directory)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(_pack([MAGIC, FORMAT, zlib.crc32(payload), payload]))
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            return
        self._entries, self._new = kept, {}

    def _load(self) -> dict[str, tuple[Signature, str]]:
        """The entries of the cache file that can be trusted: none when it is missing, damaged or foreign."""
        self._entries = {}
        try:
            with open(self.path, "rb") as handle:
                written = os.fstat(handle.fileno()).st_mtime_ns
                data = handle.read()
            magic, version, crc, payload = msgpack.unpackb(data, raw=False)
            if magic != MAGIC or version != FORMAT or type(payload) is not bytes or zlib.crc32(payload) != crc:
                return self._entries
            root, store, paths, *columns, oids = msgpack.unpackb(payload, raw=False)
            if root != self.root or store != self.store:
                return self._entries  # another tree's file (a hash collision, or planted)
            self._entries = _entries(paths, columns, oids, written)
        except (OSError, *_DAMAGED):
            pass
        return self._entries


def _entries(paths: Any, columns: Any, oids: Any, written: int) -> dict[str, tuple[Signature, str]]:
    """The decoded entries whose file had settled when the cache was `written` (git's racy rule against the
    cache file's write time); ValueError when the columns are not what `save` writes."""
    if len(columns) != 5 or not all(type(c) is list and len(c) == len(paths) for c in (*columns, oids)):
        raise ValueError("columns of different lengths")
    if type(paths) is not list or not set(map(type, paths)) <= {str} or not set(map(type, oids)) <= {str}:
        raise ValueError("not paths and blob ids")
    if not all(set(map(type, c)) <= {int} for c in columns) or not all(len(o) == 40 for o in oids):
        raise ValueError("not stat signatures and blob ids")
    _, mtimes, ctimes, _, _ = columns
    signatures = zip(*columns, strict=True)
    return {
        p: (s, o)
        for p, s, o, m, c in zip(paths, signatures, oids, mtimes, ctimes, strict=True)
        if settled(m, c, written)
    }


def _pack(value: Any) -> bytes:
    data: bytes = msgpack.packb(value, use_bin_type=True)
    return data
