"""Run a command under resource limits and measure it: wall time, peak RSS, exit status, output.

The child gets RLIMIT_AS (address space) and RLIMIT_CPU set before it runs (a preexec_fn), so a runaway input ends
the child (MemoryError, SIGXCPU/SIGKILL) instead of the machine; a wall-clock timeout kills its process group.
Peak RSS comes from the child's own rusage (os.wait4), so concurrent tests do not mix their figures.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024


def cfgtool_command() -> list[str]:
    script = Path(sys.executable).parent / "cfgtool"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "cfgtool"]


@dataclass
class Outcome:
    argv: list[str]
    returncode: int | None  # None: killed by the wall-clock timeout
    signal: int | None  # the signal that ended the child, if any
    wall: float
    cpu: float  # user + system seconds of the child (not of its own children)
    peak_rss_mb: float
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    @property
    def codes(self) -> list[str]:
        """The diagnostic codes (E_LIMIT, E_SYNTAX, ...) printed on stderr or stdout."""
        return sorted(set(re.findall(r"\b[EW]_[A-Z_]+\b", self.stderr + self.stdout)))

    def deepest_cfgtool_frame(self) -> str | None:
        """The last `File ".../cfgtool/..."` line of a traceback on stderr (with CFGTOOL_DEBUG=1)."""
        frames = re.findall(r'File "([^"]*cfgtool/[^"]*)", line (\d+), in (\S+)', self.stderr)
        frames = [f for f in frames if "/cli/" not in f[0] or f is frames[-1]]
        if not frames:
            return None
        path, line, func = frames[-1]
        return f"{path.split('cfgtool/', 1)[1]}:{line} {func}"

    def exception(self) -> str | None:
        """The exception line of a traceback on stderr ("RecursionError: ...", "MemoryError")."""
        found = re.findall(r"^(\w+(?:Error|Exception|Exit)\b.*)$", self.stderr, re.M)
        found += re.findall(r"internal error: (.*)$", self.stderr, re.M)
        return found[-1][:200] if found else None

    def summary(self) -> str:
        state = "TIMEOUT" if self.timed_out else f"exit {self.returncode}"
        if self.signal:
            state += f" (signal {signal.Signals(self.signal).name})"
        return f"{state}, {self.wall:.2f} s wall, {self.cpu:.2f} s cpu, {self.peak_rss_mb:.0f} MB, codes {self.codes}"

    def report(self) -> str:
        """Everything a failing assertion should show: the summary, the exception, the deepest frame, stderr's end."""
        frame = self.deepest_cfgtool_frame()
        return (
            f"{self.summary()}\nexception: {self.exception()}\ndeepest cfgtool frame: {frame}\n"
            f"stderr:\n{self.stderr[-1500:]}"
        )


def _limits(mem_mb: int, cpu_s: int) -> None:
    os.setsid()
    if mem_mb:
        resource.setrlimit(resource.RLIMIT_AS, (mem_mb * MB, mem_mb * MB))
    if cpu_s:
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))


def run_limited(
    argv: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    mem_mb: int = 1536,
    cpu_s: int = 30,
    wall_s: float = 30.0,
) -> Outcome:
    """Run `argv` with at most `mem_mb` of address space and `cpu_s` of CPU, killed after `wall_s` seconds."""
    full_env = {k: v for k, v in os.environ.items() if k != "CFGTOOL_DEBUG"}
    full_env.update(env or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            preexec_fn=lambda: _limits(mem_mb, cpu_s),
        )
        status: int | None = None
        rusage: resource.struct_rusage | None = None
        timed_out = False
        while True:
            pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status, rusage = st, ru
                break
            if time.monotonic() - start > wall_s:
                timed_out = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                _, status, rusage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        wall = time.monotonic() - start
        proc.returncode = 0  # reaped above: keep Popen from waiting again
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
    sig = os.WTERMSIG(status) if status is not None and os.WIFSIGNALED(status) else None
    code = None if timed_out else (os.WEXITSTATUS(status) if status is not None and os.WIFEXITED(status) else -1)
    peak = rusage.ru_maxrss / 1024 if rusage else 0.0
    cpu = rusage.ru_utime + rusage.ru_stime if rusage else 0.0
    return Outcome(list(argv), code, sig, wall, cpu, peak, stdout, stderr)


def python_snippet(code: str, *args: str) -> list[str]:
    """argv running `code` in this interpreter (for in-process calls of the engine, measured from outside)."""
    return [sys.executable, "-c", code, *args]


# A small script: parse + resolve a file with cfgtool.hocon, print one status line. Exit 0: value; 1: HoconError;
# 3: any other exception (a bug: the engine must answer every input with a value or a diagnostic).
ENGINE_SCRIPT = r"""
import sys, json
from cfgtool import hocon
text = open(sys.argv[1], encoding="utf-8", errors="surrogatepass").read()
try:
    doc = hocon.parse(text, "hostile.conf")
    res = hocon.resolve([doc])
    v = res.value
    json.dumps(v, default=str)
except hocon.HoconError as e:
    print(e.code, str(e)[:300], file=sys.stderr)
    sys.exit(1)
except BaseException:
    import traceback
    traceback.print_exc()
    sys.exit(3)
print("ok")
"""


def engine_command(path: Path | str) -> list[str]:
    return python_snippet(ENGINE_SCRIPT, str(path))


def make_store(root: Path, files: Mapping[str, str] | None = None, *, embedded: bool = False) -> Path:
    """A git repository at `root` with a store: `cfgtool init`'s scaffold, or a copy of the embedded example store
    (48 nodes), with `files` (paths under `store/`) written over it. Returns `root`."""
    import shutil

    if embedded:
        root.mkdir(parents=True)
        for name in ("store", "schemas", "policies"):
            if (CHECKOUT / name).is_dir():
                shutil.copytree(CHECKOUT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}
        subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, env=env)
    else:
        subprocess.run([*cfgtool_command(), "init", str(root)], check=True, capture_output=True)
    for rel, text in (files or {}).items():
        path = root / "store" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
