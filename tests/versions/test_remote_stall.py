"""`publish` against a remote over ssh that accepts the connection and then sends nothing, as a CI job runs it
(no terminal): the command fails within the stall bound with a clear message, instead of holding the job until
its own timeout, and run again once the remote answers it publishes exactly once. Reached through a stand-in for
ssh that runs the remote command locally, as sshd would, or stalls while a file beside it says so. Both cases
wait at once: the bound is 30 s."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

from cfgtool.store.urls import STALL_S
from tests.conftest import copy_embedded
from tests.processes import child_env
from tests.remotes import add_origin, bump

SLACK_S = 30  # for a loaded machine: the bound itself is STALL_S

SSH = """\
#!/bin/sh
# ssh's stand-in: `-G` (git asking which ssh this is) answers nothing; else it runs the remote command (the last
# argument) here, as sshd would, unless STALL-fetch (git-upload-pack: fetch, ls-remote) or STALL-push
# (git-receive-pack) exists beside it: then it sends nothing until that file is gone.
[ "$1" = -G ] && exit 0
here=$(dirname "$0")
for last; do :; done
case "$last" in git-receive-pack*) kind=push ;; *) kind=fetch ;; esac
if [ -e "$here/STALL-$kind" ]; then
  while [ -e "$here/STALL-$kind" ]; do sleep 0.2; done
  exit 1
fi
exec sh -c "$last"
"""


class Publisher:
    """A clone whose remote `origin` is a bare repository reached over ssh://, through its own stand-in."""

    def __init__(self, root: Path) -> None:
        self.work = copy_embedded(root / "work")
        self.watch = add_origin(self.work, root / "remote.git")
        self.ssh = root / "ssh" / "ssh"
        self.ssh.parent.mkdir()
        self.ssh.write_text(SSH)
        self.ssh.chmod(0o755)
        self.work.git("remote", "set-url", "origin", f"ssh://stand-in{self.watch.bare}")

    def publish(self) -> subprocess.CompletedProcess[str]:
        """`cfgtool publish --remote origin` as a CI job runs it: in a session of its own, without a terminal."""
        return subprocess.run(
            [sys.executable, "-m", "cfgtool", "publish", "--remote", "origin", "-m", "stall"],
            cwd=self.work.root,
            env=child_env(extra={"GIT_SSH_COMMAND": str(self.ssh)}),
            capture_output=True,
            text=True,
            timeout=STALL_S + SLACK_S + 60,
            start_new_session=True,
            check=False,
        )


def test_a_publish_whose_remote_stops_answering_fails_within_the_bound_and_publishes_once_when_run_again(
    tmp_path: Path,
) -> None:
    fetching, pushing = Publisher(tmp_path / "fetching"), Publisher(tmp_path / "pushing")
    for publisher in (fetching, pushing):
        bump(publisher.work, "first")
        assert publisher.publish().returncode == 0
        bump(publisher.work, "second")
    (fetching.ssh.parent / "STALL-fetch").touch()  # its fetch of the version tags stalls
    (pushing.ssh.parent / "STALL-push").touch()  # its fetch works; the push of the new version stalls

    done: dict[str, subprocess.CompletedProcess[str]] = {}
    took: dict[str, float] = {}

    def run(name: str, publisher: Publisher) -> None:
        began = time.monotonic()
        done[name] = publisher.publish()
        took[name] = time.monotonic() - began

    threads = [threading.Thread(target=run, args=(n, p)) for n, p in (("fetch", fetching), ("push", pushing))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:  # a publish that never ended leaves no stand-in waiting
        for publisher in (fetching, pushing):
            for stall in publisher.ssh.parent.glob("STALL-*"):
                stall.unlink()
    assert set(done) == {"fetch", "push"}, "a publish did not end"

    for name, publisher in (("fetch", fetching), ("push", pushing)):
        result = done[name]
        assert result.returncode == 2, result.stderr
        assert STALL_S - 1 < took[name] < STALL_S + SLACK_S, took[name]
        said = " ".join(result.stderr.split())
        assert f"ssh://stand-in{publisher.watch.bare} stalled: git {name} received nothing for {STALL_S} s" in said
        assert "run the command again" in said and "Traceback" not in result.stderr
        assert publisher.watch.tags() == ["config/v1"]  # nothing published, nothing moved
        again = publisher.publish()
        assert again.returncode == 0, again.stderr
        assert publisher.watch.tags() == ["config/v1", "config/v2"]
        on_remote = publisher.watch.check()
        assert on_remote["refs/tags/config/v2^{}"] == publisher.work.git("rev-parse", "HEAD")


def test_only_a_process_with_a_controlling_terminal_has_one() -> None:
    """At a terminal git may prompt, so it runs unwatched there; `has_terminal` tells the two apart."""
    probe = "import sys; from cfgtool.store.git import has_terminal; sys.exit(0 if has_terminal() else 1)"
    alone = subprocess.run([sys.executable, "-c", probe], start_new_session=True, check=False, timeout=60)
    assert alone.returncode == 1
    pid, fd = pty.fork()  # the child's session has the pseudo-terminal as its controlling terminal
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-c", probe])
    with contextlib.suppress(OSError):
        while os.read(fd, 1024):
            pass
    os.close(fd)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
