"""Tab completion at 10,000 datasets: keys, tags, versions and `--var` values, each a fresh `cfgtool` process
as the shell starts it (bash: COMP_WORDS, COMP_CWORD, _CFGTOOL_COMPLETE=complete_bash), warm caches.

Usage:
    git worktree add --detach /tmp/old-cli 8b5cb28       # optional: older code, for the same completions
    python -m benchmarks.completion_bench --old /tmp/old-cli
    python -m benchmarks.completion_bench --datasets 2000 --runs 5

The store comes from benchmarks/gen_store.py (made once under --out, committed) and gets two version tags
made with `git tag` (completion reads tag names and metadata, not the versions' configs). Each completion
runs once to warm the caches (the ref memo), then `--runs` times, this checkout and the old one alternating.
Printed per completion: the candidates' count and the medians and spreads of the wall time and of the CPU
time (user + system of the process). The old code offers no such candidates; its time is what a completion
of the same line cost before. The script first prints the time of a pure-Python loop (`for i in
range(10_000_000): s += i`, median of 3) to compare machines, and the load average before and after.
Target: at most 0.3 s per completion (on the reference machine; see the loop time).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.machine import load, python_loop, spread

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TARGET_S = 0.3
LINES = [  # what was typed before Tab; the completion is of the last word
    "cfgtool get ",
    "cfgtool get /data/identity/core00/Page",
    "cfgtool explain /data/identity/core00/",
    "cfgtool datasets /tags/re",
    "cfgtool get /data --version ",
    "cfgtool diff ",
    "cfgtool get /data --ref config/",
    "cfgtool get /data --var local_cluster.name=",
]


def complete(checkout: Path, cache: Path, repo: Path, line: str) -> tuple[float, float, list[str]]:
    """(wall seconds, CPU seconds, candidates) of one completion of `line` by `checkout`'s code."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = {
        **os.environ,
        "PYTHONPATH": str(checkout),
        "CFGTOOL_CACHE_DIR": str(cache),
        "_CFGTOOL_COMPLETE": "complete_bash",
        "COMP_WORDS": line,
        "COMP_CWORD": str(cword),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "cfgtool"], cwd=repo, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout.split()


def tag_versions(repo: Path) -> None:
    """Versions 1 and 2 as annotated tags whose metadata names the store (what `publish` writes, minus the
    compile: completion reads the tags alone)."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    for n in (1, 2):
        meta = {"cfgtool_version": "0.1.0", "commit": head, "digest": "sha256:" + f"{n:064x}", "kind": "version",
                "message": f"v{n}", "name": None, "nodes": 1, "principal": None, "publisher": "bench", "ref": "HEAD",
                "schema": 1, "store": "store", "variables": {}, "version": n}  # fmt: skip
        message = f"v{n}\n\ncfgtool-metadata: {json.dumps(meta, sort_keys=True, separators=(',', ':'))}\n"
        subprocess.run(["git", "tag", "-a", f"config/v{n}", head, "-m", message], cwd=repo, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, help="a checkout of older code to compare with")
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--out", type=Path, default=Path("/tmp/cfgtool-completion-bench"))
    args = parser.parse_args()
    print(f"python loop (10M additions, median of 3): {python_loop():.3f} s")
    print(load())

    repo = args.out / f"repo-{args.datasets}"
    if not repo.exists():
        subprocess.run([sys.executable, str(HERE / "gen_store.py"), "--datasets", str(args.datasets),
                        "--out", str(repo), "--git"], check=True, capture_output=True)  # fmt: skip
        tag_versions(repo)
    checkouts = {"this": ROOT} | ({"old": args.old.resolve()} if args.old else {})
    caches = {name: args.out / f"cache-{name}" for name in checkouts}
    for checkout in checkouts.values():
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "cfgtool")], check=True,
                       capture_output=True)  # fmt: skip
    print(f"{args.datasets:,} datasets, working tree, warm caches, {args.runs} runs each, alternating")
    worst = 0.0
    for line in LINES:
        walls: dict[str, list[float]] = {name: [] for name in checkouts}
        cpus: dict[str, list[float]] = {name: [] for name in checkouts}
        found: dict[str, list[str]] = {}
        for name, checkout in checkouts.items():
            found[name] = complete(checkout, caches[name], repo, line)[2]  # warms the ref memo
        for _ in range(args.runs):
            for name, checkout in checkouts.items():
                wall, cpu, _ = complete(checkout, caches[name], repo, line)
                walls[name].append(wall)
                cpus[name].append(cpu)
        shown = found["this"][:3] + (["..."] if len(found["this"]) > 3 else [])
        print(f"\n{line!r}<Tab>: {len(found['this'])} candidates {shown}")
        for name in checkouts:
            print(f"  {name:5} wall {spread(walls[name])}   cpu {spread(cpus[name])}   ({len(found[name])} found)")
        worst = max(worst, statistics.median(cpus["this"]))
    print(f"\n{load()}; slowest median CPU time {worst:.3f} s; target at most {TARGET_S} s per completion")


if __name__ == "__main__":
    main()
