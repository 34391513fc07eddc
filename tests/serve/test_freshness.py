"""Keystone freshness end to end: a key's `current` answer switches at its own checkpoint, predicted from the
formula and the tag's date; a rollback applies at once; two replicas over one repository agree."""

from __future__ import annotations

import math
import re
import time
from datetime import datetime

import httpx
import pytest

from cfgtool.serve.timeline import last_checkpoint
from cfgtool.versions import rollback
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change

T = 10  # the cache time: a loaded runner's server may see a publish seconds after its date, still before T - 1 s


def _wait_seq(http: httpx.Client, seq: int) -> dict[str, object]:
    """Long-poll the feed until the server has `seq` events."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answer: dict[str, object] = http.get("/v1/small/changes", params={"since": seq - 1, "wait": 10}).json()
        if int(str(answer["seq"])) >= seq:
            return answer
    raise AssertionError(f"the server never reached seq {seq}")


def _next_checkpoint(key: str, date: float) -> int:
    """The key's first checkpoint at or after `date`: when a version published at `date` reaches it."""
    cp = last_checkpoint("small", key, date, T)
    return cp if cp >= date else cp + T


def test_a_publish_reaches_each_key_at_its_own_checkpoint_and_a_rollback_at_once(
    small: GitRepo, start_server: StartServer
) -> None:
    server = start_server(small.root, "--cache-time", str(T), "--fetch-interval", "0.2")
    keys = [f"/data/a/k{i}" for i in range(200)]  # keys without a node of their own: they read /data/a
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for old in (1, 2, 3):  # a loaded machine may see a publish late: then publish again
            new = old + 1
            time.sleep(T)  # every key's checkpoint is past the current version's date
            publish_change(small, {"store/data/a/main.conf": f"size = {10 * new}\n"}, f"v{new}")
            _wait_seq(http, new)
            published = datetime.fromisoformat(http.get("/v1/small/versions").json()[0]["date"]).timestamp()
            now = time.time()
            key = next((k for k in keys if _next_checkpoint(k, published) >= now + 1.0), None)  # still ahead
            if key is not None:
                break
        else:
            pytest.fail("the server never saw a publish before every key's checkpoint had passed")
        switch = _next_checkpoint(key, published)
        assert published <= switch < published + T
        url = f"/v1/small/current/keys{key}"

        before, after = [], []
        while time.time() < switch + 1.0:
            start = time.time()
            answer = http.get(url)
            end = time.time()
            assert answer.status_code == 200
            seen = int(answer.headers["cfgtool-version"])
            age = int(re.search(r"max-age=(\d+)", answer.headers["cache-control"]).group(1))  # type: ignore[union-attr]
            assert answer.json()["version"] == seen
            if end < switch:
                before.append(seen)
                # the answer holds until the key's next checkpoint: exactly the switch
                assert math.ceil(switch - end) <= age <= math.ceil(switch - start)
            elif start >= switch:
                after.append(seen)
                # the answer holds until the checkpoint after: the server computed it at an instant in [start, end]
                assert math.ceil(switch + T - end) <= age <= math.ceil(switch + T - start)
            time.sleep(0.1)
        assert before and set(before) == {old}, before
        assert after and set(after) == {new}, after
        assert int(http.get(url).headers["cfgtool-version"]) == new

        # roll the new version back: every key sees the old one at once, long before its next checkpoint
        rollback(small.root, new, reason="bad")
        feed = _wait_seq(http, new + 1)
        seen_at = time.time()
        answer = http.get(url)
        assert int(answer.headers["cfgtool-version"]) == old
        # without the marker the key would still see the new version: its last checkpoint is past the publish
        assert last_checkpoint("small", key, seen_at, T) >= published
        assert answer.json()["config"]["size"] == (1 if old == 1 else 10 * old)
        event = feed["events"][-1]  # type: ignore[index]
        assert event["kind"] == "rollback" and event["version"] == new and event["changed_keys"] == 1
        assert event["effective_by"] == event["date"]


def test_two_servers_over_one_repository_answer_alike_at_the_same_instants(
    small: GitRepo, start_server: StartServer
) -> None:
    cache = 16  # long enough for a loaded runner's two servers to see a publish before half of its keys switch
    one = start_server(small.root, "--cache-time", str(cache), "--fetch-interval", "0.2")
    two = start_server(small.root, "--cache-time", str(cache), "--fetch-interval", "0.2")
    keys = ["/data/a", "/data/b", "/tags/t", "/", *(f"/data/b/x{i}" for i in range(16))]
    compared = 0
    versions_seen: set[str] = set()
    with httpx.Client(timeout=30) as http:
        for version in (2, 3, 4):  # a loaded machine may see a publish late: then publish again
            publish_change(small, {"store/data/b/main.conf": f"size = {10 * version}\n"}, f"v{version}")
            for server in (one, two):  # replicas agree once they have seen the same tags
                with httpx.Client(base_url=server.url, timeout=30) as feed:
                    _wait_seq(feed, version)
                    published = datetime.fromisoformat(feed.get("/v1/small/versions").json()[0]["date"]).timestamp()
            lag = time.time() - published
            if lag < cache / 2:  # half of the keys' checkpoints still ahead: compare through them
                break
            time.sleep(cache)  # every key sees this version now; the next publish switches them again
        else:
            pytest.fail(
                f"the servers never saw a publish before half of its keys had switched (the last: {lag:.1f} s late)"
            )
        deadline = published + cache  # through every key's checkpoint for this version
        while time.time() < deadline:
            for key in keys:
                start = time.time()
                a = http.get(f"{one.url}/v1/small/current/keys{key}")
                b = http.get(f"{two.url}/v1/small/current/keys{key}")
                end = time.time()
                if math.floor(start) != math.floor(end):
                    continue  # the two may straddle a second, and with it a checkpoint
                assert a.content == b.content, key
                for header in ("etag", "cache-control", "cfgtool-version", "content-location"):
                    assert a.headers[header] == b.headers[header], (key, header)
                versions_seen.add(a.headers["cfgtool-version"])
                compared += 1
            time.sleep(0.05)
        assert http.get(f"{one.url}/v1/small/versions").content == http.get(f"{two.url}/v1/small/versions").content
        feeds = [http.get(f"{s.url}/v1/small/changes", params={"since": 0, "wait": 0}).json() for s in (one, two)]
        assert feeds[0] == feeds[1] and feeds[0]["seq"] == version
    assert compared >= 50
    assert versions_seen == {str(version - 1), str(version)}  # the comparison ran through the switch
