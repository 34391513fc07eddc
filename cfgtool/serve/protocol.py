"""The server's HTTP/1.1 connections: uvicorn's httptools protocol with the transport limits of docs/serving.md.

httptools (llhttp) has no limit on the size of a request's head. It buffers a header of any length until its end
arrives. So four connections sending 250 MB of headers held a gigabyte. And uvicorn closes only idle keep-alive
connections: a request sent half-way stays open forever. This subclass enforces the limits in front of the parser. It
costs a length check per received chunk: no measurable change in throughput. uvicorn's h11 protocol has a head limit
but serves about half as many requests a second:

- the request line and headers together at most `HEAD_LIMIT` bytes: past that the bytes are never handed to
  the parser and the answer is 431 (the page of the part whose path it is, from the URL read so far: the
  console's under /ui; see `Api.error_page`);
- a request arrives complete within `REQUEST_TIMEOUT` seconds of its first byte (or of the connection's
  opening), else 408 and the connection is closed (one sweep a second over the connections finds them, which
  costs less than a timer per request);
- at most `per_client` open connections from one client address (the socket's peer; a proxy named by
  `--forwarded-allow-ips` is not capped): one more is answered 429 and closed, so a single client cannot
  hold the server's connections (and while `per_client` of its refused connections still linger, the next
  is dropped without an answer: lingering sockets are open files too);
- at most `max_connections` open connections. When they are all taken, a new connection takes the place of
  the oldest one that has not yet had an answer below 400 and has no request in flight (a client holding
  connections open without using them, or that only earns refusals): that one is closed. Connections that
  were answered (authenticated clients, probes) keep theirs, and a newcomer (a `/healthz` probe, a client
  with a token) still gets in while someone holds the rest. Only when no connection can be reclaimed is the
  newcomer answered 429 and closed;
- a request the parser rejects (a garbage request line, a bad header) is a JSON 400 `bad_request` with its
  access-log line, instead of uvicorn's plain-text answer and its own warning line in the server's log.

A refused connection is closed as nginx's lingering close does. The answer and a FIN go out. What the client still
sends is read and dropped for up to `LINGER` seconds. Then the socket closes. Closing at once with unread bytes would
send a reset, which can destroy the answer before the client reads it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from http import HTTPStatus
from typing import Any, ClassVar, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cfgtool.serve.accesslog import NOTHING_SENT, SENT, AccessLog
from cfgtool.serve.answers import Answer, ErrorPage, error

HEAD_LIMIT = 16 * 1024
REQUEST_TIMEOUT = 10.0
MAX_CONNECTIONS = 10_000
PER_CLIENT = 500  # open connections of one client address
RECLAIM_LOOK = 64  # the oldest unanswered connections looked at for one to reclaim
LINGER = 2.0  # seconds a refused connection is read (and its bytes dropped) before it is closed
SWEEP = 1.0  # seconds between two looks for requests past REQUEST_TIMEOUT
INVALID = "Invalid HTTP request received."  # uvicorn's warning (and plain-text answer) for what llhttp rejects


class _NotInvalid(logging.Filter):
    """Drops uvicorn's warning for a request the parser rejects: the access log has its line instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.msg != INVALID


_QUIET = _NotInvalid()


