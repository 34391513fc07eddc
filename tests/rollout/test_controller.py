"""The rollout controller end to end: a bare remote, a publishing clone, a real `cfgtool serve` fetching from the
remote, real `cfgtool agent`s with their `--check`, and `cfgtool rollout run` in a clone of its own with push
rights. One server per module; each test's version ends (done or rolled back) before the next test publishes."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from cfgtool.store.git import git_env
from cfgtool.versions import publish
from cfgtool.versions.rollback import rollback
from cfgtool.versions.rollout import admitted
from cfgtool.versions.tags import read_history, scheme_for
from tests.agent.conftest import AgentProcess, version_on_disk
from tests.conftest import GitRepo, copy_template
from tests.processes import Process, cfgtool_command, child_env, wait_for
from tests.remotes import add_origin
from tests.rollout.conftest import PrometheusServer, needs_prometheus
from tests.serve.conftest import Server, _publish_small, _servers

STORE = "small"
INTERVAL = 0.5
BAD_CHECK = "! grep -q '\"size\": 666' a.json"


@dataclass
class Fleet:
    """The module's repositories and server: `repo` publishes, `ctl` runs the controller, `bare` is the remote."""

    repo: GitRepo
    ctl: Path
    bare: Path
    server: Server
    directory: Path
    started: list[Process]

    def publish(self, size: int, plan: dict[str, object]) -> tuple[int, str]:
        """Publish `/data/a` with `size` under `plan` to the remote; the version and its salt."""
        self.repo.write({"store/_CONFIG_STORE": f"name: small\nrollout: {json.dumps(plan)}\n",
                         "store/data/a/main.conf": f"size = {size}\n"})  # fmt: skip
        self.repo.commit(f"size {size}")
        n = publish(self.repo.root, message=f"size {size}", remote="origin").version
        assert n is not None
        found = read_history(self.repo.root, scheme_for(self.repo.root, "store")).tag(n).metadata["rollout"]
        return n, str(found["salt"])

    def agent(self, instance: str, *args: str) -> AgentProcess:
        where = self.directory / f"agent-{instance}"
        command = [*cfgtool_command(), "agent", "--server", self.server.url, "--store", STORE, "--dir", str(where),
                   "--settle", "0", "--file", "a.json=/data/a", "--instance", instance, *args]  # fmt: skip
        agent = AgentProcess.spawn(command, self.directory / f"agent-{instance}.log", child_env(where / "cache"))
        self.started.append(agent)
        return agent

    def controller(self, *args: str) -> Process:
        command = ["--repo", str(self.ctl), "rollout", "run", "--server", self.server.url, "--remote", "origin",
                   "--interval", str(INTERVAL), *args]  # fmt: skip
        n = len(self.started)
        ctl = Process.cfgtool(command, self.directory / f"ctl-{n}.log", child_env(self.directory / "ctl-cache"))
        self.started.append(ctl)
        return ctl

    def run_once(self) -> subprocess.CompletedProcess[str]:
        command = [*cfgtool_command(), "--repo", str(self.ctl), "rollout", "run", "--server", self.server.url,
                   "--remote", "origin", "--once"]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, env=child_env(), timeout=120)

    def steps(self, n: int) -> list[dict[str, object]]:
        """Version N's rollout tags on the remote, by seq: the audit trail."""
        out = _git(self.bare, "for-each-ref", "--format=%(refname:short)%09%(contents)",
                   f"refs/tags/config/rollout/v{n}/")  # fmt: skip
        found = []
        for block in out.split("config/rollout/")[1:]:
            name, _, body = block.partition("\t")
            meta = json.loads(body.rsplit("cfgtool-metadata: ", 1)[1].splitlines()[0])
            found.append({"seq": int(name.rsplit("/", 1)[1]), **meta})
        return sorted(found, key=lambda m: int(str(m["seq"])))

    def rolled_back(self, n: int) -> bool:
        """Whether the remote has version N's rollback marker (a push writes a loose ref: cheap to poll)."""
        return (self.bare / f"refs/tags/config/rolledback/v{n}").is_file()

    def end(self, n: int) -> None:
        """Roll version N back unless its rollout ended, so that the next test's version does not wait for it."""
        for process in self.started:
            process.stop()
        self.started.clear()
        if not self.rolled_back(n) and not any(s["action"] == "done" for s in self.steps(n)):
            rollback(self.ctl, n, reason="end of the test", remote="origin", not_current=True)


def _git(where: Path, *args: str) -> str:
    git_dir = ["--git-dir", str(where)] if where.suffix == ".git" else ["-C", str(where)]
    return subprocess.run(["git", *git_dir, *args], capture_output=True, text=True, check=True, env=git_env()).stdout


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    directory = tmp_path_factory.mktemp("fleet")
    repo = copy_template("small", _publish_small, directory / "small")
    origin = add_origin(repo, directory / "origin.git")
    repo.git("push", "-q", "origin", "--tags")
    ctl = directory / "ctl"
    subprocess.run(["git", "clone", "-q", "-b", "main", str(origin.bare), str(ctl)], check=True, env=git_env())
    with _servers(directory) as start:
        server = start(f"file://{origin.bare}", "--fetch-interval", "0.2", "--cache-time", "0")
        fleet = Fleet(repo, ctl, origin.bare, server, directory, [])
        yield fleet
        for process in fleet.started:
            process.stop()


