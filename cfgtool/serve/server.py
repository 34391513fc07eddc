"""Run the server: uvicorn (uvloop, httptools) over the API, the loader beside it, and a graceful shutdown.

SIGTERM or SIGINT first releases every waiting long poll; each answers at once with what it has. Then uvicorn stops
accepting, lets the open requests finish and exits 0.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import resource
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any, BinaryIO, cast

import uvicorn
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from cfgtool.errors import SourceError
from cfgtool.serve.accesslog import AccessLog
from cfgtool.serve.app import Api, Part
from cfgtool.serve.options import Options
from cfgtool.serve.protocol import limited
from cfgtool.serve.routes import starlette_app
from cfgtool.serve.service import Service
from cfgtool.serve.worker import start_processes

LOOPBACK = ("127.0.0.1", "::1", "localhost")


class ForwardedFor(ProxyHeadersMiddleware):
    """The one place that decides which forwarded headers count: only those of a socket peer that
    `--forwarded-allow-ips` names. From such a proxy, the client's address comes from `X-Forwarded-For` (uvicorn's
    choice of entry). Only an entry that is an IP address counts. Anything else (`garbage`, an empty entry) leaves
    the socket's peer. So there is never a client without an address, which a host-scoped ACL rule would not match.
    The request's scheme comes from `X-Forwarded-Proto` (`http` or `https`). The console's cookie is `Secure` over
    https. From any other client both headers are ignored."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        peer = scope.get("client")
        if scope["type"] == "http" and peer and peer[0] in self.trusted_hosts:
            proto = [value for name, value in scope["headers"] if name == b"x-forwarded-proto"]
            if proto and proto[-1].strip().lower() in (b"http", b"https"):
                scope["scheme"] = proto[-1].strip().lower().decode("ascii")
            values = [value for name, value in scope["headers"] if name == b"x-forwarded-for"]
            if values:
                host, port = self.trusted_hosts.get_trusted_client_address(b", ".join(values).decode("latin-1"))
                with contextlib.suppress(ValueError):  # not an address: the peer stays the client
                    scope["client"] = (str(ipaddress.ip_address(host)), port)
        await self.app(scope, receive, send)


class _Server(uvicorn.Server):
    """uvicorn's server with the loader started beside it and long polls released on shutdown."""

    def __init__(self, config: uvicorn.Config, service: Service, port: int, access: AccessLog) -> None:
        super().__init__(config)
        self.service = service
        self.port = port
        self.access = access
        self._loader: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    async def startup(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        self._loop = asyncio.get_running_loop()
        self._loader = self._loop.create_task(self.service.run_loader())
        await super().startup(sockets)  # type: ignore[arg-type]
        if self.started:
            options = self.service.options
            stores = ", ".join(f"{name} ({state.path or '.'}/)" for name, state in self.service.stores.items())
            where = f"[{options.host}]" if ":" in options.host else options.host
            print(f"cfgtool: serving {stores} on http://{where}:{self.port}", file=sys.stderr, flush=True)

    async def shutdown(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        self.service.close()
        await super().shutdown(sockets)  # type: ignore[arg-type]
        self.access.flush()
        if self._loader is not None:
            self._loader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loader

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        self.should_exit = True
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.service.close)  # wake the long polls now, on the loop


FILES_KEPT = 256  # open files kept for the server's own work (git, the caches, workers) beyond its connections


def _raise_file_limit(max_connections: int) -> int:
    """Thousands of long polls are thousands of sockets: lift the soft limit on open files to the hard one.
    The connection cap that leaves `FILES_KEPT` files for the server's own work, with a warning when that is below
    `max_connections`. So clients can never starve its fetches of file descriptors."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else 65536, hard))
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    cap = max_connections if soft == resource.RLIM_INFINITY else min(max_connections, max(soft - FILES_KEPT, 1))
    if cap < max_connections:
        logging.getLogger("cfgtool.serve").warning(
            "the open-file limit (%d) allows %d connections, not %d: raise it (ulimit -n) for more",
            soft,
            cap,
            max_connections,
        )
    return cap


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket (bound here, so that a port in use is a clear error, exit 2)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family, backlog=4096)
    except OSError as exc:
        raise SourceError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}",
            hint="choose another --port (0 picks a free one), or stop what uses it",
        ) from exc


def _open_log(path: Path | None) -> BinaryIO:
    """The access log's file, appended to (stderr's descriptor without a path)."""
    if path is None:
        return open(sys.stderr.fileno(), "ab", buffering=0, closefd=False)
    try:
        return open(path, "ab")
    except OSError as exc:
        raise SourceError(f"cannot open the access log {path}: {exc.strerror or exc}", hint="check the path") from exc


def run(options: Options, parts: Sequence[Part] = ()) -> None:
    """Serve until SIGTERM or SIGINT (the CLI checks the options first); `parts` add routes (the console)."""
    logging.basicConfig(format="cfgtool: %(levelname)s: %(message)s", level=logging.WARNING)
    with _open_log(options.access_log) as stream:
        max_connections = _raise_file_limit(options.max_connections)  # before the worker processes: they inherit it
        start_processes()  # starts while the repository is checked and the socket bound: readiness waits less
        service = Service(options)
        sock = _listen(options.host, options.port)
        api = Api(service, starlette_app, parts)
        api.access = AccessLog(stream)
        proxies = list(options.forwarded_allow_ips)
        forwarded = ForwardedFor(cast(Any, api), proxies) if proxies else None  # uvicorn types its apps narrowly
        app = forwarded if forwarded is not None else api
        uncapped = forwarded.trusted_hosts.__contains__ if forwarded is not None else (lambda address: False)
        config = uvicorn.Config(
            app,
            host=options.host,
            port=options.port,
            loop="uvloop",
            http=limited(max_connections, api.access, api.error_page, options.max_client_connections, uncapped),
            lifespan="off",
            access_log=False,
            log_level="warning",
            server_header=False,
            backlog=4096,
            timeout_graceful_shutdown=5,
            proxy_headers=False,  # the ACL's `host` is the socket's peer unless ForwardedFor says otherwise
        )
        _Server(config, service, sock.getsockname()[1], api.access).run(sockets=[sock])
