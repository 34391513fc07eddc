"""The queries of docs/queries.md#the-queries, in one place, over linearizations and explicit imports.

Both the live `Graph` (while compiling) and a frozen `Snapshot` (everything that reads compiled configs) answer
them by providing three facts per node: which keys have nodes, L(K), and K's explicit imports.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from cfgtool.errors import CfgtoolError
from cfgtool.store.keys import ROOT, is_under, parent


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
        """`tag` (a tag or a tag root), `group` (a node with nodes below it) or `dataset` (any other node): the
        kinds `cfgtool compile` counts, and a schema's `applies_to.kinds` selects."""
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

    def keys(self, prefix: str = ROOT) -> list[str]:
        """Every node key that is `prefix` or under it, sorted."""
        return sorted(k for k in self.nodes if is_under(k, prefix))

    def reachable(self, key: str) -> set[str]:
        """The nodes a node reaches through its imports and parents, itself included. For a node on or behind
        an import cycle (it has no L) these are the nodes whose errors, E_CYCLE among them, explain why."""
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
