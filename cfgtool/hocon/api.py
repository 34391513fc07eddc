"""The engine's public functions: parse, merge, resolve, and the `Resolved` result with provenance."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool._util.plain import MISSING, value_at
from cfgtool.hocon.errors import E_INCLUDE, E_LIMIT, E_SYNTAX, E_UNRESOLVED_REF, HoconError
from cfgtool.hocon.fastparse import parse_fast
from cfgtool.hocon.lexer import parse_path_expression
from cfgtool.hocon.merge import merge_all
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.parser import MAX_DEPTH, Reader, parse_source, parse_text
from cfgtool.hocon.recursion import RECURSION_LIMIT as RECURSION_LIMIT
from cfgtool.hocon.recursion import deep_recursion as deep_recursion
from cfgtool.hocon.resolver import UNDEFINED, render_path, resolve_tree
from cfgtool.hocon.values import Concat, Joined, JoinedLst, JoinedObj, Lst, Merge, Node, Num, Obj, Scalar, Subst, Ws

MAX_OUTPUT_NODES = 2_000_000  # values one resolved document may expand to (shared subtrees count each time)
# size units (`Resolved.size`, at least one per value) converted before a document's size is checked exactly;
# below MAX_OUTPUT_NODES, so that a document over the limit is always checked
_CHECK_AFTER = 50_000
PathLike = str | Sequence[str]
_INFINITY = float("inf")


@contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic garbage collector while parsing many files that are all kept (a store compile).

    Parse trees hold no reference cycles, so nothing is lost. Without the pause, CPython rescans the growing set of
    kept trees again and again. That halves parse throughput at 10,000 files. At the end, what was made goes to the
    oldest generation in one step. Resuming the collector would otherwise scan all of it at once, then again as it
    ages. That scan takes about half a second at 10,000 datasets. `gc.freeze` + `gc.unfreeze` move it without a scan.
    That is skipped when frozen objects exist already, since unfreezing would release them too.
    """
    enabled = gc.isenabled()
    handover = enabled and gc.get_freeze_count() == 0
    gc.disable()
    try:
        yield
        if handover:
            gc.freeze()
    finally:
        if handover:
            gc.unfreeze()
        if enabled:
            gc.enable()


def parse(text: str, origin: str = "<string>", *, reader: Reader | None = None) -> Obj:
    """Parse one HOCON document; its root is an object. Includes are read through `reader` (none: skipped)."""
    fast = parse_fast(text, origin)  # most documents; its nesting is bounded, so no deeper recursion is needed
    if fast is not None:
        return fast
    try:
        with deep_recursion():
            root = parse_text(text, origin, reader, fast=False)
    except RecursionError:
        raise HoconError(E_LIMIT, "document nested too deeply", Origin(origin, 1, 1)) from None
    assert isinstance(root, Obj)
    return root


def parse_value(text: str, origin: str = "<string>") -> Node:
    """Parse a document whose root may also be an array (the value-level parse Lightbend tests use)."""
    try:
        with deep_recursion():
            return parse_text(text, origin, None, value_level=True)
    except RecursionError:
        raise HoconError(E_LIMIT, "document nested too deeply", Origin(origin, 1, 1)) from None


def read_file(path: str) -> str | None:
    """The default `Reader`: a file's text as UTF-8, BOM and newlines kept. None when it does not exist."""
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise HoconError(E_INCLUDE, f"cannot read {path}: {exc}", Origin(path, 1, 1)) from exc


def parse_file(path: str | Path, *, reader: Reader | None = None) -> Obj:
    """Parse a file by its extension (`.properties` as Java properties, else HOCON); includes are relative."""
    name = str(path)
    reader = reader or read_file
    text = reader(name)
    if text is None:
        raise HoconError(E_INCLUDE, f"file not found: {name}", Origin(name, 0, 0))
    try:
        with deep_recursion():
            return parse_source(text, name, reader)
    except RecursionError:
        raise HoconError(E_LIMIT, "document nested too deeply", Origin(name, 1, 1)) from None


def merge(documents: Sequence[Node]) -> Node:
    """`withFallback` of all documents, the first highest priority; nothing is resolved."""
    if not documents:
        return Obj({}, Origin("<empty>", 1, 1))
    return merge_all(documents)


