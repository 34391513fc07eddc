"""A `cfgtool serve` subprocess for the benchmarks that measure through a real server (serve_bench, console_bench,
consumers_bench, token_bench): started on a free loopback port, ready once `/healthz` answers 200."""

from __future__ import annotations

import http.client
import re
import subprocess
import sys
import time
from pathlib import Path

_PORT = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)")


def start_server(
    repo: Path, env: dict[str, str], *args: str, name: str = "serve", timeout: float = 900
) -> tuple[subprocess.Popen[bytes], int]:
    """Run `python -m cfgtool serve --repo REPO --port 0 ARGS` (`env` picks the code, through PYTHONPATH, and the
    cache) with its output in `REPO/../NAME.log`; wait until it answers `/healthz` with 200 (at most `timeout`
    s; a large store loads for minutes). The process and the port it bound."""
    log_path = repo.parent / f"{name}.log"
    log = open(log_path, "wb")  # noqa: SIM115 (the server's whole life)
    command = [sys.executable, "-m", "cfgtool", "serve", "--repo", str(repo), "--port", "0", *args]
    proc = subprocess.Popen(  # cwd: `-m` puts it first on sys.path, ahead of the PYTHONPATH that picks the code
        command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=repo.parent
    )
    deadline = time.monotonic() + timeout
    port = 0
    while time.monotonic() < deadline:
        found = _PORT.search(log_path.read_text(errors="replace"))
        if found and not port:
            port = int(found.group(1))
        if port and _healthy(port):
            return proc, port
        if proc.poll() is not None:
            raise SystemExit("cfgtool serve exited:\n" + log_path.read_text(errors="replace"))
        time.sleep(0.2)
    raise SystemExit(f"cfgtool serve was not ready in {timeout:.0f} s")


def _healthy(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()
