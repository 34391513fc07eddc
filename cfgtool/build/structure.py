"""The structure cache: a store's import graphs, kept between compiles. A compile after `main.conf` changes then
reads no includes file and computes no linearization again.

A compile builds one graph per variable assignment it checks. A graph holds usable imports, L(K), cycles, import
warnings, and which nodes another value changes. The graphs and what discovery reads from includes files depend on
the store's shape alone. The shape is its file paths, the blob ids of its includes files and `_CONFIG_STORE`, the
variable values asked for, and cfgtool's code. `shape_key` digests exactly these, so any change to one of them is
another entry. `main.conf` contents are not part of it; the node cache keys those. An entry is plain data: msgpack,
node keys by index, imports as (target, line) pairs. There is one file per shape, written through a temporary file
and a rename. It is sealed with the user's cache key (`cacheauth`), since it decides what the compile imports. The
`KEEP` most recently used files are kept. A damaged, truncated, forged or foreign entry is a miss. The shape names
every file path, so what discovery found is kept too. That is nodes, includes files as read, problems. A compile that
finds its shape then only reads the blob ids of the `main.conf` files (`cfgtool.store.nodes.relaid`). Compiles
against `--base` rules do not use it, since their settings are not the source's own."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, chain, islice, repeat
from pathlib import Path
from typing import Any, TypeVar

from cfgtool._util.cacheauth import seal, unseal
from cfgtool._util.cachedir import cache_root, mark_used, private_dir, prune
from cfgtool._util.codec import DAMAGED, pack, unpack
from cfgtool._version import __version__
from cfgtool.diagnostics import Diagnostic
from cfgtool.store.graph import Graph, GraphState
from cfgtool.store.includes import INCLUDES_FILES, Import, IncludeLine, VariableUse
from cfgtool.store.lin import Lin
from cfgtool.store.nodes import IncludesFile, KnownIncludes, Store, relaid
from cfgtool.store.settings import SETTINGS_FILE
from cfgtool.store.sources import Source

T = TypeVar("T")
FORMAT = 4  # the layout of an entry (2: what discovery found; 3: an L(K) that is [K] + L(B) names B; 4: sealed)
KEEP = 8  # entries kept (one per store shape: a change to includes files or directories makes another)
_HASHED = frozenset((*INCLUDES_FILES, SETTINGS_FILE))  # files whose content is part of the shape
# the modules whose code decides what an entry holds: a change to any of them starts afresh
_CODE = ("store/graph.py", "store/includes.py", "store/nodes.py", "store/keys.py", "store/settings.py",
         "store/queries.py", "diagnostics.py", "compile/compiler.py", "build/structure.py")  # fmt: skip


@dataclass(frozen=True)
class Check:
    """Another variable assignment a compile checks. It holds its values, the problems its graph reported, the nodes
    whose L it changes, and that graph. `state` keeps the imports of the nodes whose includes use variables, and L of
    the changed nodes. `Graph.restore` over the main graph supplies the rest."""

    assignment: Mapping[str, str]
    diagnostics: tuple[Diagnostic, ...]
    changed: tuple[str, ...]
    graph: Graph


@dataclass(frozen=True)
class Structure:
    """What a compile computes from a store's shape. That is what discovery found, the main graph, and the other
    assignments checked. Discovery found the nodes, those with a main.conf, each node's includes as read, the
    problems."""

    keys: list[str]  # the store's node keys
    mains: frozenset[str]  # the nodes with a main.conf
    includes: Mapping[str, KnownIncludes]
    diagnostics: tuple[Diagnostic, ...]  # what discovery found wrong, in its order
    main: GraphState
    checks: tuple[tuple[Mapping[str, str], tuple[Diagnostic, ...], tuple[str, ...], GraphState], ...]

    def store(self, source: Source) -> Store | None:
        """The store in `source`, a store of this shape, as `discover` would find it. No includes file is read, only
        the blob ids of the `main.conf` files. None when this entry cannot be that store's."""
        return relaid(source, self.keys, self.mains, self.includes, self.diagnostics)

    def restore(self, store: Store, chosen: Mapping[str, str]) -> tuple[Graph, list[Check]]:
        """The main graph and the checks, as a compile of a store of this shape built them, for the `store`
        this structure gave."""
        graph = Graph.restore(store, chosen, self.main)
        checks = [
            Check(values, found, changed, Graph.restore(store, {**chosen, **values}, state, base=graph))
            for values, found, changed, state in self.checks
        ]
        return graph, checks


