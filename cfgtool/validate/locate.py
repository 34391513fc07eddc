"""Where a validation problem points: the assignment behind a value of a node's resolved config.

Schemas and policies report a path inside a resolved config (`kafka.partitions`, `acl.readers[2]`). The snapshot's
provenance knows the origin of every leaf: scalars and whole arrays. `locate` walks up to the nearest path that has
an origin. For objects and missing values it falls back to the node's own main.conf.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import Any

from cfgtool._util.plain import MISSING, value_at
from cfgtool.hocon import HoconError, split_path
from cfgtool.hocon.resolver import render_path
from cfgtool.snapshot.model import NodeSnapshot
from cfgtool.store.keys import segments

Location = tuple[str | None, int | None, int | None]  # file (repo-relative), line, col


@lru_cache(maxsize=65536)
def _name(path: tuple[str, ...]) -> str:
    return render_path(path)


@lru_cache(maxsize=65536)
def parse_path(expr: str) -> tuple[str, ...] | None:
    """A HOCON path expression as keys (`a."b.c"` -> ("a", "b.c")), None when it is not one."""
    try:
        return split_path(expr)
    except HoconError:
        return None


def json_path(path: Sequence[str | int]) -> str:
    """A path inside a config for messages: `kafka.partitions`, `acl.readers[2]`, `kafka.config."a.b"`;
    `(root)` for the whole config."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            name = _name((part,))
            out += f".{name}" if out else name
    return out or "(root)"


def main_conf(node: NodeSnapshot, store_dir: str) -> Location:
    """The node's main.conf at line 1, col 1. For a node without one, the path it would have, without a line."""
    if node.file is not None:
        return node.file, 1, 1
    return posixpath.join(store_dir, *segments(node.key), "main.conf"), None, None


def locate(node: NodeSnapshot, store_dir: str, path: Sequence[str | int], *, missing: bool = False) -> Location:
    """The file:line:col to blame for the value at `path` in `node`'s resolved config.

    A scalar or array: the assignment that won (an array element: its array). An object: the node's own
    first assignment inside it, else the first inherited one. `missing` is a required value that is not set inside
    the object at `path`. It points at the node's own first assignment inside that object, else at its main.conf.
    """
    keys: list[str] = []
    for part in path:
        if isinstance(part, int):
            break
        keys.append(part)
    origins = node.origins
    if not missing:
        for n in range(len(keys), 0, -1):
            origin = origins.get(_name(tuple(keys[:n])))
            if origin is not None and origin.line > 0:
                return origin.file, origin.line, origin.col
    if keys:
        prefix = _name(tuple(keys))
        inside = prefix + "."
        own = [v.origin for p, v in node.own.items() if (p == prefix or p.startswith(inside)) and v.origin.line > 0]
        if own:
            first = min(own, key=lambda o: (o.file != node.file, o.line, o.col))
            return first.file, first.line, first.col
        if not missing:
            inherited = [o for p, o in origins.items() if p.startswith(inside) and o.line > 0]
            if inherited:
                first = min(inherited)
                return first.file, first.line, first.col
    return main_conf(node, store_dir)


def own_config(node: NodeSnapshot) -> dict[str, Any]:
    """The values the node's own main.conf assigns, as nested plain data taken from its resolved config. So
    `x = ${y}` shows y's resolved value, and `list += v` the whole resulting list."""
    out: dict[str, Any] = {}
    config: Any = node.config or {}
    for expr in node.own:
        path = parse_path(expr)
        if not path:
            continue
        value = value_at(config, path)
        if value is MISSING:
            continue
        _insert(out, path, value)
    return out


class LazyOwnConfig(Mapping[str, Any]):
    """`own_config(node)`, computed on first access. Most policies never read it. A node's own assignments come from
    provenance that a plain compile does not otherwise need."""

    __slots__ = ("_node", "_value")

    def __init__(self, node: NodeSnapshot) -> None:
        self._node = node
        self._value: dict[str, Any] | None = None

    def _get(self) -> dict[str, Any]:
        if self._value is None:
            self._value = own_config(self._node)
        return self._value

    def __getitem__(self, key: str) -> Any:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())

    def __repr__(self) -> str:
        return repr(self._get())


def _insert(out: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    target = out
    for part in path[:-1]:
        child = target.setdefault(part, {})
        if not isinstance(child, dict):
            return
        target = child
    target.setdefault(path[-1], value)
