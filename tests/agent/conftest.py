"""Fixtures of the agent tests: real `cfgtool agent` processes following real `cfgtool serve` processes on
loopback ports, over real repositories, writing real files.

`start_agent(url, *args)` runs `cfgtool agent --server URL --store small --dir DIR *args` (DIR: the test's
`out` directory) with its own cache directory and stops it (SIGTERM) when the test ends; `run_agent` runs it
to completion (`--once`). Both are forks of the worker's fork server (`Process.cfgtool`, `cli_command`).
`files(dir)` reads the files of the version `..data` points at, resolved once.
`hostile(upstream, answer)` starts a loopback HTTP server in front of a real one that answers as a spoofed or
compromised server would: `answer(path)` gives the answer to send, or None to pass the request on.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.processes import Process, child_env, cli_command, wait_for
from tests.serve.conftest import published, shared_published, shared_small, small, start_server

# the server tests' fixtures, and a helper, used here
__all__ = ["published", "shared_published", "shared_small", "small", "start_server", "wait_for"]

STORE = "small"


class AgentProcess(Process):
    """A running `cfgtool agent`: `log()` (its stderr so far), `applied()` (versions it logged), `stop()`."""

    def applied(self) -> list[int]:
        return [int(line.split()[5]) for line in self.log().splitlines() if "INFO applied version" in line]


StartAgent = Callable[..., AgentProcess]
RunAgent = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """The agent's directory."""
    return tmp_path / "out"


@pytest.fixture
def start_agent(tmp_path: Path, out: Path) -> Iterator[StartAgent]:
    started: list[AgentProcess] = []

    def start(url: str, *args: str, cache: Path | None = None, directory: Path | None = None) -> AgentProcess:
        where = directory or out
        command = ["agent", "--server", url, "--store", STORE, "--dir", str(where), *args]
        environ = child_env(cache or tmp_path / "agent-cache")
        agent = AgentProcess.cfgtool(command, tmp_path / f"agent-{len(started)}.log", environ)
        started.append(agent)
        return agent

    yield start
    for agent in started:
        agent.stop()


@pytest.fixture
def run_agent(tmp_path: Path, out: Path) -> RunAgent:
    def run(
        url: str, *args: str, cache: Path | None = None, store: str = STORE, directory: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        where = str(directory or out)
        env = child_env(cache or tmp_path / "agent-cache")
        command = [*cli_command(env), "agent", "--server", url, "--store", store, "--dir", where, *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    return run


Answer = tuple[int, dict[str, str], bytes]  # status, headers, body
Hostile = Callable[[str, Callable[[str], Answer | None]], str]
_HOP = {"connection", "content-encoding", "content-length", "keep-alive", "transfer-encoding"}


def forward(upstream: str, path: str) -> Answer:
    """The real server's answer to `GET path`."""
    reply = httpx.get(upstream + path, timeout=70)
    return reply.status_code, {k: v for k, v in reply.headers.items() if k.lower() not in _HOP}, reply.content


@pytest.fixture
def hostile() -> Iterator[Hostile]:
    servers: list[ThreadingHTTPServer] = []

    def start(upstream: str, answer: Callable[[str], Answer | None]) -> str:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                status, headers, body = answer(self.path) or forward(upstream, self.path)
                with contextlib.suppress(OSError):  # a client that hung up on a hostile answer
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)

            def do_POST(self) -> None:  # the agent's reports: taken and dropped
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def files(directory: Path) -> dict[str, str]:
    """The files of the version `..data` points at, read inside that one directory."""
    target = directory / os.readlink(directory / "..data")
    return {entry.name: entry.read_text(encoding="utf-8") for entry in sorted(target.iterdir())}


def version_on_disk(directory: Path) -> int | None:
    try:
        return int(os.readlink(directory / "..data")[2:].split("_")[0])
    except OSError:
        return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))
