"""Explain is answered by the store's resolver process, which keeps the current version's snapshot (loaded as soon
as that version is current) and one other: the server never loads a snapshot, and loading another version in the
resolver is not cut short by the bound on a read (docs/serving.md)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from cfgtool.client.client import ConfigClient
from cfgtool.serve.app import RESOLVING_PER_PRINCIPAL
from cfgtool.serve.worker import RESOLVE_TIMEOUT, Resolver
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change
from tests.serve.test_resolver_hang import _alive, _resolver

V2 = {"store/data/a/main.conf": "size = 10\nlabel = ${tier}-a\n"}


def test_explain_needs_neither_the_repository_nor_the_snapshot_cache_once_loaded(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, V2, "v2")
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=f"{server.url}/v1/small/versions", timeout=120) as http:
        older = http.get("1/explain/data/a?path=size")  # the resolver loads version 1 after the current one
        assert older.status_code == 200 and older.json()["value"] == 1, older.text
        shutil.move(small.root, tmp_path / "moved-repo")
        shutil.move(tmp_path / "serve-cache-0", tmp_path / "moved-cache")
        found = http.get("2/explain/data/a?path=label")
        assert found.status_code == 200, found.text
        explained = found.json()
        assert explained["value"] == "gold-a" and explained["origin"]["file"] == "store/data/a/main.conf"
        assert [s["file"] for s in explained["sources"]] == ["store/data/main.conf", "store/data/a/main.conf"]
        assert http.get("2/explain/data/a/made-up?path=tier").json()["node"] == "/data/a"
        assert http.get("1/explain/data/b?path=size").json()["value"] == 2  # the other version kept


def test_loading_another_version_for_explain_is_not_cut_short_by_the_read_bound(
    small: GitRepo, start_server: StartServer
) -> None:
    """The resolver stopped for longer than `RESOLVE_TIMEOUT` while it is to load version 1: the explain waits
    for the load and is answered when the process goes on (not refused, the process not killed)."""
    publish_change(small, V2, "v2")
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=f"{server.url}/v1/small/versions", timeout=120) as http:
        assert http.get("2/explain/data/a?path=size").json()["value"] == 10  # the current version is loaded
        resolver = _resolver(server.pid)
        assert resolver is not None, "no resolver process found"
        got: dict[str, Any] = {}

        def explain() -> None:
            start = time.monotonic()
            got["answer"] = http.get("1/explain/data/a?path=size")
            got["took"] = time.monotonic() - start

        os.kill(resolver, signal.SIGSTOP)
        reader = threading.Thread(target=explain)
        try:
            reader.start()
            time.sleep(RESOLVE_TIMEOUT + 3)
            assert "answer" not in got, got["answer"].text  # computed by the stopped process: not answered yet
        finally:
            os.kill(resolver, signal.SIGCONT)
        reader.join(120)
        assert got["answer"].status_code == 200, got["answer"].text
        assert got["answer"].json()["value"] == 1 and got["took"] >= RESOLVE_TIMEOUT + 3
        assert _alive(resolver) and _resolver(server.pid) == resolver


def test_without_worker_processes_explain_is_answered_in_the_server(published: GitRepo, tmp_path: Path) -> None:
    resolver = Resolver()
    resolver._processes = False  # as when no process can be started
    args = (str(published.root), "store", 1, str(tmp_path / "cache"))
    found = asyncio.run(resolver.explain(*args, "/data/tracking/PageViewEvent", "retention.days"))
    client = ConfigClient(published.root, store="store", version=1, cache_dir=tmp_path / "cache")
    assert found == client.explain("/data/tracking/PageViewEvent", "retention.days").to_json()


def test_explains_waiting_for_the_resolver_are_bounded_per_client(small: GitRepo, start_server: StartServer) -> None:
    """Explains not answered yet wait for the resolver as keys without a node do: past `RESOLVING_PER_PRINCIPAL`
    of one client's, the next is refused at once (a flood of explains cannot queue in the resolver without end)."""
    publish_change(small, V2, "v2")
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=f"{server.url}/v1/small/versions", timeout=120) as http:
        assert http.get("2/explain/data/a?path=size").status_code == 200  # the current version is loaded
        resolver = _resolver(server.pid)
        assert resolver is not None, "no resolver process found"
        statuses: list[int] = []
        os.kill(resolver, signal.SIGSTOP)
        try:
            waiting = [
                threading.Thread(
                    target=lambda i=i: statuses.append(http.get(f"2/explain/data/a?path=p{i}").status_code)
                )
                for i in range(RESOLVING_PER_PRINCIPAL)
            ]
            for thread in waiting:
                thread.start()
            time.sleep(3)
            start = time.monotonic()
            refused = http.get("2/explain/data/a?path=label")
            assert refused.status_code == 429 and refused.json()["error"] == "too_many_requests", refused.text
            assert refused.headers["retry-after"] == "1" and time.monotonic() - start < 3
        finally:
            with contextlib.suppress(OSError):  # killed already if the waiting reads timed out
                os.kill(resolver, signal.SIGCONT)
        for thread in waiting:
            thread.join(120)
        assert len(statuses) == RESOLVING_PER_PRINCIPAL and set(statuses) <= {200, 503}, statuses
        assert http.get("2/explain/data/a?path=label").json()["value"] == "gold-a"
