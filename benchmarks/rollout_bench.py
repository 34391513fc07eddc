"""The rollout controller (docs/rollout.md "The controller"): how soon a failing gate becomes a rollback, how soon the
fleet is back on the stable version, and what a round costs with 5,000 instances reporting.

    python -m benchmarks.rollout_bench [--agents 20] [--runs 5] [--interval 0.5] [--instances 5000]

Builds a bare remote with a one-dataset store (version 1 published without a plan), starts `cfgtool serve` fetching
from it every 0.2 s (`--cache-time 0`), --agents `cfgtool agent`s (web-0, web-1, ...; the first quarter `--check`
that the file has no `bad_run`, the others accept anything) and `cfgtool rollout run --interval I` in a clone of
its own. Each run publishes a version with `bad_run = N` under a plan `[50, 100]` (step time 10 minutes) and
measures:

(a) from the first failing check the server heard (polled every 20 ms) to the rollback marker on the remote
    (target: at most the interval + 2 s);
(b) from the marker to the last agent that had applied the version back on the stable one (target: at most the
    server's fetch interval + 2 s).

Then (c): --instances instances report (`report_applied`, the cohort's ones on the candidate) to the server, and one
round of the controller (`controller.run_round`, in this process) is timed, its CPU split into its own and its git
children's; median of --runs rounds (target: its own CPU at most 50 ms).

The first line is the machine's speed now (a pure-Python loop, median of 3) and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from benchmarks.machine import load, print_machine
from cfgtool.client.http import Check, report_applied
from cfgtool.rollout.controller import Options, run_round
from cfgtool.versions import publish
from cfgtool.versions.rollout import admitted

STORE = "bench"
FETCH = 0.2
PLAN = {"steps": [50, 100], "step_time": 600, "bake": 600, "min_reports": 1,
        "gates": [{"consumers": {"max_failed": 0}}]}  # fmt: skip
_PORT = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+)")
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com"]
_SCRIPT = Path(sysconfig.get_path("scripts")) / "cfgtool"
CFGTOOL = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "cfgtool"]


def wait_for(predicate: Callable[[], object], timeout: float, what: str, step: float = 0.02) -> float:
    """Poll until `predicate` holds; the time it did (time.time())."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.time()
        time.sleep(step)
    raise SystemExit(f"{what} did not happen within {timeout} s")


def on_disk(directory: Path) -> int | None:
    try:
        return int(os.readlink(directory / "..data")[2:].split("_")[0])
    except OSError:
        return None


def get_json(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=30) as answer:
        found: dict[str, object] = json.load(answer)
        return found


def ready(url: str) -> bool:
    try:
        return bool(get_json(f"{url}/healthz").get("ready"))
    except OSError:  # 503 until it has loaded a version
        return False


def failed_check(url: str, n: int) -> bool:
    listing = get_json(f"{url}/v1/{STORE}/consumers")["instances"]
    assert isinstance(listing, list)
    return any((i.get("last_check") or {}).get("version") == n and not i["last_check"]["ok"] for i in listing)


