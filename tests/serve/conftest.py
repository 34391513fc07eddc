"""Fixtures of the server tests: real `cfgtool serve` processes on free loopback ports over real repositories.

`start_server(repo, *args)` runs `cfgtool serve --repo REPO --port 0 *args` with its own cache directory (unless
`cache=` names one, to share a snapshot cache between servers), reads the port it bound from its first line
on stderr, waits until `/healthz` answers 200 (or, with `ready=False`, until it answers at all) and stops
it (SIGTERM) when the test ends. `published` is a copy of the embedded store with version 1 published.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from cfgtool.versions import publish
from tests.conftest import GitRepo

_PORT = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)")
START_TIMEOUT = 60.0


def cfgtool_command() -> list[str]:
    script = Path(sysconfig.get_path("scripts")) / "cfgtool"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cfgtool"]


class Server:
    """A running `cfgtool serve` process: `url`, `port`, `stop()`, `log()` (its stderr so far)."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path
        self.port = 0
        self.url = ""

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def wait_port(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = _PORT.search(self.log())
            if found:
                self.port = int(found.group(1))
                self.url = f"http://127.0.0.1:{self.port}"
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"cfgtool serve exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.05)
        raise AssertionError(f"cfgtool serve did not start in {timeout} s:\n{self.log()}")

    def wait_ready(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise AssertionError(f"cfgtool serve exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.05)
        raise AssertionError(f"cfgtool serve was not ready in {timeout} s:\n{self.log()}")

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then wait; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


StartServer = Callable[..., Server]


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    started: list[Server] = []

    def start(
        repo: Path | str,
        *args: str,
        ready: bool = True,
        cache: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Server:
        n = len(started)
        log_path = tmp_path / f"serve-{n}.log"
        cache_dir = cache if cache is not None else tmp_path / f"serve-cache-{n}"
        environ = {k: v for k, v in os.environ.items() if k != "CFGTOOL_DEBUG"}
        environ.update({"CFGTOOL_CACHE_DIR": str(cache_dir), **(env or {})})
        command = [*cfgtool_command(), "serve", "--repo", str(repo), "--port", "0", *args]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environ, cwd=tmp_path)
        server = Server(proc, log_path)
        started.append(server)
        server.wait_port()
        if ready:
            server.wait_ready()
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def published(work: GitRepo) -> GitRepo:
    """A copy of the embedded store with version 1 published (local tags only)."""
    publish(work.root, message="v1")
    return work


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
    repo = GitRepo(tmp_path / "small")
    publish_change(repo, dict(SMALL), "v1")
    return repo
