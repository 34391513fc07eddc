"""Fixtures of the server tests: real `cfgtool serve` processes on free loopback ports over real repositories.

`start_server(repo, *args)` runs `cfgtool serve --repo REPO --port 0 *args` (a fork of the worker's fork server,
`Process.cfgtool`: read its pid as `server.pid`) with its own cache directory (unless
`cache=` names one, to share a snapshot cache between servers), reads the port it bound from its first line
on stderr, waits until `/healthz` answers 200 (or, with `ready=False`, until it answers at all) and stops
it (SIGTERM) when the test ends. `shared_small` is one `small` repository per module, with one server per set of
arguments (`shared_small.server(*args)`), for the tests that only read. `published` is a copy of the embedded
store with version 1 published; `shared_published` is one per module, shared as `shared_small` is.
`misbehaving(answer)` starts a loopback HTTP server in this process that writes its answers by hand.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from cfgtool.versions import publish
from tests.conftest import GitRepo, copy_embedded, copy_template
from tests.processes import Process, cfgtool_command, child_env, cli_command

__all__ = ["cfgtool_command", "cli_command"]  # imported from here by the server tests

_PORT = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)")
START_TIMEOUT = 60.0


SIZE_SCHEMA = """\
$schema: https://json-schema.org/draft/2020-12/schema
x-cfgtool:
  applies_to:
    keys: ["/data/*"]
type: object
properties:
  size: {type: integer, maximum: 10}
"""
"""A schema for `small`: every dataset's `size` at most 10, so a version with a larger one does not validate."""


class Server(Process):
    """A running `cfgtool serve` process: `url`, `port`, `stop()`, `log()` (its stderr so far)."""

    port = 0
    url = ""

    def wait_port(self, timeout: float = START_TIMEOUT) -> None:
        """Wait for the line that names the port it bound; sets `port` and `url`."""

        def bound() -> bool:
            found = _PORT.search(self.log())
            if found:
                self.port = int(found.group(1))
                self.url = f"http://127.0.0.1:{self.port}"
            return found is not None

        self.wait_until(bound, timeout, "cfgtool serve's port")

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        """Wait until `/healthz` answers 200."""

        def healthy() -> bool:
            try:
                return httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200
            except httpx.TransportError:
                return False

        self.wait_until(healthy, timeout, "cfgtool serve's readiness")


StartServer = Callable[..., Server]


@contextlib.contextmanager
def _servers(directory: Path) -> Iterator[StartServer]:
    """A `start_server` whose servers keep their logs and caches in `directory`, all stopped when it exits."""
    started: list[Server] = []

    def start(
        repo: Path | str,
        *args: str,
        ready: bool = True,
        cache: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Server:
        n = len(started)
        environ = child_env(cache if cache is not None else directory / f"serve-cache-{n}", env)
        command = ["serve", "--repo", str(repo), "--port", "0", *args]
        server = Server.cfgtool(command, directory / f"serve-{n}.log", environ, cwd=directory)
        started.append(server)
        server.wait_port()
        if ready:
            server.wait_ready()
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    with _servers(tmp_path) as start:
        yield start


class SharedSmall:
    """The `small` repository of a module (or another, as `shared_published`'s), and `server(*args)`: its one
    server with those arguments."""

    def __init__(self, repo: GitRepo, start: StartServer) -> None:
        self.repo = repo
        self._start = start
        self._servers: dict[tuple[str, ...], Server] = {}

    def server(self, *args: str) -> Server:
        if args not in self._servers:
            self._servers[args] = self._start(self.repo.root, *args)
        return self._servers[args]


@pytest.fixture(scope="module")
def shared_small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSmall]:
    """`small`, and its servers, shared by the tests of a module that only read from them: starting a server is
    most of such a test's time. A test that publishes, rolls back, posts, stops the server or counts what it
    logged or measured uses `small` and `start_server`, its own."""
    directory = tmp_path_factory.mktemp("shared-small")
    repo = copy_template("small", _publish_small, directory / "small")
    with _servers(directory) as start:
        yield SharedSmall(repo, start)


@pytest.fixture(scope="module")
def shared_published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedSmall]:
    """`published`, and its servers, shared by the tests of a module that only read from them (as
    `shared_small`)."""
    directory = tmp_path_factory.mktemp("shared-published")
    repo = copy_template("published", _publish_embedded, directory / "repo")
    with _servers(directory) as start:
        yield SharedSmall(repo, start)


@pytest.fixture
def published(work: GitRepo) -> GitRepo:
    """A copy of the embedded store with version 1 published (local tags only): `work`, replaced by a copy of
    this process's template of it (a publish of the embedded store takes ten copies' time)."""
    shutil.rmtree(work.root)
    return copy_template("published", _publish_embedded, work.root)


def _publish_embedded(root: Path) -> None:
    assert publish(copy_embedded(root).root, message="v1").version == 1


SMALL = {
    "store/_CONFIG_STORE": "name: small\n",
    "store/main.conf": "owner = platform\nretention.days = 7\n",
    "store/data/main.conf": "tier = gold\n",
    "store/data/a/main.conf": "size = 1\n",
    "store/data/a/includes": "/tags/t\n",
    "store/data/b/main.conf": "size = 2\n",
    "store/tags/t/main.conf": "tagged = true\n",
}


def publish_change(repo: GitRepo, files: dict[str, str | bytes | None], message: str) -> int:
    """Write `files`, commit them and publish the commit; the new version."""
    repo.write(files)
    repo.commit(message)
    result = publish(repo.root, message=message)
    assert result.version is not None, result.reason
    return result.version


@pytest.fixture
def small(tmp_path: Path) -> GitRepo:
    """A repository with a seven-file store named `small`, version 1 published."""
    return copy_template("small", _publish_small, tmp_path / "small")


def _publish_small(root: Path) -> None:
    publish_change(GitRepo(root), dict(SMALL), "v1")


class Misbehaving:
    """A real HTTP server on a free loopback port, in this process: `answer(handler)` writes each answer by hand
    (raw bytes on the socket), and `paths` records what was asked, with the Authorization header."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.paths: list[tuple[str, str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.paths.append((self.path, self.headers.get("Authorization")))
                with contextlib.suppress(OSError):
                    answer(self)

            do_POST = do_GET  # a POST's body is left unread: the answer is written all the same

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def misbehaving() -> Iterator[Callable[[Callable[[BaseHTTPRequestHandler], None]], Misbehaving]]:
    started: list[Misbehaving] = []

    def start(answer: Callable[[BaseHTTPRequestHandler], None]) -> Misbehaving:
        started.append(Misbehaving(answer))
        return started[-1]

    yield start
    for server in started:
        server.close()
