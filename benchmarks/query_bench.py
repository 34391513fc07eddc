"""One key's queries end to end: `cfgtool get KEY` and friends on a generated store's working tree,
warm cache, whole process, this checkout against a baseline checkout side by side.

Usage:
    git worktree add --detach /tmp/oldq main            # the baseline: the code before the change
    python -m benchmarks.query_bench --baseline /tmp/oldq
    python -m benchmarks.query_bench --datasets 2000 --runs 5

The store comes from benchmarks/gen_store.py (made once under --out). One `cfgtool compile` per checkout
fills the caches (its own cache directory each, so neither warms the other's), then each command runs
`--runs` times per checkout, the two checkouts alternating (A B A B ...), each run a fresh `cfgtool`
process with its working directory in the repository. Printed per command and checkout: the median and the
spread of the wall time and of the CPU time (user + system of the process and its children), and the ratio
of the medians; the load average is printed before and after, since the machine is shared.
Both checkouts' modules are byte-compiled first (`compileall`), as an installed package is.
Target: `get KEY` at most 0.3 s at 10,000 datasets.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.machine import print_machine, spread

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET_S = 0.3
KEY = "/data/identity/core00/PageSendEvent001011"  # a dataset of the generated store (any seed-0 store)
COMMANDS = [
    ["get", KEY],
    ["get", KEY, "retention.ms", "-f", "json"],
    ["explain", KEY, "retention.ms"],
    ["imports", "-r", KEY],
    ["tags", KEY],
    ["get", KEY + "-without-node"],
]


def run(checkout: Path, cache: Path, repo: Path, args: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit code) of one `cfgtool ARGS` process running `checkout`'s code."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "CFGTOOL_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cfgtool", *args], cwd=repo, env=env, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with (e.g. main)")
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("/tmp/cfgtool-query-bench"))
    args = parser.parse_args()
    print_machine()

    repo = args.out / f"repo-{args.datasets}"
    if not repo.exists():
        subprocess.run([sys.executable, str(HERE / "gen_store.py"), "--datasets", str(args.datasets),
                        "--out", str(repo), "--git"], check=True, capture_output=True)  # fmt: skip
    checkouts = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    caches = {name: args.out / f"cache-{name}-{args.datasets}" for name in checkouts}
    for name, checkout in checkouts.items():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "cfgtool")], check=True,
                       capture_output=True)  # fmt: skip
        run(checkout, caches[name], repo, ["compile"])  # warm the caches
    print(f"{args.datasets:,} datasets, working tree, warm cache, {args.runs} runs each, alternating; "
          f"load average {os.getloadavg()[0]:.2f}")  # fmt: skip
    for command in COMMANDS:
        walls: dict[str, list[float]] = {name: [] for name in checkouts}
        cpus: dict[str, list[float]] = {name: [] for name in checkouts}
        codes: set[int] = set()
        for _ in range(args.runs):
            for name, checkout in checkouts.items():
                wall, cpu, code = run(checkout, caches[name], repo, command)
                walls[name].append(wall)
                cpus[name].append(cpu)
                codes.add(code)
        shown = " ".join(command).replace(KEY, "KEY")
        print(f"\ncfgtool {shown}   (exit {', '.join(map(str, sorted(codes)))})")
        for name in checkouts:
            print(f"  {name:9} wall {spread(walls[name])}   cpu {spread(cpus[name])}")
        if "baseline" in checkouts:
            ratio = statistics.median(walls["baseline"]) / statistics.median(walls["this"])
            print(f"  this is {ratio:.1f}x faster (median wall)")
    print(f"\nload average {os.getloadavg()[0]:.2f}; target for `get KEY`: at most {TARGET_S} s")


if __name__ == "__main__":
    main()
