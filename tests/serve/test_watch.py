"""`cfgtool.watch` against real `cfgtool serve` processes: new pinned clients per version, restarts, gaps."""

from __future__ import annotations

import queue
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

import cfgtool
from cfgtool import HttpConfigClient
from cfgtool.client.feed import MAX_BACKOFF, MIN_BACKOFF, backoff
from cfgtool.client.http import ServerUnavailable
from cfgtool.errors import CfgtoolError
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change
from tests.serve.test_http_client import FAST, wait_for_version

WAIT = 60.0  # the longest a test waits for something that should happen within seconds


def next_client(delivered: queue.Queue[HttpConfigClient]) -> HttpConfigClient:
    return delivered.get(timeout=WAIT)


def test_watch_hands_a_new_client_per_version_and_old_clients_keep_theirs(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    delivered: queue.Queue[HttpConfigClient] = queue.Queue()
    with cfgtool.watch(server.url, "small", delivered.put, wait=5, cache_dir=tmp_path / "c") as watcher:
        first = next_client(delivered)
        assert first.version == 1 and first.get_value("/data/a", "size") == 1
        publish_change(small, {"store/data/a/main.conf": "size = 2\n"}, "v2")
        second = next_client(delivered)
        assert second is not first and second.version == 2
        assert second.get_value("/data/a", "size") == 2
        assert (first.version, first.get_value("/data/a", "size")) == (1, 1)  # never moves
        assert first.get_value("/data/b", "size") == 2  # read after the publish, still version 1's
        assert watcher.version == 2 and watcher.client is second
    assert not watcher.running
    assert delivered.empty()


def test_watch_initial_false_hands_over_only_later_versions(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    delivered: queue.Queue[HttpConfigClient] = queue.Queue()
    with cfgtool.watch(server.url, "small", delivered.put, wait=5, initial=False, cache_dir=tmp_path / "c"):
        publish_change(small, {"store/data/b/main.conf": "size = 5\n"}, "v2")
        assert next_client(delivered).version == 2  # version 1, current at the start, was not handed over


def test_watch_survives_a_server_restart_and_pins_the_newest_after_a_gap(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    port = server.port
    delivered: queue.Queue[HttpConfigClient] = queue.Queue()
    with cfgtool.watch(server.url, "small", delivered.put, wait=5, cache_dir=tmp_path / "c") as watcher:
        assert next_client(delivered).version == 1
        server.stop()
        deadline = time.monotonic() + WAIT
        while watcher.failures == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert watcher.failures >= 1 and watcher.running
        publish_change(small, {"store/data/a/main.conf": "size = 2\n"}, "v2")
        publish_change(small, {"store/data/a/main.conf": "size = 3\n"}, "v3")
        restarted = start_server(small.root, *FAST, "--port", str(port))
        assert restarted.port == port
        wait_for_version(restarted, "small", 3)
        newest = next_client(delivered)
        assert (newest.version, newest.get_value("/data/a", "size")) == (3, 3)  # v2 was skipped: the newest only
        assert watcher.failures == 0
    assert delivered.empty()


def test_watch_callback_errors_do_not_stop_it(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    server = start_server(small.root, *FAST)
    seen: queue.Queue[int] = queue.Queue()

    def fails(client: HttpConfigClient) -> None:
        seen.put(client.version)
        raise RuntimeError("the application's bug")

    with cfgtool.watch(server.url, "small", fails, wait=5, cache_dir=tmp_path / "c") as watcher:
        assert seen.get(timeout=WAIT) == 1
        publish_change(small, {"store/data/b/main.conf": "size = 4\n"}, "v2")
        assert seen.get(timeout=WAIT) == 2
        assert watcher.running


@pytest.mark.parametrize("stores", [b'[{"name": "small", "seq": "7.5"}]', b"[" * 200_000 + b"]" * 200_000])
def test_watch_retries_hostile_answers(misbehaving: Any, tmp_path: Path, stores: bytes) -> None:
    """A `seq` that is no integer, or JSON nested past the parser's recursion: an error to retry, and the watch
    goes on (it used to end its thread on the deep answer)."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(stores)}\r\n\r\n"
        handler.wfile.write(head.encode() + stores)

    server = misbehaving(answer)
    with cfgtool.watch(server.url, "small", print, wait=1, cache_dir=tmp_path / "c") as watcher:
        deadline = time.monotonic() + WAIT
        while watcher.last_error is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # a thread that ends on the error has ended by now
        assert isinstance(watcher.last_error, ServerUnavailable) and watcher.running


def test_watch_backoff_is_jittered_between_1_and_120_seconds() -> None:
    delays = [backoff(failures) for failures in range(1, 40) for _ in range(20)]
    assert min(delays) >= MIN_BACKOFF and max(delays) <= MAX_BACKOFF
    assert max(backoff(30) for _ in range(200)) > 60  # it grows to the cap
    assert len({round(backoff(10), 6) for _ in range(20)}) > 1  # with jitter


def test_watch_refuses_a_wait_the_server_would_not_hold() -> None:
    with pytest.raises(CfgtoolError, match="between 0 and 55"):
        cfgtool.watch("http://127.0.0.1:9", "small", print, wait=90)
