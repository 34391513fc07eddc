"""Compile time and memory of import chains: a store whose nodes each import the previous one.

Usage:
    python -m benchmarks.chain_bench                          # chains of 1,200, 4,800 and 19,200, median of 5
    python -m benchmarks.chain_bench --depths 1200 --repeat 3 --old /tmp/old-checkout

Node `/nNNNNN` sets `a = N` (and `b = ${a}` every hundredth node) and imports the node before it, so its L has
every earlier node: the input grows linearly with the depth, and so must the compile. (Every tenth node made the
chain of 19,200 an error: 1,920 definitions of `b` depend on a substitution, over the limit of 1,000.) Each run
compiles the git commit in a fresh Python process with empty caches, without validation (parse, link, resolve, digest),
and prints the time inside the process, the time of `Graph` alone (linearization) and the peak RSS of the
process (with its forked workers, from `os.wait4`), then how time and memory grew from one depth to the next.
A run that fails prints its exit status, peak RSS and stderr.

With `--old DIR` (a checkout of older code) the same runs are made with PYTHONPATH=DIR, alternating with the
new code, for the depths up to `--old-max` (older code was cubic: 4,800 took minutes on a fast machine).
Both must give the same digest. The script first prints the time of a pure-Python loop
(`for i in range(10_000_000): s += i`, median of 3), to compare machines.

Target: the chain of 1,200 in at most 1 s where that loop takes 0.5 s (scale by the loop's time here), and
each depth about 4 times the time of the one 4 times shorter.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from itertools import pairwise
from pathlib import Path

from benchmarks.machine import load, python_loop

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 1.0  # the chain of 1,200, where the loop takes REFERENCE_LOOP_S
REFERENCE_LOOP_S = 0.5

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
try:
    from cfgtool.compile.compiler import compile_store
except ImportError:  # older code: one module
    from cfgtool.compile import compile_store
from cfgtool.store.graph import Graph
from cfgtool.store.nodes import discover
from cfgtool.store.sources import open_source
repo = Path(sys.argv[1])
import cfgtool
assert Path(cfgtool.__file__).resolve().is_relative_to(Path(sys.argv[2]).resolve()), cfgtool.__file__
t0 = time.perf_counter()
result = compile_store(repo, "store", "HEAD", validate=False)
digest = result.snapshot.digest
elapsed = time.perf_counter() - t0
store = discover(open_source(repo, "store", "HEAD"))
t1 = time.perf_counter()
Graph(store)
graph_s = time.perf_counter() - t1
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
worker_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "graph_s": graph_s, "errors": result.errors, "digest": digest,
                  "peak_mb": peak_mb, "worker_mb": worker_mb}))
"""


