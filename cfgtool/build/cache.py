"""On-disk caches, content-addressed and written atomically, so a crash never leaves a half-written file.

- `ParseCache`: parsed `main.conf` trees by (git blob id, path): an unchanged file is never parsed twice,
  whichever commit, branch or working tree it is read from.
- `NodeCache`: a node's resolved config by the fingerprint of everything it resolves from (`cfgtool.build.builder`).
  The config is kept packed (msgpack bytes with a CRC-32) and unpacked only when read: a warm compile of a
  large store needs every node's content hash, and few configs.
- `SchemaPasses`: the (schema file, node content hash) pairs that passed a set of JSON Schemas: a node whose
  content did not change is not validated again (`cfgtool.validate.schemas`).

Entries are plain data (parse trees as nested arrays, see `encode_tree`) stored with msgpack. That format holds data
only. Pickle and marshal can carry code, and a cache directory may be shared or planted (docs/security.md). msgpack
also reads entries several times faster than pickling the node objects. Entries are sharded by the first hex digit of
their key (parse trees by the first two). A shard is read when first needed. A shard that gained entries is written
as the file's current map plus the new entries. That is one msgpack map, joined without decoding the old part. So a
compile's forked worker writes its own entries, and a one-file change does not re-encode the whole shard. A shard is
written to a temporary file and renamed, without fsync. A cache file lost in a power cut is only a miss. A shard is
sealed with the user's cache key (`cacheauth`). A parsed tree, a node's config and a schema pass all decide what a
compile and its validation see. Every entry is checked as it is decoded. A damaged, truncated, forged, foreign or
hostile shard or entry is a cache miss, never an error. Cache directories are created private (0700).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import zlib
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, Generic, TypeVar

from cfgtool._util.cacheauth import seal, unseal
from cfgtool._util.cachedir import cache_root, private_dir
from cfgtool._util.codec import DAMAGED, pack, unpack
from cfgtool._version import __version__
from cfgtool.errors import CfgtoolError
from cfgtool.hocon import values
from cfgtool.hocon.api import deep_recursion
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.values import Concat, Lst, Merge, Node, Num, Obj, Scalar, Subst, Ws
from cfgtool.snapshot.model import Deferred

# the layout of the cache files (5: msgpack; 6: `+=` marked in parse trees; 7: node configs packed; 8: parse
# trees in 256 shards; 9: shards sealed with the user's cache key)
FORMAT = 9
# Encoded trees mirror cfgtool.hocon.values: a change to that module must not read old ones.
_MODEL = hashlib.sha256(Path(values.__file__).read_bytes()).hexdigest()[:12]

K = TypeVar("K")
V = TypeVar("V")

_new_origin = tuple.__new__  # Origin(...) without NamedTuple's Python-level __new__


def join_maps(old: bytes, new: bytes) -> bytes:
    """Two packed msgpack maps as one, without decoding them. It holds the entries of both; a key in both keeps
    `new`'s value. A map is a header with its entry count, then its entries. ValueError when `old` does not start
    with a map header."""
    count_old, body_old = _map_header(old)
    count_new, body_new = _map_header(new)
    count = count_old + count_new
    if count <= 15:
        head = bytes((0x80 | count,))
    elif count <= 0xFFFF:
        head = b"\xde" + count.to_bytes(2, "big")
    else:
        head = b"\xdf" + count.to_bytes(4, "big")
    return b"".join((head, old[body_old:], new[body_new:]))


def _is_map(data: bytes) -> bool:
    """Whether `data` starts as a packed msgpack map (a config), checked without decoding it."""
    try:
        _map_header(data)
    except ValueError:
        return False
    return True


def _map_header(data: bytes) -> tuple[int, int]:
    """(entries, where they start) of a packed msgpack map."""
    first = data[0] if data else -1
    if 0x80 <= first <= 0x8F:
        return first & 0x0F, 1
    if first == 0xDE and len(data) >= 3:
        return int.from_bytes(data[1:3], "big"), 3
    if first == 0xDF and len(data) >= 5:
        return int.from_bytes(data[1:5], "big"), 5
    raise ValueError("not a packed msgpack map")


MAX_SHARD_ENTRIES = 65_536  # per shard, 16 shards a cache: several versions of a 100,000-dataset store


class _Sharded(Generic[K, V]):
    """A dict on disk, in 16 msgpack shards chosen by `_shard_of(key)`. Values are stored as `_dump`s. Keys are
    stored as strings (`_key_text`: tuples joined with NUL).

    New entries stay as given until `flush` converts them, one shard at a time.
    """

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory  # None: in memory only, nothing is read or written
        self._shards: dict[str, dict[str, Any]] = {}  # stored forms by key text, as on disk
        self._new: dict[str, dict[K, V]] = {}  # entries put since the last flush
        self._damaged: set[str] = set()  # shards whose file did not read back: written afresh, never added to
        self.max_entries = MAX_SHARD_ENTRIES

    def _shard_of(self, key: K) -> str:
        raise NotImplementedError

    def _key_text(self, key: K) -> str:
        return "\0".join(key) if isinstance(key, tuple) else str(key)

    def _dump(self, value: V) -> Any:
        """`value` as plain data for msgpack."""
        return value

    def _load(self, stored: Any) -> V:
        """The value `_dump` stored."""
        result: V = stored
        return result

    def _shard(self, name: str) -> dict[str, Any]:
        """A shard's file as read, looked up by key text and never rebuilt key by key. A shard of a large store holds
        thousands of entries, and a compile asks for few, or for each once."""
        shard = self._shards.get(name)
        if shard is None:
            try:
                if self.directory is None:
                    raise FileNotFoundError(name)
                path = self.directory / f"{name}.msgpack"
                loaded: Any = unpack(self._opened(name, path.read_bytes()))
                if not isinstance(loaded, dict):
                    raise ValueError("not a map")
                shard = loaded  # a planted key that is no string matches no lookup
            except FileNotFoundError:
                shard = {}
            except (OSError, *DAMAGED):
                shard = {}
                self._damaged.add(name)
            self._shards[name] = shard
        return shard

    def get(self, key: K) -> V | None:
        name = self._shard_of(key)
        new = self._new.get(name)
        if new is not None and key in new:
            return new[key]
        stored = self._shard(name).get(self._key_text(key))
        if stored is None:
            return None
        try:
            return self._load(stored)
        except (*DAMAGED, RecursionError):  # a damaged entry is a miss
            return None

    def has(self, key: K) -> bool:
        name = self._shard_of(key)
        return key in self._new.get(name, ()) or self._key_text(key) in self._shard(name)

    @property
    def pending(self) -> int:
        """How many entries were put since the last flush."""
        return sum(map(len, self._new.values()))

    def put(self, key: K, value: V) -> None:
        self._new.setdefault(self._shard_of(key), {})[key] = value

    def forget_new(self) -> None:
        """Drop the entries put since the last flush without writing them, since another process writes them. In a
        forked build worker they are its parent's. A compile's flushing child wrote its parent's."""
        self._new.clear()

    def release(self) -> None:
        """Drop the shards read from disk; they are read again when asked. A forked child writes the new entries. A
        large cache's shards would otherwise stay in memory while the compile goes on."""
        self._shards.clear()

    def flush(self) -> None:
        """Add every entry put since the last flush to its shard's file. A cache that cannot be written is skipped
        silently. A written shard leaves memory; it is read again if asked. Entries another process wrote since it
        was read (a forked worker) are then found too."""
        if self.directory is None:
            self._new.clear()
            return
        for name in sorted(self._new):
            new = self._new[name]
            self._shard(name)  # a shard is checked once before it is added to
            path = self.directory / f"{name}.msgpack"
            try:
                added = {self._key_text(k): self._dump(v) for k, v in new.items()}
                data = pack(added)
                if name not in self._damaged:
                    with suppress(OSError, ValueError):  # no file yet, forged, or not a map: the new entries alone
                        data = join_maps(self._opened(name, path.read_bytes()), data)
                if _map_header(data)[0] > self.max_entries:
                    data = self._bounded(data, added)
                sealed = seal(self._purpose(name), data)
                if sealed is None:
                    return
                self._write(name, sealed)
            except (OSError, ValueError, TypeError, OverflowError):
                return
            self._damaged.discard(name)
            del self._shards[name], self._new[name]

    def _purpose(self, name: str) -> str:
        """What shard `name` of this cache is sealed for (`cacheauth`): an entry moved elsewhere does not verify."""
        assert self.directory is not None
        return f"{self.directory.name}/{name}"

    def _opened(self, name: str, sealed: bytes) -> bytes:
        """The map of a shard's file, its tag checked (ValueError when it does not verify)."""
        data = unseal(self._purpose(name), sealed)
        if data is None:
            raise ValueError("not sealed with this user's key")
        return data

    def _bounded(self, joined: bytes, added: dict[str, Any]) -> bytes:
        """`joined` (a shard's file with `added` joined on) rewritten with its newest `max_entries` entries. A file
        only grows by joins. A long-lived process would otherwise grow it with every version."""
        try:
            stored = unpack(joined)
        except DAMAGED:
            stored = {}
        if not isinstance(stored, dict):
            stored = {}
        for key in added:  # a key written again is the newest, whatever its place in the file
            stored.pop(key, None)
        stored.update(added)
        kept = list(stored.items())[-self.max_entries :]
        return pack(dict(kept))

    def _write(self, name: str, data: bytes) -> None:
        """Write one shard through a temporary file and a rename, so readers never see half a file."""
        assert self.directory is not None
        private_dir(self.directory)
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=self.directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(tmp, self.directory / f"{name}.msgpack")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


