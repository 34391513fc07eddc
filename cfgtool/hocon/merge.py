"""`withFallback` on unresolved nodes: the one merge rule used for duplicate keys, includes and layers."""

from __future__ import annotations

from collections.abc import Sequence

from cfgtool.hocon.errors import E_LIMIT, HoconError
from cfgtool.hocon.values import Concat, Lst, Merge, Node, Obj, Scalar, Subst

MAX_DEFINITIONS = 1_000  # definitions one value keeps while substitutions decide between them


def merge_nodes(high: Node, low: Node) -> Node:
    """Merge `low` under `high` as HOCON does.

    Objects merge key by key. A resolved non-object in `high` hides `low`. An object never merges with a non-object
    below it. `high` may be unresolved: a substitution or concatenation, or an object over one. The outcome then
    depends on resolution, so both are kept as a delayed `Merge`, highest first. An object over a non-object keeps it
    too, at the bottom of a `Merge`. It hides whatever is merged below later (Lightbend's "ignores fallbacks"). So
    `a = 1` then `a.x = 2` in one layer does not take a lower layer's `a.y`.
    """
    if isinstance(high, Obj):
        if isinstance(low, Obj):
            fields = dict(low.fields)
            for key, value in high.fields.items():
                old = fields.get(key)
                fields[key] = value if old is None else merge_nodes(value, old)
            return Obj(fields, high.origin)
        if isinstance(low, (Subst, Concat, Merge)):
            return _delayed([high, *_stack(low)])
        return _delayed([high, low])
    if isinstance(high, (Subst, Concat)):
        return _delayed([high, *_stack(low)])
    if isinstance(high, Merge):
        if isinstance(high.stack[-1], (Scalar, Lst)):
            return high  # the stack already ends in a value that hides everything below
        if isinstance(high.stack[-1], Obj) and not isinstance(low, (Obj, Subst, Concat, Merge)):
            return high
        return _delayed([*high.stack, *_stack(low)])
    return high


def merge_all(nodes: Sequence[Node]) -> Node:
    """`withFallback` of several definitions, the first highest priority. They are folded from the lowest up. So a
    non-object in the middle hides every object below it: `{x=1}`, `null`, `{y=2}` is `{x=1}`."""
    result = nodes[-1]
    for higher in reversed(nodes[:-1]):
        result = merge_nodes(higher, result)
    return result


def _delayed(stack: list[Node]) -> Merge:
    """A delayed merge; E_LIMIT past MAX_DEFINITIONS. Each kept definition costs the resolver a pass over the ones
    below it. So 70,000 `a = ${?a} [1]` lines would take minutes and gigabytes."""
    if len(stack) > MAX_DEFINITIONS:
        raise HoconError(
            E_LIMIT,
            f"more than {MAX_DEFINITIONS:,} definitions of one value depend on substitutions; "
            "write the value once (an array literal, or '+=' with plain values)",
            stack[0].origin,
        )
    return Merge(stack, stack[0].origin)


def _stack(node: Node) -> list[Node]:
    return node.stack if isinstance(node, Merge) else [node]
