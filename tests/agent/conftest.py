"""Fixtures of the agent tests: real `cfgtool agent` processes following real `cfgtool serve` processes on
loopback ports, over real repositories, writing real files.

`start_agent(url, *args)` runs `cfgtool agent --server URL --store small --dir DIR *args` (DIR: the test's
`out` directory) with its own cache directory and stops it (SIGTERM) when the test ends; `run_agent` runs it
to completion (`--once`). `files(dir)` reads the files of the version `..data` points at, resolved once.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.serve.conftest import cfgtool_command, published, small, start_server  # noqa: F401 (fixtures)

STORE = "small"


class AgentProcess:
    """A running `cfgtool agent`: `log()` (its stderr so far), `applied()` (versions it logged), `stop()`."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path, directory: Path) -> None:
        self.proc = proc
        self.log_path = log_path
        self.directory = directory

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def applied(self) -> list[int]:
        return [int(line.split()[5]) for line in self.log().splitlines() if "INFO applied version" in line]

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


StartAgent = Callable[..., AgentProcess]
RunAgent = Callable[..., subprocess.CompletedProcess[str]]


def agent_env(cache: Path) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "CFGTOOL_DEBUG"}
    environ["CFGTOOL_CACHE_DIR"] = str(cache)
    return environ


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """The agent's directory."""
    return tmp_path / "out"


@pytest.fixture
def start_agent(tmp_path: Path, out: Path) -> Iterator[StartAgent]:
    started: list[AgentProcess] = []

    def start(url: str, *args: str, cache: Path | None = None, directory: Path | None = None) -> AgentProcess:
        log_path = tmp_path / f"agent-{len(started)}.log"
        where = directory or out
        command = [*cfgtool_command(), "agent", "--server", url, "--store", STORE, "--dir", str(where), *args]
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=agent_env(cache or tmp_path / "agent-cache")
            )
        agent = AgentProcess(proc, log_path, where)
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
        command = [*cfgtool_command(), "agent", "--server", url, "--store", store, "--dir", where, *args]
        env = agent_env(cache or tmp_path / "agent-cache")
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    return run


def files(directory: Path) -> dict[str, str]:
    """The files of the version `..data` points at, read inside that one directory."""
    target = directory / os.readlink(directory / "..data")
    return {entry.name: entry.read_text(encoding="utf-8") for entry in sorted(target.iterdir())}


def version_on_disk(directory: Path) -> int | None:
    try:
        return int(os.readlink(directory / "..data")[2:].split("_")[0])
    except OSError:
        return None


def wait_for(predicate: Callable[[], object], timeout: float, what: str, agent: AgentProcess | None = None) -> float:
    """Poll `predicate` every 20 ms until it is true; the time it became true (time.time())."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.time()
        time.sleep(0.02)
    raise AssertionError(f"{what} did not happen within {timeout} s" + (f":\n{agent.log()}" if agent else ""))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def read_json(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))
