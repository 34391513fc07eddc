"""Who reads which version: the instances a real `cfgtool serve` heard from, their versions, the applied-version
reports, the `cfgtool_consumers` metric and `cfgtool consumers` (docs/serving.md "Consumers")."""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

import cfgtool
from cfgtool import HttpConfigClient
from cfgtool.client.http import Check, default_instance, report_applied, report_error, request_headers
from cfgtool.errors import UsageError
from cfgtool.serve.consumers import Consumers
from cfgtool.versions import rollback
from tests.conftest import GitRepo
from tests.serve.conftest import Server, StartServer, publish_change
from tests.serve.test_access import _token
from tests.serve.test_http_client import FAST, wait_for_version

WAIT = 60.0


def listing(server: Server, store: str = "small", **headers: str) -> dict[str, Any]:
    answer = httpx.get(f"{server.url}/v1/{store}/consumers", headers=headers, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["cache-control"] == "no-store"
    found: dict[str, Any] = answer.json()
    return found


def by_id(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["id"]: i for i in found["instances"]}


def eventually(check: Callable[[], bool], timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        time.sleep(0.1)


def test_every_client_says_who_it_is() -> None:
    headers = request_headers("t0k3n", "web-7:42", "agent")
    assert headers["Cfgtool-Instance"] == "web-7:42"
    assert headers["User-Agent"] == f"cfgtool/{cfgtool.__version__} (agent)"
    assert request_headers(None)["Cfgtool-Instance"] == default_instance()
    assert default_instance().endswith(f":{__import__('os').getpid()}")
    for bad in ("", "a b", "line\nbreak", "x" * 201, "naïve", "a/b", "-lead"):
        with pytest.raises(UsageError):
            request_headers(None, bad)
    with pytest.raises(UsageError):
        request_headers(None, "web-1", "robot")


def test_consumers_lists_a_client_and_an_agent_with_their_versions(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    old = HttpConfigClient(server.url, "small", instance="batch-1", cache_dir=tmp_path / "c1")
    assert old.get_value("/data/a", "size") == 1
    publish_change(small, {"store/data/a/main.conf": "size = 2\n"}, "v2")
    wait_for_version(server, "small", 2)
    new = HttpConfigClient(server.url, "small", instance="web-1", cache_dir=tmp_path / "c2")
    assert new.version == 2 and new.get_value("/data/a", "size") == 2
    # an agent reads `current` and reports what it applied, and that its check refused nothing
    read = httpx.get(f"{server.url}/v1/small/current/keys/data/a",
                     headers=request_headers(None, "agent-1", "agent"), timeout=10)  # fmt: skip
    assert read.headers["cfgtool-version"] == "2"
    report_applied(server.url, "small", 1, Check(2, False, "check command exited 1"), instance="agent-1")
    found = listing(server)
    instances = by_id(found)
    assert set(instances) == {"batch-1", "web-1", "agent-1"}
    assert instances["batch-1"]["version"] == 1 and instances["batch-1"]["kind"] == "client"
    assert instances["web-1"]["version"] == 2 and instances["web-1"]["address"] == "127.0.0.1"
    agent = instances["agent-1"]
    assert agent["kind"] == "agent" and agent["version"] == 1 and agent["reported"] is True  # applied, not read
    assert agent["last_check"]["version"] == 2 and agent["last_check"]["ok"] is False
    assert agent["last_check"]["message"] == "check command exited 1"
    assert instances["web-1"]["principal"] is None and instances["web-1"]["last_contact"].endswith("+00:00")
    assert found["by_version"] == {"1": 2, "2": 1}
    metrics = httpx.get(f"{server.url}/metrics", timeout=10).text
    assert 'cfgtool_consumers{store="small",version="1"} 2.0' in metrics
    assert 'cfgtool_consumers{store="small",version="2"} 1.0' in metrics

    # the access log names the instance of each request (it is written every half second)
    def logged() -> set[str]:
        return {json.loads(line)["instance"] for line in server.log().splitlines() if line.startswith('{"time"')}

    eventually(lambda: {"batch-1", "web-1", "agent-1"} <= logged())


def test_a_rollbacks_reach_is_visible(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    """Two watching processes follow a rollback at once; a process pinned at the bad version shows that it did not."""
    publish_change(small, {"store/data/a/main.conf": "size = 2\n"}, "v2")
    server = start_server(small.root, *FAST)
    pinned = HttpConfigClient(server.url, "small", instance="cron-9", cache_dir=tmp_path / "c")
    assert pinned.get_value("/data/a", "size") == 2
    handed: queue.Queue[int] = queue.Queue()
    watchers = [
        cfgtool.watch(
            server.url,
            "small",
            lambda c: handed.put(c.version),
            wait=5,
            instance=f"svc-{n}",
            cache_dir=tmp_path / f"w{n}",
        )
        for n in (1, 2)
    ]
    try:
        assert [handed.get(timeout=WAIT), handed.get(timeout=WAIT)] == [2, 2]
        eventually(lambda: listing(server)["by_version"] == {"2": 3})
        rollback(small.root, reason="2 is bad")
        assert [handed.get(timeout=WAIT), handed.get(timeout=WAIT)] == [1, 1]
        eventually(lambda: listing(server)["by_version"] == {"1": 2, "2": 1})
        instances = by_id(listing(server))
        assert {instances[f"svc-{n}"]["kind"] for n in (1, 2)} == {"watch"}
        assert instances["cron-9"]["version"] == 2  # the one process that has not picked up the rollback
    finally:
        for watcher in watchers:
            watcher.stop()


def test_bad_and_refused_instances_leave_no_trace(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    server = start_server(small.root, *FAST)
    url = f"{server.url}/v1/small/current/keys/data/a"
    for bad in (b"a b", b"x" * 201, b"\xc3\xa9t\xc3\xa9", b""):
        assert httpx.get(url, headers=[(b"cfgtool-instance", bad)], timeout=10).status_code == 200
    assert (
        httpx.get(f"{server.url}/v1/small/versions/77/keys/data/a", headers={"cfgtool-instance": "e"}).status_code
        == 404
    )
    assert httpx.get(f"{server.url}/v1/other/versions", headers={"cfgtool-instance": "f"}).status_code == 404
    assert listing(server, **{"cfgtool-instance": "asker"})["instances"] == []  # asking is not reading
    report = f"{server.url}/v1/small/consumers/agent-1"
    for body, status in [
        (b"{", 400),
        (b"[]", 400),
        (b'{"applied": "2"}', 400),
        (b'{"applied": 0}', 400),
        (b'{"applied": 1, "last_check": {"version": 1, "ok": "yes"}}', 400),
        (b'{"applied": 1, "pad": "' + b"x" * 5000 + b'"}', 413),
        (b"[" * 4000 + b"]" * 4, 400),  # deeper than the parser's recursion: no 500
    ]:
        refused = httpx.post(report, content=body, timeout=10)
        assert refused.status_code == status and refused.json()["error"] in ("bad_request", "too_large"), body
    assert httpx.post(f"{server.url}/v1/small/consumers/a%20b", content=b'{"applied": 1}').status_code == 400
    assert httpx.get(report, timeout=10).status_code == 404  # only POST: no such endpoint
    assert listing(server)["instances"] == []
    long = "m" * 2000
    report_applied(server.url, "small", None, Check(1, False, long), instance="agent-2")
    [agent] = listing(server)["instances"]
    assert agent["version"] is None and len(agent["last_check"]["message"]) == 500


ACL = """\
super_users: [User:admin]
acls:
  - {principal: User:alice, operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:bob, operation: describe, resource: store, permission: deny}
  - {principal: User:bob, operation: read, key: /data/a, permission: allow}
"""


def test_consumers_need_describe_on_the_store_and_name_the_principal(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": ACL}, "acl")
    tokens = tmp_path / "tokens.json"
    alice, bob = _token(tokens, "User:alice"), _token(tokens, "User:bob")
    server = start_server(small.root, *FAST, "--tokens", str(tokens))
    client = HttpConfigClient(server.url, "small", instance="web-1", token=alice, cache_dir=tmp_path / "c")
    assert client.get_value("/data/a", "size") == 1
    unknown = {"authorization": "Bearer nope", "cfgtool-instance": "intruder"}
    assert httpx.get(f"{server.url}/v1/small/current/keys/data/a", headers=unknown, timeout=10).status_code == 401
    assert httpx.get(f"{server.url}/v1/small/consumers", timeout=10).status_code == 401
    as_bob = {"authorization": f"Bearer {bob}"}
    assert httpx.get(f"{server.url}/v1/small/consumers", headers=as_bob, timeout=10).status_code == 404
    post = httpx.post(f"{server.url}/v1/small/consumers/bob-1", content=b'{"applied": 2}', headers=as_bob)
    assert post.status_code == 404
    [web] = listing(server, authorization=f"Bearer {alice}")["instances"]
    assert (web["id"], web["principal"], web["version"]) == ("web-1", "User:alice", 2)


def test_the_registry_is_bounded_and_forgets_the_silent() -> None:
    consumers = Consumers(limit=3, forget_after=100)
    for n in range(5):
        consumers.note(f"i{n}", None, "client", None, 1, now=1000.0 + n)
    assert [i.id for i in consumers.instances(1005)] == ["i4", "i3", "i2"]  # the least recently heard dropped
    consumers.note("i2", None, "client", None, 2, now=1050.0)
    consumers.note("i2", "User:eve", "client", None, 9, now=1050.0)  # another principal: another instance
    assert [(i.id, i.principal, i.version) for i in consumers.instances(1140)] == [
        ("i2", "User:eve", 9),
        ("i2", None, 2),
    ]  # i3 and i4, silent for more than 100 s, forgotten
    assert consumers.by_version(1140) == {2: 1, 9: 1}
    assert consumers.instances(1200) == []


def test_cfgtool_consumers_prints_a_table(
    small: GitRepo, start_server: StartServer, run_cfgtool: Any, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    HttpConfigClient(server.url, "small", instance="web-1", cache_dir=tmp_path / "c").get("/data/a")
    report_applied(server.url, "small", 1, Check(1, True), instance="agent-1")
    out = run_cfgtool("consumers", server.url, "--store", "small").stdout
    lines = out.splitlines()
    assert lines[0].split() == ["INSTANCE", "KIND", "VERSION", "PRINCIPAL", "ADDRESS", "LAST", "CONTACT", "CHECK"]
    rows = {line.split()[0]: line.split() for line in lines[1:] if line and not line.startswith("version")}
    assert rows["web-1"][1:3] == ["client", "1"] and rows["agent-1"][1:3] == ["agent", "1"]
    assert "ok" in rows["agent-1"]
    assert "version 1: 2 instances" in out
    doc = json.loads(run_cfgtool("consumers", server.url, "--store", "small", "--format", "json").stdout)
    assert doc["by_version"] == {"1": 2}
    missing = run_cfgtool("consumers", server.url, "--store", "nope")
    assert missing.returncode == 2 and "nope" in missing.stderr


REPORTS_ACL = """\
super_users: [User:admin]
acls:
  - {principal: User:agent, operation: read, key: /, pattern: prefixed, permission: allow}
  - {principal: User:alice, operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:carol, operation: describe, key: /data/, pattern: prefixed, permission: allow}
"""


def test_a_reports_text_goes_only_to_who_may_read_every_key_it_concerns(
    small: GitRepo, start_server: StartServer, run_cfgtool: Any, tmp_path: Path
) -> None:
    # a check's output and a render error quote the configs they were made from: carol may describe /data/b
    # but not read it, and nobody but the agent and the admin may even describe /tags/t
    publish_change(small, {"store/_ACL.yaml": REPORTS_ACL}, "acl")
    tokens = tmp_path / "tokens.json"
    agent, alice, carol, admin = (_token(tokens, f"User:{who}") for who in ("agent", "alice", "carol", "admin"))
    server = start_server(small.root, *FAST, "--tokens", str(tokens))
    report_applied(server.url, "small", 1, Check(2, False, "size = 2 is refused", ("/data/b",)),
                   instance="agent-1", token=agent)  # fmt: skip
    report_applied(server.url, "small", 1, Check(2, False, "tagged = true is refused", ("/data/a", "/tags/t")),
                   instance="agent-2", token=agent)  # fmt: skip
    report_applied(server.url, "small", 1, Check(2, False, "no keys named"), instance="watch-1", token=agent)

    def checks(token: str) -> dict[str, tuple[str | None, list[str] | None, bool]]:
        found = by_id(listing(server, authorization=f"Bearer {token}"))
        return {i: (c["message"], c["keys"], c.get("withheld", False)) for i, c in
                ((i, v["last_check"]) for i, v in found.items())}  # fmt: skip

    assert checks(admin) == {
        "agent-1": ("size = 2 is refused", ["/data/b"], False),
        "agent-2": ("tagged = true is refused", ["/data/a", "/tags/t"], False),
        "watch-1": ("no keys named", None, False),
    }
    assert checks(alice) == {
        "agent-1": ("size = 2 is refused", ["/data/b"], False),
        "agent-2": (None, ["/data/a"], True),  # /tags/t: not even named to her
        "watch-1": (None, None, True),
    }
    assert checks(carol) == {
        "agent-1": (None, ["/data/b"], True),
        "agent-2": (None, ["/data/a"], True),
        "watch-1": (None, None, True),
    }
    (tmp_path / "carol").write_text(carol)
    table = run_cfgtool("consumers", server.url, "--store", "small", "--token-file", str(tmp_path / "carol")).stdout
    assert "refused" not in table and table.count("FAILED (version 2): (output withheld") == 3
    bad = {"applied": 1, "last_check": {"version": 1, "ok": False, "message": "m", "keys": ["not a key//"]}}
    refused = httpx.post(f"{server.url}/v1/small/consumers/agent-3", json=bad,
                         headers={"authorization": f"Bearer {agent}"}, timeout=10)  # fmt: skip
    assert refused.status_code == 400 and "last_check.keys" in refused.json()["message"]


def test_an_application_reports_the_errors_it_meets_on_a_version(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": REPORTS_ACL}, "acl")
    tokens = tmp_path / "tokens.json"
    agent, alice, admin = (_token(tokens, f"User:{who}") for who in ("agent", "alice", "admin"))
    server = start_server(small.root, *FAST, "--tokens", str(tokens))
    client = HttpConfigClient(server.url, "small", instance="web-1:7", token=alice, cache_dir=tmp_path / "c")
    client.report_error("size = 2 broke the parser")
    client.report_error("x" * 2000)
    report_applied(server.url, "small", 1, Check(1, True), instance="agent-1", token=agent)
    report_error(server.url, "small", 2, "refused", instance="agent-1", token=agent)

    def seen(token: str) -> dict[str, tuple[object, ...]]:
        return {i: (v["version"], v["errors"], v["last_error"] and v["last_error"]["message"],
                    v["last_error"] and v["last_error"].get("withheld", False))
                for i, v in by_id(listing(server, authorization=f"Bearer {token}")).items()}  # fmt: skip

    # a plain client's version stays the one it read; an agent's the one it applied
    assert seen(admin) == {"web-1:7": (2, {"2": 2}, "x" * 500, False), "agent-1": (1, {"2": 1}, "refused", False)}
    # an error names no keys: its text goes to super users only
    assert seen(alice) == {"web-1:7": (2, {"2": 2}, None, True), "agent-1": (1, {"2": 1}, None, True)}
    as_agent = {"authorization": f"Bearer {agent}"}
    for bad in ({}, {"error": None}, {"error": {"version": 0}}, {"error": {"version": 2, "message": 5}}, {"error": 1}):
        refused = httpx.post(f"{server.url}/v1/small/consumers/agent-1", json=bad, headers=as_agent, timeout=10)
        assert refused.status_code == 400, bad
    registry = Consumers()
    for n in range(1, 13):
        registry.error("i", None, "client", None, n, None, now=1000.0)
    [instance] = registry.instances(1000.0)
    assert instance.errors == {n: 1 for n in range(3, 13)}  # the 10 highest versions are kept


def test_a_flood_of_one_client_does_not_push_the_others_down_the_listing() -> None:
    consumers = Consumers()
    for n in range(3):
        consumers.note(f"web-{n}", "User:web", "agent", f"10.0.0.{n}", 1, now=1000.0 + n)
    consumers.note("cron-1", "User:cron", "client", "10.0.1.1", 1, now=1003.0)
    consumers.note("cron-2", "User:cron", "client", "10.0.1.1", 1, now=1004.0)
    for n in range(600):  # one token, one host, hundreds of invented ids, all heard after the others
        consumers.note(f"fake-{n}", "User:flood", "agent", "10.6.6.6", 1, now=1010.0 + n / 1000)
    found, counts = consumers.summary(1100.0)
    assert counts == {1: 605} and len(found) == 605
    # a round: the most recently heard of each client (principal and address), clients by their last contact
    assert [i.id for i in found[:6]] == ["fake-599", "cron-2", "web-2", "web-1", "web-0", "fake-598"]
    assert [i.id for i in found[6:8]] == ["cron-1", "fake-597"]
    listed = json.loads(consumers.listing(1100.0))["instances"]
    assert [i["id"] for i in listed] == [i.id for i in found]