class Bench:
    """The remote, the publishing repository, the controller's clone, the server, the agents and the controller."""

    def __init__(self, tmp: Path, agents: int, interval: float) -> None:
        self.tmp, self.interval = tmp, interval
        self.repo, self.bare, self.ctl = tmp / "repo", tmp / "origin.git", tmp / "ctl"
        self.procs: list[subprocess.Popen[bytes]] = []
        self._repository()
        self.url = self._serve()
        self.agents = [f"web-{i}" for i in range(agents)]
        self.strict = set(self.agents[: max(1, agents // 4)])
        for name in self.agents:
            check = "! grep -q bad_run a.json" if name in self.strict else "true"
            self._spawn(name, "agent", "--server", self.url, "--store", STORE, "--dir", str(tmp / name),
                        "--settle", "0", "--file", "a.json=/data/a", "--instance", name, "--check", check)  # fmt: skip
        self._spawn("ctl", "--repo", str(self.ctl), "rollout", "run", "--server", self.url, "--remote", "origin",
                    "--interval", str(interval))  # fmt: skip
        wait_for(lambda: all(on_disk(tmp / a) == 1 for a in self.agents), 300, "version 1 on every agent", 0.2)

    def _repository(self) -> None:
        (self.repo / "store" / "data" / "a").mkdir(parents=True)
        (self.repo / "store" / "_CONFIG_STORE").write_text(f"name: {STORE}\n")
        (self.repo / "store" / "data" / "a" / "main.conf").write_text("size = 1\n")
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.repo)], check=True)
        self.git("add", "-A")
        self.git("commit", "-qm", "v1")
        subprocess.run(["git", "init", "-q", "--bare", str(self.bare)], check=True)
        self.git("remote", "add", "origin", str(self.bare))
        self.git("push", "-q", "origin", "main")
        publish(self.repo, message="v1", remote="origin")
        subprocess.run(["git", "clone", "-q", "-b", "main", str(self.bare), str(self.ctl)], check=True)
        (self.repo / "store" / "_CONFIG_STORE").write_text(f"name: {STORE}\nrollout: {json.dumps(PLAN)}\n")

    def git(self, *args: str) -> None:
        subprocess.run([*GIT, "-C", str(self.repo), *args], check=True)

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.tmp / f"{name}.log", "wb")  # noqa: SIM115 (the process's whole life)
        env = {**os.environ, "CFGTOOL_CACHE_DIR": str(self.tmp / f"cache-{name}")}
        self.procs.append(subprocess.Popen([*CFGTOOL, *args], stdout=log, stderr=subprocess.STDOUT, env=env))

    def _serve(self) -> str:
        self._spawn("serve", "serve", "--repo", f"file://{self.bare}", "--port", "0", "--cache-time", "0",
                    "--fetch-interval", str(FETCH))  # fmt: skip
        found: list[str] = []

        def bound() -> bool:
            match = _PORT.search((self.tmp / "serve.log").read_text(errors="replace"))
            found[:] = [f"http://127.0.0.1:{match.group(1)}"] if match else []
            return bool(found)

        wait_for(bound, 300, "the server's port", 0.1)
        wait_for(lambda: ready(found[0]), 300, "the server's readiness", 0.1)
        return found[0]

    def publish_bad(self, run: int) -> tuple[int, str]:
        """Publish a version that the strict agents' checks refuse; its number and salt."""
        (self.repo / "store" / "data" / "a" / "main.conf").write_text(f"size = {1000 + run}\nbad_run = {run}\n")
        self.git("commit", "-qam", f"bad {run}")
        result = publish(self.repo, message=f"bad {run}", remote="origin")
        assert result.version is not None and result.rollout is not None
        return result.version, str(result.rollout["salt"])

    def marked(self, n: int) -> bool:
        """Whether the remote has version N's rollback marker (a push writes a loose ref: cheap to poll)."""
        return (self.bare / f"refs/tags/config/rolledback/v{n}").is_file()

    def close(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            proc.wait(60)


def rollback_runs(bench: Bench, runs: int) -> tuple[list[float], list[float]]:
    """(a) and (b) of each run."""
    to_marker: list[float] = []
    to_stable: list[float] = []
    run = 0
    while len(to_marker) < runs:
        run += 1
        n, salt = bench.publish_bad(run)
        if not any(admitted(STORE, n, salt, a, PLAN["steps"][0]) for a in bench.strict):  # type: ignore[index]
            subprocess.run([*CFGTOOL, "--repo", str(bench.ctl), "rollout", "abort", str(n), "-m", "no strict agent",
                            "--remote", "origin"], check=True, capture_output=True)  # fmt: skip
            continue  # no agent in the cohort would fail it: not a run
        failed = wait_for(lambda: failed_check(bench.url, n), 120, f"a failing check of version {n}")  # noqa: B023
        marked = wait_for(lambda: bench.marked(n), 120, f"the rollback of version {n}")  # noqa: B023
        applied = [a for a in bench.agents if f"applied version {n} " in (bench.tmp / f"{a}.log").read_text()]
        back = wait_for(lambda: all(on_disk(bench.tmp / a) != n for a in applied), 120, "the fleet back")  # noqa: B023
        to_marker.append(marked - failed)
        to_stable.append(back - marked)
        print(f"run {len(to_marker)}: version {n}: failing report -> marker {marked - failed:.2f} s; marker ->"
              f" {len(applied)} agents back {back - marked:.2f} s; {load()}", flush=True)  # fmt: skip
    return to_marker, to_stable


def round_cost(bench: Bench, instances: int, runs: int) -> list[float]:
    """(c): the controller's own CPU per round, with `instances` instances reported."""
    (bench.repo / "store" / "data" / "a" / "main.conf").write_text("size = 9999\n")
    bench.git("commit", "-qam", "good")
    result = publish(bench.repo, message="good", remote="origin")
    n, salt = result.version, str(result.rollout["salt"])  # type: ignore[index]
    assert n is not None
    start = time.perf_counter()
    for i in range(instances):
        ident = f"host-{i}"
        version = n if admitted(STORE, n, salt, ident, 50) else 1
        report_applied(bench.url, STORE, version, Check(version, True, None), instance=ident)
    print(f"{instances} instances reported in {time.perf_counter() - start:.1f} s", flush=True)
    options = Options(bench.ctl, "store", (bench.url,), "origin", None, bench.interval)
    own: list[float] = []
    for _ in range(runs):
        cpu, children, wall = time.process_time(), _children(), time.perf_counter()
        decision = run_round(options)
        cpu, children, wall = time.process_time() - cpu, _children() - children, time.perf_counter() - wall
        own.append(cpu)
        print(f"round: {decision.action} ({decision.detail[:60]}...): own CPU {cpu * 1000:.0f} ms, git's"
              f" {children * 1000:.0f} ms, wall {wall * 1000:.0f} ms; {load()}", flush=True)  # fmt: skip
    return own


def _children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--instances", type=int, default=5000)
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory(prefix="cfgtool-rollout-bench-") as name:
        os.environ["CFGTOOL_CACHE_DIR"] = str(Path(name) / "cache")
        bench = Bench(Path(name), args.agents, args.interval)
        try:
            to_marker, to_stable = rollback_runs(bench, args.runs)
            bench.close()  # the controller of (c) is this process: no other may step the version it measures
            bench.procs.clear()
            bench.url = bench._serve()
            own = round_cost(bench, args.instances, args.runs)
        finally:
            bench.close()
    a, b, c = statistics.median(to_marker), statistics.median(to_stable), statistics.median(own)
    print(
        f"(a) failing report -> marker: median {a:.2f} s, worst {max(to_marker):.2f} s (target {args.interval + 2:g} s)"
    )
    print(f"(b) marker -> every agent back: median {b:.2f} s, worst {max(to_stable):.2f} s (target {FETCH + 2:g} s)")
    print(f"(c) controller CPU per round, {args.instances} instances: median {c * 1000:.0f} ms (target 50 ms);"
          f" {load()}")  # fmt: skip
    return 0 if a <= args.interval + 2 and b <= FETCH + 2 and c <= 0.05 else 1


if __name__ == "__main__":
    raise SystemExit(main())
