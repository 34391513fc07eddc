"""Agents during a staged rollout (docs/agent.md): each reads what its instance reads, from a real `cfgtool serve`.
An agent in the candidate's cohort switches to it; one outside switches when a step takes it in; a rollback marker
sends the cohort back at once."""

from __future__ import annotations

from pathlib import Path

from cfgtool.rollout.manual import abort, promote
from cfgtool.versions import history
from cfgtool.versions.rollout import admitted
from tests.agent.conftest import StartAgent, version_on_disk, wait_for
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change

FAST = ("--cache-time", "0", "--fetch-interval", "0.2")
RULES = "name: small\nrollout: {steps: [5, 25, 100], step_time: 10m, bake: 1h}\n"
HOSTS = [f"web-{i}" for i in range(400)]


def test_agents_follow_their_cohort_through_a_step_and_a_rollback(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    assert publish_change(small, {"store/_CONFIG_STORE": RULES, "store/data/a/main.conf": "size = 3\n"}, "v2") == 2
    salt = history(small.root, "store").tag(2).metadata["rollout"]["salt"]
    early = {h for h in HOSTS if admitted("small", 2, salt, h, 5)}
    inside = sorted(early)[0]
    later = sorted({h for h in HOSTS if admitted("small", 2, salt, h, 25)} - early)[0]
    dirs = {who: tmp_path / who for who in ("inside", "later")}
    agents = {
        who: start_agent(server.url, "--settle", "0", "--instance", f"{host}:1", "--file", "a.json=/data/a",
                         directory=dirs[who], cache=tmp_path / f"cache-{who}")
        for who, host in (("inside", inside), ("later", later))
    }  # fmt: skip
    wait_for(lambda: version_on_disk(dirs["inside"]) == 2, 30, "the cohort's agent on version 2", agents["inside"])
    wait_for(lambda: version_on_disk(dirs["later"]) == 1, 30, "the other agent on version 1", agents["later"])
    promote(small.root, "store", 2, reason="canary fine")  # 25%: the step takes the second agent in
    wait_for(lambda: version_on_disk(dirs["later"]) == 2, 30, "the step reaching the second agent", agents["later"])
    abort(small.root, "store", 2, reason="errors")
    for who in ("inside", "later"):
        wait_for(lambda w=who: version_on_disk(dirs[w]) == 1, 30, f"the rollback reaching {who}", agents[who])  # type: ignore[misc]
