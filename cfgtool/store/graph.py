"""The import graph: linearization (docs/resolution.md#linearization), cycles, import warnings and the graph queries
(docs/queries.md#the-queries).

For key K with parent P and explicit imports I1..In, L(K) = [K] + dedup_last(L(In) + ... + L(I1) + L(P)),
computed bottom-up with memoization. Each layer remembers how it was reached, for `explain`. Nodes on or
behind a cycle are not linearized; every other node is. One `Graph` is one assignment of variable values.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import Literal, TypeVar

from cfgtool.diagnostics import Diagnostic
from cfgtool.store.includes import Import, expand, variables_used
from cfgtool.store.keys import is_strictly_under, is_under, parent
from cfgtool.store.lin import Lin, lowest_first
from cfgtool.store.nodes import Store
from cfgtool.store.queries import StoreQueries

T = TypeVar("T")

_IMPORTED = itemgetter(0)  # `Import.key`, without the named tuple's Python-level property


@dataclass(frozen=True)
class Reach:
    """How a layer entered a linearization. It is K itself, or `via` includes it (at file:line:col), or it is the
    parent of `via`. Or it is the nearest existing ancestor of `via`, a key without a node
    (docs/resolution.md#keys-without-a-node)."""

    kind: Literal["self", "include", "parent", "ancestor"]
    via: str | None = None
    file: str | None = None
    line: int | None = None
    col: int | None = None

    def describe(self, layer: str) -> str:
        """`/data/x includes /tags/t (store/data/x/includes:2)`, `parent of /tags/t`, ..."""
        if self.kind == "include":
            return f"{self.via} includes {layer} ({self.file}:{self.line})"
        if self.kind == "parent":
            return f"parent of {self.via}"
        if self.kind == "ancestor":
            return f"nearest ancestor of {self.via} (which has no node)"
        return f"{layer} itself"


@dataclass(frozen=True)
class Layer:
    """One entry of a linearization, highest priority first."""

    key: str
    reach: Reach


_SELF = Reach("self")
_Link = tuple[str, "Import | None"]  # a node's outgoing link: an import (Import) or its parent (None)


class _Links(dict[str, list[_Link]]):
    """`Graph._out` of a restored graph: each node's links made from its imports when first asked for."""

    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph

    def __missing__(self, key: str) -> list[_Link]:
        links = self[key] = self.graph._links(key)
        return links


@dataclass(frozen=True)
class GraphState:
    """A graph's computed parts. They are the usable imports per node (in file order) and L per linearized node. They
    are also the nodes on or behind a cycle, the nodes whose includes use variables, and the problems found."""

    edges: Mapping[str, tuple[Import, ...]]
    lin: Mapping[str, Lin]
    failed: frozenset[str]
    dynamic: frozenset[str]
    diagnostics: tuple[Diagnostic, ...]


class Graph(StoreQueries):
    """Nodes, their imports under one variable assignment, and every linearization that exists.

    `variables` are the caller's values; declared defaults fill the rest. `diagnostics` holds
    E_MISSING_IMPORT, E_CYCLE, E_UNRESOLVED_VARIABLE, E_BAD_KEY (bad import paths) and the W_ import warnings.
    """

    def __init__(self, store: Store, variables: Mapping[str, str] | None = None, base: Graph | None = None) -> None:
        """`base`: a graph of the same store under other variable values. Nodes whose includes use no variable take
        their imports from it; their problems were reported there. Linearizations are then computed on demand. So
        checking another variable value costs only what that value changes."""
        self._setup(store, variables)
        self.dynamic: frozenset[str] = (
            base.dynamic
            if base is not None
            else frozenset(k for k, n in self.nodes.items() if n.includes and variables_used(n.includes.lines))
        )  # nodes whose includes use variables
        if base is None:
            self._edges: dict[str, tuple[Import, ...]] = {k: self._node_imports(k) for k in self.nodes}
            self._out = {k: self._links(k) for k in self.nodes}
        else:
            self._edges = dict(base._edges)
            self._out = _Links(self) if isinstance(base._out, _Links) else dict(base._out)
            for key in self.dynamic:
                self._edges[key] = self._node_imports(key)
                self._out[key] = self._links(key)
        acyclic = base is not None and not base.failed and not self._cycle_from(self.dynamic)
        self.failed: frozenset[str] = frozenset() if acyclic else frozenset(self._find_cycles())
        self._lin: dict[str, Lin] = {}
        self._reach: dict[str, dict[str, Reach]] = {}
        self._vars: dict[str, frozenset[str]] = {}
        if base is None:
            for key in self.nodes:
                if key not in self.failed:
                    self._linearize(key)
                    self._check_order(key)

    def _setup(self, store: Store, variables: Mapping[str, str] | None) -> None:
        self.store = store
        self.nodes = store.nodes
        self.tag_roots = tuple(store.settings.tag_roots)
        declared = store.settings.variables
        self.values: dict[str, str] = {n: v.default for n, v in declared.items() if v.default is not None}
        self.values.update(variables or {})
        self.diagnostics: list[Diagnostic] = []
        self._hints: dict[str, tuple[str, ...]] = {}

    def state(self) -> GraphState:
        """What this graph computed (every node's imports and L, cycles, problems), for `restore`."""
        return GraphState(self._edges, self._lin, self.failed, self.dynamic, tuple(self.diagnostics))

    @classmethod
    def restore(
        cls, store: Store, variables: Mapping[str, str] | None, state: GraphState, base: Graph | None = None
    ) -> Graph:
        """The graph `Graph(store, variables, base)` was when it gave `state`, without computing it again. The store
        shape and values are the same; the structure cache's key says so. Over `base`, `state` need only hold the
        imports of the nodes whose includes use variables. It also holds the L it will be asked for; others are
        computed on demand."""
        graph = cls.__new__(cls)
        graph._setup(store, variables)
        graph.diagnostics = list(state.diagnostics)
        graph.dynamic = state.dynamic
        if base is None:
            graph._edges = {k: state.edges.get(k, ()) for k in graph.nodes}
        else:
            graph._edges = {**base._edges, **state.edges}
        graph._out = _Links(graph)  # only explain and provenance follow links here: made when asked for
        graph.failed = state.failed
        graph._lin = dict(state.lin)
        graph._reach = {}
        graph._vars = {}
        return graph

    def _lin_of(self, key: str) -> Lin | None:
        if key not in self._lin and key not in self.failed and key in self.nodes:
            self._linearize(key)
            self._check_order(key)
        return self._lin.get(key)

    # ---------------------------------------------------------------------------------------------- building

    def _node_imports(self, key: str) -> tuple[Import, ...]:
        """K's usable imports in file order: expanded, existing, first occurrence of each key."""
        node = self.nodes[key]
        if node.includes is None:
            return ()
        settings = self.store.settings
        found, diags = expand(
            node.includes.lines,
            self.values,
            file=node.includes.path,
            key=key,
            declared=settings.variables,
            store_name=settings.name,
        )
        self.diagnostics += diags
        kept: dict[str, Import] = {}
        for imp in found:
            target = imp.key
            if target not in self.nodes:
                self._report(
                    key,
                    imp,
                    "E_MISSING_IMPORT",
                    f"{key} imports {target}, which has no node",
                    self._hint(target),
                )
            elif target in kept:
                first = kept[target].line.line
                message = f"{target} is already imported on line {first}; this line has no effect"
                self._report(key, imp, "W_DUPLICATE_IMPORT", message)
            else:
                if is_strictly_under(key, target):
                    message = f"{target} is an ancestor of {key}, which inherits it anyway; this line has no effect"
                    self._report(key, imp, "W_REDUNDANT_IMPORT", message)
                kept[target] = imp
        return tuple(kept.values())

    def _hint(self, target: str) -> tuple[str, ...]:
        """`did you mean ...?` among keys at the same depth under the target's nearest node (cached)."""
        if target not in self._hints:
            depth = target.count("/")
            base = self.nearest_node(target)
            candidates = [k for k in self.nodes if k.count("/") == depth and is_under(k, base)]
            close = difflib.get_close_matches(target, candidates, n=1, cutoff=0.8)
            self._hints[target] = (f"did you mean {close[0]}?",) if close else ()
        return self._hints[target]

    def _report(self, key: str, imp: Import, code: str, message: str, notes: Iterable[str] = ()) -> None:
        """A diagnostic of node `key` at the includes line of `imp`, noting the variable values it used."""
        notes = tuple(notes)
        if imp.line.variables:
            names = dict.fromkeys(u.name for u in imp.line.variables)
            notes += ("with " + ", ".join(f"{n}={self.values[n]}" for n in names),)
        line, col = imp.line.line, imp.line.col
        self.diagnostics.append(Diagnostic.of(code, message, key=key, file=imp.file, line=line, col=col, notes=notes))

    def _links(self, key: str) -> list[tuple[str, Import | None]]:
        """Outgoing links of a node: its imports in file order, then its parent (Import None)."""
        out: list[tuple[str, Import | None]] = [(imp.key, imp) for imp in self._edges[key]]
        p = parent(key)
        if p is not None:
            out.append((p, None))
        return out

    def _cycle_from(self, roots: Iterable[str]) -> bool:
        """Whether a cycle is reachable from `roots`. Over a base graph without cycles, a new cycle must take a
        changed edge. It passes through a node whose imports depend on variables. Searching from those nodes alone
        answers "no cycle" cheaply. `_find_cycles`, which reports cycles, runs only otherwise."""
        color: dict[str, int] = {}  # absent: unvisited, 1: on the stack, 2: done
        for start in roots:
            if start in color:
                continue
            color[start] = 1
            stack = [iter(self._out[start])]
            path = [start]
            while stack:
                nxt = next(stack[-1], None)
                if nxt is None:
                    color[path.pop()] = 2
                    stack.pop()
                    continue
                target = nxt[0]
                state = color.get(target)
                if state == 1:
                    return True
                if state is None:
                    color[target] = 1
                    stack.append(iter(self._out[target]))
                    path.append(target)
        return False

    def _find_cycles(self) -> set[str]:
        """Report each cycle once (one per DFS back edge); return the nodes on or behind a cycle."""
        color: dict[str, int] = {}  # absent: unvisited, 1: on the stack, 2: done
        on_cycle: set[str] = set()
        for start in self.nodes:
            if start in color:
                continue
            color[start] = 1
            stack: list[tuple[str, Import | None, Iterator[tuple[str, Import | None]]]] = [
                (start, None, iter(self._out[start]))
            ]
            while stack:
                node, _, it = stack[-1]
                nxt = next(it, None)
                if nxt is None:
                    color[node] = 2
                    stack.pop()
                    continue
                target, via = nxt
                state = color.get(target)
                if state is None:
                    color[target] = 1
                    stack.append((target, via, iter(self._out[target])))
                elif state == 1:
                    start_at = next(i for i, frame in enumerate(stack) if frame[0] == target)
                    path = [(frame[0], frame[1]) for frame in stack[start_at:]]
                    self._report_cycle(path, target, via)
                    on_cycle.update(n for n, _ in path)
        reverse: dict[str, list[str]] = {}
        for key in self.nodes:
            for target, _ in self._out[key]:
                reverse.setdefault(target, []).append(key)
        failed, todo = set(on_cycle), list(on_cycle)
        while todo:
            for src in reverse.get(todo.pop(), ()):
                if src not in failed:
                    failed.add(src)
                    todo.append(src)
        return failed

    def _report_cycle(self, path: list[tuple[str, Import | None]], closing: str, via: Import | None) -> None:
        """E_CYCLE for the cycle path[0] -> ... -> path[-1] -> closing (== path[0]), at one of its includes.

        `path[i][1]` is the link that led to `path[i][0]`; `via` is the closing link. The report points at the
        closing link if it is an include, else at the last include before it. The path starts there.
        """
        links = [frame[1] for frame in path[1:]] + [via]  # links[i]: path[i] -> path[i+1] (or -> closing)
        nodes = [frame[0] for frame in path]
        at = max(i for i, link in enumerate(links) if link is not None)
        nodes = nodes[at:] + nodes[:at]
        links = links[at:] + links[:at]
        imp = links[0]
        assert imp is not None  # parent links only go up, so every cycle has an include
        shown = " -> ".join([*nodes, nodes[0]])
        src, dst = nodes[0], imp.key
        if src == dst:
            message = f"{src} imports itself (import cycle {shown})"
        elif is_strictly_under(dst, src):
            message = f"{src} imports its own descendant {dst}, which inherits from {src} (import cycle {shown})"
        else:
            message = f"import cycle {shown}"
        notes = []
        for i, link in enumerate(links):
            a, b = nodes[i], nodes[(i + 1) % len(nodes)]
            if link is None:
                notes.append(f"{a} inherits from its parent {b}")
            else:
                notes.append(f"{a} includes {b} ({link.file}:{link.line.line})")
        self._report(src, imp, "E_CYCLE", message, notes if len(nodes) > 1 else ())

    def _bottom_up(self, root: str, memo: dict[str, T], compute: Callable[[str], T]) -> T:
        """`memo[root]`, first setting `memo[k] = compute(k)` for `root` and each node it links to, directly or not,
        that `memo` lacks. Each is set after every node it links to. So `compute` reads theirs from `memo`.
        Iterative, as import chains can be deep. The one walk of linearization, reaches and variables."""
        out = self._out
        stack = [root]
        while stack:
            key = stack[-1]
            if key in memo:
                stack.pop()
                continue
            pending = [t for t, _ in out[key] if t not in memo]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            memo[key] = compute(key)
        return memo[root]

    def _linearize(self, root: str) -> None:
        """Compute L for `root` and everything it depends on, bottom-up."""
        self._bottom_up(root, self._lin, self._lin_over_links)

    def _lin_over_links(self, key: str) -> Lin:
        """L(K) from the L of each node K links to."""
        lin = self._lin
        segments = [lin[target] for target, _ in self._last_first(key)]  # L(P), L(I1), ..., L(In)
        if not segments:  # neither parent nor imports: the root
            return lowest_first([key])
        top = segments[-1]
        if all(len(s) <= len(top) and top[len(top) - len(s) :] == s for s in segments[:-1]):
            # every other segment ends L(In) (a parent's L, or the root's along a chain): removing duplicates
            # keeps L(In) as it is, so no pass over it is needed, and L(K) shares L(In)'s storage
            return top.over(key)
        seq: list[str] = []
        for segment in segments:
            seq += reversed(segment)
        # seq is the concatenation reversed: its first occurrences are the last ones of the original
        base = list(dict.fromkeys(seq))
        base.append(key)
        return lowest_first(base)

    def _last_first(self, key: str) -> list[tuple[str, Import | None]]:
        """The segments of L(In) + ... + L(I1) + L(P) from the last: P, I1, ..., In."""
        links = self._out[key]
        if links and links[-1][1] is None:  # the parent link comes last in `_out`
            return [links[-1], *links[:-1]]
        return list(links)

    def _reaches(self, root: str) -> dict[str, Reach]:
        """How each member of L(root) was reached: from the segment (import or parent) holding its last
        occurrence. Computed on demand (only explain and warnings need it), bottom-up, memoized."""
        return self._bottom_up(root, self._reach, self._reach_over_links)

    def _reach_over_links(self, key: str) -> dict[str, Reach]:
        """How each member of L(K) was reached, from how each node K links to reached its own."""
        out = {key: _SELF}
        for target, imp in self._last_first(key):  # the first time a member is seen is its last occurrence
            if imp is None:
                direct = Reach("parent", key)
            else:
                direct = Reach("include", key, imp.file, imp.line.line, imp.line.col)
            inner = self._reach[target]
            for member in self._lin[target]:
                if member not in out:
                    out[member] = direct if member == target else inner[member]
        return out

    def _check_order(self, key: str) -> None:
        """W_IMPORT_ORDER where L(K) ranks an import below one listed before it (docs/resolution.md#linearization)."""
        listed = [imp for imp in self._edges[key] if not is_strictly_under(key, imp.key)]
        if len(listed) < 2:
            return
        wanted = {imp.key for imp in listed}
        ranked = [k for k in self._lin[key] if k in wanted]
        if ranked == [imp.key for imp in reversed(listed)]:
            return  # the usual case: L agrees with the file
        position = {k: i for i, k in enumerate(self._lin[key])}
        for j, later in enumerate(listed):
            earlier = next((e for e in listed[:j] if position[e.key] < position[later.key]), None)
            if earlier is None:
                continue
            why = self._reaches(key)[later.key].describe(later.key)
            message = (
                f"{later.key} is listed after {earlier.key} (line {earlier.line.line}) but ranks below it:"
                f" it is also reached as {why}, and a key reached several ways takes its lowest position"
            )
            self._report(key, later, "W_IMPORT_ORDER", message)

    # ---------------------------------------------------------------------------------------------- queries

    def layers(self, key: str) -> tuple[Layer, ...] | None:
        """L(key) with how each layer was reached; None when the key is on or behind a cycle.

        A key without a node is an empty layer over its nearest existing ancestor.
        """
        nearest = self.nearest_node(key)
        lin = self._lin_of(nearest)
        if lin is None:
            return None
        reach = self._reaches(nearest)
        base = tuple(Layer(k, reach[k]) for k in lin)
        if nearest == key:
            return base
        return (Layer(key, _SELF), Layer(nearest, Reach("ancestor", key)), *base[1:])

    def variables_of(self, key: str) -> frozenset[str]:
        """Variables used by the includes of the layers of L(key) under this assignment. They are those of the node's
        own includes and of what it links to, bottom-up and memoized. It is not a walk over L(K) for every key: an
        import chain makes those walks quadratic."""
        nearest = self.nearest_node(key)
        if self._lin_of(nearest) is None:
            return frozenset()
        return self._bottom_up(nearest, self._vars, self._vars_over_links)

    def _vars_over_links(self, key: str) -> frozenset[str]:
        """The variables K's includes use, and those of each node K links to."""
        includes = self.nodes[key].includes
        own = variables_used(includes.lines) if includes is not None else frozenset()
        return own.union(*(self._vars[t] for t, _ in self._out[key]))

    # ---------------------------------------------------------------------------------------------- StoreQueries

    def _imports_of(self, key: str) -> tuple[str, ...]:
        return tuple(map(_IMPORTED, self._edges.get(key, ())))  # asked for every node by each build
