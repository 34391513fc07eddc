"""A mirrored remote that accepts the connection and then sends nothing, over git:// (a real `git daemon` on
loopback) and ssh:// (git's ssh command replaced by a script that runs the remote command locally, as sshd
would, or stalls): each fetch that stalls fails within the stall bound and `/healthz` reports it, the versions
the server has stay served, the next fetch works once the remote answers again, a server asked to stop meanwhile
stops at once, and a server or a client whose first clone stalls fails with a clear message; a remote that
prepares its pack for longer than the bound, in silence but for its keepalives, is no stall. All of it at once:
the bound is 30 s, and one wait covers it."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from cfgtool import ConfigClient
from cfgtool.client.local import StoreNotFound
from cfgtool.store.urls import STALL_S, fetch_env, stall_bound
from tests.conftest import GitRepo
from tests.processes import Process, child_env
from tests.serve.conftest import Server, StartServer, publish_change

SLACK_S = 30  # for a loaded machine: the bound itself is STALL_S

SSH = """\
#!/bin/sh
# ssh's stand-in: `-G` (git asking which ssh this is) answers nothing; else it runs the remote command (the last
# argument) here, as sshd would. While the file STALL exists, it sends nothing (and ends once STALL is gone);
# host `slow` never stalls, but while SLOW exists its next pack is prepared in silence for longer than the bound.
[ "$1" = -G ] && exit 0
here=$(dirname "$0")
for last; do :; done
case " $* " in
  *" slow "*)
    if [ -e "$here/SLOW" ]; then
      export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=uploadpack.packObjectsHook GIT_CONFIG_VALUE_0="$here/slow-pack"
    fi ;;
  *)
    if [ -e "$here/STALL" ]; then
      while [ -e "$here/STALL" ]; do sleep 0.2; done
      exit 1
    fi ;;
esac
exec sh -c "$last"
"""
SLOW_PACK = f"""\
#!/bin/sh
# pack-objects of a server that takes long to start a pack: upload-pack sends keepalives meanwhile
rm -f "$(dirname "$0")/SLOW"
sleep {STALL_S + 3}
exec "$@"
"""


class GitDaemon:
    """`git daemon` serving `base` on a loopback port, one `--inetd` process per connection; while `stalled`
    is set, a connection is accepted and held open without a byte sent (until `stalled` is cleared)."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.stalled, self.answering = threading.Event(), threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            if self.stalled.is_set():
                self.answering.wait(600)
                return
            daemon = ["git", "daemon", "--inetd", "--export-all", f"--base-path={self.base}"]
            subprocess.run(daemon, stdin=conn.fileno(), stdout=conn.fileno(), stderr=subprocess.DEVNULL, timeout=60)

    def stall(self, stalled: bool) -> None:
        """Hold every connection from now on, or end those held and answer again."""
        if stalled:
            self.answering.clear()
            self.stalled.set()
        else:
            self.stalled.clear()
            self.answering.set()

    def close(self) -> None:
        self.stall(False)
        self.listener.close()


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[GitDaemon]:
    served = GitDaemon(tmp_path / "remote")
    yield served
    served.close()


@pytest.fixture
def ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The ssh stand-in, git's ssh command here and in the servers started; touch `STALL` beside it to stall."""
    script = tmp_path / "ssh" / "ssh"
    script.parent.mkdir()
    script.write_text(SSH)
    script.chmod(0o755)
    (script.parent / "slow-pack").write_text(SLOW_PACK)
    (script.parent / "slow-pack").chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(script))
    yield script
    (script.parent / "STALL").unlink(missing_ok=True)  # a test that failed stalled ends its stand-ins


def _update(repo: GitRepo, bare: Path) -> None:
    repo.git("push", "-q", str(bare), "HEAD:refs/heads/main", "refs/tags/*:refs/tags/*")


def _size(server: Server) -> int:
    size: int = httpx.get(f"{server.url}/v1/small/current/keys/data/b", timeout=10).json()["config"]["size"]
    return size


def _fetch_state(server: Server) -> dict[str, object]:
    state: dict[str, object] = httpx.get(f"{server.url}/healthz", timeout=10).json()["fetch"]
    return state


def _until(what: str, check: Callable[[], bool], deadline: float, servers: list[Server]) -> None:
    while not check():
        assert time.monotonic() < deadline, f"never: {what}\n" + "\n".join(s.log() for s in servers)
        time.sleep(0.2)