class ParseCache(_Sharded[tuple[str, str], Obj]):
    """Parsed documents by (blob id, path), in 256 shards (two hex digits). A compile after a one-file change needs
    the trees of a few layers. A shard is read whole. A 100,000-file store's trees are 350 MB."""

    def __init__(self, directory: Path | None) -> None:
        super().__init__(directory)
        self.max_entries = MAX_SHARD_ENTRIES // 16  # as many entries in all as 16 shards of the others

    @classmethod
    def default(cls) -> ParseCache:
        """The cache for this cfgtool and this shape of the value model. A change to either starts afresh."""
        return cls(cache_root() / f"parse-v{FORMAT}-{__version__}-{_MODEL}")

    def _shard_of(self, key: tuple[str, str]) -> str:
        return key[0][:2]

    def _dump(self, value: Obj) -> Any:
        with deep_recursion():  # documents nest up to the parser's limit, deeper than Python's default
            return encode_tree(value)

    def _load(self, stored: Any) -> Obj:
        with deep_recursion():
            tree = decode_tree(stored)
        assert isinstance(tree, Obj)
        return tree


# resolved config (as resolved, or packed when read back), uses intrinsics, content hash, size
NodeEntry = tuple["Mapping[str, Any] | PackedConfig", bool, str, int]