def _ids(n: int, salt: str, percent: int, inside: bool, count: int) -> list[str]:
    """`count` instance ids inside (or outside) version N's cohort at `percent`."""
    found = (f"web-{i}" for i in range(100_000))
    return [i for i in found if admitted(STORE, n, salt, i, percent) == inside][:count]


def _checked(url: str, n: int) -> bool:
    """Whether an instance reported a failed check of version N to the server."""
    listing = httpx.get(f"{url}/v1/{STORE}/consumers", timeout=10).json()
    return any((i.get("last_check") or {}).get("version") == n and i["last_check"]["ok"] is False
               for i in listing["instances"])  # fmt: skip


def test_a_good_version_steps_5_25_100_and_is_done_on_schedule(fleet: Fleet) -> None:
    plan = {"steps": [5, 25, 100], "step_time": 2, "bake": 2, "min_reports": 1,
            "gates": [{"consumers": {"max_failed": 0}}]}  # fmt: skip
    n, salt = fleet.publish(3, plan)
    first = _ids(n, salt, 5, True, 1) + _ids(n, salt, 25, False, 1)
    agents = [fleet.agent(i, "--check", BAD_CHECK) for i in first]
    controller = fleet.controller()
    try:
        wait_for(lambda: any(s["action"] == "done" for s in fleet.steps(n)), 60, "the rollout's end", controller)
        steps = fleet.steps(n)
        assert [(s["seq"], s["action"], s["percent"]) for s in steps] == [
            (1, "step", 25), (2, "step", 100), (3, "done", 100),
        ]  # fmt: skip
        dates = [_date(fleet, n, s) for s in ("v", 1, 2, 3)]
        assert all(b - a >= 2 for a, b in itertools.pairwise(dates)), dates  # no step before its time
        assert all(e["result"] == "pass" for s in steps for e in s["evidence"])  # type: ignore[attr-defined]
        for agent, instance in zip(agents, first, strict=True):
            where = fleet.directory / f"agent-{instance}"
            wait_for(lambda: version_on_disk(where) == n, 30, f"version {n} on {instance}", agent)  # noqa: B023
    finally:
        fleet.end(n)


def _date(fleet: Fleet, n: int, seq: object) -> int:
    """The tagger date (seconds) of version N's tag (`seq` "v") or of its rollout tag `seq`."""
    name = f"config/v{n}" if seq == "v" else f"config/rollout/v{n}/{seq}"
    return int(_git(fleet.bare, "for-each-ref", "--format=%(taggerdate:unix)", f"refs/tags/{name}").strip())


def test_a_bad_version_is_rolled_back_soon_after_the_first_failing_check(fleet: Fleet) -> None:
    plan = {"steps": [5, 25, 100], "step_time": 600, "bake": 600, "min_reports": 1,
            "gates": [{"consumers": {"max_failed": 0}}]}  # fmt: skip
    n, salt = fleet.publish(666, plan)
    inside, outside = _ids(n, salt, 5, True, 2), _ids(n, salt, 5, False, 3)
    controller = fleet.controller()
    agents = {i: fleet.agent(i, "--check", BAD_CHECK) for i in inside + outside}
    try:
        failed = wait_for(lambda: _checked(fleet.server.url, n), 60, "a failing check", controller)
        marked = wait_for(lambda: fleet.rolled_back(n), 30, "the rollback marker", controller)
        assert marked - failed <= INTERVAL + 2, marked - failed
        reason = _git(fleet.bare, "for-each-ref", "--format=%(contents)", f"refs/tags/config/rolledback/v{n}")
        said = re.search(rf"auto: consumers: [12] of [12] instances failed --check on version {n}: ([-\w, ]+)", reason)
        assert said is not None and set(said.group(1).split(", ")) <= set(inside), reason  # the cohort's only
        assert fleet.steps(n) == []  # it never grew
        for instance in outside:  # outside the first step's cohort, nothing of it was ever read or tried
            assert f"version {n}" not in agents[instance].log(), agents[instance].log()
    finally:
        fleet.end(n)


@needs_prometheus
def test_once_holds_then_a_prometheus_error_rate_rolls_it_back(fleet: Fleet, prometheus: PrometheusServer) -> None:
    sample = "ctl_app_errors_total"
    prometheus.metrics.set(sample, 0)
    prometheus.wait_for(f"sum({sample})", 0)
    gate = {"prometheus": {"url": prometheus.url, "query": f"sum({sample})", "max": 0.5}}
    n, _ = fleet.publish(4, {"steps": [50, 100], "step_time": 600, "bake": 600, "min_reports": 0, "gates": [gate]})
    held = fleet.run_once()
    assert held.returncode == 0, held.stderr
    assert f"version {n} at 50%: next step (100%) at " in held.stderr, held.stderr
    assert not fleet.rolled_back(n) and fleet.steps(n) == []
    prometheus.metrics.set(sample, 3)
    prometheus.wait_for(f"sum({sample})", 3)
    try:
        done = fleet.run_once()
        assert done.returncode == 0, done.stderr
        assert fleet.rolled_back(n), done.stderr
        reason = _git(fleet.bare, "for-each-ref", "--format=%(contents)", f"refs/tags/config/rolledback/v{n}")
        assert f"auto: prometheus: sum({sample}) = 3 > 0.5" in reason
    finally:
        prometheus.metrics.remove(sample)
        fleet.end(n)