def shape_key(source: Source, variables: Mapping[str, str] | None, check_variables: bool) -> str:
    """The digest of everything a `Structure` depends on (see the module docstring)."""
    files = source.files()
    oids = source.oids(p for p in files if p.rpartition("/")[2] in _HASHED)
    head = json.dumps(
        [FORMAT, __version__, _code_digest(), source.store, sorted((variables or {}).items()), check_variables,
         source.unsafe],
    )  # fmt: skip
    listing = "\n".join(f"{p}\0{oids.get(p, '')}" for p in files)
    return hashlib.sha256(f"{head}\n{listing}".encode("utf-8", "surrogateescape")).hexdigest()


@cache
def _code_digest() -> str:
    """The source of the modules in `_CODE` (an install without them: their names, and the version decides)."""
    root = Path(__file__).parent.parent  # the cfgtool package: `_CODE` names are relative to it
    digest = hashlib.sha256()
    for name in _CODE:
        digest.update(name.encode())
        with suppress(OSError):
            digest.update((root / name).read_bytes())
    return digest.hexdigest()[:16]


def _directory() -> Path:
    return cache_root() / f"structure-v{FORMAT}-{__version__}"


def load(key: str) -> Structure | None:
    """The entry for `key`; None when there is none, or it does not read back whole."""
    path = _directory() / f"{key}.msgpack"
    try:
        data = unseal(f"{path.parent.name}/{key}", path.read_bytes())
        if data is None:
            return None  # damaged, forged or moved from another key's place
        structure = _decode(unpack(data))
    except (OSError, RecursionError, *DAMAGED):
        return None
    mark_used(path)
    return structure


def save(key: str, store: Store, graph: Graph, checks: Sequence[Check]) -> None:
    """Store what a compile computed for the shape `key`; a cache that cannot be written is skipped."""
    directory = _directory()
    sealed = seal(f"{directory.name}/{key}", pack(_encode(store, graph, checks)))
    if sealed is None:
        return
    try:
        private_dir(directory)
        fd, tmp = tempfile.mkstemp(prefix=".structure.", dir=directory)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(sealed)
            os.replace(tmp, directory / f"{key}.msgpack")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        prune(directory, ".msgpack", keep=directory / f"{key}.msgpack", limit=KEEP)
    except OSError:
        return


# -- encoding: node keys by their index in the store's (sorted) node list ------------------------------------


def _encode(store: Store, graph: Graph, checks: Sequence[Check]) -> dict[str, Any]:
    keys = list(store.nodes)
    index = {k: i for i, k in enumerate(keys)}
    read = store.includes_read
    every = [line for file, _ in read.values() for line in file.lines]  # every includes line, file by file
    position = {id(line): i for i, line in enumerate(every)}
    includes = [
        [index[k] for k in read], [f.path for f, _ in read.values()], [f.oid for f, _ in read.values()],
        [len(f.lines) for f, _ in read.values()],
        [x.text for x in every], [x.line for x in every], [x.col for x in every], [x.template for x in every],
        [[i, [[u.name, u.optional, u.col] for u in x.variables]] for i, x in enumerate(every) if x.variables],
        [[i, [_diag(d) for d in found]] for i, (_, found) in enumerate(read.values()) if found],
    ]  # fmt: skip
    main = graph.state()
    encoded_checks = []
    for check in checks:
        state = check.graph.state()
        edges = {k: state.edges[k] for k in state.dynamic if k in state.edges}
        lin = {k: state.lin[k] for k in check.changed if k in state.lin}  # none on or behind a cycle
        encoded_checks.append([
            dict(check.assignment), [_diag(d) for d in check.diagnostics], [index[k] for k in check.changed],
            _state(index, position, edges, lin, state.failed, state.dynamic, ()),
        ])  # fmt: skip
    edges = {k: v for k, v in main.edges.items() if v}
    return {
        "keys": keys,
        "mains": [i for i, node in enumerate(store.nodes.values()) if node.main is not None],
        "diagnostics": [_diag(d) for d in store.diagnostics],
        "includes": includes,
        "main": _state(index, position, edges, main.lin, main.failed, main.dynamic, main.diagnostics),
        "checks": encoded_checks,
    }