class LimitedProtocol(HttpToolsProtocol):
    """One connection, with the head size, request time and connection count bounded. `limited()` makes the class
    uvicorn instantiates, with the server's connection cap and access log."""

    max_connections: ClassVar[int] = MAX_CONNECTIONS
    per_client: ClassVar[int] = PER_CLIENT
    uncapped: ClassVar[Callable[[str], bool]] = staticmethod(lambda address: False)  # the proxies
    access: ClassVar[AccessLog | None] = None
    error_page: ClassVar[Callable[[str], ErrorPage | None] | None] = None  # a path's page for a 431
    _sweeping: ClassVar[asyncio.TimerHandle | None] = None
    # the admitted connections (not those refused and lingering): how many, how many per client address, and
    # those not yet answered below 400, oldest first (the ones a newcomer may take the place of)
    _admitted: ClassVar[list[int]] = [0]
    _of: ClassVar[dict[str | None, int]] = {}
    _unanswered: ClassVar[dict[LimitedProtocol, None]] = {}
    _turned_away: ClassVar[dict[str | None, int]] = {}  # connections refused at once and lingering, per address

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head = 0  # bytes of the current request's head seen so far
        self._in_head = True  # waiting for the end of a request's head
        self._since: float | None = None  # when the request being received began (None: none is)
        self._lingering: asyncio.TimerHandle | None = None
        self._refused = False
        self._address: str | None = None
        self._counted = False  # admitted, and counted in `_admitted` and `_of`

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        cls = type(self)
        address = self.client[0] if self.client else None
        held = cls._of.get(address, 0)
        if address is not None and held >= cls.per_client and not cls.uncapped(address):
            self._turn_away(f"{address} holds {held} connections: at most {cls.per_client} per client address")
            return
        if cls._admitted[0] >= cls.max_connections and not cls._reclaim():
            self._turn_away(f"the server holds {self.max_connections} connections")
            return
        self._address, self._counted = address, True
        cls._admitted[0] += 1
        cls._of[address] = held + 1
        cls._unanswered[self] = None
        self._since = self.loop.time()
        if cls._sweeping is None:
            cls._sweeping = self.loop.call_later(SWEEP, cls._sweep, self.loop, self.connections)

    def _turn_away(self, why: str) -> None:
        """Refuse a new connection (429, lingering). When its address already has `per_client` refused connections
        lingering, drop it at once instead. Lingering sockets are open files too. A client opening connections as
        fast as it can must not run the server out of them."""
        cls = type(self)
        lingering = cls._turned_away.get(self.client[0] if self.client else None, 0)
        if lingering >= cls.per_client:
            self.transport.abort()
            return
        self._address = self.client[0] if self.client else None
        cls._turned_away[self._address] = lingering + 1
        self._refuse(error(429, "too_many_connections", why))

    @classmethod
    def _reclaim(cls) -> bool:
        """Close the oldest admitted connection that was never answered below 400 and has no request in flight. That
        makes room for a new one. False when none of the oldest `RECLAIM_LOOK` is such."""
        for _, connection in zip(range(RECLAIM_LOOK), cls._unanswered, strict=False):
            if connection.cycle is None or connection.cycle.response_complete:
                connection._uncount()
                connection.transport.close()
                return True
        return False

    def _uncount(self) -> None:
        """No longer count this connection among the admitted, or among those turned away (it is closing)."""
        cls = type(self)
        if not self._counted:
            if self._refused and self._address in cls._turned_away:
                left = cls._turned_away.pop(self._address) - 1
                if left:
                    cls._turned_away[self._address] = left
            return
        self._counted = False
        cls._admitted[0] -= 1
        left = cls._of[self._address] - 1
        if left:
            cls._of[self._address] = left
        else:
            del cls._of[self._address]
        cls._unanswered.pop(self, None)

    @classmethod
    def _sweep(cls, loop: asyncio.AbstractEventLoop, connections: set[Any]) -> None:
        """Answer 408 to every request that has been arriving for more than `REQUEST_TIMEOUT` seconds."""
        late = loop.time() - REQUEST_TIMEOUT
        for connection in [c for c in connections if isinstance(c, LimitedProtocol)]:
            if connection._since is not None and connection._since < late:
                connection._too_slow()
        cls._sweeping = loop.call_later(SWEEP, cls._sweep, loop, connections)

    def connection_lost(self, exc: Exception | None) -> None:
        self._uncount()
        self._since = None
        if self._lingering is not None:
            self._lingering.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:  # lingering: dropped
            return
        if self._in_head:
            if self._since is None:
                self._since = self.loop.time()
            room = HEAD_LIMIT - self._head
            if len(data) > room:
                super().data_received(data[:room])  # the head may end within the limit
                if self._refused or self.transport.is_closing():
                    return
                if self._in_head:
                    message = f"the request line and headers exceed {HEAD_LIMIT} bytes together"
                    self._refuse(error(431, "headers_too_large", message), self._page_of())
                    return
                data = data[room:]
            else:
                self._head += len(data)
        super().data_received(data)

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._since = None
        self._in_head, self._head = True, 0
        super().on_message_complete()

    def on_response_complete(self) -> None:
        """An answer below 400 (a client with a valid token, a probe) marks the connection. A newcomer never takes
        its place."""
        sent = cast(tuple[int, int, bytes | None], self.scope.get(SENT, NOTHING_SENT))
        if self._counted and 0 < sent[0] < 400:
            type(self)._unanswered.pop(self, None)
        super().on_response_complete()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to a request the parser rejects, as a JSON error like every other."""
        self._refuse(error(400, "bad_request", "the request is not valid HTTP/1.1: check its request line and headers"))

    def _too_slow(self) -> None:
        self._since = None
        if self.transport.is_closing():
            return
        if self._in_head and not self._refused:  # nothing answered yet: say why
            message = f"the request did not arrive complete within {REQUEST_TIMEOUT:g} s"
            self._refuse(error(408, "request_timeout", message))
        else:
            self.transport.close()

    def _page_of(self) -> ErrorPage | None:
        """The page of an error at the URL read so far (its path, perhaps cut short), None for the JSON error."""
        find = type(self).error_page
        return find(self.url.partition(b"?")[0].decode("latin-1")) if find is not None else None

    def _refuse(self, found: Answer, page: ErrorPage | None = None) -> None:
        """Answer `found` without the application (as `page` renders it, else as JSON) and close the connection
        (lingering)."""
        self._since = None
        self._refused = True
        phrase = HTTPStatus(found.status).phrase
        body = found.body
        head = b"content-type: application/json\r\ncontent-length: %d\r\ncache-control: no-store\r\n" % len(body)
        if page is not None:
            shown = page(found, None)
            body = bytes(shown.body)
            head = b"".join(b"%s: %s\r\n" % pair for pair in shown.raw_headers)
        self.transport.write(
            b"HTTP/1.1 %d %s\r\n%sconnection: close\r\n\r\n%s" % (found.status, phrase.encode(), head, body)
        )
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self._lingering = self.loop.call_later(LINGER, self.transport.close)
        else:
            self.transport.close()
        if self.access is not None:
            self.access.refused(found.status, len(body))


def limited(
    max_connections: int,
    access: AccessLog | None,
    error_page: Callable[[str], ErrorPage | None],
    per_client: int = PER_CLIENT,
    uncapped: Callable[[str], bool] = lambda address: False,
) -> type[LimitedProtocol]:
    """The protocol class for uvicorn's `http=`, with this server's access log and the pages of its errors
    (`Api.error_page`). It has this server's connection caps: in all, and per client address but those `uncapped`
    (the proxies)."""
    logging.getLogger("uvicorn.error").addFilter(_QUIET)
    fields = {
        "max_connections": max_connections,
        "per_client": per_client,
        "uncapped": staticmethod(uncapped),
        "access": access,
        "error_page": staticmethod(error_page),
        "_admitted": [0],
        "_of": {},
        "_unanswered": {},
        "_turned_away": {},
    }
    return type("CfgtoolProtocol", (LimitedProtocol,), fields)
