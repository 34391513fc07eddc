"""The node tree of one version, from the answers the server holds in memory.

The tree is never rendered whole. A page shows one key's children: at most `PAGE` of them, then a link to the next
ones. Each child opens its own children on demand. The children index is built once per version, off the event loop
(`prepared`). It is kept as long as the version is in memory.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass

from cfgtool.console.prepared import Prepared
from cfgtool.serve.loaded import LoadedVersion
from cfgtool.serve.visibility import Visibility
from cfgtool.store import keys
from cfgtool.store.keys import ROOT, parent

PAGE = 200  # children shown at once

Index = dict[str, list[str]]  # key -> its children's keys, sorted (keys without a node included)


def build_index(loaded: LoadedVersion) -> Index:
    """Every key's children: each node's key under its parent, and each key on the way up that has no node."""
    found: dict[str, set[str]] = {}
    for key in loaded.nodes:
        child = key
        above = parent(child)
        while above is not None:
            siblings = found.setdefault(above, set())
            if child in siblings:
                break
            siblings.add(child)
            child, above = above, parent(above)
    return {k: sorted(v) for k, v in found.items()}


INDEXES: Prepared[Index] = Prepared(build_index)


def is_tag(loaded: LoadedVersion, key: str) -> bool:
    """Whether `key` is a tag: under one of the tag roots (the roots themselves are not tags)."""
    if ROOT in loaded.tag_roots:
        return key != ROOT
    return any(key.startswith(root + "/") for root in loaded.tag_roots)


def kind(loaded: LoadedVersion, index: Index, key: str, seen: Visibility) -> str:
    """`tag`, `group`, `dataset` or `none`, as `cfgtool compile` counts them for one who sees every key. A group is a
    node with nodes below it that the principal may see. A dataset is any other node. `none` has no node of its
    own."""
    if key not in loaded.nodes:
        return "none"
    if is_tag(loaded, key) or key in loaded.tag_roots:
        return "tag"
    return "group" if opens(index, loaded, key, seen) else "dataset"


def opens(index: Index, loaded: LoadedVersion, key: str, seen: Visibility) -> bool:
    """Whether `key` has a child the principal may see. A level that opened on nothing would tell of the keys it may
    not describe. So would a group of no visible node."""
    if seen.sees_everything:
        return key in index
    return any(_shown(index, loaded, child, seen) for child in index.get(key, ()))


@dataclass(frozen=True)
class Child:
    key: str
    name: str
    kind: str
    opens: bool  # whether it has children to open


@dataclass(frozen=True)
class Children:
    items: list[Child]
    next: str | None  # the `after` of the next page, None on the last one


def children(index: Index, loaded: LoadedVersion, key: str, seen: Visibility, after: str | None) -> Children:
    """One page of `key`'s children that the principal may see. Each is a node it may describe, or a key without a
    node with such a node below it."""
    found = index.get(key, [])
    start = bisect.bisect_right(found, after) if after else 0
    items: list[Child] = []
    for i in range(start, len(found)):
        child = found[i]
        if not _shown(index, loaded, child, seen):
            continue
        if len(items) == PAGE:
            return Children(items, items[-1].key)
        name = child.rsplit("/", 1)[-1]
        items.append(Child(child, name, kind(loaded, index, child, seen), opens(index, loaded, child, seen)))
    return Children(items, None)


def _shown(index: Index, loaded: LoadedVersion, key: str, seen: Visibility) -> bool:
    if key in loaded.nodes:
        return seen.describes(key)
    return seen.sees_everything or any(seen.describes(k) for k in _below(index, key) if k in loaded.nodes)


def _below(index: Index, key: str) -> Iterator[str]:
    stack = list(reversed(index.get(key, [])))
    while stack:
        child = stack.pop()
        yield child
        stack.extend(reversed(index.get(child, [])))


def ancestors(key: str) -> list[str]:
    """The keys above `key`, the root first (a breadcrumb)."""
    return list(reversed(keys.ancestors(key)))