def test_a_controller_killed_and_restarted_takes_each_step_once(fleet: Fleet) -> None:
    plan = {"steps": [5, 25, 50, 100], "step_time": 1, "bake": 1, "min_reports": 0, "gates": []}
    n, _ = fleet.publish(5, plan)
    try:
        for seq in (1, 2, 3):
            controller = fleet.controller()
            wait_for(lambda: len(fleet.steps(n)) >= seq, 60, f"step {seq}", controller)  # noqa: B023
            os.kill(controller.pid, signal.SIGKILL)
            controller.proc.wait(30)
        last = fleet.controller()
        wait_for(lambda: any(s["action"] == "done" for s in fleet.steps(n)), 60, "the rollout's end", last)
        time.sleep(3 * INTERVAL)  # rounds after the end change nothing
        assert last.stop() == 0
        steps = [(s["seq"], s["action"], s["percent"]) for s in fleet.steps(n)]
        assert steps == [(1, "step", 25), (2, "step", 50), (3, "step", 100), (4, "done", 100)]
        dates = [_date(fleet, n, s) for s in ("v", 1, 2, 3, 4)]
        assert all(b - a >= 1 for a, b in itertools.pairwise(dates)), dates
    finally:
        fleet.end(n)


def test_without_a_server_it_holds_and_never_promotes(fleet: Fleet, tmp_path: Path) -> None:
    plan = {"steps": [50, 100], "step_time": 0, "bake": 0, "min_reports": 0,
            "gates": [{"consumers": {"max_failed": 0}}]}  # fmt: skip
    n, _ = fleet.publish(6, plan)
    try:
        command = [*cfgtool_command(), "--repo", str(fleet.ctl), "rollout", "run", "--server",
                   "http://127.0.0.1:9", "--remote", "origin", "--once"]  # fmt: skip
        held = subprocess.run(command, capture_output=True, text=True, env=child_env(), timeout=120)
        assert held.returncode == 0, held.stderr
        assert f"version {n} at 50%: holds: gates inconclusive: consumers: " in held.stderr, held.stderr
        assert "but a server cannot be read (cannot reach http://127.0.0.1:9: " in held.stderr
        assert fleet.steps(n) == [] and not fleet.rolled_back(n)
    finally:
        fleet.end(n)


def test_the_interval_must_be_a_duration(fleet: Fleet) -> None:
    command = [*cfgtool_command(), "--repo", str(fleet.ctl), "rollout", "run", "--server", fleet.server.url,
               "--interval", "soon", "--once"]  # fmt: skip
    found = subprocess.run(command, capture_output=True, text=True, env=child_env(), timeout=120)
    assert found.returncode == 2 and "--interval: 'soon' is not a duration" in found.stderr, found.stderr
    assert "Traceback" not in found.stderr


def test_a_rollback_cut_off_by_a_kill_is_finished_by_the_next_round(fleet: Fleet) -> None:
    gates = [{"command": {"run": "false"}}]  # exit 1: the gate fails at every round
    n, _ = fleet.publish(7, {"steps": [50, 100], "step_time": 600, "bake": 600, "min_reports": 0, "gates": gates})
    hook, pushing = fleet.bare / "hooks" / "pre-receive", fleet.directory / "pushing"
    hook.write_text(f"#!/bin/sh\ntouch {pushing}\nsleep 60\nexit 1\n", encoding="utf-8")
    hook.chmod(0o755)
    try:
        command = [*cfgtool_command(), "--repo", str(fleet.ctl), "rollback", str(n), "-m", "auto: command: earlier",
                   "--remote", "origin", "--not-current"]  # fmt: skip
        cut = subprocess.Popen(command, env=child_env(), start_new_session=True, stderr=subprocess.DEVNULL)
        wait_for(pushing.exists, 60, "the rollback's push")
        os.killpg(cut.pid, signal.SIGKILL)  # the controller, git and the remote's side of the push, mid-push
        cut.wait(30)
    finally:
        hook.unlink()
    try:
        assert not fleet.rolled_back(n)
        finished = fleet.run_once()
        assert finished.returncode == 0 and fleet.rolled_back(n), finished.stderr
        reason = _git(fleet.bare, "for-each-ref", "--format=%(contents)", f"refs/tags/config/rolledback/v{n}")
        assert "roll back config/v" in reason and "auto: command: earlier" in reason  # that rollback, finished
    finally:
        fleet.end(n)