def _state(
    index: Mapping[str, int], position: Mapping[int, int], edges: Mapping[str, tuple[Import, ...]],
    lin: Mapping[str, Lin], failed: frozenset[str], dynamic: frozenset[str],
    diagnostics: Sequence[Diagnostic],
) -> list[Any]:  # fmt: skip
    """[nodes with edges, their import counts, targets, includes lines, nodes with an L, their sizes, members, bases,
    failed, dynamic, diagnostics]. They are flat lists of indices, decoded in a few C-level passes. Some L(K) is [K]
    + L(B), a parent's or an import's along a chain. It is stored as K alone and the index of B in bases. None is the
    number of keys. So an import chain's entry grows linearly with its depth."""
    imports = [imp for chain in edges.values() for imp in chain]  # empty ones count: every line dropped
    shown: list[Sequence[str]] = []
    bases: list[int] = []
    for layers in lin.values():
        below = lin.get(layers[1]) if len(layers) > 1 else None
        if below is not None and len(below) == len(layers) - 1 and below == layers[1:]:
            shown.append((layers[0],))
            bases.append(index[layers[1]])
        else:
            shown.append(layers)
            bases.append(len(index))
    members = [index[m] for layers in shown for m in layers]
    return [
        [index[k] for k in edges], [len(chain) for chain in edges.values()],
        [index[imp.key] for imp in imports], [position[id(imp.line)] for imp in imports],
        [index[k] for k in lin], [len(chain) for chain in shown], members, bases,
        sorted(index[k] for k in failed), sorted(index[k] for k in dynamic), [_diag(d) for d in diagnostics],
    ]  # fmt: skip


def _diag(d: Diagnostic) -> list[Any]:
    return [d.code, d.severity, d.key, d.file, d.line, d.col, d.message, list(d.notes)]


# -- decoding: every field is checked; anything else than `_encode` writes raises (a miss) --------------------


def _decode(data: Any) -> Structure:
    keys = _typed(data["keys"], str)
    if not (all(map(str.startswith, keys, repeat("/"))) and all(map(str.__lt__, keys, islice(keys, 1, None)))):
        raise ValueError("not the node keys of a store, in order")  # as `discover` lists them
    at, paths, oids, counts, texts, numbers, cols, templates, uses, found = data["includes"]
    variables: list[tuple[VariableUse, ...]] = [()] * len(texts)
    for i, used in uses:
        variables[_at(i)] = tuple(_use(*u) for u in used)
    columns = (_typed(texts, str), _typed(numbers, int), _typed(cols, int), _typed(templates, str), variables)
    every = tuple(_tuples(IncludeLine, _same_length(columns)))
    problems: list[tuple[Diagnostic, ...]] = [()] * len(paths)
    for i, diags in found:
        problems[_at(i)] = _diags(diags)
    lines_of = _split(every, counts, "includes lines")
    _same_length((_typed(paths, str), _typed(oids, str), lines_of, problems, at))
    files = map(IncludesFile, paths, oids, lines_of)
    includes: dict[str, KnownIncludes] = dict(zip(_pick(keys, at), zip(files, problems, strict=True), strict=True))
    main = _read_state(data["main"], keys, every, includes)
    checks = []
    for values, diagnostics, changed, state in data["checks"]:
        if not (isinstance(values, dict) and all(isinstance(v, str) for v in (*values, *values.values()))):
            raise ValueError("not an assignment")
        state_of = _read_state(state, keys, every, includes)
        checks.append((values, _diags(diagnostics), _pick(keys, changed), state_of))
    mains = frozenset(_pick(keys, data["mains"]))
    return Structure(keys, mains, includes, _diags(data["diagnostics"]), main, tuple(checks))


