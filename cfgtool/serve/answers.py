"""Prebuilt answers: a JSON body as bytes and its ETag, built once and served as they are.

Bodies are canonical JSON: sorted keys, no whitespace, UTF-8. So the ETag `"sha256:<hex>"` of a body is the hash of
its canonical JSON (docs/serving.md). Two replicas build byte-identical answers from the same version. `Bounded` is
the one cache shape of the server: a dictionary that forgets its oldest entries past a size.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import secrets
from collections import OrderedDict
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from cfgtool.snapshot.model import canonical_json
from cfgtool.versions.names import version_number

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

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


def error(status: int, code: str, message: str, did_you_mean: str | None = None) -> Answer:
    """docs/serving.md's error body: `{"error": CODE, "message": ...}`, and `did_you_mean` when there is one."""
    near = {"did_you_mean": did_you_mean} if did_you_mean is not None else {}
    return answer({"error": code, "message": message, **near}, status)


def etag_matches(if_none_match: bytes | None, etag: bytes) -> bool:
    """Whether an `If-None-Match` header names `etag` (a list of tags, `*`, or weak `W/` tags)."""
    if not if_none_match:
        return False
    if if_none_match.strip() == b"*":
        return True
    return any(tag.strip().removeprefix(b"W/") == etag for tag in if_none_match.split(b","))


class Bounded(Generic[K, V]):
    """A dictionary of at most `size` entries that drops the least recently used one. So hostile input, such as every
    possible key name, cannot grow it. Given `weight` (an answer's bytes), it holds at most `max_weight` in all. A
    few thousand made-up names under a large config must not hold gigabytes."""

    def __init__(self, size: int, weight: Callable[[V], int] | None = None, max_weight: int = 0) -> None:
        self.size = size
        self.max_weight = max_weight
        self.total = 0  # the entries' weight
        self._weight = weight
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        found = self._items.get(key)
        if found is not None:
            with contextlib.suppress(KeyError):  # dropped meanwhile by a worker thread's put
                self._items.move_to_end(key)
        return found

    def put(self, key: K, value: V) -> V:
        weigh = self._weight
        if weigh is not None:
            before = self._items.get(key)
            self.total += weigh(value) - (weigh(before) if before is not None else 0)
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size or (weigh is not None and self.total > self.max_weight):
            try:
                _, dropped = self._items.popitem(last=False)
            except KeyError:  # emptied meanwhile by a worker thread's put
                break
            if weigh is not None:
                self.total -= weigh(dropped)
        return value

    def pop(self, key: K) -> None:
        """Forget `key` (nothing when it is not held)."""
        dropped = self._items.pop(key, None)
        if dropped is not None and self._weight is not None:
            self.total -= self._weight(dropped)

    def get_or_build(self, key: K, build: Callable[[], V]) -> V:
        found = self.get(key)
        return found if found is not None else self.put(key, build())

    def __len__(self) -> int:
        return len(self._items)


Headers = list[tuple[bytes, bytes]]
log = logging.getLogger("cfgtool.serve")
ErrorPage = Callable[[Answer, "Request | None"], "Response"]
"""An error the server answers before any route runs (a 405, a 421, a 431), shown as a part's own page (the console's
under /ui): given the JSON error and the request (None when the connection answers before it has one)."""


class Denied(Exception):
    """A request that ends with an error answer (raised by the helpers, answered by the routes)."""

    def __init__(self, found: Answer, headers: Headers | None = None) -> None:
        super().__init__(found.status)
        self.answer = found
        self.headers = headers or []


def not_found(what: str) -> Denied:
    return Denied(error(404, "not_found", what))


def unservable(number: int) -> Denied:
    """The 404 of a version whose compile reports errors. The errors themselves may name values the principal may not
    read. So they go only to super users (`/healthz`)."""
    return not_found(f"version {number} cannot be served: its compile reports errors")


def url_version(text: str) -> int:
    """A URL's version number (`version_number`), else Denied 404, as for a version that does not exist. `007` is not
    7, so each version has one URL."""
    number = version_number(text)
    if number is None:
        raise not_found(f"no version {text[:20]!r}: a version number is 1 to 9 digits without a leading zero")
    return number


def internal(exc: BaseException, scope: MutableMapping[str, Any]) -> Answer:
    """The answer to an unexpected exception (a bug). One log line names it by a random id. The 500 holds that id and
    nothing else about the server's insides."""
    found = scope.get("cfgtool.error")
    if found is not None:  # already logged and answered (by Starlette's handler below the fast path)
        return found  # type: ignore[no-any-return]
    ident = secrets.token_hex(8)
    frame = exc.__traceback__
    while frame is not None and frame.tb_next is not None:
        frame = frame.tb_next
    where = f" at {frame.tb_frame.f_code.co_filename}:{frame.tb_lineno}" if frame is not None else ""
    what = repr(f"{type(exc).__name__}: {exc}")[:300]
    log.error("internal error %s: %s %s%s", ident, scope.get("method"), what, where)
    message = f"an internal error; the server's log names it {ident}"
    found = answer({"error": "E_INTERNAL", "id": ident, "message": message}, 500)
    scope["cfgtool.error"] = found
    return found