def make_chain(out: Path, depth: int) -> None:
    """A git repository at `out` whose store is a chain of `depth` nodes, each importing the one before."""
    store = out / "store"
    store.mkdir(parents=True)
    (store / "_CONFIG_STORE").write_text("")
    for i in range(depth):
        node = store / f"n{i:05d}"
        node.mkdir()
        (node / "main.conf").write_text(f"a = {i}\n" + ("b = ${a}\n" if i % 100 == 0 else ""))
        if i:
            (node / "includes").write_text(f"/n{i - 1:05d}\n")
    env = {**os.environ, "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    git = ["git", "-C", str(out), "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-qm", f"chain of {depth}"], check=True, env=env)


def measure(repo: Path, code: Path, timeout: float) -> dict[str, float | str] | None:
    """One compile of `repo` by the code at `code`, in a fresh process with empty caches, and the peak RSS of
    that process and of its children (the compile's forked workers), taken from `os.wait4` when it exits. A run
    that fails or times out is reported with the tail of its stderr and its peak RSS (the kernel's OOM killer
    leaves no message of its own); None then."""
    with tempfile.TemporaryDirectory(prefix="chain-cache-") as cache:
        env = {**os.environ, "CFGTOOL_CACHE_DIR": cache, "PYTHONPATH": str(code)}
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(  # in the cache directory: `-c` puts the working directory first on the path
                [sys.executable, "-c", _MEASURE, str(repo), str(code)], stdout=out, stderr=err, env=env, cwd=cache
            )
            status, peak_kb = _wait(proc, timeout)
            out.seek(0)
            err.seek(0)
            stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if status != 0:
        why = "timed out" if status is None else _exit_status(status)
        print(f"  {code}: the run {why}, peak RSS {peak_kb / 1024:.0f} MB; its stderr:", flush=True)
        print("    " + "\n    ".join(stderr.strip().splitlines()[-30:] or ["(empty)"]), flush=True)
        return None
    result: dict[str, float | str] = json.loads(stdout)
    result["process_mb"] = peak_kb / 1024  # as the kernel accounted it, whatever the child measured itself
    return result


def _wait(proc: subprocess.Popen[bytes], timeout: float) -> tuple[int | None, int]:
    """Wait for `proc` (killed after `timeout` seconds): (its wait status, None when it timed out; its peak
    RSS in KB, the largest of it and its own waited-for children, from `os.wait4`)."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = 0  # reaped here: Popen must not wait for it again
            return status, usage.ru_maxrss
        if time.monotonic() > deadline:
            proc.kill()
            _, _, usage = os.wait4(proc.pid, 0)
            proc.returncode = -9
            return None, usage.ru_maxrss
        time.sleep(0.05)


def _exit_status(status: int) -> str:
    """`exited 1`, `was killed by signal 9 (SIGKILL: out of memory?)`."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name
        return f"was killed by signal {number} ({name}{': out of memory?' if name == 'SIGKILL' else ''})"
    return f"exited {os.WEXITSTATUS(status)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depths", type=int, nargs="+", default=[1200, 4800, 19200])
    parser.add_argument("--repeat", type=int, default=5, help="runs per depth and code (median)")
    parser.add_argument("--old", type=Path, help="a checkout of older code to measure side by side")
    parser.add_argument("--old-max", type=int, default=1200, help="deepest chain the old code compiles")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds before one run is given up")
    args = parser.parse_args()

    loop = python_loop()
    scale = max(1.0, loop / REFERENCE_LOOP_S)
    print(f"python loop (10M additions, median of 3): {loop:.2f} s; {load()}")
    print(f"target: chain of 1,200 <= {TARGET_S * scale:.1f} s here ({TARGET_S} s where the loop takes 0.5 s)")
    codes = [("new", ROOT)] + ([("old", args.old.resolve())] if args.old else [])
    growth: dict[str, list[tuple[int, float, float]]] = {name: [] for name, _ in codes}  # depth, s, MB
    with tempfile.TemporaryDirectory(prefix="chain-bench-") as tmp:
        for depth in args.depths:
            repo = Path(tmp) / f"chain{depth}"
            make_chain(repo, depth)
            runs: dict[str, list[dict[str, float | str]]] = {name: [] for name, _ in codes}
            for _ in range(args.repeat):
                for name, code in codes:  # alternating, so both see the same load
                    if name == "old" and depth > args.old_max:
                        continue
                    found = measure(repo, code, args.timeout)
                    if found is not None:
                        runs[name].append(found)
            for name, got in runs.items():
                if not got:
                    continue
                seconds = statistics.median(float(r["seconds"]) for r in got)
                graph_s = statistics.median(float(r["graph_s"]) for r in got)
                peak = statistics.median(float(r["process_mb"]) for r in got)
                worker = max(float(r["worker_mb"]) for r in got)
                digests = sorted({str(r["digest"]) for r in got})
                growth[name].append((depth, seconds, peak))
                print(
                    f"depth {depth:>6,} {name}: compile {seconds:7.2f} s (median of {len(got)}), "
                    f"graph {graph_s:6.2f} s, peak RSS {peak:6.0f} MB (largest worker {worker:.0f} MB), "
                    f"digest {digests[0][:19]}{'' if len(digests) == 1 else ' DIGESTS DIFFER'}; {load()}",
                    flush=True,
                )
            if len(runs) == 2 and runs["old"] and runs["new"] and runs["old"][0]["digest"] != runs["new"][0]["digest"]:
                print(f"depth {depth:,}: the old and new code give different digests")
    for name, rows in growth.items():
        for (d0, s0, m0), (d1, s1, m1) in pairwise(rows):
            print(f"{name}: {d0:,} -> {d1:,} deep ({d1 / d0:.1f}x): time {s1 / s0:.1f}x, peak RSS {m1 / m0:.1f}x")
    print(f"python loop again: {python_loop():.2f} s; {load()}")


if __name__ == "__main__":
    main()
