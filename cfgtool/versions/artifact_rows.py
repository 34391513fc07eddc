"""The rows of a version artifact as the mappings a `Snapshot` reads (`cfgtool.versions.artifact`). Each node, text
and secret is decoded and checked when first asked for, and kept afterwards. A row that does not read back as written
switches the whole artifact to its recovery (a compile). So an answer is never wrong."""

from __future__ import annotations

import json
import re
from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView
from functools import partial
from hashlib import blake2b
from typing import TYPE_CHECKING, Any, Protocol

from cfgtool.snapshot.model import NodeSnapshot, Snapshot
from cfgtool.snapshot.provenance import Provenance

if TYPE_CHECKING:
    from cfgtool.hocon import Resolved
    from cfgtool.hocon.values import Node

_NODE = "config, config_crc, node, node_crc"  # the columns a node's row is decoded from


class Damaged(Exception):
    """An artifact row does not read back as written (internal: the reader recovers)."""


class RowSeal:
    """The keyed check of an artifact's rows (`cfgtool._util.cacheauth`). It is a 64-bit BLAKE2b MAC of a row's
    stored text, its key among the parts. The MAC key derives from the user's cache key and the artifact's name. So a
    row can be neither forged nor moved from another artifact. Damage and tampering are what it finds."""

    def __init__(self, key: bytes) -> None:
        self._key = key

    def of(self, *parts: str | None) -> int:
        """The check of a row whose stored text (its key among the parts) is `parts`."""
        data = "\0".join(p if p is not None else "\1" for p in parts).encode("utf-8", "surrogatepass")
        return int.from_bytes(blake2b(data, key=self._key, digest_size=8).digest(), "big", signed=True)

    def ok(self, key: str, stored: bytes | None, expected: int) -> bool:
        """Whether `of(key, text)` is `expected`, given the text as SQLite stores it (UTF-8 bytes, None for NULL).
        SQLite calls this for each row. The bytes need no decoding to be checked."""
        mac = blake2b(f"{key}\0".encode("utf-8", "surrogatepass"), key=self._key, digest_size=8)
        mac.update(stored if stored is not None else b"\1")
        return int.from_bytes(mac.digest(), "big", signed=True) == expected


def row_seal(name: str) -> RowSeal | None:
    """The `RowSeal` of the artifact file `name`; None without a cache key (no artifact is read or written)."""
    from cfgtool._util.cacheauth import derived_key

    key = derived_key(f"artifact {name}")
    return None if key is None else RowSeal(key)


# A path segment SQLite's JSON path can name as `."segment"`: it compares the segment with a key as written in
# the JSON text, where `"`, `\` and control characters are escaped, so a segment holding one is walked in Python.
_SQLITE_LABEL = re.compile(r'[^"\\\x00-\x1f]*')


