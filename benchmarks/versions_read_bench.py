"""Reading a cached version: a ConfigClient's start and `cfgtool get KEY --ref HEAD / --version N`,
before and after the version artifacts, side by side.

Usage:
    git worktree add --detach /tmp/old main      # (or any checkout of the code to compare with)
    python -m benchmarks.versions_read_bench --old /tmp/old [--datasets 10000] [--repeat 7]

Generates a store (benchmarks/gen_store.py), publishes version 1, and warms each side's own cache (the first
read compiles and caches the version; the refs are then left to settle, as cfgtool only remembers settled
refs). Then runs every command as a new process, alternating new and old (A B A B ...), and prints the
median wall and CPU seconds of each (and min-max), with the load average before and after. Targets: a client
on a cached 10,000-node version starts in <= 0.1 s; `get --ref/--version` on it <= 0.2 s, whole process.
Also printed: the in-process construction time of the client, and the floor of any `cfgtool get`
(arguments parsed, then a usage error: what the CLI costs before a command runs).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.machine import print_machine

HERE = Path(__file__).resolve().parent
NEW = HERE.parent

_CLIENT = """
import json, sys, time
t0 = time.perf_counter()
from cfgtool import ConfigClient
t1 = time.perf_counter()
client = ConfigClient(sys.argv[1])
t2 = time.perf_counter()
client.get(sys.argv[2])
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "construct": t2 - t1, "get": t3 - t2}))
"""


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, its stdout) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def side_env(code: Path, cache: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(code), "CFGTOOL_CACHE_DIR": str(cache)}


def figure(values: list[float]) -> str:
    return f"{statistics.median(values):6.3f} ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, help="a checkout of the code to compare with (e.g. main)")
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    print_machine()
    sides = {"new": NEW, **({"old": args.old.resolve()} if args.old else {})}
    with tempfile.TemporaryDirectory(prefix="cfgtool-versions-read-") as tmp:
        repo = Path(tmp) / "repo"
        subprocess.run([sys.executable, str(HERE / "gen_store.py"), "--datasets", str(args.datasets), "--out",
                        str(repo), "--git"], check=True, capture_output=True)  # fmt: skip
        envs = {name: side_env(code, Path(tmp) / f"cache-{name}") for name, code in sides.items()}
        subprocess.run([sys.executable, "-m", "cfgtool", "publish", "-m", "bench"], cwd=repo, env=envs["new"],
                       check=True, capture_output=True)  # fmt: skip
        key = sorted(str(p.parent.relative_to(repo / "store")) for p in (repo / "store/data").rglob("main.conf"))[-1]
        key = "/" + key
        cli = [sys.executable, "-m", "cfgtool"]
        commands = {
            "client: new process, construct + get": [sys.executable, "-c", _CLIENT, str(repo), key],
            "cfgtool get KEY --ref HEAD": [*cli, "get", key, "--ref", "HEAD"],
            "cfgtool get KEY --version 1": [*cli, "get", key, "--version", "1"],
            "cfgtool get floor (parse, usage error)": [*cli, "get", key, "--ref", "HEAD", "--version", "1"],
        }
        for env in envs.values():  # warm each side's caches: compile and cache the version once
            for cmd in commands.values():
                timed(cmd, env, repo)
        time.sleep(1.2)  # let the refs settle past the memo's racy window, then warm the memo
        for env in envs.values():
            for cmd in commands.values():
                timed(cmd, env, repo)
        load_before = os.getloadavg()
        results: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
        for _ in range(args.repeat):
            for label, cmd in commands.items():
                for name, env in envs.items():  # alternate the sides run by run
                    results.setdefault((label, name), []).append(timed(cmd, env, repo))
        load_after = os.getloadavg()
        print(f"store: {args.datasets:,} datasets, key {key}; medians of {args.repeat} (min-max), seconds")
        print(f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after {load_after[0]:.2f} "
              f"{load_after[1]:.2f}")  # fmt: skip
        print(f"{'command':42} {'side':4} {'wall':>20} {'cpu':>20}")
        for (label, name), runs in results.items():
            walls, cpus = [r[0] for r in runs], [r[1] for r in runs]
            print(f"{label:42} {name:4} {figure(walls):>20} {figure(cpus):>20}")
        for name in envs:
            inner = [json.loads(r[2]) for r in results[("client: new process, construct + get", name)] if r[2]]
            if inner:
                construct = [r["construct"] for r in inner]
                imported = [r["import"] for r in inner]
                print(f"client in-process, {name}: construct {figure(construct)}, import cfgtool {figure(imported)}")


if __name__ == "__main__":
    main()
