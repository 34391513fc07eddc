"""The compiled model: every node's resolved config, provenance and the query indexes, frozen.

A `Snapshot` is what every consumer reads: CLI queries, ConfigClient, the Spark loader, diff and publish. None of
them re-implements resolution. It has a canonical JSON form stamped with a schema version and the cfgtool version.
That form is read back through a compatibility check. Its sha256 `digest` depends only on the content and the rules.
The content is the resolved configs, layers, imports and variables. The rules are the blob ids of the settings,
schemas, policy code, ACL and recipients. The digest does not depend on ordering, origins' formatting, mtimes, the
commit or the machine. So publishing an unchanged store is recognised as a no-op, and a commit that only changes the
rules is not.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cfgtool._util.atomic import write_atomic
from cfgtool.diagnostics import VALIDATION_CODES, Diagnostic
from cfgtool.errors import CfgtoolError, SourceError
from cfgtool.hocon.origin import Origin
from cfgtool.snapshot.hidden import HIDDEN, PREFIX, hide
from cfgtool.snapshot.provenance import OwnValue, Provenance
from cfgtool.store.keys import depth, nearest
from cfgtool.store.lin import Lin
from cfgtool.store.queries import StoreQueries

if TYPE_CHECKING:  # the HOCON engine is imported by what resolves or parses: reading configs needs none
    from cfgtool.hocon.values import Obj

SCHEMA = "https://cfgtool.dev/schemas/snapshot/v2.json"
SCHEMA_VERSION = 2  # 2: the rules' blob ids (`rules`), which the digest covers


PHANTOMS_KEPT = 1024  # keys without a node resolved again for the intrinsics, remembered per snapshot


class KeyNotFound(CfgtoolError):
    """A read asked for a key that has no node, or for a value that is not set. Asking for the nearest ancestor on
    purpose is no error."""

    @classmethod
    def no_node(cls, key: str, store: str, node: str, near: str | None, how: str = "nearest=True") -> KeyNotFound:
        """The error of a program's read of `key`, which has no node. Its nearest is `node`; `near` is a node with a
        close key. A misspelled key must never read as its ancestor's config. `how` says how a reader asks for the
        nearest ancestor on purpose."""
        said = f"{key} has no node in store {store!r} (it would read {node}'s config)"
        if near is not None:
            said += f"; did you mean {near}?"
        return cls(said, hint=f"check the key, or ask for its nearest ancestor's config on purpose ({how})")


class Deferred:
    """A config that is read only when first asked for (a node cache entry's packed form). A compile that reuses
    100,000 cached nodes needs their content hashes for the digest, not their configs."""

    def load(self) -> Mapping[str, Any]:
        raise NotImplementedError


class _Config:
    """`NodeSnapshot.config`: the config given, a `Deferred` one loaded on first read (then kept)."""

    def __get__(self, snap: NodeSnapshot | None, owner: type | None = None) -> Any:
        if snap is None:
            return self
        value = snap.__dict__["_config"]
        if isinstance(value, Deferred):
            value = snap.__dict__["_config"] = value.load()
        return value

    def __set__(self, snap: NodeSnapshot, value: Mapping[str, Any] | Deferred | None) -> None:
        snap.__dict__["_config"] = value  # once, by the (frozen) dataclass's __init__


@dataclass(frozen=True)
class NodeSnapshot:
    """One node: its resolved config (None when it failed to resolve), layers and provenance."""

    key: str
    config: Mapping[str, Any] | None  # a `Deferred` may be given too: see `_Config`, set on the class below
    # L(K), highest priority first, K itself first (a tuple, or a `Lin` sharing its storage with the L it extends);
    # empty on or behind an import cycle
    layers: Sequence[str]
    imports: tuple[str, ...]  # explicit imports after variables, highest priority first
    file: str | None = None  # its main.conf (repo-relative), None when it has none
    intrinsic: bool = False  # the config uses `${cfgtool.key}` / `${cfgtool.name}`
    provenance: Provenance = field(default_factory=Provenance, compare=False, repr=False)
    content_hash: str | None = field(default=None, compare=False, repr=False)  # node_hash(), when known

    @property
    def resolved(self) -> bool:
        """Whether the node resolved (its config is not None), without loading a deferred config."""
        return self.__dict__["_config"] is not None

    @property
    def reached(self) -> tuple[str, ...]:
        """How each layer was reached (`/data/x includes /tags/t (...)`), parallel to `layers`."""
        return self.provenance.reached or tuple("" for _ in self.layers)

    @property
    def origins(self) -> Mapping[str, Origin]:
        """Leaf path -> the assignment that won."""
        return self.provenance.origins

    @property
    def sources(self) -> Mapping[str, tuple[Origin, ...]]:
        """Substituted or concatenated leaf path -> the origins it was built from."""
        return self.provenance.sources

    @property
    def own(self) -> Mapping[str, OwnValue]:
        """Leaf path -> the node's own assignment, as written."""
        return self.provenance.own


# The frozen dataclass's __init__ sets `config` through object.__setattr__, which goes through this descriptor.
NodeSnapshot.config = _Config()  # type: ignore[assignment]


def node_snapshot(
    key: str,
    config: Mapping[str, Any] | Deferred | None,
    layers: Sequence[str],
    imports: tuple[str, ...],
    file: str | None,
    intrinsic: bool,
    provenance: Provenance,
    content_hash: str | None,
) -> NodeSnapshot:
    """`NodeSnapshot(...)` with every field given, made without the frozen dataclass's `object.__setattr__` per
    field. That saves a third of the time, and a compile makes one for every node of the store."""
    snap: NodeSnapshot = object.__new__(NodeSnapshot)
    snap.__dict__.update(
        key=key, _config=config, layers=layers, imports=imports, file=file, intrinsic=intrinsic,
        provenance=provenance, content_hash=content_hash,
    )  # fmt: skip
    return snap


@dataclass(frozen=True)
class SourceInfo:
    """Where the store was read: a ref and its commit, or the working tree. `dirty` says it differs."""

    ref: str | None
    commit: str | None
    dirty: bool


@dataclass(frozen=True)
class Lookup:
    """A client read: the config of `key`, and whether `key` has a node of its own
    (docs/resolution.md#keys-without-a-node)."""

    key: str
    node: str
    exists: bool
    config: Mapping[str, Any]


@dataclass(frozen=True)
class Snapshot(StoreQueries):
    """Resolved configs of one store at one source under one variable assignment."""

    store: str
    name: str | None
    source: SourceInfo
    variables: Mapping[str, str]
    tag_roots: tuple[str, ...]
    nodes: Mapping[str, NodeSnapshot]
    cfgtool_version: str
    texts: Mapping[str, str] = field(default_factory=dict)  # repo-relative path -> text of every file read
    # node -> {path: sealed envelope, or None for a value that was not sealed}: what `cfgtool.snapshot.hidden`
    # replaced by [hidden] in that node's config (docs/access.md#secrets); clients with an identity open the envelopes
    secrets: Mapping[str, Mapping[str, str | None]] = field(default_factory=dict)
    # repo-relative path -> blob id of every rule file the store has (settings, schemas, policy code, ACL,
    # recipients): a version is the store's configs and its rules
    rules: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def failed(self) -> frozenset[str]:
        """Nodes that did not resolve (their config is None): reading them is an error."""
        return frozenset(key for key, snap in self.nodes.items() if not snap.resolved)

    @cached_property
    def _deepest(self) -> int:
        return max(map(depth, self.nodes), default=0)

    def nearest_node(self, key: str) -> str:
        """`key` if it has a node, else its nearest ancestor that has one. It is linear in the key's length."""
        return nearest(key, self.nodes, self._deepest)

    # -- queries (docs/queries.md#the-queries: from StoreQueries) ---------------------------------------------
    def _lin_of(self, key: str) -> Sequence[str] | None:
        snap = self.nodes.get(key)
        return snap.layers or None if snap is not None else None

    def _imports_of(self, key: str) -> tuple[str, ...]:
        return tuple(reversed(self.nodes[key].imports))

    def lookup(self, key: str, strict: bool = False) -> Lookup:
        """The resolved config of `key`. A key without a node resolves as an empty layer over its nearest ancestor
        (docs/resolution.md#keys-without-a-node). It is re-resolved only when that ancestor's config uses the
        intrinsics."""
        node = self.nearest_node(key)
        exists = node == key
        if strict and not exists:
            raise KeyNotFound.no_node(key, self.store, node, self.near_node(key))
        snap = self.nodes[node]
        if snap.config is None:
            raise CfgtoolError(f"{node} did not compile, so {key} cannot be read", hint="run `cfgtool compile`")
        config = snap.config if exists or not snap.intrinsic else self._phantom(key, snap)
        return Lookup(key, node, exists, config)

    def _phantom(self, key: str, nearest: NodeSnapshot) -> Mapping[str, Any]:
        found = self._phantoms.get(key)
        if found is None:
            from cfgtool.hocon import split_path
            from cfgtool.snapshot.layers import resolve_layers

            docs = [self._doc(self.nodes[layer].file) for layer in nearest.layers]
            paths = {split_path(p) for p in self.secrets.get(nearest.key, ())}  # resolved again: hide again
            found = hide(resolve_layers(docs, key).value, paths)[0]
            if len(self._phantoms) >= PHANTOMS_KEPT:  # any name may be asked for: keep the newest few only
                del self._phantoms[next(iter(self._phantoms))]
            self._phantoms[key] = found
        return found

    def _doc(self, file: str | None) -> Obj:
        from cfgtool.hocon import parse
        from cfgtool.hocon.values import Obj

        if file is None:
            return Obj({}, Origin("<empty>", 0, 0))
        doc = self._docs.get(file)
        if doc is None:
            doc = self._docs[file] = parse(self.texts[file], file, reader=self.texts.get)
        return doc

    def forget(self, key: str) -> None:
        """Drop the config resolved again for `key`, a key without a node, such as one too large to keep."""
        self._phantoms.pop(key, None)

    @cached_property
    def _phantoms(self) -> dict[str, Mapping[str, Any]]:
        return {}

    @cached_property
    def _docs(self) -> dict[str, Obj]:
        return {}

    def own_text(self, key: str, path: str, text: str) -> str:
        """An assignment of `key`'s own config as written, `[hidden]` when it is a secret (docs/access.md#secrets)."""
        return HIDDEN if PREFIX in text or path in self.secrets.get(key, ()) else text

    # -- serialization -----------------------------------------------------------------------------------
    def content(self) -> dict[str, Any]:
        """What the digest covers: each node's content hash (config, layers, imports). Also the variables and the
        rule files' blob ids."""
        content: dict[str, Any] = {
            "variables": dict(sorted(self.variables.items())),
            "nodes": {key: node_hash(snap) for key, snap in sorted(self.nodes.items())},
            "rules": dict(sorted(self.rules.items())),
        }
        if self.secrets:  # a changed or resealed secret is a new version, though both read [hidden]
            content["secrets"] = {k: dict(v) for k, v in self.secrets.items()}
        return content

    @cached_property
    def digest(self) -> str:
        """sha256 of the canonical JSON of `content()`."""
        from cfgtool.hocon import bulk

        with bulk():  # sorting keys allocates many small tuples: keep the cyclic GC off the big heap
            return "sha256:" + hashlib.sha256(canonical_json(self.content()).encode("utf-8")).hexdigest()

    def to_json(self, provenance: bool = True, texts: bool = True) -> dict[str, Any]:
        """The snapshot's JSON document (docs/compile.md `--output`). The client cache leaves out `provenance`. It
        keeps `texts` (the files, for keys without a node) in a file of their own, read only when needed."""
        files: dict[str, int] = {}

        def org(o: Origin) -> list[Any]:
            return [files.setdefault(o.file, len(files)), o.line, o.col]

        nodes: dict[str, dict[str, Any]] = {}
        for key, snap in sorted(self.nodes.items()):
            node: dict[str, Any] = {
                "config": snap.config,
                "layers": list(snap.layers),
                "imports": list(snap.imports),
                "file": snap.file,
                "intrinsic": snap.intrinsic,
                "hash": node_hash(snap),
            }
            if provenance:
                node["reached"] = list(snap.reached)
                node["origins"] = {p: org(o) for p, o in snap.origins.items()}
                node["sources"] = {p: [org(o) for o in os_] for p, os_ in snap.sources.items()}
                node["own"] = {p: [self.own_text(key, p, v.text), *org(v.origin)] for p, v in snap.own.items()}
            nodes[key] = node
        return {
            "$schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "cfgtool_version": self.cfgtool_version,
            "digest": self.digest,
            "store": self.store,
            "name": self.name,
            "source": {"ref": self.source.ref, "commit": self.source.commit, "dirty": self.source.dirty},
            "variables": dict(sorted(self.variables.items())),
            "tag_roots": list(self.tag_roots),
            "files": list(files),
            "nodes": nodes,
            "texts": dict(sorted(self.texts.items())) if texts else {},
            "secrets": {k: dict(sorted(v.items())) for k, v in sorted(self.secrets.items())},
            "rules": dict(sorted(self.rules.items())),
        }


@dataclass(frozen=True)
class Reading:
    """A compiled store as the queries read it: the snapshot and the compile's diagnostics. `CompileResult` has the
    same two, and more."""

    snapshot: Snapshot
    diagnostics: tuple[Diagnostic, ...]

    def errors_affecting(self, key: str | None) -> list[Diagnostic]:
        """Errors that make an answer about `key` unreliable (`cfgtool.snapshot.model.errors_affecting`)."""
        return errors_affecting(self.snapshot, self.diagnostics, key)


def errors_affecting(snapshot: Snapshot, diagnostics: Iterable[Diagnostic], key: str | None) -> list[Diagnostic]:
    """The errors among `diagnostics` that make an answer about `key` unreliable; `None` asks about the whole
    store. For a key: errors of any layer of L(key), or of the node it inherits from. Also errors tied to no node
    (settings). Validation errors never count: they do not change resolved configs."""
    errors = [d for d in diagnostics if d.severity == "error" and d.code not in VALIDATION_CODES]
    if key is None or not errors:
        return errors
    node = snapshot.nearest_node(key)
    snap = snapshot.nodes.get(node)
    layers = set(snap.layers) if snap is not None and snap.layers else snapshot.reachable(node)
    return [d for d in errors if d.key is None or d.key in layers]


def node_hash(snap: NodeSnapshot) -> str:
    """sha256 of one node's content: resolved config, layers and imports (cached ones come from the cache)."""
    if snap.content_hash is not None:
        return snap.content_hash
    return hash_content(snap.config, snap.layers, snap.imports)


def hash_content(
    config: Mapping[str, Any] | None, layers: Sequence[str], imports: Sequence[str], lists: LayersJson | None = None
) -> str:
    """`node_hash` of a node with this config, layers and imports. It is the sha256 of the canonical JSON of
    `{"config", "imports", "layers"}`. The lists of keys are joined in one piece, not encoded key by key. An import
    chain gives each node thousands of layers. With `lists` (kept by a build), a long `Lin`'s JSON is a tail of its
    list's, encoded once."""
    digest = hashlib.sha256(b'{"config":%s,"imports":' % canonical_json(config).encode("utf-8"))
    digest.update(_keys_json(imports))
    digest.update(b',"layers":')
    for part in lists.parts(layers) if lists is not None else (_keys_json(layers),):
        digest.update(part)
    digest.update(b"}")
    return digest.hexdigest()


class LayersJson:
    """The canonical JSON of long `Lin`s, each one's list encoded once, highest priority first, as `'"k","j"]'`. A
    view's JSON is `[` and a tail of that text. Hashing an import chain's N nodes would otherwise join and encode N
    lists of up to N keys. The sha256 still reads every byte (the digest's format); nothing else does."""

    LONG = 32  # a shorter L is joined as it is

    def __init__(self) -> None:
        # id of a Lin's list -> (the list, its length when encoded, its text, where the text of each view length
        # starts; None: the keys need escaping, joined view by view)
        self._lists: dict[int, tuple[list[str], int, memoryview, list[int] | None]] = {}

    def parts(self, keys: Sequence[str]) -> tuple[bytes | memoryview, ...]:
        """The canonical JSON of `keys`, in pieces to hash one after another."""
        if not isinstance(keys, Lin) or len(keys) <= self.LONG:
            return (_keys_json(keys),)
        base, size = keys.storage
        found = self._lists.get(id(base))
        if found is None or found[1] != len(base):  # new, or the list grew: encode it again
            found = self._lists[id(base)] = (base, len(base), *_encoded(base))
        _, _, text, starts = found
        if starts is None:
            return (_keys_json(keys),)
        return b"[", text[starts[size] :]


def _encoded(base: list[str]) -> tuple[memoryview, list[int] | None]:
    """`'"k_n","k_n-1",...,"k_0"]'` for the list `[k_0, ..., k_n]`. Also where the text of its first m keys starts,
    for each m. None when a key needs escaping."""
    text = ('"' + '","'.join(reversed(base)) + '"]').encode("utf-8")
    if text.count(b'"') != 2 * len(base) or len(text.translate(None, _ESCAPED)) != len(text):
        return memoryview(text), None
    sizes = accumulate((len(key.encode("utf-8")) + 3 for key in base), initial=0)  # `"key",` each
    return memoryview(text), [len(text) - size for size in sizes]


def _keys_json(keys: Sequence[str]) -> bytes:
    """`canonical_json(list(keys))` as UTF-8: keys need no escaping, so their JSON is their text joined."""
    joined = '","'.join(keys).encode("utf-8")
    if not keys or joined.count(b'"') != 2 * len(keys) - 2 or len(joined.translate(None, _ESCAPED)) != len(joined):
        return canonical_json(list(keys)).encode("utf-8")  # empty, or characters JSON escapes
    return b'["%s"]' % joined


_ESCAPED = bytes(range(32)) + b"\\"  # what canonical JSON escapes in a string, besides '"'


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text: the same content always gives the same bytes."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, check_circular=False
    )


def save(snapshot: Snapshot, path: Path) -> None:
    """Write a snapshot's JSON document atomically (SourceError when the file cannot be written). Only into an
    existing directory. A typo in the path must not create directories, outside the repository too."""
    if not path.parent.is_dir():
        raise SourceError(
            f"cannot write {path}: the directory {path.parent} does not exist", hint="create it first, or fix the path"
        )
    try:
        write_atomic(path, json.dumps(snapshot.to_json(), ensure_ascii=False, separators=(",", ":")))
    except OSError as exc:
        hint = "check that the directory exists and is writable"
        raise SourceError(f"cannot write {path}: {exc.strerror or exc}", hint=hint) from exc
