"""`cfgtool compile` of a working tree (the pre-commit hook's command) after a one-file edit, this checkout against
a baseline checkout side by side.

Usage:
    git worktree add --detach /tmp/old-statcache main        # the baseline: the code before the change
    python -m benchmarks.worktree_bench --baseline /tmp/old-statcache
    python -m benchmarks.worktree_bench --datasets 2000 --runs 5

The store comes from benchmarks/gen_store.py (made once under --out, committed). Each checkout has its own cache
directory; one `cfgtool compile` per checkout fills its caches, a second one its stat cache. Then each round
edits one dataset's `main.conf` (another one each round; the edit is saved 0.3 s before the compiles, as an
editor saves before `git commit` runs the hook, so the stat cache keeps it) and runs `cfgtool compile` once per
checkout, the order alternating between rounds; both see the same one-file change since their last compile.
Each run is a fresh process with its working directory in the repository. Printed: the time of a pure-Python
loop (`for i in range(10_000_000): s += i`, median of 3) to compare machines, then per checkout the median and
spread of the wall time and of the CPU time (user + system of the process and its children: git), the load
average before and after (the machine is shared), and the digests, which must agree.
Both checkouts' modules are byte-compiled first (`compileall`), as an installed package is.
Target: at most 0.5 s at 10,000 datasets (on the reference machine, whose loop takes about 0.5 s).
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

from benchmarks.machine import load, print_machine, spread

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET_S = 0.5


def run(checkout: Path, cache: Path, repo: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, the digest line) of one `cfgtool compile` process running `checkout`'s code."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "CFGTOOL_CACHE_DIR": str(cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cfgtool", "compile"], cwd=repo, env=env, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: cfgtool compile exited {proc.returncode}: {proc.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    digest = next((line for line in proc.stdout.decode().splitlines() if line.startswith("digest")), "")
    return wall, cpu, digest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with (e.g. main)")
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path("/tmp/cfgtool-worktree-bench"))
    args = parser.parse_args()
    print_machine()

    repo = args.out / f"repo-{args.datasets}"
    if not repo.exists():
        subprocess.run([sys.executable, str(HERE / "gen_store.py"), "--datasets", str(args.datasets),
                        "--out", str(repo), "--git"], check=True, capture_output=True)  # fmt: skip
    targets = sorted((repo / "store" / "data").glob("*/*/*/main.conf"))
    checkouts = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    caches = {name: args.out / f"cache-{name}-{args.datasets}" for name in checkouts}
    for name, checkout in checkouts.items():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "cfgtool")], check=True,
                       capture_output=True)  # fmt: skip
        run(checkout, caches[name], repo)  # fill the caches
        run(checkout, caches[name], repo)  # and the stat cache, with files settled since the first
    walls: dict[str, list[float]] = {name: [] for name in checkouts}
    cpus: dict[str, list[float]] = {name: [] for name in checkouts}
    print(f"{args.datasets:,} datasets, `cfgtool compile` of the working tree after a one-file edit, "
          f"{args.runs} runs each, alternating; {load()}", flush=True)  # fmt: skip
    for i in range(args.runs):
        target = targets[(i * 997) % len(targets)]
        with target.open("a", encoding="utf-8") as handle:
            handle.write(f"\nbench.touched = {time.time_ns()}\n")
        time.sleep(0.3)
        order = list(checkouts) if i % 2 == 0 else list(reversed(checkouts))
        digests = set()
        for name in order:
            wall, cpu, digest = run(checkouts[name], caches[name], repo)
            walls[name].append(wall)
            cpus[name].append(cpu)
            digests.add(digest)
        if len(digests) != 1:
            raise SystemExit(f"the checkouts disagree: {sorted(digests)}")
    for name in checkouts:
        print(f"  {name:9} wall {spread(walls[name])}   cpu {spread(cpus[name])}")
    if "baseline" in checkouts:
        ratio = statistics.median(walls["baseline"]) / statistics.median(walls["this"])
        cpu_ratio = statistics.median(cpus["baseline"]) / statistics.median(cpus["this"])
        print(f"  this is {ratio:.1f}x faster (median wall), {cpu_ratio:.1f}x (median CPU)")
    print(f"{load()}; target: at most {TARGET_S} s at 10,000 datasets on the reference machine (loop about 0.5 s)")
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", "--", "store"], check=True)  # the store as committed


if __name__ == "__main__":
    main()
