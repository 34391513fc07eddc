"""Positions in YAML files (`_CONFIG_STORE`, schemas): where a path is, and which keys are set twice.

PyYAML's composed nodes carry marks; these two helpers let every YAML reader name file:line:col.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import yaml


def mark(root: yaml.Node | None, path: Sequence[Any], key: bool = False) -> tuple[int, int]:
    """1-based line and column of the deepest node found along `path` (the key node itself when `key`)."""
    if root is None:
        return 1, 1
    node = root
    for i, part in enumerate(path):
        child = _child(node, part, key and i == len(path) - 1)
        if child is None:
            break
        node = child
    return node.start_mark.line + 1, node.start_mark.column + 1


def duplicate_keys(node: yaml.Node, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], int, int]]:
    """(path, line, col) of every key set twice in one mapping: YAML silently keeps the last one."""
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for k, v in node.value:
            name = str(k.value)
            if name in seen:
                yield (*path, name), k.start_mark.line + 1, k.start_mark.column + 1
            seen.add(name)
            yield from duplicate_keys(v, (*path, name))
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from duplicate_keys(item, path)


def _child(node: yaml.Node, part: Any, want_key: bool) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == str(part):
                found: yaml.Node = k if want_key else v
                return found
    elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        item: yaml.Node = node.value[part]
        return item
    return None
