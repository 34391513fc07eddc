"""Cache entries that decide something, authenticated: an HMAC-SHA256 under a per-user key kept outside the cache.

A checksum only finds damage. Whoever can write a cache directory (a shared CI cache, another local user) can also
write a matching checksum. So an entry that decides anything is sealed with `seal` and opened with `unseal`. Examples
are a version's validation verdict and a rollback watch list. So is a server's answer used without asking it again.
docs/security.md lists every cache and how it is checked. A sealed entry is a tag of 32 bytes, then the bytes. The
tag is HMAC-SHA256 over the entry's purpose and its bytes. The purpose says what it is and which slot it fills. So an
entry moved to another slot does not verify. A version artifact, read row by row, checks each row under a key that
`derived_key` makes for that artifact instead. An entry without a valid tag is a miss.

The key is 32 random bytes in `$CFGTOOL_CACHE_KEY_FILE`, else `$XDG_CONFIG_HOME/cfgtool/cache.key`, else
`~/.config/cfgtool/cache.key`. It is never under the cache directory, so copying or planting a cache carries no key.
It is created on first use, mode 0600, atomically. Two processes that start together read the same key. A key owned
by another user, or readable or writable by group or others, is refused with a warning. That is how ssh treats a
private key. The authenticated entries are then misses, and none is written.

The same rule keeps a cache directory owned by another user or writable by others out of use (`cachedir`).
"""

from __future__ import annotations

import contextlib
import hmac
import os
from functools import cached_property
from hashlib import sha256
from pathlib import Path

from cfgtool._util.cachedir import loose, warn_once

KEY_FILE_VARIABLE = "CFGTOOL_CACHE_KEY_FILE"
KEY_BYTES = 32
TAG_BYTES = 32
_ONE_CALL = 2**16  # the largest entry tagged in one call, its bytes copied behind the purpose

# what decides `key_path`: the key is looked up under these values, so a read costs no path arithmetic
_WHERE = (KEY_FILE_VARIABLE, "XDG_CONFIG_HOME", "HOME")
_keys: dict[tuple[str | None, ...], bytes | None] = {}


def key_path() -> Path:
    """`$CFGTOOL_CACHE_KEY_FILE`, else `$XDG_CONFIG_HOME/cfgtool/cache.key`, else `~/.config/cfgtool/cache.key`."""
    explicit = os.environ.get(KEY_FILE_VARIABLE)
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "cfgtool" / "cache.key"


def cache_key() -> bytes | None:
    """This user's cache key, created on first use. None when it is refused or cannot be had. Authenticated entries
    are then misses, and none is written. Read once per process (per value of the variables `key_path` reads)."""
    where = tuple(map(os.environ.get, _WHERE))
    try:
        return _keys[where]
    except KeyError:
        key = _keys[where] = _load(key_path())
        return key


def _load(path: Path) -> bytes | None:
    for _ in range(2):  # absent: create it, then read what is there (ours, or a racing process's)
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            _create(path)
            continue
        except OSError as exc:
            warn_once(f"key {path}", f"cache key {path} cannot be read ({exc.strerror}): authenticated caches are off")
            return None
        with os.fdopen(fd, "rb") as file:
            why = loose(os.fstat(file.fileno()), directory=False)
            key = file.read(KEY_BYTES + 1)
        if why is None and len(key) == KEY_BYTES:
            return key
        why = why or f"it does not hold {KEY_BYTES} bytes (remove it: a new one is made)"
        hint = f"chmod 600 {path}" if "mode" in why else f"remove {path}"
        warn_once(f"key {path}", f"cache key {path} is refused: {why}; authenticated caches are off ({hint})")
        return None
    return None


def _create(path: Path) -> None:
    """Write a new random key at `path` unless one appears there first. It is written to a temporary file (0600),
    then linked into place. Linking fails rather than replaces when another process was quicker."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(os.urandom(KEY_BYTES))
                file.flush()
                os.fsync(file.fileno())
            with contextlib.suppress(FileExistsError):
                os.link(temporary, path)
        finally:
            temporary.unlink()


def _tag(key: bytes, purpose: str, data: bytes) -> bytes:
    """HMAC-SHA256 of the purpose, a NUL and the data. A small entry's in one call (`hmac.digest`): for it, setting
    up the incremental form costs more than the hashing. A large one's without copying its bytes."""
    head = purpose.encode("utf-8", "surrogateescape") + b"\0"
    if len(data) <= _ONE_CALL:
        return hmac.digest(key, head + data, "sha256")
    mac = hmac.new(key, head, sha256)
    mac.update(data)
    return mac.digest()


def derived_key(purpose: str) -> bytes | None:
    """A key for `purpose` alone, derived from the user's cache key (None without one). It is for an entry checked
    piece by piece, such as a version artifact's rows, rather than as a whole."""
    key = cache_key()
    if key is None:
        return None
    message = b"\xffderive\0" + purpose.encode("utf-8", "surrogateescape")  # \xff: never UTF-8, never a seal's
    return hmac.new(key, message, sha256).digest()


def seal(purpose: str, data: bytes) -> bytes | None:
    """`data` with its tag in front, for the cache entry that `purpose` names. None when there is no key; write
    nothing then."""
    return _sealed(cache_key(), purpose, data)


def unseal(purpose: str, entry: bytes) -> bytes | None:
    """The data of a sealed cache `entry` for `purpose`. None (a miss) when its tag does not verify. The entry is
    then damaged, truncated, forged, written for another purpose or slot, or under another key."""
    return _opened(cache_key(), purpose, entry)


class Sealer:
    """`seal` and `unseal` under the cache key as it is at this object's first use, for a reader of many entries
    (an HTTP client reading its cache). Finding the key (`cache_key`: the variables that locate it) then costs
    nothing per entry. Every entry is still checked."""

    @cached_property
    def key(self) -> bytes | None:
        return cache_key()

    def seal(self, purpose: str, data: bytes) -> bytes | None:
        """As `seal`."""
        return _sealed(self.key, purpose, data)

    def unseal(self, purpose: str, entry: bytes) -> bytes | None:
        """As `unseal`."""
        return _opened(self.key, purpose, entry)


def _sealed(key: bytes | None, purpose: str, data: bytes) -> bytes | None:
    return None if key is None else _tag(key, purpose, data) + data


def _opened(key: bytes | None, purpose: str, entry: bytes) -> bytes | None:
    if key is None or len(entry) < TAG_BYTES:
        return None
    data = entry[TAG_BYTES:]
    return data if hmac.compare_digest(entry[:TAG_BYTES], _tag(key, purpose, data)) else None
