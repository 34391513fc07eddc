"""The unresolved value model: immutable-by-convention nodes, each with an `Origin`.

The parser builds these; the resolver turns a tree of them into plain Python values plus provenance.
Nodes never point at their parents: context travels in the resolver's arguments (as in Lightbend config).

- `Scalar`: a string, int, float, bool or None (`null`). `quoted` says whether a string was quoted.
  `Num` keeps a number's source text; `Joined` is a resolved scalar built from other values.
- `Obj`: fields in source order (`dict[str, Node]`).
- `Lst`: items.
- `Subst`: `${path}` / `${?path}`; `path` is a tuple of keys. `prefix` is how many leading keys were added
  when the document was included inside an object (the lookup falls back to the path without them).
- `Concat`: a value concatenation (`a ${b} c`, `${x} [1]`, `${o} {k: v}`); `Ws` parts are the unquoted
  whitespace between pieces, which counts in string concatenation and is dropped otherwise.
- `Merge`: a delayed merge of several definitions of one path, highest priority first; created when a
  higher definition is not yet resolved (it contains a substitution), so lower ones must be kept.
"""

from __future__ import annotations

from typing import Any

from cfgtool.hocon.origin import Origin

ScalarValue = str | int | float | bool | None


class Node:
    """Base class of every unresolved value."""

    __slots__ = ("origin",)
    origin: Origin


class Scalar(Node):
    __slots__ = ("quoted", "value")

    def __init__(self, value: ScalarValue, origin: Origin, quoted: bool = False) -> None:
        self.value = value
        self.origin = origin
        self.quoted = quoted

    def __repr__(self) -> str:
        return f"Scalar({self.value!r})"

    def __reduce__(self) -> tuple[type[Scalar], tuple[Any, ...]]:
        return (Scalar, (self.value, self.origin, self.quoted))


class Num(Scalar):
    """A number as written: `raw` keeps its text (`1.50`), which string concatenation uses."""

    __slots__ = ("raw",)

    def __init__(self, value: int | float, origin: Origin, raw: str) -> None:
        self.value = value
        self.origin = origin
        self.quoted = False
        self.raw = raw

    def __reduce__(self) -> tuple[type[Num], tuple[Any, ...]]:
        return (Num, (self.value, self.origin, self.raw))


class Joined(Scalar):
    """A resolved value built by substitution or concatenation. `sources` are the origins it came from. `raw` keeps a
    substituted number's text (`1.50`) for later concatenation."""

    __slots__ = ("raw", "sources")

    def __init__(self, value: ScalarValue, origin: Origin, sources: tuple[Origin, ...], raw: str | None = None) -> None:
        self.value = value
        self.origin = origin
        self.quoted = True
        self.sources = sources
        self.raw = raw

    def __reduce__(self) -> tuple[type[Joined], tuple[Any, ...]]:
        return (Joined, (self.value, self.origin, self.sources, self.raw))


class Ws(Node):
    """Unquoted whitespace between concatenated pieces."""

    __slots__ = ("value",)

    def __init__(self, value: str, origin: Origin) -> None:
        self.value = value
        self.origin = origin

    def __repr__(self) -> str:
        return f"Ws({self.value!r})"

    def __reduce__(self) -> tuple[type[Ws], tuple[Any, ...]]:
        return (Ws, (self.value, self.origin))


class Obj(Node):
    __slots__ = ("fields", "static")

    def __init__(self, fields: dict[str, Node], origin: Origin) -> None:
        self.fields = fields
        self.origin = origin
        self.static: bool | None = None  # no substitution anywhere below (computed by the resolver once)

    def __repr__(self) -> str:
        return f"Obj({self.fields!r})"

    def __reduce__(self) -> tuple[type[Obj], tuple[Any, ...]]:
        return (Obj, (self.fields, self.origin))


class Lst(Node):
    __slots__ = ("items", "static")

    def __init__(self, items: list[Node], origin: Origin) -> None:
        self.items = items
        self.origin = origin
        self.static: bool | None = None  # no substitution anywhere below (computed by the resolver once)

    def __repr__(self) -> str:
        return f"Lst({self.items!r})"

    def __reduce__(self) -> tuple[type[Lst], tuple[Any, ...]]:
        return (Lst, (self.items, self.origin))


class JoinedObj(Obj):
    """A resolved object that a substitution produced: `origin` is the substitution, `sources` the object's."""

    __slots__ = ("sources",)

    def __init__(self, fields: dict[str, Node], origin: Origin, sources: tuple[Origin, ...]) -> None:
        self.fields = fields
        self.origin = origin
        self.sources = sources
        self.static = True

    def __reduce__(self) -> tuple[type[JoinedObj], tuple[Any, ...]]:
        return (JoinedObj, (self.fields, self.origin, self.sources))


class JoinedLst(Lst):
    """A resolved array that a substitution produced: `origin` is the substitution, `sources` the array's."""

    __slots__ = ("sources",)

    def __init__(self, items: list[Node], origin: Origin, sources: tuple[Origin, ...]) -> None:
        self.items = items
        self.origin = origin
        self.sources = sources
        self.static = True

    def __reduce__(self) -> tuple[type[JoinedLst], tuple[Any, ...]]:
        return (JoinedLst, (self.items, self.origin, self.sources))


class Subst(Node):
    __slots__ = ("optional", "path", "prefix")

    def __init__(self, path: tuple[str, ...], optional: bool, origin: Origin, prefix: int = 0) -> None:
        self.path = path
        self.optional = optional
        self.origin = origin
        self.prefix = prefix

    def __repr__(self) -> str:
        return f"Subst({'?' if self.optional else ''}{'.'.join(self.path)})"

    def __reduce__(self) -> tuple[type[Subst], tuple[Any, ...]]:
        return (Subst, (self.path, self.optional, self.origin, self.prefix))


class Concat(Node):
    """`append` marks the concatenation `key += value` wrote (`${?key} [value]`), for messages."""

    __slots__ = ("append", "parts")

    def __init__(self, parts: list[Node], origin: Origin, append: bool = False) -> None:
        self.parts = parts
        self.origin = origin
        self.append = append

    def __repr__(self) -> str:
        return f"Concat({self.parts!r})"

    def __reduce__(self) -> tuple[type[Concat], tuple[Any, ...]]:
        return (Concat, (self.parts, self.origin, self.append))


class Merge(Node):
    __slots__ = ("stack",)

    def __init__(self, stack: list[Node], origin: Origin) -> None:
        self.stack = stack
        self.origin = origin

    def __repr__(self) -> str:
        return f"Merge({self.stack!r})"

    def __reduce__(self) -> tuple[type[Merge], tuple[Any, ...]]:
        return (Merge, (self.stack, self.origin))