def from_plain(value: Any, origin: Origin) -> Node:
    """Turn plain Python data (dict, list, str, int, float, bool, None) into nodes, all at `origin`."""
    if isinstance(value, Mapping):
        return Obj({str(k): from_plain(v, origin) for k, v in value.items()}, origin)
    if isinstance(value, (list, tuple)):
        return Lst([from_plain(v, origin) for v in value], origin)
    if value is None or isinstance(value, (str, int, float, bool)):
        return Scalar(value, origin, isinstance(value, str))
    raise TypeError(f"cannot use {type(value).__name__} as a config value")


def resolve(
    documents: Sequence[Node],
    extra: Mapping[str, Any] | Node | None = None,
    *,
    allow_unresolved: bool = False,
) -> Resolved:
    """Merge `documents` (first highest priority) and resolve every `${...}` once, afterwards.

    `extra` holds values that substitutions see before the documents' own, such as the intrinsic `cfgtool.key`. They
    are not part of the result. Nothing is read from the environment.
    """
    extra_node = extra if isinstance(extra, Node) or extra is None else from_plain(extra, Origin("<extra>", 0, 0))
    try:
        with deep_recursion():
            root = merge(documents)
            result, complete, used_extra, shared = resolve_tree(root, extra_node, allow_unresolved)
    except RecursionError:
        origin = documents[0].origin if documents else None
        raise HoconError(E_LIMIT, "values nested or chained too deeply to resolve", origin) from None
    if result is UNDEFINED:
        result = Obj({}, root.origin)
    assert isinstance(result, Node)
    return Resolved(result, complete, used_extra, shared)


def loads(text: str, origin: str = "<string>") -> dict[str, Any]:
    """Parse and resolve one HOCON document to plain Python data."""
    return resolve([parse(text, origin)]).value


def split_path(path: PathLike) -> tuple[str, ...]:
    """`"a.\\"b.c\\".d"` -> `("a", "b.c", "d")`; a sequence of keys is returned as a tuple."""
    if isinstance(path, str):
        return parse_path_expression(path, Origin("<path>", 1, 1))
    return tuple(path)


def quoted_path(config: Mapping[str, Any] | None, path: PathLike) -> str | None:
    """The path expression of a value in plain `config` whose keys, joined by dots, spell `path`. It is asked when
    `path` itself is not set there. `kafka.config.retention.ms` gives `kafka.config."retention.ms"`. It is a
    did-you-mean for a dotted name that exists only quoted. None when there is no such value. Each (object, position)
    is tried once. So the search is linear in the path's parts times the objects on the way."""
    parts = split_path(path)
    seen: set[tuple[int, int]] = set()

    def walk(node: Any, i: int) -> tuple[str, ...] | None:
        if i == len(parts):
            return ()
        if not isinstance(node, Mapping) or (id(node), i) in seen:
            return None
        seen.add((id(node), i))
        longest, names, name = max(map(len, node), default=0), [], parts[i]
        for j in range(i + 1, len(parts) + 1):  # no name longer than the object's longest key
            if name in node:
                names.append((name, j))
            if j == len(parts) or len(name) >= longest:
                break
            name += "." + parts[j]
        for name, j in reversed(names):  # the longest name first: fewer quoted keys to write
            rest = walk(node[name], j)
            if rest is not None:
                return (name, *rest)
        return None

    if not parts or value_at(config, parts) is not MISSING:
        return None
    with deep_recursion():  # one frame per object on the way: a dotted key can nest thousands deep
        found = walk(config or {}, 0)
    return render_path(found) if found is not None else None


@dataclass(frozen=True)
class PathRead:
    """What `read_path` found in `config`: the value at `path`, `MISSING` when it is not set."""

    config: Mapping[str, Any] | None
    path: PathLike
    value: Any

    @property
    def found(self) -> bool:
        return self.value is not MISSING

    @property
    def did_you_mean(self) -> str | None:
        """When the path is not set, the quoted path that is (`quoted_path`), for a did-you-mean. Computed when
        asked: a reader with a default never pays for it."""
        return None if self.found else quoted_path(self.config, self.path)


