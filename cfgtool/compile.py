"""The one path from a source to a `Snapshot` and its diagnostics (DESIGN 3 and 7).

discover nodes -> parse every main.conf (cached by blob id) -> linearize (one graph per variable assignment)
-> merge the layers' own configs and resolve once per node (intrinsics `cfgtool.key` / `cfgtool.name`)
-> Snapshot. Problems are collected as `Diagnostic`s per node; one failing node never stops the others.
Nothing here prints or writes files except the parse cache, which is written atomically.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cfgtool import __version__
from cfgtool.cache import ParseCache
from cfgtool.diagnostics import Diagnostic, count
from cfgtool.errors import UsageError
from cfgtool.hocon import HoconError, Origin, bulk, parse
from cfgtool.hocon.errors import E_UNSUPPORTED_INCLUDE
from cfgtool.hocon.merge import merge_nodes
from cfgtool.hocon.values import Node, Obj
from cfgtool.layers import resolve_layers
from cfgtool.provenance import Provenance
from cfgtool.snapshot import NodeSnapshot, Snapshot, SourceInfo
from cfgtool.store.graph import Graph
from cfgtool.store.nodes import Store, discover
from cfgtool.store.settings import assignments
from cfgtool.store.sources import Source, open_source


@dataclass(frozen=True)
class CompileResult:
    """A compiled store: the snapshot (under the chosen variable values) and every problem found."""

    snapshot: Snapshot
    diagnostics: tuple[Diagnostic, ...]
    store: Store
    checked: tuple[Mapping[str, str], ...]  # every variable assignment that was compiled

    @property
    def errors(self) -> int:
        return count(self.diagnostics)[0]

    @property
    def warnings(self) -> int:
        return count(self.diagnostics)[1]

    def ok(self, strict: bool = False) -> bool:
        """No errors (and, when `strict`, no warnings either)."""
        return self.errors == 0 and not (strict and self.warnings)


def compile_store(
    repo: Path | None = None,
    store: str | Path = "store",
    ref: str | None = None,
    variables: Mapping[str, str] | None = None,
    *,
    check_variables: bool = True,
) -> CompileResult:
    """Compile the store in `repo` at `ref` (None: the working tree); see `compile_source`."""
    source = open_source(repo, store, ref)
    return compile_source(source, variables, check_variables=check_variables)


def compile_source(
    source: Source, variables: Mapping[str, str] | None = None, *, check_variables: bool = True
) -> CompileResult:
    """Compile every node of the store in `source`.

    The snapshot uses `variables`, falling back to the declared defaults (then to each variable's first value).
    With `check_variables`, every other declared value of every variable a node depends on is compiled too,
    and its problems are reported with the values that caused them (DESIGN 5.3).
    """
    with bulk():  # a compile builds large acyclic structures: pausing the cyclic GC halves its time
        return _compile(source, variables, check_variables)


def _compile(source: Source, variables: Mapping[str, str] | None, check_variables: bool) -> CompileResult:
    store = discover(source)
    settings = store.settings
    for name in variables or {}:
        declared = settings.variables.get(name)
        if declared is None:
            known = ", ".join(sorted(settings.variables)) or "none"
            raise UsageError(f"--var {name}: no such variable is declared in _CONFIG_STORE (declared: {known})")
        if declared.values and variables and variables[name] not in declared.values:
            raise UsageError(f"--var {name}={variables[name]}: allowed values are {', '.join(declared.values)}")
    chosen = {n: v.default if v.default is not None else v.values[0] for n, v in settings.variables.items() if v.values}
    chosen.update(variables or {})

    diags: list[Diagnostic] = list(store.diagnostics)
    cache = ParseCache.default()
    texts: dict[str, str] = {}
    docs = _parse_all(store, cache, diags, texts)
    cache.flush()

    graph = Graph(store, chosen)
    diags += graph.diagnostics
    merged = _Merger(docs)
    nodes: dict[str, NodeSnapshot] = {}
    for key in graph.nodes:
        snap = _resolve_node(graph, key, merged, diags, ())
        if snap is not None:
            nodes[key] = snap

    checked: list[Mapping[str, str]] = [chosen]
    if check_variables:
        used = set().union(*(graph.variables_of(k) for k in graph.nodes if k not in graph.failed))
        for assignment in assignments(settings.variables, used, variables):
            if assignment == {n: chosen[n] for n in assignment}:
                continue
            checked.append(assignment)
            other = Graph(store, {**chosen, **assignment})
            diags += other.diagnostics
            note = ("with " + ", ".join(f"{n}={v}" for n, v in sorted(assignment.items())),)
            for key in other.nodes:
                if other.variables_of(key) and other.linearization(key) != graph.linearization(key):
                    _resolve_node(other, key, merged, diags, note)

    snapshot = Snapshot(
        store=source.store,
        name=settings.name,
        source=SourceInfo(source.ref, source.commit, source.dirty),
        variables=chosen,
        tag_roots=tuple(settings.tag_roots),
        nodes=nodes,
        cfgtool_version=__version__,
        texts=texts,
    )
    return CompileResult(snapshot, tuple(dict.fromkeys(diags)), store, tuple(checked))


def _parse_all(
    store: Store, cache: ParseCache, diags: list[Diagnostic], texts: dict[str, str]
) -> dict[str, Obj | None]:
    """Each node's own config as a parsed document (None when it does not parse); `texts` collects the
    text of every file read, so a snapshot can resolve keys without a node later."""
    source = store.source
    root = source.store

    def reader(path: str) -> str | None:
        if (root and not (path == root or path.startswith(root + "/"))) or path.startswith("../"):
            raise HoconError(E_UNSUPPORTED_INCLUDE, f"include {path!r} is outside the store {root or '.'}/")
        blob = source.read(path)
        if blob is None:
            return None
        texts[path] = blob.text()
        return texts[path]

    docs: dict[str, Obj | None] = {}
    for key, node in store.nodes.items():
        if node.main is not None and node.main.text is not None:
            texts[node.main.path] = node.main.text
        main = node.main
        if main is None:
            docs[key] = Obj({}, Origin(posixpath.join(node.dir, "main.conf"), 0, 0))  # line 0: no file
            continue
        if main.text is None:  # not UTF-8: discovery reported it
            docs[key] = None
            continue
        doc = cache.get(main.oid, main.path)
        if doc is None:
            used_reader = False

            def tracking_reader(path: str) -> str | None:
                nonlocal used_reader
                used_reader = True
                return reader(path)

            try:
                doc = parse(main.text, main.path, reader=tracking_reader)
            except HoconError as exc:
                diags.append(_diagnostic(exc, key))
                docs[key] = None
                continue
            if not used_reader:  # a document with includes depends on other files: not cached by its own id
                cache.put(main.oid, main.path, doc)
        docs[key] = doc
    return docs


def _resolve_node(
    graph: Graph, key: str, merged: _Merger, diags: list[Diagnostic], notes: tuple[str, ...]
) -> NodeSnapshot | None:
    """Merge the own configs of L(key) and resolve them; None (with a diagnostic) when that fails."""
    layers = graph.layers(key)
    if layers is None:
        return None  # on or behind an import cycle: E_CYCLE was reported
    keys = tuple(layer.key for layer in layers)
    tree = merged.tree(keys)
    if tree is None:
        return None  # a layer does not parse: its E_SYNTAX was reported once, at its file
    try:
        resolved = resolve_layers([tree], key)
        config = resolved.value
    except HoconError as exc:
        diags.append(_diagnostic(exc, key, notes))
        return None
    own_doc = merged.docs[key]
    assert own_doc is not None
    return NodeSnapshot(
        key=key,
        config=config,
        layers=keys,
        reached=tuple(layer.reach.describe(layer.key) for layer in layers),
        imports=tuple(graph.imports(key)),
        file=None if own_doc.origin.line == 0 else own_doc.origin.file,
        intrinsic=resolved.used_extra,
        provenance=Provenance(resolved, own_doc),
    )


class _Merger:
    """Merged (unresolved) trees of linearizations, memoized by suffix: L(K) = [K] + L(P) for most nodes,
    so each node costs one merge of its own config over its parent's already merged tree."""

    def __init__(self, docs: Mapping[str, Obj | None]) -> None:
        self.docs = docs
        self._trees: dict[tuple[str, ...], Node | None] = {}

    def tree(self, keys: tuple[str, ...]) -> Node | None:
        if keys in self._trees:
            return self._trees[keys]
        head = self.docs.get(keys[0])
        result: Node | None
        if head is None or len(keys) == 1:
            result = head
        else:
            rest = self.tree(keys[1:])
            result = None if rest is None else merge_nodes(head, rest)
        self._trees[keys] = result
        return result


def _diagnostic(exc: HoconError, key: str, notes: tuple[str, ...] = ()) -> Diagnostic:
    return Diagnostic.of(
        exc.code, exc.message, key=key, file=exc.file, line=exc.line, col=exc.col, notes=(*exc.notes, *notes)
    )
