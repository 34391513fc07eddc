"""Version listing speed with many version tags: `versions` and the current-version lookup.

Usage:
    python -m benchmarks.versions_bench                  # 10,000 version tags, best of 5
    python -m benchmarks.versions_bench --tags 2000 --repeat 3

Builds a repository with one commit per 100 versions and N annotated version tags (every 50th one rolled back),
each message carrying cfgtool's metadata line, through ONE `git fast-import` (a few seconds for 10,000 tags).
Then times, in this process: `versions(all=True)`, `versions()` (the newest 20), `current_version()` and
`readers.steps()` (every publish and rollback in order, what the console and the change feed read), with the
tags as loose refs (as after fetching them) and after `git pack-refs --all` (as after a gc); and the CLI
`cfgtool versions --all --format json` end to end (a new process each time).
Target: `versions` and the current-version lookup <= 0.3 s with 10,000 version tags.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.machine import print_machine
from cfgtool.store.git import git_env
from cfgtool.versions import current_version, history, versions
from cfgtool.versions.messages import format_message
from cfgtool.versions.readers import steps

TARGET_S = 0.3


def build(repo: Path, count: int) -> None:
    """A repository with `store/_CONFIG_STORE`, count/100 commits and `count` version tags (2% rolled back)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=git_env())
    stream: list[bytes] = []
    when = 1_700_000_000
    commits = max(1, count // 100)
    for c in range(commits):
        content = f"name: bench\n# revision {c}\n".encode()
        msg = f"change {c}\n".encode()
        stream += [
            b"commit refs/heads/main\n",
            f"mark :{c + 1}\n".encode(),
            f"committer Bench <bench@example.com> {when + c * 60} +0000\n".encode(),
            b"data %d\n%s\n" % (len(msg), msg),
        ]
        if c:
            stream.append(f"from :{c}\n".encode())
        stream += [b"M 100644 inline store/_CONFIG_STORE\n", b"data %d\n%s\n" % (len(content), content)]
    for n in range(1, count + 1):
        mark = min(commits, (n - 1) // 100 + 1)
        meta = {
            "kind": "version",
            "version": n,
            "commit": "0" * 40,
            "store": "store",
            "digest": f"sha256:{n:064x}",
            "nodes": 10_000,
            "cfgtool_version": "bench",
            "publisher": "Bench <bench@example.com>",
            "message": f"release {n}",
        }
        _tag(stream, f"config/v{n}", mark, when + n * 60, format_message(f"release {n}", meta))
        if n % 50 == 0:
            meta = {"kind": "rollback", "version": n, "by": "Ops <ops@example.com>", "reason": "bad retention"}
            _tag(stream, f"config/rolledback/v{n}", mark, when + n * 60 + 30, format_message("roll back", meta))
    stream.append(b"done\n")
    subprocess.run(
        ["git", "fast-import", "--quiet", "--done"], cwd=repo, input=b"".join(stream), check=True, env=git_env()
    )
    subprocess.run(["git", "checkout", "-q", "main"], cwd=repo, check=True, env=git_env())


def _tag(stream: list[bytes], name: str, mark: int, when: int, message: str) -> None:
    data = message.encode()
    stream += [
        f"tag {name}\n".encode(),
        f"from :{mark}\n".encode(),
        f"tagger Bench <bench@example.com> {when} +0000\n".encode(),
        b"data %d\n%s\n" % (len(data), data),
    ]


def best(func: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        func()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tags", type=int, default=10_000, help="number of version tags (default 10,000)")
    parser.add_argument("--repeat", type=int, default=5, help="best of this many runs (default 5)")
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory(prefix="cfgtool-versions-bench-") as tmp:
        repo = Path(tmp) / "repo"
        t0 = time.perf_counter()
        build(repo, args.tags)
        print(f"built {args.tags:,} version tags in {time.perf_counter() - t0:.1f} s")
        worst = 0.0
        for state in ("loose refs", "packed refs"):
            if state == "packed refs":
                subprocess.run(["git", "pack-refs", "--all"], cwd=repo, check=True, env=git_env())
            listed = versions(repo, all=True)
            current = current_version(repo)
            assert len(listed) == args.tags and current is not None
            figures = {
                "versions(all=True)": best(lambda: versions(repo, all=True), args.repeat),
                "versions()": best(lambda: versions(repo), args.repeat),
                "current_version()": best(lambda: current_version(repo), args.repeat),
                "readers.steps()": best(lambda: steps(history(repo)), args.repeat),
            }
            for name, seconds in figures.items():
                if name in ("versions()", "current_version()"):  # the target is for these two
                    worst = max(worst, seconds)
                print(f"{state:12} {name:20} {seconds * 1000:7.1f} ms")
        cli = [sys.executable, "-m", "cfgtool", "--repo", str(repo), "versions", "--all", "--format", "json"]
        seconds = best(lambda: subprocess.run(cli, check=True, capture_output=True), max(1, args.repeat // 2))
        print(f"{'packed refs':12} {'CLI versions --all':20} {seconds * 1000:7.1f} ms (whole process)")
        verdict = "OK" if worst <= TARGET_S else "SLOWER THAN TARGET"
        shown = current.version if current is not None else None
        print(f"target <= {TARGET_S * 1000:.0f} ms for versions() and current_version(): {verdict} (current: v{shown})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
