"""Node assembly that both HOCON parsers share: the general one in `parser`, the fast path in `fastparse`. It covers
concatenations, `+=` appends and the merging of a field defined again in the same parse."""

from __future__ import annotations

from cfgtool.hocon.errors import E_TYPE, HoconError
from cfgtool.hocon.merge import merge_nodes
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.values import Concat, Lst, Merge, Node, Obj, Scalar, Ws


def concat(parts: list[Node]) -> Node:
    """A concatenation; literal type conflicts (`[1] x`, `{} []`) are reported now, others at resolve."""
    has_obj = has_list = has_str = False
    for part in parts:
        if isinstance(part, Obj):
            has_obj = True
        elif isinstance(part, Lst):
            has_list = True
        elif type(part) is not Ws and isinstance(part, Scalar):
            has_str = True
    if (has_obj and has_list) or ((has_obj or has_list) and has_str):
        raise HoconError(
            E_TYPE,
            "cannot concatenate objects or arrays with strings or each other here; "
            "quote the text or put it on its own key",
            parts[0].origin,
        )
    if has_obj or has_list:
        parts = _consolidate(parts)
        if len(parts) == 1:
            return parts[0]
    return Concat(parts, parts[0].origin)


def append_in_place(old: Node | None, item: Node, origin: Origin) -> bool:
    """`key += item` right after an array literal or another `+=` of the same key in this object. It adds `item` to
    that array instead of stacking one more definition (`${?key} [item]`). Stacking made 100,000 appends quadratic.
    Only an item without substitutions: one could refer to the key, and see a different value."""
    if old is None or not _plain(item):
        return False
    if type(old) is Lst:
        target = old
    elif type(old) is Concat and old.append and type(old.parts[-1]) is Lst:
        target = old.parts[-1]
    else:
        return False
    target.items.append(item)
    old.origin = origin
    return True


def _plain(node: Node) -> bool:
    """Whether `node` holds no substitution (nesting is bounded by MAX_DEPTH)."""
    if isinstance(node, Obj):
        return all(_plain(v) for v in node.fields.values())
    if isinstance(node, Lst):
        return all(_plain(v) for v in node.items)
    return isinstance(node, Scalar)


def merge_owned(high: Node, low: Node) -> Node:
    """`merge_nodes` for a field this parse defines again. `low` was built by this parse and nothing else holds it.
    So objects are merged into it in place. 100,000 `a.kI = I` lines then cost linear time, where copying `a`'s
    fields for each line was quadratic."""
    if type(high) is Obj and type(low) is Obj:
        fields = low.fields
        for key, value in high.fields.items():
            old = fields.get(key)
            fields[key] = value if old is None else merge_owned(value, old)
        low.origin = high.origin
        return low
    if type(high) is Obj and type(low) is Merge and type(low.stack[0]) is Obj:  # an object over a non-object
        low.stack[0] = merge_owned(high, low.stack[0])
        low.origin = high.origin
        return low
    return merge_nodes(high, low)


def _consolidate(parts: list[Node]) -> list[Node]:
    """Join adjacent object literals (and adjacent array literals) of a concatenation now, as Lightbend does.

    `{x = 1} {y = ${a.x}}` then is one object. So `${a.x}` finds `x` without resolving `a` (no false cycle). A field
    that a later object overrides is never resolved. The whitespace between containers does not count; pieces around
    a substitution stay for the resolver.
    """
    out: list[Node] = []
    for part in parts:
        if isinstance(part, (Obj, Lst)):
            last = len(out) - 1
            while last >= 0 and type(out[last]) is Ws:
                last -= 1
            prev = out[last] if last >= 0 else None
            if isinstance(part, Obj) and isinstance(prev, Obj):
                del out[last:]
                part = merge_nodes(part, prev)
            elif isinstance(part, Lst) and isinstance(prev, Lst):
                del out[last:]
                part = Lst([*prev.items, *part.items], prev.origin)
        out.append(part)
    return out
