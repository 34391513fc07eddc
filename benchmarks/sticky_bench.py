"""What "rollbacks stick" costs `publish`: a 10,000-dataset store with three rolled-back versions in its history.

Usage:
    python -m benchmarks.sticky_bench --keep /tmp/sticky-bench            # build once, then measure
    python -m benchmarks.sticky_bench --keep /tmp/sticky-bench --old /tmp/old-code

History (built with this checkout's cfgtool, local tags): v1; v2 sets a value in 20 datasets (rolled back); v3
reverts it with an unrelated change; v4 changes a tag many datasets import, v5 one dataset (both rolled back with
`--to 3`); the candidate reverts them and changes one more file. Printed, medians of --repeat runs:

- the stickiness check alone (`watches` + `relapses`, in this process): first cold (the versions' artifacts
  compiled and cached), then with the artifacts cached but the watch lists recomputed (one SQL join per
  rolled-back version), then warm (the watch lists read from the cache);
- `cfgtool publish --dry-run` end to end, a new process each time, this code and (with --old DIR, a checkout of
  the old code) the old one alternately, so both meet the same load.
Target: the check adds at most 0.3 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.gen_store import generate, git_commit
from benchmarks.machine import print_machine
from cfgtool.store.git import git_env

TARGET_S = 0.3


def git(repo: Path, *args: str) -> str:
    env = {**git_env(), "GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}  # fmt: skip
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout


def append(repo: Path, files: list[Path], line: str) -> None:
    for f in files:
        f.write_text(f.read_text(encoding="utf-8") + line, encoding="utf-8")


def strip(repo: Path, files: list[Path], line: str) -> None:
    for f in files:
        f.write_text(f.read_text(encoding="utf-8").replace(line, ""), encoding="utf-8")


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def build(repo: Path, datasets: int) -> None:
    """The store and its history: three rolled-back versions, then a clean candidate at HEAD."""
    from cfgtool.versions import publish, rollback

    stats = generate(datasets, repo)
    git_commit(repo, stats.written, "generated store")
    git(repo, "config", "user.name", "Bench")
    git(repo, "config", "user.email", "bench@example.com")
    mains = sorted((repo / "store" / "data").rglob("main.conf"))
    leaves = [m for m in mains if m.parent.parent.parent.parent.name == "data"][:20]  # datasets
    tag = repo / "store" / "tags" / "retention" / "SHORT" / "main.conf"
    publish(repo, message="v1")
    append(repo, leaves, "\nbench.flag = 2\n")
    commit(repo, "flag 20 datasets")
    publish(repo, message="v2")
    rollback(repo, reason="bad flag")
    strip(repo, leaves, "\nbench.flag = 2\n")
    append(repo, mains[:1], "\nbench.note = 1\n")
    commit(repo, "revert the flag; a note")
    publish(repo, message="v3")
    append(repo, [tag], "\nbench.tagged = 1\n")
    commit(repo, "a tag many datasets import")
    publish(repo, message="v4")
    append(repo, leaves[:1], "\nbench.one = 1\n")
    commit(repo, "one dataset")
    publish(repo, message="v5")
    rollback(repo, to=3, reason="bad week")
    strip(repo, [tag], "\nbench.tagged = 1\n")
    strip(repo, leaves[:1], "\nbench.one = 1\n")
    append(repo, mains[1:2], "\nbench.note = 2\n")
    commit(repo, "revert the week; another note")


def check_once(repo: Path) -> float:
    from cfgtool.compile.compiler import compile_store
    from cfgtool.versions import history
    from cfgtool.versions.sticky import relapses, watches

    snap = compile_store(repo, "store", "HEAD", None, validate=False).snapshot
    t0 = time.perf_counter()
    held = relapses(watches(repo, "store", history(repo)), snap)
    took = time.perf_counter() - t0
    assert not held, held
    return took


def cli_once(repo: Path, code: Path | None) -> float:
    env = {**os.environ}
    if code is not None:
        env["PYTHONPATH"] = str(code)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "cfgtool", "--repo", str(repo), "publish", "--dry-run"], env=env,
                   check=True, capture_output=True)  # fmt: skip
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--keep", type=Path, required=True, metavar="DIR", help="build the repository here once")
    parser.add_argument("--old", type=Path, default=None, metavar="DIR", help="a checkout of the old code")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("CFGTOOL_CACHE_DIR", str(args.keep / "cache"))
    print_machine()
    repo = args.keep / "repo"
    if not (repo / ".git").exists():
        t0 = time.perf_counter()
        build(repo, args.datasets)
        print(f"built the store and its history in {time.perf_counter() - t0:.0f} s")
    print(f"stickiness check, first run: {check_once(repo):.3f} s (artifacts compiled when missing)")
    recomputed = []
    for _ in range(args.repeat):
        for entry in Path(os.environ["CFGTOOL_CACHE_DIR"]).glob("watches-v*/*.json"):
            entry.unlink()
        recomputed.append(check_once(repo))
    print(f"stickiness check, artifacts cached, watch lists recomputed: median {statistics.median(recomputed):.3f} s"
          f" ({', '.join(f'{t:.3f}' for t in recomputed)})")  # fmt: skip
    warm = [check_once(repo) for _ in range(args.repeat)]
    verdict = "OK" if statistics.median(warm) <= TARGET_S else "SLOWER THAN TARGET"
    print(f"stickiness check, warm: median {statistics.median(warm):.3f} s of {args.repeat} "
          f"({', '.join(f'{t:.3f}' for t in warm)}): target <= {TARGET_S} s: {verdict}")  # fmt: skip
    new: list[float] = []
    old: list[float] = []
    for _ in range(args.repeat):
        new.append(cli_once(repo, None))
        if args.old is not None:
            old.append(cli_once(repo, args.old))
    print(f"publish --dry-run, this code: median {statistics.median(new):.2f} s ({', '.join(f'{t:.2f}' for t in new)})")
    if old:
        print(f"publish --dry-run, old code:  median {statistics.median(old):.2f} s "
              f"({', '.join(f'{t:.2f}' for t in old)})")  # fmt: skip
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
