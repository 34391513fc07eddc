"""A resolver process that hangs holds no read for ever: past `RESOLVE_TIMEOUT` the read answers 503 with
`Retry-After`, the hung process is killed, and the next read starts another (docs/serving.md)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import httpx

from cfgtool.serve.worker import RESOLVE_TIMEOUT, RESOLVER_NICENESS
from tests.conftest import GitRepo
from tests.processes import wait_for
from tests.serve.conftest import StartServer, publish_change


def _stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name (field 4, the parent, is [1]; the nice value is [16])."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _resolver(server_pid: int) -> int | None:
    """The pid of the server's resolver process: its descendant running at the resolver's lower priority."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                parents[int(entry.name)] = int(_stat(int(entry.name))[1])
    own = int(_stat(server_pid)[16])
    for pid in parents:
        ancestor = parents.get(pid)
        while ancestor is not None and ancestor != server_pid:
            ancestor = parents.get(ancestor)
        with contextlib.suppress(OSError):
            if ancestor == server_pid and int(_stat(pid)[16]) == own + RESOLVER_NICENESS:
                return pid
    return None


def _alive(pid: int) -> bool:
    try:
        return _stat(pid)[0] != "Z"
    except OSError:
        return False


def test_a_hung_resolver_answers_503_within_the_bound_and_is_restarted(
    small: GitRepo, start_server: StartServer
) -> None:
    publish_change(small, {"store/data/b/main.conf": 'named = ${cfgtool.name}"-x"\n'}, "intrinsics")
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url, timeout=RESOLVE_TIMEOUT + 20) as http:
        assert http.get("/v1/small/versions/2/keys/data/b/first").json()["config"]["named"] == "first-x"
        hung = _resolver(server.pid)
        assert hung is not None, "no resolver process found"
        os.kill(hung, signal.SIGSTOP)
        try:
            start = time.monotonic()
            refused = http.get("/v1/small/versions/2/keys/data/b/second")
            took = time.monotonic() - start
            assert refused.status_code == 503, refused.text[:200]
            assert refused.json()["error"] == "resolver_unavailable", refused.text
            assert "did not answer" in refused.json()["message"]
            assert refused.headers["retry-after"] == "1"
            assert took < RESOLVE_TIMEOUT + 5, f"the read took {took:.1f} s"
            wait_for(lambda: not _alive(hung), 10, "the hung resolver to be killed", server)
        finally:
            with contextlib.suppress(OSError):
                os.kill(hung, signal.SIGCONT)
        again = http.get("/v1/small/versions/2/keys/data/b/second")
        assert again.status_code == 200 and again.json()["config"]["named"] == "second-x", again.text[:200]
        restarted = _resolver(server.pid)
        assert restarted is not None and restarted != hung