class PackedConfig(Deferred):
    """A cached config as msgpack bytes, unpacked on first read (`NodeSnapshot.config`)."""

    __slots__ = ("data", "where")

    def __init__(self, data: bytes, where: Path | None) -> None:
        self.data = data
        self.where = where

    def load(self) -> Mapping[str, Any]:
        try:
            config = unpack(self.data)
        except DAMAGED:
            config = None
        if not isinstance(config, dict):  # the CRC matched: written so on purpose, not damaged by chance
            raise CfgtoolError(
                f"the node cache in {self.where} holds an entry that is not a config",
                hint=f"delete {self.where}: it is only a cache",
            )
        return config


class NodeCache(_Sharded[str, NodeEntry]):
    """Resolved node configs by fingerprint; stored as [packed config, intrinsic, hash, size, CRC-32]."""

    @classmethod
    def default(cls) -> NodeCache:
        return cls(cache_root() / f"nodes-v{FORMAT}-{__version__}-{_MODEL}")

    def _shard_of(self, key: str) -> str:
        return key[:1]

    def _dump(self, value: NodeEntry) -> Any:
        config, intrinsic, content_hash, size = value
        data = config.data if isinstance(config, PackedConfig) else pack(config)
        return [data, intrinsic, content_hash, size, zlib.crc32(data)]

    def _key_text(self, key: str) -> str:
        return key

    def _load(self, stored: Any) -> NodeEntry:
        data, intrinsic, content_hash, size, crc = stored  # anything else raises: a miss
        if not (type(data) is bytes and type(intrinsic) is bool and type(content_hash) is str and type(size) is int
                and size >= 0 and zlib.crc32(data) == crc and _is_map(data)):  # fmt: skip
            raise ValueError("not a node cache entry")  # a miss: only a planted map that does not decode is left
        return PackedConfig(data, self.directory), intrinsic, content_hash, size