def read_path(config: Mapping[str, Any] | None, path: PathLike) -> PathRead:
    """The value at `path` in plain `config`. It is the one way a value is read by path: `cfgtool get`, explain,
    `ConfigClient.get_value`, the Spark view and the server's `?path=` all call it, so they agree on what is
    set."""
    return PathRead(config, path, value_at(config, split_path(path)))


def find(node: Node, path: PathLike) -> Node | None:
    """The highest unresolved definition at `path` inside one parsed document (what `explain` lists per layer)."""
    for key in split_path(path):
        if isinstance(node, Merge):
            node = next((el for el in node.stack if isinstance(el, Obj) and key in el.fields), node.stack[0])
        if not isinstance(node, Obj):
            return None
        child = node.fields.get(key)
        if child is None:
            return None
        node = child
    return node.stack[0] if isinstance(node, Merge) else node


def describe(node: Node, limit: int = 80) -> str:
    """A short HOCON-like rendering of an unresolved or resolved node, e.g. `${base}"/x"` or `[1, 2]`."""
    with deep_recursion():
        return _describe(node, limit)


def _describe(node: Node, limit: int) -> str:
    if isinstance(node, Num):
        text = node.raw
    elif isinstance(node, Scalar):
        value = node.value
        text = value if isinstance(value, str) and not node.quoted else json.dumps(value, ensure_ascii=False)
    elif isinstance(node, Ws):
        text = node.value
    elif isinstance(node, Subst):
        text = "${" + ("?" if node.optional else "") + render_path(node.path) + "}"
    elif isinstance(node, Concat):
        text = "".join(_describe(part, limit) for part in node.parts)
    elif isinstance(node, Merge):
        text = _describe(node.stack[0], limit)
    elif isinstance(node, Lst):
        text = "[" + ", ".join(_describe(item, limit) for item in node.items) + "]"
    elif isinstance(node, Obj):
        text = "{" + ", ".join(f"{render_path((k,))}: {_describe(v, limit)}" for k, v in node.fields.items()) + "}"
    else:
        text = repr(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Resolved:
    """A resolved document: plain `value`. For any path, also the origin that won and what it was built from."""

    __slots__ = ("_size", "_value", "is_resolved", "root", "shared", "used_extra")

    def __init__(self, root: Node, is_resolved: bool, used_extra: bool = False, shared: bool = True) -> None:
        self.root = root
        self.is_resolved = is_resolved
        self.used_extra = used_extra  # some substitution read a value from `extra`
        self.shared = shared  # subtrees may appear in several places (the output size must be checked)
        self._value: dict[str, Any] | None = None
        self._size = 0

    @property
    def value(self) -> dict[str, Any]:
        """The whole document as plain Python data (raises if substitutions were left unresolved)."""
        if self._value is None:
            plain, self._size = _plain_and_size(self.root, self.shared)
            assert isinstance(plain, dict)
            self._value = plain
        return self._value

    @property
    def size(self) -> int:
        """What `value` costs, in units of about 50 bytes. An entry is 1, an array 2 more, an object 4 more. Python's
        objects are the heavy part. A store compile adds these up against its budget."""
        _ = self.value
        return self._size

    def node(self, path: PathLike) -> Node | None:
        """The resolved node at `path`, or None when nothing is there."""
        node: Node = self.root
        for key in split_path(path):
            if not isinstance(node, Obj):
                return None
            child = node.fields.get(key)
            if child is None:
                return None
            node = child
        return node

    def get(self, path: PathLike) -> Any:
        """The plain value at `path`; KeyError when absent."""
        node = self.node(path)
        if node is None:
            raise KeyError(render_path(split_path(path)))
        return to_plain(node, check_size=self.shared)

    def origin(self, path: PathLike) -> Origin | None:
        """Where the value at `path` was set (for a substituted value: where the substitution was written)."""
        node = self.node(path)
        return None if node is None else node.origin

    def sources(self, path: PathLike) -> tuple[Origin, ...]:
        """The origins a substituted or concatenated value at `path` was built from (empty for plain values)."""
        node = self.node(path)
        return node.sources if isinstance(node, (Joined, JoinedLst, JoinedObj)) else ()

    def leaves(self) -> Iterator[tuple[tuple[str, ...], Node]]:
        """Every leaf (scalar or array) with its path, depth first in document order."""
        stack: list[tuple[tuple[str, ...], Node]] = [((), self.root)]
        while stack:
            path, node = stack.pop()
            if isinstance(node, Obj):
                stack.extend(((*path, k), v) for k, v in reversed(node.fields.items()))
            else:
                yield path, node


def to_plain(node: Node, check_size: bool = True) -> Any:
    """Resolved nodes to plain Python data. Shared subtrees are counted first (`check_size`). So a document that
    would expand exponentially ends with E_LIMIT at once instead of filling memory. Nesting deeper than the parser
    allows is E_LIMIT too; substitutions can nest objects in objects. So no consumer of the result (rendering,
    caches, YAML) meets a recursion limit."""
    return _plain_and_size(node, check_size)[0]


def _plain_and_size(node: Node, check_size: bool) -> tuple[Any, int]:
    """The plain value of `node` and its size (`Resolved.size`). With `check_size`, a document over MAX_OUTPUT_NODES
    values ends with `_check_size`'s E_LIMIT. That comes before any other error, as if checked first. The check
    itself runs only once the conversion has reached _CHECK_AFTER units or met an error. So a document of ordinary
    size is walked once, not twice. A bomb is stopped after a few milliseconds."""
    walk = _Walk(node, checked=not check_size)
    try:
        with deep_recursion():
            plain = _convert(node, 0, walk)
    except HoconError:
        walk.check()  # too large a document says so first
        raise
    return plain, walk.size


class _Walk:
    """What a conversion counts. It is a plain object, not a closure: a recursive closure is a reference cycle. That
    would keep each resolved tree alive until the cyclic GC runs, which a compile pauses."""

    __slots__ = ("checked", "root", "size")

    def __init__(self, root: Node, checked: bool) -> None:
        self.root, self.size, self.checked = root, 0, checked

    def check(self) -> None:
        if not self.checked:
            _check_size(self.root)
            self.checked = True


def _convert(n: Node, depth: int, walk: _Walk) -> Any:
    if isinstance(n, Scalar):
        value = n.value
        if value.__class__ is float and (value == _INFINITY or value == -_INFINITY):
            raw = getattr(n, "raw", None) or repr(value)
            raise HoconError(E_SYNTAX, f"number {raw} is too large for a 64-bit float; quote it", n.origin)
        return value
    if depth > MAX_DEPTH:
        raise HoconError(E_LIMIT, f"the resolved value is nested deeper than {MAX_DEPTH} objects and arrays", n.origin)
    if isinstance(n, Obj):
        walk.size += 4 + len(n.fields)
        if walk.size >= _CHECK_AFTER:
            walk.check()
        depth += 1
        return {k: _convert(v, depth, walk) for k, v in n.fields.items()}
    if isinstance(n, Lst):
        walk.size += 2 + len(n.items)
        if walk.size >= _CHECK_AFTER:
            walk.check()
        depth += 1
        return [_convert(v, depth, walk) for v in n.items]
    if isinstance(n, Subst):
        raise HoconError(E_UNRESOLVED_REF, f"${{{render_path(n.path)}}} is not resolved", n.origin)
    raise HoconError(E_UNRESOLVED_REF, "value is not resolved", n.origin)


def _check_size(root: Node) -> None:
    """Raise E_LIMIT when `root` expands to more than MAX_OUTPUT_NODES values (each shared subtree once).

    Sizes are kept by the identity of a container's contents (its fields or items). A substitution's copy shares
    them. So 4,000 copies of a 4,000-item array are counted once, not walked 4,000 times."""
    sizes: dict[int, int] = {}
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if isinstance(node, Obj):
            content: object = node.fields
        elif isinstance(node, Lst):
            content = node.items
        else:
            continue
        if id(content) in sizes:
            continue
        children: list[Node] = list(node.fields.values()) if isinstance(node, Obj) else node.items
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in children if _content_id(c) not in sizes)
            continue
        total = 1 + sum(sizes.get(_content_id(c), 1) for c in children)
        if total > MAX_OUTPUT_NODES:
            raise HoconError(E_LIMIT, f"the resolved document has more than {MAX_OUTPUT_NODES} values", node.origin)
        sizes[id(content)] = total


def _content_id(node: Node) -> int:
    if isinstance(node, Obj):
        return id(node.fields)
    if isinstance(node, Lst):
        return id(node.items)
    return 0  # a scalar: never in `sizes`
