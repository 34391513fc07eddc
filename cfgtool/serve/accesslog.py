"""The access log of `cfgtool serve` (docs/serving.md): one JSON line per request, on stderr or a file.

Each line holds the time (UTC, milliseconds), the principal (null without tokens), method and path (without its
query). Then store, key, version, status, body bytes and duration in seconds. Then the client's instance id: its
`Cfgtool-Instance` header, else null. A line never holds a token, another header's value or a config value.

Logging costs a request a few microseconds. The request only notes its clock readings, principal and ASGI scope. In
that scope the answer's sender recorded what it sent (`SENT`). The lines are formatted in batches when they are
written: every `FLUSH_SECONDS` or `FLUSH_LINES` lines, and at shutdown. Formatting uses C-level string escapes. The
fields that follow from the path are formatted once per path. Whole lines are written at a time, so the log stays
readable when it shares stderr with the server's messages.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from json.encoder import encode_basestring as _quote
from typing import Any, BinaryIO

from cfgtool.versions.names import version_number

FLUSH_SECONDS = 0.5
FLUSH_LINES = 512
INSTANCE_LIMIT = 200  # characters of a Cfgtool-Instance header kept
HEADS_KEPT = 16384  # lines' fields from principal to bytes remembered formatted; forgotten all at once past that
HEAD_PATH = 200  # ... for paths up to this length (a few MB at most; a hostile stream of long ones is not kept)
SENT = "cfgtool.sent"
"""The scope entry where the sender of an answer notes `(status, body bytes, Cfgtool-Version or None)`."""
NOTHING_SENT = (0, 0, None)
MIDDLE = '"method":%s,"path":%s,"store":%s,"key":%s,"version":%s,'
HEAD = '"principal":%s,%s"status":%d,"bytes":%d,'
MILLIS = [f"{ms:03d}" for ms in range(1000)]  # a line's milliseconds, looked up rather than formatted

PRINCIPAL: contextvars.ContextVar[str | None] = contextvars.ContextVar("cfgtool_principal", default=None)
"""The principal of the request being answered (set by the token check, read when the request is logged)."""

Message = MutableMapping[str, Any]
Scope = MutableMapping[str, Any]


class Exchange:
    """An ASGI `send` that notes in the scope (`SENT`) what the answer was. It is for an application that sends its
    own messages: the routes behind the fast path, which notes it itself."""

    __slots__ = ("_scope", "_send")

    def __init__(self, scope: Scope, send: Callable[[Message], Awaitable[None]]) -> None:
        self._scope = scope
        self._send = send

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.body":
            status, size, version = self._scope.get(SENT, NOTHING_SENT)
            self._scope[SENT] = (status, size + len(message.get("body", b"")), version)
        elif message["type"] == "http.response.start":
            version = None
            for name, value in message.get("headers", ()):
                if name == b"cfgtool-version":
                    version = value
            self._scope[SENT] = (message["status"], 0, version)
        await self._send(message)


def _json(value: str | None) -> str:
    return "null" if value is None else _quote(value)


def _middle(method: str, path: str, answered: bytes | None) -> str:
    """The fields of a line that follow from the request's method and path, and the version a `current` answer names.
    They are `"method":...,"path":...,"store":...,"key":...,"version":...,`."""
    store = key = version = None
    parts = path.split("/", 5)  # '', v1, store, current|versions, keys|N, the rest
    if len(parts) > 2 and parts[1] == "v1" and parts[2] != "stores":
        store = parts[2]
        if len(parts) > 4 and parts[3] == "current" and parts[4] == "keys":
            key = "/" + parts[5].rstrip("/") if len(parts) > 5 else "/"
        elif len(parts) > 5 and parts[3] == "versions":
            key = "/" + parts[5].partition("/")[2].rstrip("/")  # after keys/, tags/, ...
            if version_number(parts[4]) is not None:
                version = parts[4]
        if key is not None and version is None and answered is not None:  # current/..., versions/current/...
            version = answered.decode("latin-1")
    return MIDDLE % (_quote(method), _quote(path), _json(store), _json(key), version or "null")


class AccessLog:
    """Writes the access log's lines to `stream` (a binary file or stderr's descriptor)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._entries: list[tuple[float, float, str, bytes | None] | str] = []  # requests, and refusals' lines
        self._flushing: asyncio.TimerHandle | None = None
        self._second = -1
        self._stamp = ""
        self._heads: dict[tuple[str | None, str, str, bytes | None, int, int], str] = {}  # the same reads recur

    def _time(self, now: float) -> str:
        second = int(now)
        if second != self._second:  # formatting a date costs more than a request: once a second
            self._second = second
            self._stamp = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self._stamp}.{MILLIS[int((now - second) * 1000)]}Z"

    def request(self, scope: Scope, started: float, instance: bytes | None) -> None:
        """Log one answered request (`started`: its `time.perf_counter()` when it arrived; `instance`: its
        `Cfgtool-Instance` header). Only numbers, strings and bytes are kept until the flush. Keeping the scope would
        keep its containers alive across the collector's young generation. That costs more than taking them apart
        now."""
        now, duration, who = time.time(), time.perf_counter() - started, PRINCIPAL.get()
        status, size, version = scope.get(SENT, NOTHING_SENT)
        method, path = scope["method"], scope["path"]
        what = (who, method, path, version, status, size)
        head = self._heads.get(what)
        if head is None:
            head = HEAD % ("null" if who is None else _quote(who), _middle(method, path, version), status, size)
            if len(path) <= HEAD_PATH:
                if len(self._heads) >= HEADS_KEPT:
                    self._heads.clear()
                self._heads[what] = head
        self._entries.append((now, duration, head, instance))
        if len(self._entries) >= FLUSH_LINES:
            self.flush()
        elif self._flushing is None:
            self._flushing = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self.flush)

    def refused(self, status: int, size: int) -> None:
        """Log a request answered by the connection itself (431, 408, 429 for too many connections, 400 for
        one that is not HTTP)."""
        self._entries.append(
            f'{{"time":"{self._time(time.time())}","principal":null,"method":null,"path":null,"store":null,'
            f'"key":null,"version":null,"status":{status},"bytes":{size},"duration":0.0,"instance":null}}\n'
        )
        if len(self._entries) >= FLUSH_LINES:
            self.flush()
        elif self._flushing is None:
            self._flushing = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        """Write the lines gathered so far (whole lines, one write)."""
        if self._flushing is not None:
            self._flushing.cancel()
            self._flushing = None
        if not self._entries:
            return
        entries, self._entries = self._entries, []
        lines = []
        for entry in entries:
            if isinstance(entry, str):
                lines.append(entry)
                continue
            now, duration, head, instance = entry
            sent = "null" if instance is None else _quote(instance[:INSTANCE_LIMIT].decode("latin-1"))
            second = int(now)
            if second != self._second:  # formatting a date costs more than a request: once a second
                self._second = second
                self._stamp = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
            lines.append(
                f'{{"time":"{self._stamp}.{MILLIS[int((now - second) * 1000)]}Z",{head}'
                f'"duration":{duration:.6f},"instance":{sent}}}\n'
            )
        self._stream.write("".join(lines).encode("utf-8", "backslashreplace"))
        self._stream.flush()
