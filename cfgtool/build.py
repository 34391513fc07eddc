"""Building each node's `NodeSnapshot` for one graph: parse the documents of its layers, merge, resolve.

Two content-addressed caches keep repeated compiles fast: parsed documents by blob id (`ParseCache`), and
node results by a fingerprint of everything a node resolves from: its key, L(K) with every layer's
`main.conf` blob id, and its imports (`NodeCache`). A node whose fingerprint is cached is not resolved
again, and the documents of its layers are not even read. A document that includes other files is never
cached (its content is not captured by its own blob id), and neither is a node that resolves from one.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Iterable
from functools import partial

from cfgtool.cache import NodeCache, ParseCache
from cfgtool.diagnostics import Diagnostic
from cfgtool.hocon import HoconError, Origin, Resolved, parse
from cfgtool.hocon.errors import E_UNSUPPORTED_INCLUDE
from cfgtool.hocon.merge import merge_nodes
from cfgtool.hocon.values import Node, Obj
from cfgtool.layers import resolve_layers
from cfgtool.provenance import Provenance
from cfgtool.snapshot import NodeSnapshot, node_hash
from cfgtool.store.graph import Graph
from cfgtool.store.nodes import Store, decode


class Builder:
    """Resolves the nodes of one store (for any number of graphs over it), collecting diagnostics."""

    def __init__(self, store: Store, diagnostics: list[Diagnostic]) -> None:
        self.store = store
        self.source = store.source
        self.diags = diagnostics
        self.parse_cache = ParseCache.default()
        self.node_cache = NodeCache.default()
        self.docs: dict[str, Obj | None] = {}  # key -> its own parsed main.conf (None: it does not parse)
        self.dynamic: set[str] = set()  # keys whose main.conf includes other files
        self.included: list[str] = []  # files read through `include`, for the snapshot's texts
        self._trees: dict[tuple[str, ...], Node | None] = {}
        self.stats = {"parsed": 0, "resolved": 0, "reused": 0}  # what this compile did, for reports and tests

    def build(
        self, graph: Graph, keys: Iterable[str], notes: tuple[str, ...] = (), keep: bool = True
    ) -> dict[str, NodeSnapshot]:
        """A NodeSnapshot for each of `keys` (config None when it does not resolve). With `keep` False only
        the diagnostics matter (another variable value being checked): cached nodes are just counted."""
        out: dict[str, NodeSnapshot] = {}
        todo: list[tuple[str, tuple[str, ...], tuple[str, ...], str]] = []
        for key in keys:
            lkeys = graph.linearization(key)
            if lkeys is None:  # on or behind an import cycle: E_CYCLE was reported
                out[key] = NodeSnapshot(key=key, config=None, layers=(key,), imports=())
                continue
            imports = tuple(graph.imports(key))
            fingerprint = self._fingerprint(key, lkeys, imports)
            hit = self.node_cache.get(fingerprint)
            if hit is None:
                todo.append((key, lkeys, imports, fingerprint))
                continue
            self.stats["reused"] += 1
            if not keep:
                continue
            config, intrinsic, content_hash = hit
            out[key] = NodeSnapshot(
                key=key,
                config=config,
                layers=lkeys,
                imports=imports,
                file=self._file(key),
                intrinsic=intrinsic,
                content_hash=content_hash,
                provenance=Provenance(
                    compute=partial(self._provenance, key, lkeys), reach=partial(_reached, graph, key)
                ),
            )
        self._load({k for _, lkeys, _, _ in todo for k in lkeys})
        for key, lkeys, imports, fingerprint in todo:
            out[key] = self._resolve(graph, key, lkeys, imports, fingerprint, notes)
        return out

    def texts_paths(self) -> list[str]:
        """Every file a snapshot may need again: each node's main.conf and every included file."""
        mains = [node.main.path for node in self.store.nodes.values() if node.main is not None]
        return [*mains, *self.included]

    def flush(self) -> None:
        self.parse_cache.flush()
        self.node_cache.flush()

    # -- resolution --------------------------------------------------------------------------------------
    def _resolve(
        self, graph: Graph, key: str, lkeys: tuple[str, ...], imports: tuple[str, ...], fingerprint: str,
        notes: tuple[str, ...],
    ) -> NodeSnapshot:
        self.stats["resolved"] += 1
        reach = partial(_reached, graph, key)
        failed = NodeSnapshot(key=key, config=None, layers=lkeys, imports=imports, provenance=Provenance(reach=reach))
        tree = self._tree(lkeys)
        if tree is None:
            return failed  # a layer does not parse: its E_SYNTAX was reported once, at its file
        try:
            resolved = resolve_layers([tree], key)
            config = resolved.value
        except HoconError as exc:
            self.diags.append(diagnostic(exc, key, notes))
            return failed
        snap = NodeSnapshot(
            key=key,
            config=config,
            layers=lkeys,
            imports=imports,
            file=self._file(key),
            intrinsic=resolved.used_extra,
            provenance=Provenance(resolved, self.docs.get(key), reach=reach),
        )
        if not any(k in self.dynamic for k in lkeys):
            self.node_cache.put(fingerprint, (config, resolved.used_extra, node_hash(snap)))
        return snap

    def _provenance(self, key: str, lkeys: tuple[str, ...]) -> tuple[Resolved | None, Node | None]:
        """Resolve a cached node again, for explain or `--output` (its provenance is not cached)."""
        self._load(lkeys)
        tree = self._tree(lkeys)
        return (resolve_layers([tree], key) if tree is not None else None), self.docs.get(key)

    def _tree(self, keys: tuple[str, ...]) -> Node | None:
        """The merged (unresolved) tree of a linearization, memoized by suffix: L(K) = [K] + L(P) for most
        nodes, so each node costs one merge of its own config over its parent's already merged tree."""
        if keys in self._trees:
            return self._trees[keys]
        head = self.docs.get(keys[0])
        result: Node | None
        if head is None or len(keys) == 1:
            result = head
        else:
            rest = self._tree(keys[1:])
            result = None if rest is None else merge_nodes(head, rest)
        self._trees[keys] = result
        return result

    # -- documents ---------------------------------------------------------------------------------------
    def _file(self, key: str) -> str | None:
        main = self.store.nodes[key].main if key in self.store.nodes else None
        return main.path if main is not None else None

    def _fingerprint(self, key: str, lkeys: tuple[str, ...], imports: tuple[str, ...]) -> str:
        parts = [key, *imports, "|"]
        nodes = self.store.nodes
        for layer in lkeys:
            node = nodes.get(layer)
            main = node.main if node is not None else None
            parts.append(f"{layer}={main.oid if main is not None else '-'}")
        return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()

    def _load(self, keys: Iterable[str]) -> None:
        """Parse the documents of `keys` not loaded yet: from the parse cache, else read in one batch."""
        missing: dict[str, str] = {}
        for key in keys:
            if key in self.docs:
                continue
            node = self.store.nodes.get(key)
            main = node.main if node is not None else None
            if main is None:
                directory = node.dir if node is not None else self.source.store
                self.docs[key] = Obj({}, Origin(posixpath.join(directory, "main.conf"), 0, 0))  # line 0: no file
                continue
            doc = self.parse_cache.get((main.oid, main.path))
            if doc is None:
                missing[key] = main.path
            else:
                self.docs[key] = doc
        if not missing:
            return
        blobs = self.source.load(missing.values())
        for key, path in missing.items():
            blob = blobs.get(path)
            text, problem = decode(blob, key) if blob is not None else (None, None)
            if text is None:
                if problem is not None:
                    self.diags.append(problem)
                self.docs[key] = None
                continue
            self.docs[key] = self._parse(key, path, text)

    def _parse(self, key: str, path: str, text: str) -> Obj | None:
        root = self.source.store
        used: list[str] = []

        def reader(target: str) -> str | None:
            if (root and not (target == root or target.startswith(root + "/"))) or target.startswith("../"):
                raise HoconError(E_UNSUPPORTED_INCLUDE, f"include {target!r} is outside the store {root or '.'}/")
            used.append(target)
            blob = self.source.read(target)
            return None if blob is None else blob.data.decode("utf-8-sig", "replace")

        self.stats["parsed"] += 1
        try:
            doc = parse(text, path, reader=reader)
        except HoconError as exc:
            self.diags.append(diagnostic(exc, key))
            return None
        node = self.store.nodes[key]
        assert node.main is not None
        if used:
            self.dynamic.add(key)
            self.included += used
        else:
            self.parse_cache.put((node.main.oid, path), doc)
        return doc


def _reached(graph: Graph, key: str) -> tuple[str, ...]:
    layers = graph.layers(key) or ()
    return tuple(layer.reach.describe(layer.key) for layer in layers)


def diagnostic(exc: HoconError, key: str, notes: tuple[str, ...] = ()) -> Diagnostic:
    """A HOCON error as a diagnostic of node `key`."""
    return Diagnostic.of(
        exc.code, exc.message, key=key, file=exc.file, line=exc.line, col=exc.col, notes=(*exc.notes, *notes)
    )
