"""`ChangeFeed` against a real `cfgtool serve`: its state, long polls, backoff on errors, a reader's failures."""

from __future__ import annotations

import threading
import time

import pytest

from cfgtool.client.feed import Change, ChangeFeed
from cfgtool.client.http import ServerUnavailable
from cfgtool.errors import CfgtoolError
from cfgtool.versions import rollback
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change

FAST = ("--cache-time", "0", "--fetch-interval", "0.2")
STORE = "small"


def test_next_reads_the_state_then_long_polls_publishes_and_rollbacks(
    small: GitRepo, start_server: StartServer
) -> None:
    server = start_server(small.root, *FAST)
    feed = ChangeFeed(server.url, STORE, wait=20)
    try:
        first = feed.next()
        assert first.current == 1 and (feed.seq, feed.current) == first
        asked = time.monotonic()
        assert feed.next(wait=0.5) == first  # nothing new: a timed-out poll keeps the state
        assert time.monotonic() - asked < 10
        version = publish_change(small, {"store/data/a/main.conf": "size = 2\n"}, "v2")
        second = feed.next()  # held until the server sees the publish
        assert second.current == version and second.seq > first.seq
        rollback(small.root, version, reason="bad")
        third = feed.next()
        assert third.current == 1 and third.seq > second.seq  # a rollback moves the feed too
    finally:
        feed.close()


def test_an_unknown_store_is_an_error_and_the_next_step_synchronizes_again(
    small: GitRepo, start_server: StartServer
) -> None:
    server = start_server(small.root, *FAST)
    feed = ChangeFeed(server.url, "nope", wait=1)
    try:
        with pytest.raises(ServerUnavailable, match="serves no store 'nope'"):
            feed.next()
        assert feed.seq is None
    finally:
        feed.close()


def test_follow_backs_off_while_the_server_is_away_and_catches_up_after(
    small: GitRepo, start_server: StartServer
) -> None:
    server = start_server(small.root, *FAST)
    feed = ChangeFeed(server.url, STORE, wait=2)
    stop = threading.Event()
    errors: list[tuple[Exception, float]] = []

    def restart(exc: Exception, delay: float) -> None:  # the first error: the server comes back with version 2
        errors.append((exc, delay))
        if len(errors) == 1:
            publish_change(small, {"store/data/a/main.conf": "size = 2\n"}, "v2")
            assert start_server(small.root, *FAST, "--port", str(server.port)).port == server.port

    seen: list[Change] = []
    try:
        for change in feed.follow(stop, on_error=restart):
            seen.append(change)
            if len(seen) == 1:
                server.stop()
            if change.current == 2 or len(seen) > 50:
                break
    finally:
        feed.close()
    exc, delay = errors[0]
    assert isinstance(exc, ServerUnavailable) and 1.0 <= delay <= 2.0  # the first backoff: 1 to 2 s
    assert seen[0].current == 1 and seen[-1].current == 2
    assert feed.failures == 0 and feed.last_error is exc


def test_a_readers_failure_backs_off_and_synchronizes_again(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, *FAST)
    feed = ChangeFeed(server.url, STORE, wait=1)
    stop = threading.Event()
    errors: list[tuple[Exception, float]] = []
    trouble = CfgtoolError("could not read version 1")
    seen: list[Change] = []
    try:
        for change in feed.follow(stop, on_error=lambda exc, delay: errors.append((exc, delay))):
            seen.append(change)
            if len(seen) == 1:
                feed.failed(trouble)
                assert feed.seq is not None  # forgotten only when the feed backs off
            else:
                stop.set()
    finally:
        feed.close()
    assert [exc for exc, _ in errors] == [trouble] and feed.failures == 0
    assert seen[1] == seen[0]  # synchronized again: the same state


def test_follow_ends_when_stopped_and_interrupt_cuts_a_long_poll(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, *FAST)
    feed = ChangeFeed(server.url, STORE, wait=50)
    stop = threading.Event()
    seen: list[Change] = []
    follower = threading.Thread(target=lambda: seen.extend(feed.follow(stop)))
    follower.start()
    deadline = time.monotonic() + 30
    while not seen and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # into its long poll
    asked = time.monotonic()
    stop.set()
    feed.interrupt()
    follower.join(20)
    assert not follower.is_alive() and time.monotonic() - asked < 10  # not the poll's 50 s
    assert len(seen) == 1
    feed.close()


@pytest.mark.parametrize("wait", [-1, 56])
def test_a_wait_the_server_would_not_grant_is_refused(wait: float) -> None:
    with pytest.raises(CfgtoolError, match="not between 0 and 55 seconds"):
        ChangeFeed("http://127.0.0.1:9", STORE, wait=wait)
