"""The access log of `cfgtool serve` (docs/serving.md): one JSON line per request, on stderr or a file.

Each line holds the time (UTC, milliseconds), the principal (null without tokens), method, path (without its
query), store, key, version, status, body bytes, duration in seconds and the client's instance id (its
`Cfgtool-Instance` header, else null); never a token, another header's value or a config value. Lines are
built from C-level string escapes (the fields that follow from the path are formatted once per path) and
written in batches (every `FLUSH_SECONDS` or `FLUSH_LINES` lines, and
at shutdown), whole lines at a time, so logging costs the hot path a few microseconds and stays readable
when it shares stderr with the server's messages.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from json.encoder import encode_basestring as _quote
from typing import Any, BinaryIO

FLUSH_SECONDS = 0.5
FLUSH_LINES = 512
INSTANCE_LIMIT = 200  # characters of a Cfgtool-Instance header kept
MIDDLES_KEPT = 4096  # (method, path, version) fields remembered formatted; forgotten all at once past that
VERSION = re.compile(r"[0-9]{1,9}")

PRINCIPAL: contextvars.ContextVar[str | None] = contextvars.ContextVar("cfgtool_principal", default=None)
"""The principal of the request being answered (set by the token check, read when the request is logged)."""

Message = MutableMapping[str, Any]


class Exchange:
    """An ASGI `send` that notes what the answer was: status, body bytes, `Cfgtool-Version`."""

    __slots__ = ("_send", "bytes", "started", "status", "version")

    def __init__(self, send: Callable[[Message], Awaitable[None]]) -> None:
        self._send = send
        self.started = time.perf_counter()
        self.status = 0
        self.bytes = 0
        self.version: bytes | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.body":
            self.bytes += len(message.get("body", b""))
        elif message["type"] == "http.response.start":
            self.status = message["status"]
            for name, value in message.get("headers", ()):
                if name == b"cfgtool-version":
                    self.version = value
        await self._send(message)


def _json(value: str | None) -> str:
    return "null" if value is None else _quote(value)


def _middle(method: str, path: str, answered: bytes | None) -> str:
    """The fields of a line that follow from the request's method and path (and the version a `current`
    answer names): `"method":...,"path":...,"store":...,"key":...,"version":...,`."""
    store = key = version = None
    parts = path.split("/", 6)
    if len(parts) > 2 and parts[1] == "v1" and parts[2] != "stores":
        store = parts[2]
        if len(parts) > 4 and parts[3] == "current" and parts[4] == "keys":
            key = "/" + "/".join(parts[5:]).rstrip("/")
        elif len(parts) > 5 and parts[3] == "versions":
            key = "/" + parts[6].rstrip("/") if len(parts) > 6 else "/"
            if VERSION.fullmatch(parts[4]):
                version = parts[4]
        if key is not None and version is None and answered is not None:  # current/..., versions/current/...
            version = answered.decode("latin-1")
    return (
        f'"method":{_quote(method)},"path":{_quote(path)},"store":{_json(store)},"key":{_json(key)},'
        f'"version":{version or "null"},'
    )


class AccessLog:
    """Writes the access log's lines to `stream` (a binary file or stderr's descriptor)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lines: list[str] = []
        self._flushing: asyncio.TimerHandle | None = None
        self._second = -1
        self._stamp = ""
        self._middles: dict[tuple[str, str, bytes | None], str] = {}  # the same paths come again and again

    def _time(self, now: float) -> str:
        second = int(now)
        if second != self._second:  # formatting a date costs more than a request: once a second
            self._second = second
            self._stamp = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return f"{self._stamp}.{int((now - second) * 1000):03d}Z"

    def request(self, scope: MutableMapping[str, Any], exchange: Exchange) -> None:
        """Log one answered request."""
        now = time.time()
        what = (scope["method"], scope["path"], exchange.version)
        middle = self._middles.get(what)
        if middle is None:
            if len(self._middles) >= MIDDLES_KEPT:
                self._middles.clear()
            middle = self._middles[what] = _middle(*what)
        instance = "null"
        for name, value in scope["headers"]:
            if name == b"cfgtool-instance":
                instance = _quote(value[:INSTANCE_LIMIT].decode("latin-1"))
        who = PRINCIPAL.get()
        self._add(
            f'{{"time":"{self._time(now)}","principal":{"null" if who is None else _quote(who)},{middle}'
            f'"status":{exchange.status},"bytes":{exchange.bytes},'
            f'"duration":{time.perf_counter() - exchange.started:.6f},"instance":{instance}}}\n'
        )

    def refused(self, status: int, size: int) -> None:
        """Log a request answered by the connection itself (431, 408, 429 for too many connections, 400 for
        one that is not HTTP)."""
        self._add(
            f'{{"time":"{self._time(time.time())}","principal":null,"method":null,"path":null,"store":null,'
            f'"key":null,"version":null,"status":{status},"bytes":{size},"duration":0.0,"instance":null}}\n'
        )

    def _add(self, line: str) -> None:
        self._lines.append(line)
        if len(self._lines) >= FLUSH_LINES:
            self.flush()
        elif self._flushing is None:
            self._flushing = asyncio.get_running_loop().call_later(FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        """Write the lines gathered so far (whole lines, one write)."""
        if self._flushing is not None:
            self._flushing.cancel()
            self._flushing = None
        if self._lines:
            text, self._lines = "".join(self._lines), []
            self._stream.write(text.encode("utf-8", "backslashreplace"))
            self._stream.flush()