class SchemaPasses(_Sharded[tuple[str, str], bool]):
    """(schema file, node content hash) pairs that passed, for one set of schemas. Their digest names the directory.
    So a changed schema, cfgtool or jsonschema starts afresh. Failures are never cached: their messages are computed
    each time."""

    @classmethod
    def default(cls, schemas_digest: str) -> SchemaPasses:
        return cls(cache_root() / f"schema-passes-v{FORMAT}-{__version__}-{schemas_digest[:16]}")

    def _shard_of(self, key: tuple[str, str]) -> str:
        return key[1][:1]

    def _load(self, stored: Any) -> bool:
        if stored is not True:
            raise ValueError("not a schema pass")
        return True


class SettingsPasses(_Sharded[str, bool]):
    """Digests of `_CONFIG_STORE` texts that parsed without any problem (`cfgtool.compile.query`). A query about one
    key then reads them again without importing jsonschema to check them. Failures are never cached."""

    @classmethod
    def default(cls, rules_digest: str) -> SettingsPasses:
        """The passes under one settings schema and parser (their digest names the directory)."""
        return cls(cache_root() / f"settings-passes-v{FORMAT}-{__version__}-{rules_digest[:16]}")

    def _shard_of(self, key: str) -> str:
        return key[:1]

    def _load(self, stored: Any) -> bool:
        if stored is not True:
            raise ValueError("not a settings pass")
        return True


# Tags of encoded nodes: (tag, file, line, col, *fields).
_SCALAR, _NUM, _WS, _OBJ, _LST, _SUBST, _CONCAT, _MERGE = range(8)


def encode_tree(node: Node) -> tuple[Any, ...]:
    """A parsed (unresolved) tree as nested tuples of plain values, which `decode_tree` turns back into it."""
    o = node.origin
    if type(node) is Scalar:  # exact types: Joined* (resolved values) are never parse results
        return (_SCALAR, o[0], o[1], o[2], node.value, node.quoted)
    if type(node) is Obj:
        return (_OBJ, o[0], o[1], o[2], {k: encode_tree(v) for k, v in node.fields.items()})
    if type(node) is Num:
        return (_NUM, o[0], o[1], o[2], node.value, node.raw)
    if type(node) is Subst:
        return (_SUBST, o[0], o[1], o[2], node.path, node.optional, node.prefix)
    if type(node) is Lst:
        return (_LST, o[0], o[1], o[2], [encode_tree(v) for v in node.items])
    if type(node) is Concat:
        return (_CONCAT, o[0], o[1], o[2], [encode_tree(v) for v in node.parts], node.append)
    if type(node) is Ws:
        return (_WS, o[0], o[1], o[2], node.value)
    if type(node) is Merge:
        return (_MERGE, o[0], o[1], o[2], [encode_tree(v) for v in node.stack])
    raise TypeError(f"{type(node).__name__} is not a parse result")


def decode_tree(record: Any) -> Node:
    """The tree `encode_tree` encoded (fresh nodes: the resolver may annotate them). Every field is checked. Anything
    else than what `encode_tree` writes raises ValueError; a damaged entry is a cache miss."""
    tag, file, line, col = record[0], record[1], record[2], record[3]
    if not (isinstance(file, str) and type(line) is int and type(col) is int and len(record) >= 5):
        raise ValueError("a damaged parse cache entry")
    origin: Origin = _new_origin(Origin, (file, line, col))
    a = record[4]
    if tag == _SCALAR and (a is None or type(a) in (str, bool)) and type(record[5]) is bool:
        return Scalar(a, origin, record[5])
    if tag == _OBJ and type(a) is dict:
        return Obj({_text(k): decode_tree(v) for k, v in a.items()}, origin)
    if tag == _NUM and type(a) in (int, float) and isinstance(record[5], str):
        return Num(a, origin, record[5])
    if tag == _SUBST and type(a) is list and type(record[5]) is bool and type(record[6]) is int:
        return Subst(tuple(_text(k) for k in a), record[5], origin, record[6])
    if tag == _LST and type(a) is list:
        return Lst([decode_tree(v) for v in a], origin)
    if tag == _CONCAT and type(a) is list and type(record[5]) is bool:
        return Concat([decode_tree(v) for v in a], origin, record[5])
    if tag == _WS and type(a) is str:
        return Ws(a, origin)
    if tag == _MERGE and type(a) is list:
        return Merge([decode_tree(v) for v in a], origin)
    raise ValueError(f"unknown or damaged node {tag!r} in the parse cache")


def _text(value: Any) -> str:
    if type(value) is not str:
        raise ValueError("a damaged parse cache entry")
    return value
