"""`current` under a staged rollout, through a real `cfgtool serve`: an instance in the candidate's cohort reads it,
every other reader the stable version, in every answer that names `current` (key reads, `versions/current`,
`/v1/stores`, the change feed). A step grows the cohort and wakes the feed, a rollback sends everyone back, two
servers agree on every instance, and Keystone's spread runs inside the cohort from the step that admitted it.

The rollout's tags are written by hand, as publish and the controller write them (docs/rollout.md)."""

from __future__ import annotations

import math
import subprocess
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from cfgtool import ConfigClient
from cfgtool.serve.timeline import offset
from cfgtool.versions.messages import format_message
from cfgtool.versions.rollout import admitted
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer
from tests.versions.conftest import git_at

Run = Callable[..., subprocess.CompletedProcess[str]]

PLAN = {"steps": [5, 25, 100], "step_time": 600, "bake": 600, "min_reports": 1, "gates": []}
SALT = "0123456789abcdef"
IDS = [f"web-{i}:{1000 + i}" for i in range(50)]
KEY = "/data/a"


def _at(seconds_ago: float, now: float | None = None) -> str:
    return datetime.fromtimestamp((now or time.time()) - seconds_ago, UTC).isoformat(timespec="seconds")


def _candidate(repo: GitRepo, seconds_ago: float = 0) -> None:
    """Version 2 (/data/a size 2), published under the plan, `seconds_ago` seconds ago: it starts at 5%."""
    repo.write({"store/data/a/main.conf": "size = 2\n"})
    repo.commit("v2")
    meta = {"kind": "version", "version": 2, "rollout": {"plan": PLAN, "salt": SALT}}
    git_at(repo, _at(seconds_ago), "tag", "-a", "config/v2", "-m", format_message("v2", meta))


def _step(repo: GitRepo, seq: int, percent: int, seconds_ago: float = 0, now: float | None = None) -> None:
    meta = {"action": "step", "percent": percent, "by": "controller", "evidence": [], "reason": None}
    message = format_message(f"version 2 at {percent}%", meta)
    git_at(repo, _at(seconds_ago, now), "tag", "-a", f"config/rollout/v2/{seq}", "config/v2^{}", "-m", message)


def _reads(http: httpx.Client, instance: str | None, key: str = KEY) -> httpx.Response:
    headers = {"Cfgtool-Instance": instance} if instance is not None else {}
    return http.get(f"/v1/small/current/keys{key}", headers=headers)


def _versions(http: httpx.Client, ids: list[str]) -> dict[str, int]:
    return {i: int(_reads(http, i).headers["cfgtool-version"]) for i in ids}


def _cohort(percent: int) -> set[str]:
    return {i for i in IDS if admitted("small", 2, SALT, i, percent)}


