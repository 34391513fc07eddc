"""The first view of the console's key page and of explain after `cfgtool serve` starts, and the server's memory.

    python -m benchmarks.first_view_bench                          # 10,000 datasets, 5 runs
    python -m benchmarks.first_view_bench --old /tmp/old-checkout  # the same runs with older code, alternating

Builds the store of benchmarks/console_bench.py (three published versions), compiles it once into a shared snapshot
cache, then per run and per page starts a fresh `cfgtool serve --cache-time 0`, waits until it is ready and
`--settle` seconds more (the versions loaded, the resolver process warmed), asks for the page once (its first view:
the key page's tags, imports, imported-by and graph, or an explain) and prints the median and range over the runs,
with the resident memory (VmRSS) of the server process and of its child processes (the resolver) before the view.
With `--old DIR` (a checkout of older code) each run is made with PYTHONPATH=DIR too, alternating with the new code.

The script first prints the time of a pure-Python loop (`for i in range(10_000_000): s += i`, median of 3) and the
load average, to compare machines.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.console_bench import STORE, build, get
from benchmarks.machine import load, print_machine
from benchmarks.server import start_server

ROOT = Path(__file__).resolve().parent.parent


def rss_mb(pid: int) -> float:
    """The resident memory of process `pid`, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    """The descendants of `pid` (the fork server, the resolver, a load worker)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child, its in parents.items():
            if its == parent:
                found.append(child)
                todo.append(child)
    return found


def run(code: Path, repo: Path, cache: Path, path: str, settle: float) -> tuple[float, float, float, float, int]:
    """One fresh server: (the first view in ms, the server's RSS before and after it, its children's RSS before
    it, the status)."""
    env = {**os.environ, "CFGTOOL_CACHE_DIR": str(cache), "PYTHONPATH": str(code)}
    proc, port = start_server(repo, env, "--cache-time", "0", "--fetch-interval", "5", timeout=1800)
    try:
        time.sleep(settle)
        server, others = rss_mb(proc.pid), sum(rss_mb(c) for c in children(proc.pid))
        t0 = time.perf_counter()
        status, _ = get(port, path)
        took = (time.perf_counter() - t0) * 1000
        return took, server, rss_mb(proc.pid), others, status
    finally:
        proc.terminate()
        proc.wait(60)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after ready before the view")
    parser.add_argument("--old", type=Path, help="a checkout of older code to measure side by side")
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory(prefix="cfgtool-first-view-") as name:
        tmp = Path(name)
        os.environ["CFGTOOL_CACHE_DIR"] = str(tmp / "cache")
        keys = build(tmp / "repo", args.datasets)
        key = keys[0]
        pages = {"key": f"/ui/{STORE}/v/3/key{key}", "explain": f"/ui/{STORE}/v/3/explain{key}?path=bench.owner"}
        codes = [("new", ROOT)] + ([("old", args.old.resolve())] if args.old else [])
        found: dict[tuple[str, str], list[tuple[float, float, float, float, int]]] = {}
        for i in range(args.runs):
            for page, path in pages.items():
                for code, where in codes:
                    got = run(where, tmp / "repo", tmp / "cache", path, args.settle)
                    found.setdefault((code, page), []).append(got)
                    ms, server, after, others, status = got
                    print(f"run {i + 1} {code:<3} {page:<7} {ms:8.0f} ms  server {server:5.0f} MB, after {after:5.0f}"
                          f" MB  children {others:5.0f} MB  status {status}  {load()}", flush=True)  # fmt: skip
        print(f"\n{'code':<4} {'page':<8} {'first view ms (median, range)':>30} {'server MB':>10} {'after':>6} "
              f"{'children MB':>12}")  # fmt: skip
        for (code, page), runs in sorted(found.items()):
            views = [r[0] for r in runs]
            spread = f"{statistics.median(views):.0f} ({min(views):.0f}-{max(views):.0f})"
            server, after, others = (statistics.median(r[n] for r in runs) for n in (1, 2, 3))
            print(f"{code:<4} {page:<8} {spread:>30} {server:10.0f} {after:6.0f} {others:12.0f}")
        print(load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
