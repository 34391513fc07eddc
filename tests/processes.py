"""Real cfgtool processes started by the tests (`cfgtool serve`, `cfgtool agent`): the command that runs the
installed CLI, the environment a child gets (its own cache directory, no CFGTOOL_DEBUG), and a started process
whose output goes to a log file and which stops on SIGTERM. The server and the agent fixtures build on these."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Self


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
    """A started process writing stdout and stderr to `log_path`: `log()` (its output so far), `stop()`."""

    def __init__(self, proc: subprocess.Popen[bytes], log_path: Path) -> None:
        self.proc = proc
        self.log_path = log_path

    @classmethod
    def spawn(cls, command: Sequence[str], log_path: Path, env: dict[str, str], cwd: Path | None = None) -> Self:
        """Start `command` with its output in `log_path`."""
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        return cls(proc, log_path)

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
