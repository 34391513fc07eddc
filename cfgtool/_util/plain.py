"""Reading plain resolved configs (nested dicts and lists) by path: one helper for every reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final[Any] = _Missing()  # what `value_at` returns when nothing is at the path (None is a value)


def value_at(config: Mapping[str, Any] | None, path: tuple[str, ...]) -> Any:
    """The value at `path` (a tuple of keys) in a plain config, or `MISSING`."""
    value: Any = config if config is not None else {}
    for part in path:
        if not isinstance(value, Mapping) or part not in value:
            return MISSING
        value = value[part]
    return value
