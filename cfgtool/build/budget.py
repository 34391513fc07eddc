"""What the resolved configs of one compile may cost (docs/security.md). A few hundred bytes that every node inherits
could otherwise expand to gigabytes. Sizes are `Resolved.size` units, about 50 bytes each, counted per process. A
forked build worker spends its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from cfgtool.diagnostics import Diagnostic
from cfgtool.hocon import Resolved
from cfgtool.hocon.values import Obj

BUDGET = 2_000_000
BUDGET_PER_NODE = 1_000


class Budget:
    """The budget of a compile of `nodes` nodes. Once it is spent, every later node fails with the same E_LIMIT."""

    def __init__(self, nodes: int) -> None:
        self.left = BUDGET + BUDGET_PER_NODE * nodes
        self.over: Diagnostic | None = None  # the E_LIMIT, once spent

    def spend(self, key: str, size: int, resolved: Callable[[], Resolved]) -> Diagnostic | None:
        """Spend `size` on the config of `key`; the E_LIMIT for it once the budget is spent. `resolved` gives that
        config's resolution, to say where it is large. It is asked for once."""
        if self.over is None:
            self.left -= size
            if self.left >= 0:
                return None
            self.over = _over_budget(key, resolved())
            return self.over
        return replace(self.over, key=key)


def _over_budget(key: str, resolved: Resolved) -> Diagnostic:
    """E_LIMIT for the node whose config spent the budget, at the assignment of its largest top-level value. That is
    where an expanding document most likely is. The message names no node. So every node failing for the same reason
    is one diagnostic."""
    root = resolved.root
    fields = root.fields if isinstance(root, Obj) else {}
    largest = max(fields, key=lambda k: _cost(resolved.value[k]), default=None)
    origin = fields[largest].origin if largest is not None else root.origin
    total = f"{BUDGET:,} + {BUDGET_PER_NODE:,} per node"
    message = (
        f"the resolved configs of this store are larger than its budget ({total}, in units of about 50 bytes); "
        "the largest value of the first node over it is set here: if many nodes inherit it and its substitutions "
        "copy arrays or objects into each other, make it smaller"
    )
    return Diagnostic.of("E_LIMIT", message, key=key, file=origin.file, line=origin.line, col=origin.col)


def _cost(value: Any) -> int:
    """Plain values and containers below `value` (iterative: values may be nested 400 deep)."""
    count, todo = 0, [value]
    while todo:
        item = todo.pop()
        count += 1
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return count
