"""The engine's recursion allowance, apart from the engine. Renderers of resolved values need it too. They must not
import the parser and resolver for it: a cached `cfgtool get` renders without them."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

RECURSION_LIMIT = 15_000  # deep documents and long substitution chains recurse; Python's default is 1,000


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Allow the recursion that deep documents and long `+=` chains need, for the duration of a call."""
    previous = sys.getrecursionlimit()
    if previous < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        yield
    finally:
        if previous < RECURSION_LIMIT:
            sys.setrecursionlimit(previous)