def test_a_remote_over_git_or_ssh_that_stops_answering_is_a_fetch_failure_and_the_next_fetch_works(
    daemon: GitDaemon, ssh: Path, small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    bare = tmp_path / "remote" / "cfg.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(small.root), str(bare)], check=True)
    _update(small, bare)
    over_git = f"git://127.0.0.1:{daemon.port}/cfg.git"
    over_ssh = f"ssh://deploy:hunter2@stand-in{bare}"  # a password git never uses: it must show nowhere
    over_slow_ssh = f"ssh://slow{bare}"
    urls = (over_git, over_ssh, over_slow_ssh, over_git)
    *servers, slow, stopped = [start_server(url, "--fetch-interval", "0.2", "--cache-time", "0") for url in urls]
    assert [_size(s) for s in (*servers, slow, stopped)] == [2, 2, 2, 2]

    daemon.stall(True)  # from now on both remotes accept and answer nothing
    (ssh.parent / "STALL").touch()
    stalled_at = time.monotonic()
    (ssh.parent / "SLOW").touch()  # and the slow one prepares the pack of version 2 for long
    publish_change(small, {"store/data/b/main.conf": "size = 3\n"}, "v2")
    _update(small, bare)
    first = Process.cfgtool(  # a server whose first clone stalls
        ["serve", "--repo", over_git, "--port", "0"], tmp_path / "first.log", child_env(tmp_path / "first-cache")
    )
    refused: list[str] = []
    client = threading.Thread(  # a client whose first clone stalls
        target=lambda: refused.extend(_refusal(over_ssh, tmp_path / "client-cache")), daemon=True
    )
    client.start()

    deadline = stalled_at + STALL_S + SLACK_S
    _until("both fetches fail", lambda: not any(_fetch_state(s)["ok"] for s in servers), deadline, servers)
    assert time.monotonic() - stalled_at > STALL_S - 1  # stopped for its silence, not for anything else
    assert _fetch_state(slow)["ok"]  # receiving keepalives while its pack is made, or done
    for server, shown in zip(servers, (over_git, f"ssh://stand-in{bare}"), strict=True):
        error = str(_fetch_state(server)["error"])
        assert error.startswith(f"{shown} stalled: git fetch received nothing for {STALL_S} s"), error
        assert httpx.get(f"{server.url}/healthz", timeout=10).json()["status"] == "failing"
        assert _size(server) == 2  # the versions it has are served
        assert "hunter2" not in error + server.log() and "deploy" not in error

    began = time.monotonic()  # its fetch stalls again meanwhile: a server asked to stop does not wait for it
    status = stopped.stop()
    assert status == 0 and time.monotonic() - began < 10, f"{status} after {time.monotonic() - began:.1f} s"

    status = first.proc.wait(max(1.0, deadline - time.monotonic()))
    assert status == 2, first.log()
    assert f"cannot read {over_git}: {over_git} stalled" in first.log()
    assert "Traceback" not in first.log()
    client.join(max(1.0, deadline - time.monotonic()))
    assert len(refused) == 1 and f"ssh://stand-in{bare} stalled" in refused[0], refused
    assert "hunter2" not in refused[0]

    daemon.stall(False)  # the remotes answer again
    (ssh.parent / "STALL").unlink()
    deadline = time.monotonic() + 60
    _until("the next fetches work", lambda: all(_fetch_state(s)["ok"] for s in servers), deadline, servers)
    everyone = [*servers, slow]
    _until("version 2 is served", lambda: [_size(s) for s in everyone] == [3, 3, 3], deadline, everyone)
    assert not (ssh.parent / "SLOW").exists() and "failed" not in slow.log()  # its slow fetch was one, and went


def _refusal(url: str, cache: Path) -> list[str]:
    """The message a client of `url` fails with (none if it does not)."""
    try:
        ConfigClient(url, store="store", cache_dir=cache)
    except StoreNotFound as exc:
        return [str(exc)]
    return []


def test_every_transport_but_http_and_a_local_path_is_watched_for_a_stall() -> None:
    watched = ["git://host/cfg.git", "ssh://git@host/cfg.git", "git@host:team/cfg.git", "host:cfg.git", "file:///r"]
    assert all(stall_bound(url) == STALL_S for url in watched)
    # over HTTP curl's byte rate bounds a transfer (git says nothing while a "dumb" server sends a pack)
    assert [stall_bound(u) for u in ("https://host/cfg.git", "HTTP://host/x", "/srv/cfg.git", "./a:b")] == [None] * 4
    env = fetch_env("https://host/cfg.git", None)
    config = {env[k]: env[k.replace("KEY", "VALUE")] for k in env if k.startswith("GIT_CONFIG_KEY_")}
    assert config["http.lowSpeedTime"] == str(STALL_S)
