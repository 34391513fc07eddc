"""Compile speed on a generated store: cold from a git ref, warm after a one-file change.

Usage:
    python -m benchmarks.compile_bench                    # 10,000 datasets, best of 3
    python -m benchmarks.compile_bench --datasets 2000 --repeat 1

Each measurement runs in a fresh Python process (`compile_store` on a git ref with every variable value
checked, timed inside the process, plus the peak RSS of the process and of its largest child: the forked
worker that resolves half of a large build, or git; a forked child's RSS counts the pages it still shares
with its parent, so that row is an upper bound), so nothing is shared between runs except the on-disk
caches (parsed files, resolved nodes):
- cold: empty caches, the generated commit;
- warm: the caches filled by a cold run, then a commit that changes one dataset's main.conf (each warm run
  has its own cold run's caches, so every one of them parses that file and resolves what depends on it).
Both are measured without validation (parse, link, resolve) and with it (schemas and policies).
Targets: cold <= 5 s at 10,000 datasets on the 2-core machine, warm <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import print_machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
COLD_TARGET_S = 5.0
WARM_TARGET_S = 1.0

_MEASURE = """
import json, resource, sys, time
from pathlib import Path
from cfgtool.compile.compiler import compile_store
t0 = time.perf_counter()
result = compile_store(Path(sys.argv[1]), "store", sys.argv[2], validate=sys.argv[3] == "1")
digest = result.snapshot.digest
elapsed = time.perf_counter() - t0
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
worker_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print(json.dumps({"seconds": elapsed, "nodes": len(result.snapshot.nodes), "errors": result.errors,
                  "checked": len(result.checked), "peak_mb": peak_mb, "worker_mb": worker_mb, **result.stats}))
"""


def measure(repo: Path, ref: str, cache: Path, validate: bool) -> dict[str, float]:
    """Compile `ref` (every variable value checked) in a fresh interpreter with its caches at `cache`."""
    env = {**os.environ, "CFGTOOL_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(repo), ref, "1" if validate else "0"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    figures: dict[str, float] = json.loads(out.stdout)
    return figures


def change_one_file(repo: Path) -> str:
    """Commit a change to one dataset's main.conf; return the new commit."""
    target = sorted((repo / "store" / "data").glob("*/*/*/main.conf"))[0]
    with target.open("a", encoding="utf-8") as handle:
        handle.write(f"\nbench.touched = {time.time_ns()}\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "bench: change one file"], check=True)
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs per measurement")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print_machine()

    with tempfile.TemporaryDirectory(prefix="cfgtool-compile-bench-") as tmp:
        repo = Path(tmp) / "repo"
        subprocess.run(
            [
                sys.executable,
                str(HERE / "gen_store.py"),
                "--datasets",
                str(args.datasets),
                "--out",
                str(repo),
                "--seed",
                str(args.seed),
                "--git",
            ],
            check=True,
            capture_output=True,
        )
        base = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()
        rows: list[tuple[str, str, str, str]] = []
        for validate in (False, True):
            label = "with schemas and policies" if validate else "parse, link, resolve"
            caches = [Path(tmp) / f"cache-{validate}-{i}" for i in range(args.repeat)]
            cold = min((measure(repo, base, c, validate) for c in caches), key=lambda f: f["seconds"])
            warms = []  # each run: its own cold run's caches, and one more changed file than they have seen
            for cache in caches:
                head = change_one_file(repo)
                warms.append(measure(repo, head, cache, validate))
            warm = min(warms, key=lambda f: f["seconds"])
            rows.append(
                (
                    f"cold compile, {label}",
                    f"{cold['seconds']:.2f} s",
                    f"<= {COLD_TARGET_S:.0f} s",
                    "PASS" if cold["seconds"] <= COLD_TARGET_S else "MISS",
                )
            )
            rows.append(
                (
                    f"warm compile after a one-file change, {label}",
                    f"{warm['seconds']:.2f} s",
                    f"<= {WARM_TARGET_S:.0f} s",
                    "PASS" if warm["seconds"] <= WARM_TARGET_S else "MISS",
                )
            )
            rows.append(
                (
                    "  warm: files parsed / nodes resolved / reused",
                    f"{warm['parsed']:.0f} / {warm['resolved']:.0f} / {warm['reused']:.0f}",
                    "",
                    "",
                )
            )
            rows.append(
                (f"peak memory (cold / warm), {label}", f"{cold['peak_mb']:.0f} / {warm['peak_mb']:.0f} MB", "", "")
            )
            rows.append(
                (
                    "  largest child (cold / warm), shared pages counted too",
                    f"{cold['worker_mb']:.0f} / {warm['worker_mb']:.0f} MB",
                    "",
                    "",
                )
            )
            nodes, assignments = int(cold["nodes"]), int(cold["checked"])
        print(
            f"store: {args.datasets:,} datasets, {nodes:,} nodes, {assignments} variable assignments checked; "
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, best of {args.repeat}, "
            f"load average {os.getloadavg()[0]:.2f}"
        )
        width = max(len(r[0]) for r in rows)
        for name, figure, target, verdict in rows:
            print(f"{name:<{width}}  {figure:>16}  {target:>8}  {verdict}")


if __name__ == "__main__":
    main()
