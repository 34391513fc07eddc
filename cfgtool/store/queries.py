"""The queries of docs/queries.md#the-queries, in one place, over linearizations and explicit imports.

Both the live `Graph` (while compiling) and a frozen `Snapshot` (everything that reads compiled configs) answer them.
Each provides three facts per node: which keys have nodes, L(K), and K's explicit imports. `Relations` holds only
those facts, packed by `pack_relations` into arrays of key numbers. `cfgtool serve` keeps them per version instead of
its snapshot (docs/serving.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from array import array
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from cfgtool.errors import CfgtoolError
from cfgtool.store.keys import ROOT, Siblings, is_under, last_segment, near_node, parent, siblings


class UnresolvableKeyError(CfgtoolError):
    """A query needs the linearization of a key that is on or behind an import cycle (exit 1)."""


class StoreQueries(ABC):
    """imports, tags, imported_by, datasets, children and keys, given `nodes`, L and explicit imports."""

    nodes: Mapping[str, Any]
    tag_roots: tuple[str, ...]  # nodes under these keys are tags

    @abstractmethod
    def _lin_of(self, key: str) -> Sequence[str] | None:
        """L(key) for a key that has a node; None when it is on or behind a cycle."""

    @abstractmethod
    def _imports_of(self, key: str) -> tuple[str, ...]:
        """The node's usable explicit imports in file order (lowest priority first)."""

    def nearest_node(self, key: str) -> str:
        """`key` if it has a node, else its nearest ancestor that has one (docs/resolution.md#keys-without-a-node)."""
        while key not in self.nodes:
            key = parent(key) or ROOT
        return key

    def linearization(self, key: str) -> Sequence[str] | None:
        """L(key) as keys, highest priority first; None when the key is on or behind a cycle.

        A key without a node is an empty layer over its nearest existing ancestor.
        """
        nearest = self.nearest_node(key)
        found = self._lin_of(nearest)
        if found is None or nearest == key:
            return found
        return (key, *found)

    def is_tag(self, key: str) -> bool:
        """Whether `key` is under one of the tag roots (the roots themselves are not tags)."""
        if ROOT in self.tag_roots:
            return key != ROOT
        return key.startswith(self._tag_prefixes)  # asked for every node by summaries and schema selectors

    def kind(self, key: str) -> str:
        """`tag` (a tag or a tag root), `group` (a node with nodes below it) or `dataset` (any other node). These are
        the kinds `cfgtool compile` counts, and a schema's `applies_to.kinds` selects."""
        if self.is_tag(key) or key in self.tag_roots:
            return "tag"
        return "group" if key in self._children else "dataset"

    @cached_property
    def _tag_prefixes(self) -> tuple[str, ...]:
        return tuple(root + "/" for root in self.tag_roots)

    def imports(self, key: str, recursive: bool = False) -> list[str]:
        """K's explicit imports, highest priority first; recursive: L(K) without K."""
        if recursive:
            return list(self._required(key)[1:])
        return list(reversed(self._imports_of(key))) if key in self.nodes else []

    def tags(self, key: str) -> list[str]:
        """The tags in L(K) other than K, highest priority first (including tags imported by ancestors)."""
        return [k for k in self._required(key)[1:] if self.is_tag(k)]

    def imported_by(self, key: str, recursive: bool = False) -> list[str]:
        """Nodes whose includes name `key`; recursive: every other node with `key` in its L. Sorted."""
        index = self._members if recursive else self._importers
        return sorted(index.get(key, ()))

    def datasets(self, tag: str) -> list[str]:
        """The non-tag nodes that import `tag`, directly or through their layers (ancestors, other tags).

        Having `tag` in L only as the parent of an imported child tag does not count.
        """
        importers = set(self._importers.get(tag, ()))
        out = []
        for key in self.imported_by(tag, recursive=True):
            if self.is_tag(key) or key in self.tag_roots:
                continue
            if any(member in importers for member in self._required(key)):
                out.append(key)
        return out

    def children(self, key: str) -> list[str]:
        """Keys of the child nodes of `key`, sorted (none for a key without a node)."""
        return sorted(self._children.get(key, ()))

    def near_node(self, key: str) -> str | None:
        """A node whose key is close to `key` when `key` has no node, or None. It is a did-you-mean
        (`keys.near_node`)."""
        return near_node(key, self.nearest_node, self.child_names)

    def child_names(self, key: str) -> Siblings:
        """The names of the child nodes of `key` (kept: a did-you-mean asks again)."""
        found = self._sorted_names.get(key)
        if found is None:
            found = self._sorted_names[key] = siblings(map(last_segment, self._children.get(key, ())))
        return found

    @cached_property
    def _sorted_names(self) -> dict[str, Siblings]:
        return {}

    def keys(self, prefix: str = ROOT) -> list[str]:
        """Every node key that is `prefix` or under it, sorted."""
        return sorted(k for k in self.nodes if is_under(k, prefix))

    def reachable(self, key: str) -> set[str]:
        """The nodes a node reaches through its imports and parents, itself included. A node on or behind an import
        cycle has no L. For it, these are the nodes whose errors, E_CYCLE among them, explain why."""
        seen = {key}
        todo = [key]
        while todo:
            current = todo.pop()
            links = list(self._imports_of(current)) if current in self.nodes else []
            up = parent(current)
            if up is not None:
                links.append(self.nearest_node(up))
            for link in links:
                if link not in seen:
                    seen.add(link)
                    todo.append(link)
        return seen

    def _required(self, key: str) -> Sequence[str]:
        found = self.linearization(key)
        if found is None:
            raise UnresolvableKeyError(
                f"{key} cannot be resolved: it is on or behind an import cycle",
                hint="fix the E_CYCLE reported by `cfgtool compile`",
            )
        return found

    @cached_property
    def _children(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for key in self.nodes:
            p = parent(key)
            if p is not None:
                index.setdefault(p, []).append(key)
        return index

    @cached_property
    def _importers(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for key in self.nodes:
            for imp in self._imports_of(key):
                index.setdefault(imp, []).append(key)
        return index

    @cached_property
    def _members(self) -> dict[str, list[str]]:
        index: dict[str, list[str]] = {}
        for key in self.nodes:
            for member in (self._lin_of(key) or ())[1:]:
                index.setdefault(member, []).append(key)
        return index


def pack_relations(queries: StoreQueries) -> dict[str, Any]:
    """The facts the queries need, as plain data: the nodes, each one's L and explicit imports, the tag roots. Each
    key is once in `keys`, nodes first. Every L and import list is key numbers in arrays (bytes). Some L is [K] +
    L(B), B the next key in it: a node's parent, or along an import chain its import. It is stored as a pointer to B.
    So a chain of N nodes takes N numbers, not N * N / 2."""
    numbers = {key: i for i, key in enumerate(queries.nodes)}
    keys = list(numbers)
    count = len(keys)

    def number(key: str) -> int:
        found = numbers.get(key)
        if found is None:
            found = numbers[key] = len(keys)
            keys.append(key)
        return found

    lins, lin_ends, tails = array("I"), array("I"), array("I")
    imports, import_ends = array("I"), array("I")
    for key in keys[:count]:
        lin = queries._lin_of(key) or ()
        below = lin[1] if len(lin) > 1 else None
        if below is not None and below in queries.nodes and queries._lin_of(below) == lin[1:]:
            tails.append(numbers[below] + 1)
        else:
            tails.append(0)
            lins.extend(number(k) for k in lin)
        lin_ends.append(len(lins))
        imports.extend(number(k) for k in queries._imports_of(key))
        import_ends.append(len(imports))
    return {
        "keys": keys,
        "nodes": count,
        "tag_roots": list(queries.tag_roots),
        "lins": lins.tobytes(),
        "lin_ends": lin_ends.tobytes(),
        "tails": tails.tobytes(),
        "imports": imports.tobytes(),
        "import_ends": import_ends.tobytes(),
    }


def _numbers(data: bytes) -> array[int]:
    found = array("I")
    found.frombytes(data)
    return found


class Relations(StoreQueries):
    """The queries of one compiled version from what `pack_relations` packed (no configs, no provenance). That takes
    a tenth of the memory of its snapshot's layers, and no snapshot to load."""

    def __init__(self, packed: Mapping[str, Any]) -> None:
        self._keys: list[str] = packed["keys"]
        self.nodes: dict[str, int] = {key: i for i, key in enumerate(self._keys[: packed["nodes"]])}
        self.tag_roots = tuple(packed["tag_roots"])
        self._lins, self._lin_ends = _numbers(packed["lins"]), _numbers(packed["lin_ends"])
        self._tails = _numbers(packed["tails"])
        self._imports, self._import_ends = _numbers(packed["imports"]), _numbers(packed["import_ends"])

    def _lin_of(self, key: str) -> Sequence[str] | None:
        i = self.nodes.get(key)
        if i is None:
            return None
        keys, found = self._keys, []
        while self._tails[i]:  # [K] + L(B): follow the pointers down to a list stored whole
            found.append(keys[i])
            i = self._tails[i] - 1
        start = self._lin_ends[i - 1] if i else 0
        found.extend(keys[n] for n in self._lins[start : self._lin_ends[i]])
        return tuple(found) or None

    def _imports_of(self, key: str) -> tuple[str, ...]:
        i = self.nodes[key]
        start = self._import_ends[i - 1] if i else 0
        return tuple(self._keys[n] for n in self._imports[start : self._import_ends[i]])
