"""The CPU time of one CLI run of the tests: a fresh `cfgtool` process against a fork of the tests' fork server
(tests/forkserver.py, what `run_cfgtool` runs), on a committed copy of the embedded store with a warm parse cache.

Usage:
    python -m benchmarks.cli_forks_bench [--runs 5]

CPU time (user + system) is what a loaded machine's test suite is short of; a fork's figure is its client's and
its child's (the fork server reaps the child: read from its /proc entry). Medians of `--runs` runs.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.machine import print_machine
from tests.conftest import copy_embedded
from tests.processes import ForkServer, cfgtool_command, child_env

COMMANDS = (
    ["--version"],
    ["compile"],
    ["get", "/data/databases/identity"],
    ["explain", "/data/databases/identity", "database"],
    ["versions"],
)


def children_cpu() -> float:
    """The CPU seconds of this process's reaped children."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def reaped_by(pid: int) -> Callable[[], float]:
    """The CPU seconds of the reaped children of process `pid` (fields cutime and cstime of /proc/PID/stat)."""

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")

    return cpu


def compare(forks: ForkServer, repo: Path, runs: int) -> None:
    """Print the median CPU time of each command, fresh and forked."""
    forked = forks.command()
    assert forks.server is not None
    in_server = reaped_by(forks.server.proc.pid)
    for command in COMMANDS:
        medians = []
        for prefix in (cfgtool_command(), forked):
            subprocess.run([*prefix, *command], cwd=repo, env=child_env(), capture_output=True, check=True)
            samples = []
            for _ in range(runs):
                before = children_cpu() + in_server()
                subprocess.run([*prefix, *command], cwd=repo, env=child_env(), capture_output=True)
                samples.append(children_cpu() + in_server() - before)
            medians.append(statistics.median(samples))
        fresh, fork = medians
        print(f"cfgtool {' '.join(command):36} fresh {fresh:.2f} s CPU, fork {fork:.2f} s CPU ({fork / fresh:.0%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CFGTOOL_CACHE_DIR"] = str(Path(tmp) / "cache")
        repo = copy_embedded(Path(tmp) / "repo")
        (Path(tmp) / "forks").mkdir()
        forks = ForkServer(Path(tmp) / "forks")
        try:
            compare(forks, repo.root, args.runs)
        finally:
            forks.stop()
    print_machine()


if __name__ == "__main__":
    main()
