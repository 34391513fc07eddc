"""The client's read paths, side by side with another checkout of cfgtool (say, main before a change).

Usage:
    python -m benchmarks.client_paths_bench --base DIR [--datasets 2000] [--runs 5] [--keys 200]

DIR is a checkout of the code to compare with (`git worktree add --detach DIR <commit>`). Generates a store,
publishes v1, and starts one `cfgtool serve` (this checkout's). Then, in each run, for each checkout in turn (the
order alternates, so a change of load falls on both): `cfgtool get --version 1 KEY` over git (a fresh process, its
version artifact cached), and the HTTP client in a fresh process: pinning (construction in an empty cache, the
median of 20), reading `--keys` keys from the server (a new cache), then the same keys from its disk cache
through a new client. Prints the median of
the runs per checkout and the ratio of this checkout to the base.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import load, print_machine
from benchmarks.server import start_server

HERE = Path(__file__).resolve().parent
THIS = HERE.parent

_HTTP = """
import json, statistics, sys, time
from cfgtool import HttpConfigClient
url, cache, store, keys = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
pins, pin_cpu = [], []
for n in range(20):  # each in a cache of its own: a pin that asks the server
    t0, c0 = time.perf_counter(), time.process_time()
    HttpConfigClient(url, store=store, cache_dir=f"{cache}/pin{n}").close()
    pins.append(time.perf_counter() - t0)
    pin_cpu.append(time.process_time() - c0)
client = HttpConfigClient(url, store=store, cache_dir=cache)
t1, c1 = time.perf_counter(), time.process_time()
for key in keys:
    client.get(key)
t2, c2 = time.perf_counter(), time.process_time()
cached, cached_cpu = [], []
for _ in range(5):  # a new client each time: from the disk cache, not from the client's memory
    again = HttpConfigClient(url, store=store, cache_dir=cache)
    t3, c3 = time.perf_counter(), time.process_time()
    for key in keys:
        again.get(key)
    cached.append(time.perf_counter() - t3)
    cached_cpu.append(time.process_time() - c3)
print(json.dumps({"pin_ms": statistics.median(pins) * 1e3, "pin_cpu_ms": statistics.median(pin_cpu) * 1e3,
                  "server_us": (t2 - t1) / len(keys) * 1e6,
                  "server_cpu_us": (c2 - c1) / len(keys) * 1e6,
                  "cached_us": statistics.median(cached) / len(keys) * 1e6,
                  "cached_cpu_us": statistics.median(cached_cpu) / len(keys) * 1e6}))
"""


def env_for(code: Path, cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(code), "CFGTOOL_CACHE_DIR": str(cache)}


def cli_get(code: Path, repo: Path, cache: Path, key: str) -> float:
    """Seconds of one `cfgtool get --version 1 KEY` process."""
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "cfgtool", "--repo", str(repo), "get", "--version", "1", key],
        check=True,
        capture_output=True,
        env=env_for(code, cache),
        cwd=repo.parent,  # not a checkout: `-m` must import the code PYTHONPATH names
    )
    return time.perf_counter() - t0


def http_reads(code: Path, url: str, store: str, cache: Path, keys: list[str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", _HTTP, url, str(cache), store, *keys],
        capture_output=True,
        text=True,
        env=env_for(code, cache),
        cwd=cache.parent,
    )
    if out.returncode != 0:
        raise SystemExit(f"the HTTP client of {code} failed:\n{out.stderr}")
    figures: dict[str, float] = json.loads(out.stdout)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--datasets", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keys", type=int, default=200)
    args = parser.parse_args()
    print_machine()
    codes = {"base": args.base.resolve(), "this": THIS}
    with tempfile.TemporaryDirectory(prefix="cfgtool-paths-bench-") as name:
        tmp = Path(name)
        repo = tmp / "repo"
        subprocess.run(
            [sys.executable, str(HERE / "gen_store.py"), "--datasets", str(args.datasets), "--out", str(repo), "--git"],
            check=True,
            capture_output=True,
        )
        env = env_for(THIS, tmp / "cache-serve")
        subprocess.run([sys.executable, "-m", "cfgtool", "--repo", str(repo), "publish", "-m", "bench"], check=True,
                       capture_output=True, env=env, cwd=tmp)  # fmt: skip
        sys.path.insert(0, str(THIS))
        from cfgtool import ConfigClient

        client = ConfigClient(repo, cache_dir=tmp / "cache-serve")
        store = client.snapshot.name or "store"
        keys = [k for k in client.keys("/data") if client.exists(k)][: args.keys]
        key = keys[len(keys) // 2]
        proc, port = start_server(repo, env)
        url = f"http://127.0.0.1:{port}"
        figures: dict[str, dict[str, list[float]]] = {name: {} for name in codes}
        try:
            for name, code in codes.items():
                cli_get(code, repo, tmp / f"cache-{name}", key)  # compiles and caches the version artifact
            for run in range(args.runs):
                order = list(codes.items()) if run % 2 == 0 else list(reversed(codes.items()))
                for name, code in order:
                    got = figures[name]
                    got.setdefault("get_s", []).append(cli_get(code, repo, tmp / f"cache-{name}", key))
                    for what, value in http_reads(code, url, store, tmp / f"http-{name}-{run}", keys).items():
                        got.setdefault(what, []).append(value)
        finally:
            proc.terminate()
            proc.wait(30)
    print(f"store: {args.datasets:,} datasets; {args.keys} keys over HTTP; median of {args.runs} runs; {load()}")
    print(f"{'':38}{'base':>10}{'this':>10}{'this/base':>11}")
    labels = {
        "get_s": "cfgtool get --version 1 KEY (git), s",
        "pin_ms": "HTTP client: pin, ms (median of 20)",
        "pin_cpu_ms": "  of which the client's own CPU, ms",
        "server_us": "HTTP client: get from the server, us",
        "server_cpu_us": "  of which the client's own CPU, us",
        "cached_us": "HTTP client: get from its cache, us",  # the median of 5 clients
        "cached_cpu_us": "  of which the client's own CPU, us",
    }
    for what, label in labels.items():
        base, this = (statistics.median(figures[name][what]) for name in codes)
        print(f"{label:38}{base:10.3f}{this:10.3f}{this / base:10.3f}x")


if __name__ == "__main__":
    main()
