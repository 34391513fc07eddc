"""On-disk caches, content-addressed and written atomically, so a crash never leaves a half-written file.

- `ParseCache`: parsed `main.conf` trees by (git blob id, path): an unchanged file is never parsed twice,
  whichever commit, branch or working tree it is read from.
- `NodeCache`: a node's resolved config by the fingerprint of everything it resolves from (`cfgtool.build`).
- `SchemaPasses`: the (schema file, node content hash) pairs that passed a set of JSON Schemas: a node whose
  content did not change is not validated again (`cfgtool.validate.schemas`).

Entries are plain data (parse trees as nested arrays, see `encode_tree`) stored with msgpack: a format that
holds data only (pickle and marshal can carry code, and a cache directory may be shared or planted; DESIGN
15), and reads them several times faster than pickling the node objects. They are sharded by the first hex
digit of their key; a shard is read when first needed and rewritten only when it gained entries. A shard is
written to a temporary file and renamed, without fsync: a cache file lost in a power cut is only a miss.
Every entry is checked as it is decoded: a damaged, truncated, foreign or hostile shard or entry is a cache
miss, never an error. Cache directories are created private (0700).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgpack  # type: ignore[import-untyped]

from cfgtool._version import __version__
from cfgtool.hocon import values
from cfgtool.hocon.api import deep_recursion
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.values import Concat, Lst, Merge, Node, Num, Obj, Scalar, Subst, Ws

FORMAT = 7  # the layout of the cache files (5: msgpack; 6: `+=` marked in parse trees; 7: entries packed apart)
# Encoded trees mirror cfgtool.hocon.values: a change to that module must not read old ones.
_MODEL = hashlib.sha256(Path(values.__file__).read_bytes()).hexdigest()[:12]

K = TypeVar("K")
V = TypeVar("V")

_new_origin = tuple.__new__  # Origin(...) without NamedTuple's Python-level __new__


def cache_root() -> Path:
    """`$CFGTOOL_CACHE_DIR`, else `$XDG_CACHE_HOME/cfgtool`, else `~/.cache/cfgtool`."""
    explicit = os.environ.get("CFGTOOL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "cfgtool"


# What a damaged or hostile cache file can raise while it is read and decoded: all of it is a miss.
DAMAGED = (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError, msgpack.UnpackException)


def pack(value: Any) -> bytes:
    """`value` (plain data: dicts, lists, tuples, str, bytes, numbers, bools, None) as msgpack bytes."""
    data: bytes = msgpack.packb(value, use_bin_type=True)
    return data


def unpack(data: bytes) -> Any:
    """What `pack` packed (arrays come back as lists); raises one of DAMAGED for anything else."""
    return msgpack.unpackb(data, raw=False, strict_map_key=True)


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


class _Sharded(Generic[K, V]):
    """A dict on disk, in 16 msgpack shards chosen by `_shard_of(key)`; values are stored as `_dump`s, each
    packed into bytes of its own (decoded only when read: a shard is read whole, and decoding every entry of it
    cost about seven times its size in objects), keys as strings (`_key_text`: tuples joined with NUL).

    New entries stay as given until `flush` (or `stored_new`) converts them, one shard at a time. A shard keeps
    at most `max_entries`, least recently used first (a hit moves an entry to the end; a rewrite drops from the
    front): a shard is read whole, so an unbounded one made every compile of a long-lived process (and the
    disk) grow with every version it had ever compiled.
    """

    max_entries = 2048  # per shard: 32,768 per cache, a few times the nodes of a 10,000-dataset store

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._shards: dict[str, dict[K, bytes]] = {}  # packed stored forms, as on disk
        self._new: dict[str, dict[K, V]] = {}  # entries put since the last flush

    def _shard_of(self, key: K) -> str:
        raise NotImplementedError

    def _key_text(self, key: K) -> str:
        return "\0".join(key) if isinstance(key, tuple) else str(key)

    def _key_of(self, text: str) -> K:
        key: Any = tuple(text.split("\0")) if "\0" in text else text
        return key  # type: ignore[no-any-return]

    def _dump(self, value: V) -> Any:
        """`value` as plain data for msgpack."""
        return value

    def _load(self, stored: Any) -> V:
        """The value `_dump` stored."""
        result: V = stored
        return result

    def _shard(self, name: str) -> dict[K, bytes]:
        shard = self._shards.get(name)
        if shard is None:
            try:
                loaded: Any = unpack((self.directory / f"{name}.msgpack").read_bytes())
                shard = {self._key_of(k): v for k, v in loaded.items() if isinstance(k, str) and isinstance(v, bytes)}
            except (OSError, *DAMAGED):
                shard = {}
            self._shards[name] = shard
        return shard

    def get(self, key: K) -> V | None:
        name = self._shard_of(key)
        new = self._new.get(name)
        if new is not None and key in new:
            return new[key]
        shard = self._shard(name)
        stored = shard.pop(key, None)
        if stored is None:
            return None
        shard[key] = stored  # now the most recently used
        try:
            return self._load(unpack(stored))
        except (*DAMAGED, RecursionError):  # a damaged entry is a miss
            return None

    def has(self, key: K) -> bool:
        name = self._shard_of(key)
        return key in self._new.get(name, ()) or key in self._shard(name)

    def put(self, key: K, value: V) -> None:
        self._new.setdefault(self._shard_of(key), {})[key] = value

    def stored_new(self) -> list[tuple[K, bytes]]:
        """The entries put since the last flush, in stored form (for `add_stored` in another process)."""
        return [(key, pack(self._dump(value))) for new in self._new.values() for key, value in new.items()]

    def add_stored(self, entries: list[tuple[K, bytes]]) -> None:
        """Add entries that `stored_new` returned; they are written by the next `flush`."""
        for key, stored in entries:
            name = self._shard_of(key)
            self._shard(name)[key] = stored
            self._new.setdefault(name, {})

    def flush(self) -> None:
        """Write every shard that gained entries; a cache that cannot be written is skipped silently."""
        for name in sorted(self._new):
            shard = self._shard(name)
            for key, value in self._new.pop(name).items():
                shard.pop(key, None)
                shard[key] = pack(self._dump(value))
            for key in list(itertools.islice(shard, max(0, len(shard) - self.max_entries))):
                del shard[key]  # the least recently used
            try:
                self._write(name, pack({self._key_text(k): v for k, v in shard.items()}))
            except (OSError, ValueError, TypeError, OverflowError):
                return

    def _write(self, name: str, data: bytes) -> None:
        """Write one shard through a temporary file and a rename, so readers never see half a file."""
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
    """Parsed documents by (blob id, path)."""

    @classmethod
    def default(cls) -> ParseCache:
        """The cache for this cfgtool and this shape of the value model (a change to either starts afresh)."""
        return cls(cache_root() / f"parse-v{FORMAT}-{__version__}-{_MODEL}")

    def _shard_of(self, key: tuple[str, str]) -> str:
        return key[0][:1]

    def _dump(self, value: Obj) -> Any:
        with deep_recursion():  # documents nest up to the parser's limit, deeper than Python's default
            return encode_tree(value)

    def _load(self, stored: Any) -> Obj:
        with deep_recursion():
            tree = decode_tree(stored)
        assert isinstance(tree, Obj)
        return tree


NodeEntry = tuple[Mapping[str, Any], bool, str, int]  # resolved config, uses intrinsics, content hash, size


class NodeCache(_Sharded[str, NodeEntry]):
    """Resolved node configs by fingerprint."""

    @classmethod
    def default(cls) -> NodeCache:
        return cls(cache_root() / f"nodes-v{FORMAT}-{__version__}-{_MODEL}")

    def _shard_of(self, key: str) -> str:
        return key[:1]

    def _load(self, stored: Any) -> NodeEntry:
        if not (isinstance(stored, (list, tuple)) and len(stored) == 4 and isinstance(stored[0], dict)
                and isinstance(stored[1], bool) and isinstance(stored[2], str)
                and type(stored[3]) is int and stored[3] >= 0):  # fmt: skip
            raise ValueError("not a node cache entry")
        return stored[0], stored[1], stored[2], stored[3]


class SchemaPasses(_Sharded[tuple[str, str], bool]):
    """(schema file, node content hash) pairs that passed, for one set of schemas (their digest names the
    directory, so a changed schema, cfgtool or jsonschema starts afresh). Failures are never cached: their
    messages are computed each time."""

    @classmethod
    def default(cls, schemas_digest: str) -> SchemaPasses:
        return cls(cache_root() / f"schema-passes-v{FORMAT}-{__version__}-{schemas_digest[:16]}")

    def _shard_of(self, key: tuple[str, str]) -> str:
        return key[1][:1]

    def _load(self, stored: Any) -> bool:
        if stored is not True:
            raise ValueError("not a schema pass")
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
    """The tree `encode_tree` encoded (fresh nodes: the resolver may annotate them). Every field is checked:
    anything else than what `encode_tree` writes raises ValueError (a damaged entry is a cache miss)."""
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
