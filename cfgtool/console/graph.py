"""The key page's import graph, laid out on the server and drawn as SVG by the template `graph.svg`.

Five columns, left to right, depth 2 both ways. They are what imports the key's importers, its importers, the key,
its imports, and what those import. A column draws at most `FAN_OUT` keys per neighbour. The rest are counted in one
box ("+ 12 more"), never drawn. Every key given here was already filtered by the caller (`Visibility.keys`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

FAN_OUT = 6  # neighbours drawn per key; more are counted
WIDTH, ROW = 190, 34  # a column's width and a row's height, in SVG units
BOX_W, BOX_H = 170, 24
LABEL = 21  # characters of a key shown in its box, 12 px monospace (the start is cut: the end of a key says most)


@dataclass(frozen=True)
class Box:
    key: str | None  # None: a box that counts the neighbours not drawn
    label: str
    x: int
    y: int
    role: str  # `self`, `import`, `importer` or `more`


@dataclass(frozen=True)
class Edge:
    x1: int
    y1: int
    x2: int
    y2: int


@dataclass
class Graph:
    boxes: list[Box] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    width: int = 0
    height: int = 0

    @property
    def empty(self) -> bool:
        return len(self.boxes) <= 1


Query = Callable[[str, str], list[str]]  # (key, "imports" | "imported-by") -> keys, filtered
Slot = tuple[str, str]  # (key, or a counting box's id; its label)


def import_graph(key: str, imports: list[str], imported_by: list[str], query: Query) -> Graph:
    """The graph of `key`: its (filtered) imports and importers, and theirs, through `query` (depth 2)."""
    columns: list[list[Slot]] = [[] for _ in range(5)]
    links: list[tuple[tuple[int, str], tuple[int, str]]] = []  # (column, slot id) pairs, drawn as edges
    columns[2].append((key, _label(key)))
    for side, near, direction in ((1, imports, "imports"), (-1, imported_by, "imported-by")):
        for k in _fan(near, columns[2 + side], links, (2, key), 2 + side):
            further = [x for x in query(k, direction) if x != key]
            _fan(further, columns[2 + 2 * side], links, (2 + side, k), 2 + 2 * side)
    return _layout(columns, links)


def _fan(
    keys: list[str],
    column: list[Slot],
    links: list[tuple[tuple[int, str], tuple[int, str]]],
    via: tuple[int, str],
    at: int,
) -> list[str]:
    """Put up to `FAN_OUT` of `keys` in `column`, linked to `via`, and a box counting the rest; the keys drawn."""
    drawn = []
    for k in keys[:FAN_OUT]:
        if all(slot[0] != k for slot in column):
            column.append((k, _label(k)))
        links.append((via, (at, k)))
        drawn.append(k)
    if len(keys) > FAN_OUT:
        more = f"more:{via[1]}"
        column.append((more, f"+ {len(keys) - FAN_OUT:,} more"))
        links.append((via, (at, more)))
    return drawn


def _layout(columns: list[list[Slot]], links: list[tuple[tuple[int, str], tuple[int, str]]]) -> Graph:
    graph = Graph()
    rows = max(len(c) for c in columns)
    graph.height = rows * ROW + 8
    used = [i for i, c in enumerate(columns) if c]
    first = min(used)
    graph.width = (max(used) - first + 1) * WIDTH
    where: dict[tuple[int, str], tuple[int, int]] = {}
    roles = ["importer", "importer", "self", "import", "import"]
    for i, column in enumerate(columns):
        x = (i - first) * WIDTH + (WIDTH - BOX_W) // 2
        top = (rows - len(column)) * ROW // 2 + 4
        for j, (ident, label) in enumerate(column):
            y = top + j * ROW
            more = ident.startswith("more:")
            graph.boxes.append(Box(None if more else ident, label, x, y, "more" if more else roles[i]))
            where[i, ident] = (x, y)
    for a, b in links:
        (ax, ay), (bx, by) = where[a], where[b]
        (lx, ly), (rx, ry) = ((ax, ay), (bx, by)) if ax < bx else ((bx, by), (ax, ay))
        graph.edges.append(Edge(lx + BOX_W, ly + BOX_H // 2, rx, ry + BOX_H // 2))
    return graph


def _label(key: str) -> str:
    return key if len(key) <= LABEL else "…" + key[-(LABEL - 1) :]
