"""What `attach` builds once per application: the typed lookup of every node for a set of paths. It is kept per
(application, store, commit, variables, columns), as `configs()` keeps each version's JSON.

A second `attach` of the same paths in the same application therefore does no driver work beyond its join. That holds
for any loader, since they share the pin. Later applications find the lookup on disk (`stored`). Lookups with
revealed secrets are never kept. Opened values live only as long as the call that asked for them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")
_LIMIT = 32  # entries kept (least recently used dropped first); each is one lookup of every node
_LOCK = threading.Lock()
_KEPT: OrderedDict[Hashable, object] = OrderedDict()


def kept(key: Hashable, build: Callable[[], T]) -> T:
    """The value kept for `key`, else `build()`, kept. Two threads may both build it; either result serves."""
    with _LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]  # type: ignore[return-value]  # stored by this function with this key
    value = build()
    with _LOCK:
        _KEPT[key] = value
        while len(_KEPT) > _LIMIT:
            _KEPT.popitem(last=False)
    return value


def clear() -> None:
    """Forget every kept lookup (a benchmark timing a first `attach`, or to free memory)."""
    with _LOCK:
        _KEPT.clear()