def _read_state(
    data: Any, keys: list[str], every: tuple[IncludeLine, ...], includes: Mapping[str, KnownIncludes]
) -> GraphState:
    sources, counts, targets, lines, linked, sizes, members, bases, failed, dynamic, diagnostics = data
    nodes, counts = _pick(keys, sources), _typed(counts, int)
    files = (includes[k][0].path if k in includes else "" for k in nodes)
    paths = list(chain.from_iterable(map(repeat, files, counts)))
    imports = tuple(_tuples(Import, _same_length((_pick(keys, targets), _pick(every, lines), paths))))
    edges = dict(zip(nodes, _split(imports, counts, "imports"), strict=True))
    own = dict(zip(_pick(keys, linked), _split(_pick(keys, members), sizes, "linearizations"), strict=True))
    lin = _joined(own, dict(zip(own, _pick((*keys, None), _typed(bases, int)), strict=True)))
    return GraphState(edges, lin, frozenset(_pick(keys, failed)), frozenset(_pick(keys, dynamic)), _diags(diagnostics))


def _joined(own: dict[str, tuple[str, ...]], bases: Mapping[str, str | None]) -> dict[str, Lin]:
    """Each L: its own members, then the L of its base (if any). Bases come first, in a loop, since chains are deep.
    An L that is one key over its base's shares the base's storage, as the graph made it."""
    lin: dict[str, Lin] = {}
    for start in own:
        path = [start]
        while (base := bases[path[-1]]) is not None and base not in lin:
            if base not in own or len(path) > len(own):
                raise ValueError("linearizations: a base without an L, or a loop of bases")
            path.append(base)
        for key in reversed(path):
            base = bases[key]
            if base is None:
                lin[key] = Lin(own[key])
                continue
            found = lin[base]
            for member in reversed(own[key]):
                found = found.over(member)
            lin[key] = found
    return lin


def _tuples(kind: type[T], columns: Sequence[Sequence[Any]]) -> Iterator[T]:
    """Named tuples of `kind` from columns of their fields. They are made without the named tuple's Python-level
    `__new__`, since a large store's entry holds hundreds of thousands."""
    return map(tuple.__new__, repeat(kind), zip(*columns, strict=True))  # type: ignore[arg-type]


def _split(items: tuple[T, ...], sizes: Any, what: str) -> list[tuple[T, ...]]:
    """`items` cut into consecutive runs of `sizes` (non-negative ints that add up to all of them)."""
    if sum(_typed(sizes, int)) != len(items) or min(sizes, default=0) < 0:
        raise ValueError(f"{what}: sizes and items disagree")
    bounds = list(accumulate(sizes, initial=0))
    return list(map(items.__getitem__, map(slice, bounds, islice(bounds, 1, None))))


def _same_length(columns: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
    if len({len(column) for column in columns}) > 1:
        raise ValueError("columns of different lengths")
    return columns


def _typed(values: Any, kind: type[T]) -> list[T]:
    """`values`, a list of `kind` only (anything else raises)."""
    if type(values) is not list or not set(map(type, values)) <= {kind}:
        raise ValueError(f"not a list of {kind.__name__}")
    return values


def _pick(items: Sequence[T], indices: Any) -> tuple[T, ...]:
    """`items[i]` for each of `indices`, a list of ints in range (anything else raises)."""
    if _typed(indices, int) and min(indices) < 0:
        raise ValueError("a negative index")
    return tuple(map(items.__getitem__, indices))


def _at(index: Any) -> int:
    if type(index) is not int or index < 0:
        raise ValueError("not an index")
    return index


def _use(name: Any, optional: Any, col: Any) -> VariableUse:
    if not (type(name) is str and type(optional) is bool and type(col) is int):
        raise ValueError("not a variable use")
    return VariableUse(name, optional, col)


def _diags(data: Any) -> tuple[Diagnostic, ...]:
    out = []
    for code, severity, key, file, line, col, message, notes in data:
        if severity not in ("error", "warning"):
            raise ValueError("not a severity")
        out.append(Diagnostic(
            _str(code), severity, _opt(str, key), _opt(str, file), _opt(int, line), _opt(int, col), _str(message),
            tuple(_typed(notes, str)),
        ))  # fmt: skip
    return tuple(out)


def _str(value: Any) -> str:
    if type(value) is not str:
        raise ValueError("not a string")
    return value


def _opt(kind: type[T], value: Any) -> T | None:
    if value is not None and type(value) is not kind:
        raise ValueError(f"not a {kind.__name__}")
    return value
