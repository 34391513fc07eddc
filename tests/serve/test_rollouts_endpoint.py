"""`GET /v1/{store}/rollouts` of a real `cfgtool serve`: every rollout in `rollout status`'s form, its cohort counted
among this server's clients, for who may describe the store (docs/serving.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from cfgtool.client.http import Check, report_applied
from cfgtool.rollout.manual import promote
from cfgtool.versions.messages import parse_message
from cfgtool.versions.rollout import admitted
from tests.conftest import GitRepo
from tests.serve.conftest import Server, StartServer, publish_change
from tests.serve.test_access import _token
from tests.serve.test_consumers import eventually
from tests.serve.test_http_client import FAST

ACL = """\
super_users: [User:admin]
acls:
  - {principal: User:alice, operation: describe, resource: store, permission: allow}
  - {principal: "User:*", operation: read, key: "*", permission: allow}
  - {principal: User:bob, operation: describe, resource: store, permission: deny}
"""
RULES = "name: small\nrollout: {steps: [5, 25, 100], step_time: 1h}\n"
HOSTS = [f"web-{i}" for i in range(400)]


def rollouts(server: Server, token: str | None = None) -> httpx.Response:
    headers = {"authorization": f"Bearer {token}"} if token else {}
    return httpx.get(f"{server.url}/v1/small/rollouts", headers=headers, timeout=10)


def test_rollouts_lists_each_rollout_with_its_cohort_among_this_servers_clients(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": ACL}, "acl")
    publish_change(small, {"store/_CONFIG_STORE": RULES, "store/data/a/main.conf": "size = 5\n"}, "plan")
    tokens = tmp_path / "tokens.json"
    alice, bob, agent = (_token(tokens, f"User:{who}") for who in ("alice", "bob", "admin"))
    server = start_server(small.root, *FAST, "--tokens", str(tokens))
    salt = parse_message(small.git("for-each-ref", "--format=%(contents)", "refs/tags/config/v3"))[1]["rollout"]["salt"]
    inside = [h for h in HOSTS if admitted("small", 3, salt, h, 5)]
    outside = next(h for h in HOSTS if not admitted("small", 3, salt, h, 25))
    report_applied(server.url, "small", 3, Check(3, True), instance=f"{inside[0]}:1", token=agent)
    report_applied(server.url, "small", 3, Check(3, False, "exit 1"), instance=f"{inside[1]}:1", token=agent)
    report_applied(server.url, "small", 2, Check(2, True), instance=f"{outside}:1", token=agent)

    answer = rollouts(server, alice)
    assert answer.status_code == 200 and answer.headers["cache-control"] == "no-store"
    [found] = answer.json()
    assert {k: found[k] for k in ("store", "version", "stable", "state", "percent", "steps", "cohort")} == {
        "store": "small", "version": 3, "stable": 2, "state": "rolling", "percent": 5, "steps": [5, 25, 100],
        "cohort": {"instances": 2, "applied": 2, "failed": 1},
    }  # fmt: skip
    assert found["why"].startswith("next step (25%) at ") and found["events"] == []

    promote(small.root, "store", 3, reason="looks fine")  # seen after the next refresh

    def grown() -> bool:
        return bool(rollouts(server, alice).json()[0]["percent"] == 25)

    eventually(grown, timeout=10)
    [event] = rollouts(server, alice).json()[0]["events"]
    assert (event["action"], event["reason"]) == ("step", "promote: looks fine")
    assert rollouts(server, bob).status_code == 404  # may not describe the store: as if it did not exist
    assert rollouts(server).status_code == 401


def test_a_store_without_rollouts_lists_none(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, *FAST)
    answer: Any = rollouts(server).json()
    assert answer == []