def _wait_for(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_the_cohort_reads_the_candidate_everyone_else_the_stable_version(
    small: GitRepo, start_server: StartServer
) -> None:
    _candidate(small)
    inside = _cohort(5)
    assert inside and len(inside) < len(IDS)  # the salt draws a cohort of some of the 50
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert _versions(http, IDS) == {i: 2 if i in inside else 1 for i in IDS}
        member, other = sorted(inside)[0], sorted(set(IDS) - inside)[0]
        assert _reads(http, member).json()["config"]["size"] == 2 and _reads(http, other).json()["config"]["size"] == 1
        anonymous = _reads(http, None)
        assert anonymous.headers["cfgtool-version"] == "1"
        assert anonymous.headers["vary"] == "Cfgtool-Instance"  # a cache keeps one answer per instance
        for ident, expected in ((member, 2), (other, 1), (None, 1)):
            headers = {"Cfgtool-Instance": ident} if ident else {}
            feed = http.get("/v1/small/changes", params={"since": 0, "wait": 0}, headers=headers).json()
            listing = http.get("/v1/stores", headers=headers)
            stores = listing.json()
            # each instance's own `current`: no cache may store it heuristically, nor give it to another instance
            assert (listing.headers["cache-control"], listing.headers["vary"]) == ("no-cache", "Cfgtool-Instance")
            named = http.get("/v1/small/versions/current/keys/data/a", headers=headers, follow_redirects=False)
            assert named.headers["cache-control"] == "no-store"
            assert (feed["current"], stores[0]["current"], named.headers["cfgtool-version"]) == (
                expected,
                expected,
                str(expected),
            )
        listed = {v["version"]: v for v in http.get("/v1/small/versions").json()}
        assert listed[2]["rollout"] == {"state": "rolling", "percent": 5} and listed[2]["status"] == "good"
        assert listed[1]["status"] == "current" and listed[1]["rollout"] is None


def test_a_step_wakes_the_feed_and_grows_the_cohort(small: GitRepo, start_server: StartServer) -> None:
    _candidate(small)
    server = start_server(small.root, "--cache-time", "0", "--fetch-interval", "0.2")
    joining = sorted(_cohort(25) - _cohort(5))
    assert joining
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert set(_versions(http, joining).values()) == {1}
        seq = http.get("/v1/small/changes", params={"since": 0, "wait": 0}).json()["seq"]
        woken: list[dict[str, Any]] = []
        poll = threading.Thread(
            target=lambda: woken.append(
                http.get(
                    "/v1/small/changes", params={"since": seq, "wait": 20}, headers={"Cfgtool-Instance": joining[0]}
                ).json()
            )
        )
        poll.start()
        time.sleep(0.5)  # the poll waits
        _step(small, 1, 25)
        poll.join(30)
        assert woken and [(e["kind"], e["version"]) for e in woken[0]["events"]] == [("rollout", 2)]
        assert woken[0]["current"] == 2 and woken[0]["seq"] == seq + 1
        assert set(_versions(http, joining).values()) == {2}
        assert set(_versions(http, sorted(set(IDS) - _cohort(25))).values()) == {1}


def test_a_rollback_sends_the_cohort_back_at_once(small: GitRepo, start_server: StartServer, run_cfgtool: Run) -> None:
    _candidate(small, seconds_ago=600)
    _step(small, 1, 25, seconds_ago=300)
    server = start_server(small.root, "--cache-time", "60", "--fetch-interval", "0.2")
    inside = sorted(_cohort(25))
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert set(_versions(http, inside).values()) == {2}
        assert set(_versions(http, sorted(set(IDS) - set(inside))).values()) == {1}
        done = run_cfgtool("rollback", "2", "-m", "auto: consumers: 2 of 5 failed", cwd=small.root)
        assert done.returncode == 0, done.stderr
        _wait_for(lambda: set(_versions(http, IDS).values()) == {1}, "the rollback")
        assert "vary" not in _reads(http, inside[0]).headers  # no rollout is live: one answer for everyone again


def test_two_servers_give_every_instance_the_same_answer_at_the_same_instant(
    small: GitRepo, start_server: StartServer
) -> None:
    """Version 2 started 10 minutes ago; its step to 25% was 20 s ago, so with T = 60 the joining instances switch at
    each key's checkpoint: some keys have, some not yet. Both servers say the same for every instance and key."""
    _candidate(small, seconds_ago=600)
    _step(small, 1, 25, seconds_ago=20)
    first = start_server(small.root, "--cache-time", "60")
    second = start_server(small.root, "--cache-time", "60")
    keys = ["/data/a", "/data/b", "/data", "/", "/tags/t"]
    with httpx.Client(base_url=first.url, timeout=30) as one, httpx.Client(base_url=second.url, timeout=30) as two:
        seen = {(i, k): _same_instant(one, two, i, k) for i in IDS for k in keys}
    assert all(a == b for a, b in seen.values()), [(ik, a, b) for ik, (a, b) in seen.items() if a != b]
    assert {a[0] for a, _ in seen.values()} == {"1", "2"}  # the cohort reads 2, the others 1


Seen = tuple[str, str]  # Cfgtool-Version and Cache-Control


def _same_instant(one: httpx.Client, two: httpx.Client, instance: str, key: str) -> tuple[Seen, Seen]:
    """What both servers answer the instance for the key within one second (max-age counts whole seconds)."""
    for _ in range(10):
        started = math.floor(time.time())
        answers = [_reads(http, instance, key) for http in (one, two)]
        if math.floor(time.time()) == started:
            a, b = ((r.headers["cfgtool-version"], r.headers["cache-control"]) for r in answers)
            return a, b
    raise AssertionError("no two reads fit in one second")


def test_an_instance_joining_at_a_step_switches_at_its_own_checkpoint_after_it(
    small: GitRepo, start_server: StartServer
) -> None:
    cache_time = 8
    _candidate(small, seconds_ago=600)
    server = start_server(small.root, "--cache-time", str(cache_time), "--fetch-interval", "0.2")
    joining = sorted(_cohort(25) - _cohort(5))[0]
    early = sorted(_cohort(5))[0]
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert _versions(http, [joining, early]) == {joining: 1, early: 2}
        stepped = math.floor(time.time())
        _step(small, 1, 25, now=stepped)  # the step tag's date
        off = offset("small", KEY, cache_time)
        checkpoint = off + cache_time * math.ceil((stepped - off) / cache_time)  # its first checkpoint from the step
        while True:
            answered = _reads(http, joining)
            after = time.time()
            if answered.headers["cfgtool-version"] == "2":
                break
            assert after < checkpoint + cache_time + 5, "the instance never switched"
            time.sleep(0.2)
        assert after >= checkpoint  # not before its own checkpoint
        assert _reads(http, early).headers["cfgtool-version"] == "2"  # who joined before stays


def test_a_server_over_a_url_fetches_the_step_tags(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    _candidate(small)
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(small.root), str(bare)], check=True)
    server = start_server(f"file://{bare}", "--fetch-interval", "0.2", "--cache-time", "0")
    joining = sorted(_cohort(25) - _cohort(5))
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert set(_versions(http, joining).values()) == {1}
        _step(small, 1, 25)
        small.git("push", "-q", str(bare), "refs/tags/config/rollout/v2/1")
        _wait_for(lambda: set(_versions(http, joining).values()) == {2}, "the fetched step")


def test_an_http_client_pins_what_its_instance_reads(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    _candidate(small)
    inside = _cohort(5)
    member, other = sorted(inside)[0], sorted(set(IDS) - inside)[0]
    server = start_server(small.root, "--cache-time", "0")
    pinned = {
        who: ConfigClient(server.url, store="small", instance=who, cache_dir=tmp_path / "cache").version
        for who in (member, other)
    }
    assert pinned == {member: 2, other: 1}  # the versions list marks 1 current: what readers without an id get
