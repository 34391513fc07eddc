"""The change feed's long polls, and the server under faults: an unreachable remote, a tag whose store does
not compile, a restart, a shutdown, a missing extra."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from cfgtool.versions import publish
from tests.conftest import GitRepo
from tests.remotes import add_origin
from tests.serve.conftest import StartServer, cfgtool_command, publish_change


def _changes(url: str, since: int, wait: float) -> dict[str, Any]:
    answer = httpx.get(f"{url}/v1/small/changes", params={"since": since, "wait": wait}, timeout=60)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _until(check: Any, what: str, timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never: {what}")


def test_a_waiting_long_poll_is_woken_by_a_publish(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, "--cache-time", "10", "--fetch-interval", "0.2")
    with ThreadPoolExecutor(2) as pool:
        waiting = pool.submit(_changes, server.url, 1, 55)
        _until(lambda: "cfgtool_long_polls_waiting{store=\"small\"} 1.0" in httpx.get(f"{server.url}/metrics").text,
               "the long poll waits")  # fmt: skip
        publish_change(small, {"store/data/a/main.conf": "size = 5\n"}, "v2")
        woken = waiting.result(timeout=60)
    assert woken["seq"] == 2 and woken["current"] == 2
    [event] = woken["events"]
    assert event["seq"] == 2 and event["kind"] == "publish" and event["version"] == 2
    assert event["changed_keys"] == 1  # /data/a only
    date = time.mktime(time.strptime(event["date"][:19], "%Y-%m-%dT%H:%M:%S"))
    effective = time.mktime(time.strptime(event["effective_by"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert effective - date == 9  # every key's checkpoint within T = 10 s
    assert _changes(server.url, 0, 0)["events"][0] | {"seq": 1, "version": 1} == _changes(server.url, 0, 0)["events"][0]


def test_a_since_beyond_the_server_s_seq_holds_and_never_goes_back(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, "--fetch-interval", "0.2")
    with ThreadPoolExecutor(1) as pool:
        began = time.monotonic()
        ahead = pool.submit(_changes, server.url, 5, 3)
        publish_change(small, {"store/data/b/main.conf": "size = 6\n"}, "v2")
        answer = ahead.result(timeout=60)
    assert time.monotonic() - began >= 3  # held for its whole wait: the event of version 2 did not end it
    assert answer["seq"] == 5 and answer["events"] == []  # seq 2 < 5: nothing to tell, and no going back
    # (version 2 lands within the wait or after it, as the machine's load decides: the feed has it soon)
    _until(lambda: _changes(server.url, 1, 0)["seq"] == 2, "the feed has the publish")
    assert _changes(server.url, 5, 0) == {"seq": 5, "current": 2, "events": []}


def test_an_unreachable_remote_keeps_serving_and_healthz_says_since_when(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    origin = add_origin(small, tmp_path / "origin.git")
    small.git("push", "-q", "origin", "--tags")
    server = start_server(f"file://{origin.bare}", "--fetch-interval", "0.2", "--cache-time", "0")
    key = f"{server.url}/v1/small/current/keys/data/a"
    assert httpx.get(key).json()["version"] == 1
    moved = tmp_path / "away.git"
    origin.bare.rename(moved)
    health = _until(lambda: (h := httpx.get(f"{server.url}/healthz").json())["fetch"]["failing_since"] and h,
                    "healthz reports the failing fetch")  # fmt: skip
    assert health["ready"] is True and health["fetch"]["ok"] is False and health["fetch"]["error"]
    assert httpx.get(key).json()["version"] == 1  # still served
    lag = [_lag(server.url) for _ in range(2) if not time.sleep(1.1)]
    assert lag[1] > lag[0] >= 1.0

    moved.rename(origin.bare)
    small.write({"store/data/a/main.conf": "size = 7\n"})
    small.commit("v2")
    publish(small.root, remote="origin", message="v2")
    _until(lambda: httpx.get(key).json()["version"] == 2, "version 2 is served after the remote is back")
    fetch = httpx.get(f"{server.url}/healthz").json()["fetch"]
    assert fetch["ok"] is True and fetch["failing_since"] is None and fetch["error"] is None


def _lag(url: str) -> float:
    line = next(x for x in httpx.get(f"{url}/metrics").text.splitlines() if x.startswith("cfgtool_fetch_lag_seconds"))
    return float(line.split()[1])


def test_a_tag_whose_store_does_not_compile_is_never_served(small: GitRepo, start_server: StartServer) -> None:
    small.write({"store/data/a/main.conf": "size = {\n"})
    small.commit("broken")
    small.git("tag", "-a", "config/v2", "-m", "made by hand")
    server = start_server(small.root, "--cache-time", "0")
    health = httpx.get(f"{server.url}/healthz").json()
    [unservable] = health["stores"][0]["unservable"]
    assert unservable["version"] == 2 and "E_SYNTAX" in unservable["error"]
    assert health["stores"][0]["current"] == 1
    assert httpx.get(f"{server.url}/v1/small/current/keys/data/b").json()["version"] == 1
    refused = httpx.get(f"{server.url}/v1/small/versions/2/keys/data/b")
    assert refused.status_code == 404 and "cannot be served: its compile reports errors" in refused.json()["message"]
    listed = httpx.get(f"{server.url}/v1/small/versions").json()
    assert [(v["version"], v["servable"]) for v in listed] == [(2, False), (1, True)]


def test_a_restarted_server_is_ready_from_the_snapshot_cache(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    cache = tmp_path / "shared-cache"
    first = start_server(small.root, cache=cache)
    answer = httpx.get(f"{first.url}/v1/small/versions/1/keys/data/a").content
    assert first.stop() == 0
    written = _compiled(cache)
    assert any(p.suffix == ".sqlite" for p in written)  # the version artifact (cfgtool.versions.artifact)
    second = start_server(small.root, cache=cache)
    assert httpx.get(f"{second.url}/v1/small/versions/1/keys/data/a").content == answer
    assert _compiled(cache) == written  # nothing recompiled


def _compiled(cache: Path) -> dict[Path, int]:
    """What compiling writes to the cache (not the memo of what the refs named, which a restart may add), by
    inode: a file written again is a new one, renamed into place (a read only marks its file as used)."""
    return {p: p.stat().st_ino for p in cache.rglob("*") if p.is_file() and not p.parent.name.startswith("refs-")}


def test_shutdown_answers_waiting_long_polls_and_exits_0(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root)
    with ThreadPoolExecutor(3) as pool:
        waiting = [pool.submit(_changes, server.url, 1, 55) for _ in range(3)]
        _until(lambda: "cfgtool_long_polls_waiting{store=\"small\"} 3.0" in httpx.get(f"{server.url}/metrics").text,
               "three long polls wait")  # fmt: skip
        assert server.stop(timeout=20) == 0, server.log()
        answers = [w.result(timeout=5) for w in waiting]
    assert answers == [{"seq": 1, "current": 1, "events": []}] * 3


def test_serve_without_the_extra_names_it_and_exits_2(small: GitRepo, tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "starlette"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('starlette is not installed', name='starlette')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(shadow.parent), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [*cfgtool_command(), "serve", "--repo", str(small.root)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stderr
    assert "pip install -e '.[serve]'" in proc.stderr and "Traceback" not in proc.stderr


def test_serve_refuses_a_public_address_without_tokens(small: GitRepo, tmp_path: Path) -> None:
    proc = subprocess.run(
        [*cfgtool_command(), "serve", "--repo", str(small.root), "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "loopback" in proc.stderr and "--insecure-open" in proc.stderr
    assert shutil.which("git")


def test_a_port_in_use_is_a_usage_error(small: GitRepo) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [*cfgtool_command(), "serve", "--repo", str(small.root), "--port", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert proc.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr and "Traceback" not in proc.stderr
