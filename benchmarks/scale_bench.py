"""The scaling table of docs/scaling.md in one run: every row through the CLI end to end (a new process per run).

Usage:
    python -m benchmarks.scale_bench                                 # --sizes 10000,100000 --runs 5
    python -m benchmarks.scale_bench --sizes 10000,30000 --runs 5 --stores /tmp/stores

For each size, on a `gen_store.py` store committed to git (generated once; `--stores DIR` keeps them for the
next run):
- `cfgtool --version`;
- `cfgtool compile --ref BASE`, cold: every run with an empty cache directory; its time and the peak RSS of
  the largest process of the run (the CLI or its forked worker; a forked worker's RSS counts the pages it
  still shares with its parent);
- `cfgtool compile --ref CHANGE`, after a one-file change: each run starts from one cold run's caches and
  compiles a new commit that changes one dataset's main.conf (so every run parses it and resolves what
  depends on it);
- `cfgtool get KEY` in the working tree, `get KEY --ref HEAD` and `get KEY --version N` (version N published
  by this script at HEAD), each with its cache warmed by one untimed run first.
Each row prints the median of `--runs` runs, their range, the target where docs/scaling.md sets one, whether the
median meets it, the median CPU time (user + system, all processes of a run: steadier than wall time on a
busy machine) and the 1-minute load average when the row started (the machine is shared: compare figures
taken under similar load). Set PYTHONPATH to compare two checkouts of cfgtool with the same command.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.machine import print_machine

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024

# (row, datasets or None for every size) -> target: seconds, or bytes for memory rows
TARGETS: dict[tuple[str, int | None], float] = {
    ("cfgtool --version", None): 0.15,
    ("get KEY, working tree, warm cache", None): 0.3,
    ("get KEY --ref HEAD, cached", None): 0.2,
    ("get KEY --version N, cached", None): 0.2,
    ("compile, cold", 10_000): 4.0,
    ("compile, after a one-file change", 10_000): 0.6,
    ("compile, cold", 100_000): 60.0,
    ("compile, cold: peak memory", 100_000): 2048 * MB,
    ("compile, after a one-file change", 100_000): 6.0,
}


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_rss: int  # bytes, largest process of the run
    cpu: float  # user + system seconds of the run's processes


def cfgtool_command() -> list[str]:
    """The `cfgtool` script next to this interpreter, else `python -m cfgtool`."""
    script = Path(sys.executable).with_name("cfgtool")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cfgtool"]


def run(args: list[str], cwd: Path, cache: Path | None = None) -> Run:
    """Run one cfgtool command to its end: wall time and the peak RSS of it and its children."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: compiled modules are reused, not compiled per run
    if cache is not None:
        env["CFGTOOL_CACHE_DIR"] = str(cache)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [*cfgtool_command(), *args], cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"cfgtool {' '.join(args)} failed ({proc.returncode}): {err.decode(errors='replace')}")
    return Run(seconds, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def store(datasets: int, stores: Path) -> tuple[Path, str]:
    """The generated repository for `datasets` (made once) and its first commit."""
    repo = stores / f"store-{datasets}"
    if not (repo / ".git").is_dir():
        subprocess.run(
            [sys.executable, str(HERE / "gen_store.py"), "--datasets", str(datasets), "--out", str(repo), "--git",
             "--force"],
            check=True, capture_output=True,
        )  # fmt: skip
    return repo, git(repo, "rev-list", "--max-parents=0", "HEAD")


def change_one_file(repo: Path) -> str:
    """Commit a change to one dataset's main.conf; the new commit."""
    target = repo / git(repo, "ls-files", "store/data/*/main.conf").splitlines()[0]
    with target.open("a", encoding="utf-8") as handle:
        handle.write(f"\nbench.touched = {time.time_ns()}\n")
    git(repo, "commit", "-qam", "bench: change one file")
    return git(repo, "rev-parse", "HEAD")


def a_dataset_key(repo: Path) -> str:
    path = git(repo, "ls-files", "store/data/*/main.conf").splitlines()[-1]
    return "/" + path.removeprefix("store/").removesuffix("/main.conf")


class Table:
    """Rows printed as they are measured."""

    def __init__(self) -> None:
        print(f"{'row':<38} {'datasets':>9} {'median':>10} {'range':>17} {'target':>9}  {'':<6} {'cpu':>7}  load")
        self.missed = 0

    def add(self, row: str, datasets: int, runs: list[Run], load: float, memory: bool = False) -> None:
        values = [float(r.peak_rss) if memory else r.seconds for r in runs]
        target = TARGETS.get((row, datasets), TARGETS.get((row, None)))
        median = statistics.median(values)

        def show(v: float) -> str:
            return f"{v / MB:.0f} MB" if memory else f"{v:.2f} s"

        verdict = "" if target is None else ("met" if median <= target else "missed")
        self.missed += verdict == "missed"
        span = f"{show(min(values))} - {show(max(values))}"
        goal = "" if target is None else f"<= {show(target)}"
        cpu = "" if memory else f"{statistics.median(r.cpu for r in runs):.2f} s"
        print(f"{row:<38} {datasets:>9,} {show(median):>10} {span:>17} {goal:>9}  {verdict:<6} {cpu:>7}  {load:.2f}",
              flush=True)  # fmt: skip


def measure(datasets: int, runs: int, stores: Path, scratch: Path, table: Table, gets: bool = True) -> None:
    repo, base = store(datasets, stores)
    key = a_dataset_key(repo)

    load = os.getloadavg()[0]
    table.add("cfgtool --version", datasets, [run(["--version"], repo) for _ in range(runs)], load)

    caches = [scratch / f"cache-{datasets}-{i}" for i in range(runs)]
    load = os.getloadavg()[0]
    cold = [run(["compile", "--ref", base], repo, cache) for cache in caches]
    table.add("compile, cold", datasets, cold, load)
    table.add("compile, cold: peak memory", datasets, cold, load, memory=True)

    load = os.getloadavg()[0]
    warm = [run(["compile", "--ref", change_one_file(repo)], repo, cache) for cache in caches]
    table.add("compile, after a one-file change", datasets, warm, load)
    table.add("compile, after a one-file change: peak", datasets, warm, load, memory=True)

    for folder in caches:
        shutil.rmtree(folder, ignore_errors=True)
    if not gets:
        return
    cache = scratch / f"cache-{datasets}-get"
    run(["publish", "--ref", "HEAD", "-m", "scale bench"], repo, cache)  # a new version (stores are reused)
    version = str(len(git(repo, "tag", "--list", "config/v*").split()))
    for row, args in (
        ("get KEY, working tree, warm cache", ["get", key]),
        ("get KEY --ref HEAD, cached", ["get", key, "--ref", "HEAD"]),
        ("get KEY --version N, cached", ["get", key, "--version", version]),
    ):
        run(args, repo, cache)  # fills the cache
        load = os.getloadavg()[0]
        table.add(row, datasets, [run(args, repo, cache) for _ in range(runs)], load)
    shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="datasets per store, comma-separated")
    parser.add_argument("--runs", type=int, default=5, help="runs per row (the median is reported)")
    parser.add_argument("--stores", type=Path, help="keep the generated stores here (default: a temporary dir)")
    parser.add_argument("--compile-only", action="store_true", help="only the version and compile rows")
    args = parser.parse_args()
    print_machine()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    package = subprocess.run(
        [sys.executable, "-c", "import cfgtool, os; print(os.path.dirname(cfgtool.__file__))"],
        check=True, capture_output=True, text=True, cwd="/",  # not this directory: PYTHONPATH decides
    ).stdout.strip()  # fmt: skip
    # as installed: modules compiled once, not on every run (PYTHONDONTWRITEBYTECODE is dropped for the runs)
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True, capture_output=True)
    print(f"cfgtool from {package}")
    print(
        f"cfgtool scale benchmark: python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {args.runs} runs per "
        f"row, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    with tempfile.TemporaryDirectory(prefix="cfgtool-scale-") as tmp:
        stores = args.stores or Path(tmp) / "stores"
        stores.mkdir(parents=True, exist_ok=True)
        table = Table()
        for datasets in sizes:
            measure(datasets, args.runs, stores, Path(tmp), table, gets=not args.compile_only)
    print(
        f"load average at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"{table.missed} median(s) missed their target"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
