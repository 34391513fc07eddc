"""The console on a real `cfgtool serve` process: mounted under /ui/ beside the JSON API, and the timeline's live
updates, woken by the change feed when a version is published."""

from __future__ import annotations

import threading
import time

import httpx

from tests.conftest import GitRepo
from tests.console.conftest import Page
from tests.serve.conftest import StartServer, publish_change


def test_cfgtool_serve_mounts_the_console_and_its_timeline_follows_the_change_feed(
    small: GitRepo,
    start_server: StartServer,
) -> None:
    server = start_server(small.root, "--cache-time", "0", "--fetch-interval", "0.2")
    page = httpx.get(f"{server.url}/ui/small/")
    assert page.status_code == 200 and page.headers["content-security-policy"].startswith("default-src 'self'")
    section = Page(page.text).all("section")[0]
    assert section["hx-get"] == "/ui/small/live?since=1" and "load" in str(section["hx-trigger"])
    assert httpx.get(f"{server.url}/ui/static/htmx.min.js").status_code == 200
    found: dict[str, object] = {}

    def wait() -> None:
        started = time.monotonic()
        found["answer"] = httpx.get(f"{server.url}/ui/small/live?since=1", headers={"hx-request": "true"}, timeout=60)
        found["took"] = time.monotonic() - started

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(1.0)
    assert "answer" not in found  # held until the feed has an event after 1
    publish_change(small, {"store/data/a/main.conf": "size = 10\n"}, "bigger a")
    waiter.join(60)
    answer = found["answer"]
    assert isinstance(answer, httpx.Response) and answer.status_code == 200
    assert float(str(found["took"])) < 20  # woken by the publish, not by the wait's end (25 s)
    live = Page(answer.text)
    assert live.all("section")[0]["hx-get"] == "/ui/small/live?since=2" and "bigger a" in live.text
