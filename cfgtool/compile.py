"""The one path from a source to a `Snapshot` and its diagnostics (DESIGN 3 and 7).

discover nodes -> parse every main.conf (cached by blob id) -> linearize (one graph per variable assignment)
-> merge the layers' own configs and resolve once per node (intrinsics `cfgtool.key` / `cfgtool.name`)
-> Snapshot. Problems are collected as `Diagnostic`s per node; one failing node never stops the others.
Nothing here prints or writes files except the parse cache, which is written atomically.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
from cfgtool.validate import check_policies, check_schemas, load_schemas, read_schema_files

VALIDATION_CODES = frozenset({"E_SCHEMA", "E_POLICY", "E_POLICY_ERROR"})


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

    def errors_affecting(self, key: str | None) -> list[Diagnostic]:
        """Errors that make an answer about `key` unreliable; `None` asks about the whole store.

        For a key: errors of any layer of L(key) (or of the node it inherits from) and errors tied to no
        node (settings). Validation errors never count: they do not change resolved configs.
        """
        errors = [d for d in self.diagnostics if d.severity == "error" and d.code not in VALIDATION_CODES]
        if key is None or not errors:
            return errors
        snap = self.snapshot.nodes.get(self.snapshot.nearest_node(key))
        layers = set(snap.layers) if snap is not None else {key}
        return [d for d in errors if d.key is None or d.key in layers]


def compile_store(
    repo: Path | None = None,
    store: str | Path = "store",
    ref: str | None = None,
    variables: Mapping[str, str] | None = None,
    *,
    check_variables: bool = True,
    validate: bool = True,
    base: str | None = None,
    principal: str | None = None,
) -> CompileResult:
    """Compile the store in `repo` at `ref` (None: the working tree); see `compile_source`.

    `base` names a ref to compare with: policies then see each node as created, altered, deleted or
    unchanged against the store at that ref (DESIGN 8.2); `principal` is who asks (a PR's author).
    """
    source = open_source(repo, store, ref)
    base_snapshot = None
    if base is not None:
        base_source = open_source(source.repo_root, store, base)
        base_snapshot = compile_source(base_source, variables, check_variables=False, validate=False).snapshot
    return compile_source(
        source, variables, check_variables=check_variables, validate=validate, base=base_snapshot, principal=principal
    )


def compile_source(
    source: Source,
    variables: Mapping[str, str] | None = None,
    *,
    check_variables: bool = True,
    validate: bool = True,
    base: Snapshot | None = None,
    principal: str | None = None,
) -> CompileResult:
    """Compile every node of the store in `source`, then (with `validate`) check schemas and policies.

    The snapshot uses `variables`, falling back to the declared defaults (then to each variable's first value).
    With `check_variables`, every other declared value of every variable a node depends on is compiled too,
    and its problems are reported with the values that caused them (DESIGN 5.3).
    """
    with bulk():  # a compile builds large acyclic structures: pausing the cyclic GC halves its time
        result = _compile(source, variables, check_variables)
        if not validate:
            return result
        problems = validate_snapshot(result.store, result.snapshot, base, principal)
    return replace(result, diagnostics=result.diagnostics + tuple(problems))


def validate_snapshot(
    store: Store, snapshot: Snapshot, base: Snapshot | None = None, principal: str | None = None
) -> list[Diagnostic]:
    """JSON Schemas and policies (DESIGN 8) on a compiled snapshot: one problem never stops the others."""
    source = store.source
    settings = store.settings
    diags: list[Diagnostic] = []
    schemas_dir = settings.schemas_dir(source.store)
    if schemas_dir is not None:
        files = read_schema_files(source.repo_root, schemas_dir, source.commit if source.ref is not None else None)
        if not files:
            diags.append(
                Diagnostic.of(
                    "E_SETTINGS",
                    f"schemas: {settings.schemas!r} names {schemas_dir}/, which holds no schema files",
                    file=store.settings_file,
                    notes=("add *.yaml or *.json JSON Schemas there, or remove the setting",),
                )
            )
        specs, problems = load_schemas(files, settings.name)
        diags += problems
        diags += check_schemas(specs, snapshot)
    if settings.policies:
        blob = source.read(store.settings_file)
        diags += check_policies(
            settings.policies,
            source.repo_root,
            snapshot,
            base,
            principal,
            settings_file=store.settings_file,
            settings_text=blob.text() if blob is not None else None,
            present=store.nodes.keys(),
        )
    return diags


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
        nodes[key] = _resolve_node(graph, key, merged, diags, ()) or _failed_node(graph, key)

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


def _failed_node(graph: Graph, key: str) -> NodeSnapshot:
    """A node that did not resolve: kept (config None) so that reads of it fail instead of reading its parent."""
    layers = graph.layers(key)
    keys = tuple(layer.key for layer in layers) if layers is not None else (key,)
    reached = tuple(layer.reach.describe(layer.key) for layer in layers) if layers is not None else ("itself",)
    imports = tuple(graph.imports(key)) if layers is not None else ()
    return NodeSnapshot(key=key, config=None, layers=keys, reached=reached, imports=imports)


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
