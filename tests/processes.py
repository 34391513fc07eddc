"""Real cfgtool processes started by the tests (`cfgtool serve`, `cfgtool agent`): the command that runs the
installed CLI, the environment a child gets (its own cache directory, no CFGTOOL_DEBUG), and a started process
whose output goes to a log file and which stops on SIGTERM. The server and the agent fixtures build on these."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Self

from tests.forkserver import CLIENT


def cfgtool_command() -> list[str]:
    """The installed `cfgtool` script, or `python -m cfgtool` where it is not pip-installed (the source tree)."""
    script = Path(sysconfig.get_path("scripts")) / "cfgtool"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cfgtool"]


def child_env(cache: Path | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without CFGTOOL_DEBUG, with `CFGTOOL_CACHE_DIR=cache` if given, then `extra`."""
    environ = {k: v for k, v in os.environ.items() if k != "CFGTOOL_DEBUG"}
    if cache is not None:
        environ["CFGTOOL_CACHE_DIR"] = str(cache)
    environ.update(extra or {})
    return environ


class Process:
    """A started process writing stdout and stderr to `log_path`: `log()` (its output so far), `stop()`, `pid`."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path, pid_file: Path | None = None) -> None:
        self.proc = proc
        self.log_path = log_path
        self._pid_file = pid_file

    @classmethod
    def spawn(cls, command: Sequence[str], log_path: Path, env: dict[str, str], cwd: Path | None = None) -> Self:
        """Start `command` with its output in `log_path`."""
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        return cls(proc, log_path)

    @classmethod
    def cfgtool(cls, args: Sequence[str], log_path: Path, env: dict[str, str], cwd: Path | None = None) -> Self:
        """Start `cfgtool ARGS...` with its output in `log_path`: a fork of this worker's fork server where `env`
        allows it (`cli_command`), else a fresh `cfgtool`. A forked one is still a process of its own, with its own
        `pid`; `proc` is then its client, which passes SIGTERM and SIGINT on, ends as it ends and with its status,
        and whose SIGKILL kills it (see tests/forkserver.py). Other signals go to `pid`."""
        forks = fork_server()
        if not forks.fits(env):
            return cls.spawn([*cfgtool_command(), *args], log_path, env, cwd)
        pid_file = log_path.with_name(log_path.name + ".pid")
        started = cls.spawn([*forks.command(), *args], log_path, {**env, "CFGTOOL_TESTS_PID_FILE": str(pid_file)}, cwd)
        started._pid_file = pid_file
        return started

    @property
    def pid(self) -> int:
        """The process's own pid (of a forked `cfgtool`, not its client's)."""
        if self._pid_file is None:
            return self.proc.pid
        pid_file = self._pid_file
        self.wait_until(pid_file.exists, 30, "the forked process's pid")
        return int(pid_file.read_text())

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM, then wait (SIGKILL after `timeout` s); the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def wait_until(self, predicate: Callable[[], object], timeout: float, what: str) -> None:
        """Poll `predicate` every 50 ms until it is true; fails with the log if the process exits first or
        `timeout` s pass."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.proc.args[:2]} exited with {self.proc.returncode}:\n{self.log()}")
            time.sleep(0.05)
        raise AssertionError(f"{what} not within {timeout} s:\n{self.log()}")


def wait_for(predicate: Callable[[], object], timeout: float, what: str, process: Process | None = None) -> float:
    """Poll `predicate` every 20 ms until it is true; the time it became true (time.time()). Fails with `what`
    (and `process`'s log) after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.time()
        time.sleep(0.02)
    raise AssertionError(f"{what} did not happen within {timeout} s" + (f":\n{process.log()}" if process else ""))


_STARTUP_VARIABLES = ("PYTHON", "LC_", "LANG", "PATH")
"""Environment variables the interpreter (or an import: GitPython looks for git on PATH) reads as it starts: a run
that changes one of them starts a fresh `cfgtool` process."""


class ForkServer:
    """`tests/forkserver.py` running for this pytest process, started at the first `command()`: each
    `cfgtool` run is a fork of a process that has imported the library (see that module). With
    CFGTOOL_TESTS_FRESH=1 in the environment every run starts a fresh `cfgtool` instead (the same tests
    must pass either way)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.socket = directory / "forks.sock"
        self.server: Process | None = None
        self.env: dict[str, str] = {}

    def fits(self, env: Mapping[str, str]) -> bool:
        """Whether a run with environment `env` may be a fork: the variables read at start-up are the server's."""
        if os.environ.get("CFGTOOL_TESTS_FRESH") == "1":
            return False
        base = self.env or child_env()
        relevant = {k for k in (*env, *base) if k.startswith(_STARTUP_VARIABLES)}
        return all(env.get(k) == base.get(k) for k in relevant)

    def command(self) -> list[str]:
        """The command that runs `cfgtool ARGS...` (append them) as a fork of the server."""
        if self.server is None:
            self.env = child_env()
            script = Path(__file__).with_name("forkserver.py")
            command = [sys.executable, str(script), str(self.socket)]
            self.server = Process.spawn(command, self.directory / "forks.log", self.env)
            self.server.wait_until(lambda: "ready" in self.server.log() if self.server else False, 120, "forks")
        elif self.server.proc.poll() is not None:
            raise AssertionError(f"the cfgtool fork server exited with {self.server.proc.returncode}:\n{self.log()}")
        return [sys.executable, "-I", "-S", "-c", CLIENT, str(self.socket)]

    def log(self) -> str:
        return self.server.log() if self.server else ""

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        shutil.rmtree(self.directory, ignore_errors=True)


_forks: ForkServer | None = None


def fork_server() -> ForkServer:
    """This process's fork server (one per pytest worker, started at its first run; the session fixture
    `cfgtool_forks` stops it)."""
    global _forks
    if _forks is None:
        _forks = ForkServer(Path(tempfile.mkdtemp(prefix="cfgtool-forks-")))
    return _forks


def cli_command(env: Mapping[str, str] | None = None) -> list[str]:
    """The command of a `cfgtool` run to its end (append its arguments) in the environment `env` (default: this
    process's): a fork of this process's fork server where `env` allows it, else `cfgtool_command()`. Not for
    a process the test signals, limits or measures (servers, agents, start-up): start `cfgtool_command()`."""
    forks = fork_server()
    return forks.command() if forks.fits(os.environ if env is None else env) else cfgtool_command()
