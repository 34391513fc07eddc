"""Property tests: the memoized linearization equals docs/resolution.md#linearization's definition by full expansion."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cfgtool.store.graph import Graph
from cfgtool.store.includes import parse_includes
from cfgtool.store.keys import ROOT, ancestors, parent
from cfgtool.store.nodes import IncludesFile, Node, Store
from cfgtool.store.settings import Settings

KEYS = ["/", "/a", "/a/b", "/a/c", "/a/b/d", "/t", "/t/x", "/t/y", "/t/x/z", "/u", "/u/v"]


def store_of(imports: dict[str, list[str]]) -> Store:
    """An in-memory store (the graph never reads files): every key of KEYS with the given includes."""
    nodes = {}
    for key in KEYS:
        text = "\n".join(imports.get(key, []))
        path = f"store{key.rstrip('/')}/includes"
        lines, _ = parse_includes(text, path, key)
        includes = IncludesFile(path, "0" * 40, tuple(lines)) if text else None
        nodes[key] = Node(key, f"store{key.rstrip('/')}", None, includes)
    source: Any = None
    return Store(source, Settings(), "store/_CONFIG_STORE", MappingProxyType(nodes), ())


def expand(key: str, imports: dict[str, list[str]]) -> list[str]:
    """expand(K) = [K] + expand(In) + ... + expand(I1) + expand(P), literally (exponential; small graphs only)."""
    out = [key]
    for imp in reversed(list(dict.fromkeys(imports.get(key, [])))):
        out += expand(imp, imports)
    p = parent(key)
    return out + (expand(p, imports) if p is not None else [])


def dedup_last(seq: list[str]) -> list[str]:
    return [k for i, k in enumerate(seq) if k not in seq[i + 1 :]]


graphs = st.dictionaries(st.sampled_from(KEYS), st.lists(st.sampled_from(KEYS), max_size=3), max_size=len(KEYS))


@settings(max_examples=300, deadline=None)
@given(graphs)
def test_linearization_equals_dedup_last_of_the_full_expansion(imports: dict[str, list[str]]) -> None:
    g = Graph(store_of(imports))
    for key in KEYS:
        lin = g.linearization(key)
        if key in g.failed:
            assert lin is None
            continue
        assert lin == tuple(dedup_last(expand(key, imports)))
        # consequences listed in docs/resolution.md#linearization: own config first, every node outranks what it
        # inherits
        assert lin[0] == key and lin[-1] == ROOT
        assert set(ancestors(key)) <= set(lin)
        position = {k: i for i, k in enumerate(lin)}
        for member in lin:
            inner = g.linearization(member)
            assert inner is not None
            assert all(position[m] > position[member] for m in inner[1:])
        layers = g.layers(key)
        assert layers is not None and tuple(layer.key for layer in layers) == lin


@settings(max_examples=300, deadline=None)
@given(graphs)
def test_cycles_block_exactly_the_nodes_that_reach_a_cycle(imports: dict[str, list[str]]) -> None:
    g = Graph(store_of(imports))
    links = {k: [*imports.get(k, []), *([parent(k)] if parent(k) else [])] for k in KEYS}

    def reaches_cycle(start: str) -> bool:
        # a node is blocked iff some path from it returns to a node already on the path
        stack: list[tuple[str, tuple[str, ...]]] = [(start, (start,))]
        while stack:
            node, path = stack.pop()
            for nxt in links[node]:
                if nxt in path:
                    return True
                stack.append((nxt, (*path, nxt)))
        return False

    assert g.failed == {k for k in KEYS if reaches_cycle(k)}
    cycles = [d for d in g.diagnostics if d.code == "E_CYCLE"]
    assert bool(cycles) == bool(g.failed)
    assert len({d.message for d in cycles}) == len(cycles)  # each cycle once
