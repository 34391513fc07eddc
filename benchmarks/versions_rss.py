"""Is a long-lived process's memory flat over many versions? Publish, read and explain version after version.

    python -m benchmarks.versions_rss --versions 60 --nodes 50 [--fresh-cache] [--tracemalloc]

A long-lived process that had parsed 14,000 documents was seen at 4.4 GB. This loop is what such a
process does: each round rewrites every node of a store with new field names and values (so every document and
every path is new), commits, publishes (compile and validate), then opens a ConfigClient on the new version,
reads every key and explains one value. Nothing is kept between rounds, so after warm-up VmRSS should stay flat
(printed every 10 rounds with the load average, and after `malloc_trim`, which returns freed heap to the system).
`--fresh-cache` gives every round its own cache directory: the difference is what the on-disk caches cost a
process as they grow. With --tracemalloc, the allocations that grew after round 5 are listed by line.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import subprocess
import tempfile
import tracemalloc
from pathlib import Path

from benchmarks.machine import print_machine
from cfgtool.client.local import ConfigClient
from cfgtool.store.git import git_env
from cfgtool.versions import publish


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def round_files(repo: Path, i: int, nodes: int) -> None:
    """Rewrite every node: 20 new nested fields each and a reference, all named after the round."""
    for j in range(nodes):
        conf = repo / "store" / "data" / f"n{j}" / "main.conf"
        conf.parent.mkdir(parents=True, exist_ok=True)
        fields = [f'f{i}_{j}_{k} {{ a{i}k{k} = {k}, s = "v{i}" }}' for k in range(20)]
        conf.write_text("\n".join(fields) + f"\nref = ${{f{i}_{j}_0.s}}\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=60)
    parser.add_argument("--nodes", type=int, default=50)
    parser.add_argument("--fresh-cache", action="store_true", help="a new cache directory for every round")
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()
    print_machine()
    trim = ctypes.CDLL("libc.so.6").malloc_trim
    with tempfile.TemporaryDirectory(prefix="cfgtool-versions-rss-") as name:
        tmp = Path(name)
        repo = tmp / "repo"
        repo.mkdir()

        def git(*argv: str) -> None:
            subprocess.run(["git", *argv], cwd=repo, env=git_env(), check=True, capture_output=True)

        git("init", "-q", "-b", "main")
        git("config", "user.name", "Bench")
        git("config", "user.email", "bench@example.com")
        (repo / "store").mkdir()
        (repo / "store" / "_CONFIG_STORE").write_text("name: demo\n")
        os.environ["CFGTOOL_CACHE_DIR"] = str(tmp / "cache")
        print(f"  rounds  VmRSS MB  after malloc_trim  load average  (start {rss_mb():.1f} MB)")
        before = None
        for i in range(args.versions):
            if args.fresh_cache:
                os.environ["CFGTOOL_CACHE_DIR"] = str(tmp / f"cache{i}")
            round_files(repo, i, args.nodes)
            git("add", "-A")
            git("commit", "-qm", f"round {i}")
            publish(repo, message=f"round {i}")
            client = ConfigClient(repo)
            keys = client.keys()
            for key in keys:
                client.get(key)
            client.explain("/data/n0", f"f{i}_0_0.a{i}k0")
            del client
            if i == 4 and args.tracemalloc:
                gc.collect()
                tracemalloc.start(12)
                before = tracemalloc.take_snapshot()
            if i % 10 == 9:
                gc.collect()
                rss = rss_mb()
                trim(0)
                loads = ", ".join(f"{x:.2f}" for x in os.getloadavg())
                print(f"  {i + 1:6d}  {rss:8.1f}  {rss_mb():17.1f}  {loads}", flush=True)
        if before is not None:
            gc.collect()
            for stat in tracemalloc.take_snapshot().compare_to(before, "traceback")[:8]:
                print(stat)
                print("\n".join(stat.traceback.format()[-10:]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