def sqlite_path(parts: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """The SQLite JSON path of the longest prefix of `parts` it can name, and the rest (`values_at` walks it)."""
    named = 0
    while named < len(parts) and _SQLITE_LABEL.fullmatch(parts[named]):
        named += 1
    return "$" + "".join(f'."{part}"' for part in parts[:named]), parts[named:]


def values_at(values: Sequence[Any], parts: tuple[str, ...]) -> list[Any]:
    """The value at `parts` in each of `values`: configs, or values already taken at a prefix of the path. None where
    there is none; only objects have members. Inlined `plain.value_at`: this runs for every node of a Spark lookup.
    Testing for `dict` is several times cheaper than for `Mapping`."""
    out = list(values)
    for part in parts:
        out = [value.get(part) if isinstance(value, dict) else None for value in out]
    return out


class Rows(Protocol):
    """What the mappings read from: an open version artifact (`cfgtool.versions.artifact.Artifact`)."""

    seal: RowSeal

    @property
    def is_recovered(self) -> bool:
        """Whether the artifact turned out damaged and a compile replaced it."""

    def recovered(self) -> Snapshot:
        """The compiled snapshot that replaces the artifact."""

    def _rows(self, sql: str, args: tuple[str, ...]) -> list[Any]:
        """The rows of one query (raises `Damaged` once the artifact is recovered)."""

    def provenance(self, key: str, layers: tuple[str, ...]) -> tuple[Resolved | None, Node | None]:
        """The resolved tree of `key` and its own document, from the texts of its layers."""

    def reached(self, key: str) -> tuple[str, ...]:
        """How each layer of `key` was reached."""


class Nodes(Mapping[str, NodeSnapshot]):
    """The artifact's nodes, each decoded when first read (and kept: the same key gives the same object)."""

    def __init__(self, artifact: Rows) -> None:
        self._artifact = artifact
        self._memo: dict[str, NodeSnapshot] = {}
        self._secrets: dict[str, Mapping[str, str | None]] = {}
        self._keys: list[str] | None = None
        self._complete = False

    def _fallback(self) -> Mapping[str, NodeSnapshot]:
        return self._artifact.recovered().nodes

    def __getitem__(self, key: str) -> NodeSnapshot:
        found = self._memo.get(key)
        if found is not None:
            return found
        if self._complete:
            raise KeyError(key)
        try:
            rows = self._artifact._rows(f"SELECT {_NODE} FROM nodes WHERE key = ?", (key,))
            if not rows:
                raise KeyError(key)
            return self._decode(key, *rows[0])
        except Damaged:
            return self._fallback()[key]

    def __contains__(self, key: object) -> bool:
        if key in self._memo:
            return True
        if not isinstance(key, str) or self._complete:
            return False
        try:
            self[key]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._key_list())

    def __len__(self) -> int:
        return len(self._key_list())

    def _key_list(self) -> list[str]:
        if self._keys is None:
            try:
                self._keys = [k for (k,) in self._artifact._rows("SELECT key FROM nodes ORDER BY key", ())]
            except Damaged:
                return list(self._fallback())
        return self._keys

    def items(self) -> ItemsView[str, NodeSnapshot]:
        return self._all().items()

    def values(self) -> ValuesView[NodeSnapshot]:
        return self._all().values()

    def _all(self) -> Mapping[str, NodeSnapshot]:
        """Every node, decoded in one pass over the table."""
        if not self._complete:
            try:
                for key, *row in self._artifact._rows(f"SELECT key, {_NODE} FROM nodes ORDER BY key", ()):
                    if key not in self._memo:
                        self._decode(key, *row)
                self._memo = dict(sorted(self._memo.items()))
                self._complete = True
            except Damaged:
                return self._fallback()
        return self._memo

    def sealed(self, key: str) -> Mapping[str, str | None] | None:
        """The sealed secrets of node `key` (None: none, or no such node)."""
        if key not in self:
            return None
        if self._artifact.is_recovered:
            return self._artifact.recovered().secrets.get(key)
        return self._secrets.get(key)

    def all_sealed(self) -> Mapping[str, Mapping[str, str | None]]:
        nodes = self._all()
        if self._artifact.is_recovered or nodes is not self._memo:
            return self._artifact.recovered().secrets
        return dict(sorted(self._secrets.items()))

    def _decode(self, key: str, config_text: str | None, ccrc: int, node_text: str, ncrc: int) -> NodeSnapshot:
        """The NodeSnapshot of one row, its every field checked (Damaged otherwise)."""
        seal = self._artifact.seal
        if ccrc != seal.of(key, config_text) or ncrc != seal.of(key, node_text):
            raise Damaged(key)
        try:
            config = json.loads(config_text) if config_text is not None else None
            layers, imports, file, intrinsic, content_hash, sealed = json.loads(node_text)
            ok = (
                (config is None or type(config) is dict)
                and strings(layers) and strings(imports)
                and (file is None or type(file) is str) and type(intrinsic) is bool and type(content_hash) is str
                and (sealed is None or (type(sealed) is dict and all(_text_or_none(v) for v in sealed.values())))
            )  # fmt: skip
        except (ValueError, TypeError, RecursionError) as exc:  # nesting beyond any config: hostile
            raise Damaged(key) from exc
        if not ok:
            raise Damaged(key)
        layers = tuple(layers)
        compute = partial(self._artifact.provenance, key, layers) if config is not None and layers else None
        snap = NodeSnapshot(
            key=key,
            config=config,
            layers=layers,
            imports=tuple(imports),
            file=file,
            intrinsic=intrinsic,
            provenance=Provenance(compute=compute, reach=partial(self._artifact.reached, key)),
            content_hash=content_hash,
        )
        self._memo[key] = snap
        if sealed:
            self._secrets[key] = sealed
        return snap


def strings(value: Any) -> bool:
    """Whether `value` is a list of strings, as stored."""
    return type(value) is list and all(type(v) is str for v in value)


def _text_or_none(value: Any) -> bool:
    return value is None or type(value) is str


class Secrets(Mapping[str, Mapping[str, str | None]]):
    """Node -> its sealed secrets, read with the node's row."""

    def __init__(self, nodes: Nodes) -> None:
        self._nodes = nodes

    def __getitem__(self, key: str) -> Mapping[str, str | None]:
        found = self._nodes.sealed(key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes.all_sealed())

    def __len__(self) -> int:
        return len(self._nodes.all_sealed())


class Texts(Mapping[str, str]):
    """The store's files, each read when first asked for."""

    def __init__(self, artifact: Rows) -> None:
        self._artifact = artifact
        self._memo: dict[str, str] = {}
        self._paths: list[str] | None = None

    def __getitem__(self, path: str) -> str:
        found = self._memo.get(path)
        if found is not None:
            return found
        try:
            rows = self._artifact._rows("SELECT text, crc FROM texts WHERE path = ?", (path,))
            if not rows:
                raise KeyError(path)
            text, stored = rows[0]
            if type(text) is not str or stored != self._artifact.seal.of(path, text):
                raise Damaged(path)
        except Damaged:
            return self._artifact.recovered().texts[path]
        self._memo[path] = text
        return text

    def __iter__(self) -> Iterator[str]:
        return iter(self._path_list())

    def __len__(self) -> int:
        return len(self._path_list())

    def _path_list(self) -> list[str]:
        if self._paths is None:
            try:
                self._paths = [p for (p,) in self._artifact._rows("SELECT path FROM texts ORDER BY path", ())]
            except Damaged:
                return list(self._artifact.recovered().texts)
        return self._paths
