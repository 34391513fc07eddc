"""The node tree and the search of one version, from the answers the server holds in memory.

The tree is never rendered whole: a page shows one key's children (at most `PAGE` of them, then a link to the
next ones), and each child opens its own children on demand. The children index is built once per version (off
the event loop) and kept as long as the version is in memory.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import re
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cfgtool.serve.loaded import LoadedVersion
from cfgtool.serve.visibility import Visibility
from cfgtool.store.keys import ROOT, parent

PAGE = 200  # children shown at once
RESULTS = 100  # search results shown at once
MAX_MATCHES = 20  # matching paths shown per key

Index = dict[str, list[str]]  # key -> its children's keys, sorted (keys without a node included)

_indexes: weakref.WeakKeyDictionary[LoadedVersion, Index] = weakref.WeakKeyDictionary()


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


async def index_of(loaded: LoadedVersion) -> Index:
    """The children index of `loaded` (built off the event loop the first time)."""
    found = _indexes.get(loaded)
    if found is None:
        found = await asyncio.to_thread(build_index, loaded)
        _indexes[loaded] = found
    return found


def is_tag(loaded: LoadedVersion, key: str) -> bool:
    """Whether `key` is a tag: under one of the tag roots (the roots themselves are not tags)."""
    if ROOT in loaded.tag_roots:
        return key != ROOT
    return any(key.startswith(root + "/") for root in loaded.tag_roots)


def kind(loaded: LoadedVersion, index: Index, key: str) -> str:
    """`tag`, `group` (a node with nodes below it), `dataset` (any other node) or `none` (no node of its own), as
    `cfgtool compile` counts them."""
    if key not in loaded.nodes:
        return "none"
    if is_tag(loaded, key) or key in loaded.tag_roots:
        return "tag"
    return "group" if key in index else "dataset"


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
    """One page of `key`'s children that the principal may see: a node it may describe, or a key without a node
    with such a node below it."""
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
        items.append(Child(child, name, kind(loaded, index, child), child in index))
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
    """The keys above `key`, the root first."""
    found = []
    above = parent(key)
    while above is not None:
        found.append(above)
        above = parent(above)
    return list(reversed(found))


@dataclass(frozen=True)
class Match:
    key: str
    by_key: bool  # the key itself matches
    values: list[tuple[str, Any]]  # (path, value) whose path or value matches


@dataclass(frozen=True)
class Found:
    matches: list[Match]
    count: int  # keys that match, all of them (only the first `RESULTS` are listed)


def search(loaded: LoadedVersion, q: str, seen: Visibility) -> Found:
    """Keys, paths and values of `loaded` that contain `q` (case-insensitive): a key's name counts where the
    principal may describe it, its paths and values where it may read it. Secrets read `[hidden]`. Only the
    listed keys' configs are parsed; past `RESULTS`, a key whose config text holds `q` is counted as it is."""
    needle = q.lower()
    raw = needle.encode("utf-8")
    configs = loaded.configs
    matches: list[Match] = []
    count = 0
    for key, lowered in _sorted_nodes(loaded):
        by_key = needle in lowered
        config = configs.get(key)
        in_config = config is not None and raw in config.lower()
        if not (by_key or in_config) or not seen.describes(key):
            continue
        readable = in_config and seen.may("read", key)
        if len(matches) == RESULTS:
            count += by_key or readable
            continue
        values = list(_matching(json.loads(config), needle, "")) if readable and config is not None else []
        if by_key or values:
            count += 1
            matches.append(Match(key, by_key, values[:MAX_MATCHES]))
    return Found(matches, count)


_sorted: weakref.WeakKeyDictionary[LoadedVersion, list[tuple[str, str]]] = weakref.WeakKeyDictionary()


def _sorted_nodes(loaded: LoadedVersion) -> list[tuple[str, str]]:
    """The version's nodes in order, each with its lowercase spelling (kept as long as the version is)."""
    found = _sorted.get(loaded)
    if found is None:
        found = _sorted[loaded] = [(key, key.lower()) for key in sorted(loaded.nodes)]
    return found


_PLAIN = re.compile(r"[A-Za-z0-9_-]+")


def _matching(value: Any, needle: str, path: str) -> Iterator[tuple[str, Any]]:
    """(path, value) of each leaf whose path or value contains `needle` (lowercase); a list's items at its path."""
    if isinstance(value, dict):
        for name, item in value.items():
            part = name if _PLAIN.fullmatch(name) else json.dumps(name)
            yield from _matching(item, needle, f"{path}.{part}" if path else part)
    elif isinstance(value, list):
        for item in value:
            yield from _matching(item, needle, path)
    else:
        text = value if isinstance(value, str) else json.dumps(value)
        if needle in text.lower() or needle in path.lower():
            yield path, value
