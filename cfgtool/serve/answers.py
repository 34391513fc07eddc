"""Prebuilt answers: a JSON body as bytes and its ETag, built once and served as they are.

Bodies are canonical JSON (sorted keys, no whitespace, UTF-8), so the ETag `"sha256:<hex>"` of a body is the
hash of its canonical JSON (DESIGN 12), and two replicas build byte-identical answers from the same version.
`Bounded` is the one cache shape of the server: a dictionary that forgets its oldest entries past a size.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, NamedTuple, TypeVar

from cfgtool.snapshot import canonical_json

K = TypeVar("K")
V = TypeVar("V")


class Answer(NamedTuple):
    """A JSON answer: status, body bytes and ETag header value (with its quotes)."""

    status: int
    body: bytes
    etag: bytes


def answer(value: Any, status: int = 200) -> Answer:
    """`value` as a prebuilt answer."""
    return prebuilt(canonical_json(value).encode("utf-8"), status)


def prebuilt(body: bytes, status: int = 200) -> Answer:
    """A body that already is canonical JSON, with its ETag."""
    return Answer(status, body, b'"sha256:' + hashlib.sha256(body).hexdigest().encode("ascii") + b'"')


def error(status: int, code: str, message: str) -> Answer:
    """DESIGN 12's error body: `{"error": CODE, "message": ...}`."""
    return answer({"error": code, "message": message}, status)


def etag_matches(if_none_match: bytes | None, etag: bytes) -> bool:
    """Whether an `If-None-Match` header names `etag` (a list of tags, `*`, or weak `W/` tags)."""
    if not if_none_match:
        return False
    if if_none_match.strip() == b"*":
        return True
    return any(tag.strip().removeprefix(b"W/") == etag for tag in if_none_match.split(b","))


class Bounded(Generic[K, V]):
    """A dictionary of at most `size` entries that drops the least recently used one (hostile input, such as
    every possible key name, cannot grow it)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._items.get(key)
        if found is not None:
            with contextlib.suppress(KeyError):  # dropped meanwhile by a worker thread's put
                self._items.move_to_end(key)
        return found

    def put(self, key: K, value: V) -> V:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            with contextlib.suppress(KeyError):
                self._items.popitem(last=False)
        return value

    def pop(self, key: K) -> None:
        """Forget `key` (nothing when it is not held)."""
        self._items.pop(key, None)

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        found = self.get(key)
        return found if found is not None else self.put(key, build())

    def __len__(self) -> int:
        return len(self._items)
