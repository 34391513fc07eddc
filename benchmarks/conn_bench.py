"""What one client holding connections costs the others (docs/serving.md, "Limits").

    python -m benchmarks.conn_bench                          # this tree only
    python -m benchmarks.conn_bench --old /tmp/old-6556589   # side by side with another checkout of cfgtool

For each tree it starts `cfgtool serve --max-connections M` (no tokens, loopback) over a small store, then
measures a client at 127.0.0.1 (the median over --runs runs of --requests requests each):

- quiet: nothing else runs;
- held: another process binds 127.0.0.2 and tries to hold --hold connections (by default as many as the server
  allows in all), each sending half a request head and nothing more; a connection the server closes (408 after
  10 s, 429 past a cap, or taken back for a newcomer) is opened again --knock seconds later, so the holder also
  knocks at the door all the time (held: open for a second and more). Before measuring it waits until the
  holder holds what it can.

The measured client reads a key on one kept-alive connection (`keep-alive`) and asks `/healthz` on a new
connection each time (`new conn`, what a load balancer's probe does): the median of the runs' p50 and p99, and
how many requests failed (refused or reset) in all runs. Target: while one address holds its maximum, the
other client's p99 stays under 5 ms and none of its requests fails.
"""

from __future__ import annotations

import argparse
import http.client
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import load, print_machine
from benchmarks.server import start_server
from benchmarks.token_bench import build, env

HERE = Path(__file__).resolve().parent
KEY = "/v1/small/current/keys/data/a"
HOLDER = """
import asyncio, sys
port, want, seconds, knock = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
held = [0]
async def hold():
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while loop.time() < end:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=("127.0.0.2", 0))
        except OSError:
            await asyncio.sleep(knock)
            continue
        writer.write(b"GET /healthz HTTP/1.1\\r\\nhost: x\\r\\n")  # half a head, never finished
        counted = False
        try:
            try:
                await asyncio.wait_for(reader.read(), 1.0)  # closed within a second: refused, not held
            except asyncio.TimeoutError:
                held[0], counted = held[0] + 1, True
                await asyncio.wait_for(reader.read(), max(end - loop.time(), 0.01))  # until the server closes it
        except (OSError, asyncio.TimeoutError):
            pass
        held[0] -= counted
        writer.close()
        await asyncio.sleep(knock)  # and knocks again
async def report():
    while True:
        await asyncio.sleep(0.5)
        print(held[0], flush=True)
async def main():
    reporter = asyncio.ensure_future(report())
    await asyncio.gather(*(hold() for _ in range(want)))
    reporter.cancel()
asyncio.run(main())
"""


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def kept_alive(port: int, count: int) -> tuple[list[float], int]:
    """Latencies of `count` key reads on one kept-alive connection, and how many failed."""
    took, failed = [], 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(count):
        start = time.perf_counter()
        try:
            conn.request("GET", KEY)
            response = conn.getresponse()
            response.read()
            ok = response.status == 200
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            ok = False
        took.append(time.perf_counter() - start)
        failed += not ok
    conn.close()
    return took, failed


def fresh(port: int, count: int) -> tuple[list[float], int]:
    """Latencies of `count` `/healthz` requests, each on a new connection (connect included), and failures."""
    took, failed = [], 0
    for _ in range(count):
        start = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            response.read()
            ok = response.status == 200
        except (OSError, http.client.HTTPException):
            ok = False
        finally:
            conn.close()
        took.append(time.perf_counter() - start)
        failed += not ok
    return took, failed


def runs(port: int, args: argparse.Namespace) -> str:
    """The figures of --runs runs of both kinds of client, as one line."""
    out = []
    for label, client in (("keep-alive", kept_alive), ("new conn", fresh)):
        p50s, p99s, failures = [], [], 0
        for _ in range(args.runs):
            took, failed = client(port, args.requests)
            p50s.append(_p(took, 0.5))
            p99s.append(_p(took, 0.99))
            failures += failed
        out.append(f"{label} p50 {statistics.median(p50s) * 1000:6.2f} ms p99 {statistics.median(p99s) * 1000:6.2f}"
                   f" ms (runs {min(p99s) * 1000:.2f}-{max(p99s) * 1000:.2f}), {failures} failed")  # fmt: skip
    return "; ".join(out)


def measure(label: str, tree: Path, tmp: Path, args: argparse.Namespace) -> None:
    environ = {**env(tree), "CFGTOOL_CACHE_DIR": str(tmp / f"cache-{label}")}
    server_args = ("--max-connections", str(args.max_connections), "--cache-time", "0")
    proc, port = start_server(tmp / "repo", environ, *server_args, name=f"serve-{label}")
    try:
        kept_alive(port, 50)  # warm
        time.sleep(2)
        print(f"{label} tree, quiet: {runs(port, args)}; {load()}", flush=True)
        want = args.hold or args.max_connections
        seconds = args.seconds
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(port), str(want), str(seconds), str(args.knock)],
                                  stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert holder.stdout is not None
        held, settled = 0, time.monotonic() + 20
        for line in holder.stdout:  # until the count stops growing (or 20 s)
            now = int(line)
            if (now and now <= held) or time.monotonic() > settled:
                break
            held = now
        print(f"{label} tree, 127.0.0.2 holds {held} of the {want} connections it wants:", flush=True)
        print(f"{label} tree, held:  {runs(port, args)}; {load()}", flush=True)
        holder.terminate()
        holder.wait(30)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, help="another checkout of cfgtool to compare with")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=400, help="requests per run and kind")
    parser.add_argument("--max-connections", type=int, default=2000, help="the server's --max-connections")
    parser.add_argument("--hold", type=int, default=0, help="connections the holder wants (0: --max-connections)")
    parser.add_argument("--seconds", type=float, default=120.0, help="at most this long a holder holds")
    parser.add_argument("--knock", type=float, default=1.0, help="seconds a holder waits before opening again")
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory(prefix="conn-bench-") as name:
        tmp = Path(name)
        (tmp / "repo").mkdir()
        build(tmp / "repo", HERE.parent)
        for label, tree in (("new", HERE.parent), ("old", args.old)):
            if tree is not None:
                measure(label, tree.resolve(), tmp, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
