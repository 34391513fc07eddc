"""`publish` against a remote over ssh that accepts the connection and then sends nothing, as a CI job runs it
(no terminal): the command fails within the stall bound with a clear message that shows no credential of the
URL, leaves no ssh behind, and run again once the remote answers it publishes exactly once; a push that landed
before the remote went silent is a publish. Reached through a stand-in for ssh that runs the remote command
locally, as sshd would, or stalls while a file beside it says so. All cases wait at once: the bound is 30 s."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cfgtool.store.urls import STALL_S
from tests.conftest import copy_embedded
from tests.processes import child_env
from tests.remotes import add_origin, bump

SLACK_S = 30  # for a loaded machine: the bound itself is STALL_S

SSH = """\
#!/bin/sh
# ssh's stand-in: `-G` (git asking which ssh this is) answers nothing; else it notes its pid in `pids` and runs
# the remote command (the last argument) here, as sshd would, unless STALL-fetch (git-upload-pack: fetch,
# ls-remote) or STALL-push (git-receive-pack) exists beside it: then it sends nothing until that file is gone.
# While STALL-after-push exists, a push is received and answered, and then the connection is held open.
[ "$1" = -G ] && exit 0
here=$(dirname "$0")
echo $$ >>"$here/pids"
for last; do :; done
case "$last" in git-receive-pack*) kind=push ;; *) kind=fetch ;; esac
if [ -e "$here/STALL-$kind" ]; then
  while [ -e "$here/STALL-$kind" ]; do sleep 0.2; done
  exit 1
fi
if [ "$kind" = push ] && [ -e "$here/STALL-after-push" ]; then
  sh -c "$last"
  while [ -e "$here/STALL-after-push" ]; do sleep 0.2; done
  exit 0
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
        self.url = f"ssh://stand-in{self.watch.bare}"
        self.work.git("remote", "set-url", "origin", self.url)

    def publish(self, remote: str = "origin") -> subprocess.CompletedProcess[str]:
        """`cfgtool publish --remote REMOTE` as a CI job runs it: in a session of its own, without a terminal."""
        return subprocess.run(
            [sys.executable, "-m", "cfgtool", "publish", "--remote", remote, "-m", "stall"],
            cwd=self.work.root,
            env=child_env(extra={"GIT_SSH_COMMAND": str(self.ssh)}),
            capture_output=True,
            text=True,
            timeout=STALL_S + SLACK_S + 60,
            start_new_session=True,
            check=False,
        )

    def stand_ins_left(self) -> list[int]:
        """The stand-ins started so far that still run (an ended one whose parent ended may wait, a zombie, for
        the init process to collect it)."""
        left = []
        for pid in {int(p) for p in (self.ssh.parent / "pids").read_text().split()}:
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                stat = Path(f"/proc/{pid}/stat").read_text()
                if stat[stat.rindex(")") + 2] != "Z":
                    left.append(pid)
        return left


@pytest.mark.long  # waits out the 30 s bound: started first, it overlaps the rest of the run
def test_a_publish_whose_remote_stops_answering_fails_within_the_bound_and_publishes_once_when_run_again(
    tmp_path: Path,
) -> None:
    fetching, pushing, landing = (Publisher(tmp_path / name) for name in ("fetching", "pushing", "landing"))
    for publisher in (fetching, pushing, landing):
        bump(publisher.work, "first")
        assert publisher.publish().returncode == 0
        bump(publisher.work, "second")
    (fetching.ssh.parent / "STALL-fetch").touch()  # its fetch of the version tags stalls
    (pushing.ssh.parent / "STALL-push").touch()  # its fetch works; the push of the new version stalls
    (landing.ssh.parent / "STALL-after-push").touch()  # its push lands, then the remote goes silent
    secret_url = fetching.url.replace("ssh://", "ssh://deploy:hunter2@")  # a password git never uses

    done: dict[str, subprocess.CompletedProcess[str]] = {}
    took: dict[str, float] = {}
    left: dict[str, list[int]] = {}

    def run(name: str, publisher: Publisher, remote: str) -> None:
        began = time.monotonic()
        done[name] = publisher.publish(remote)
        took[name] = time.monotonic() - began
        time.sleep(1)  # a stand-in told to end has ended by then
        left[name] = publisher.stand_ins_left()

    cases = (("fetch", fetching, secret_url), ("push", pushing, "origin"), ("landed", landing, "origin"))
    threads = [threading.Thread(target=run, args=case) for case in cases]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:  # a publish that never ended leaves no stand-in waiting
        for publisher in (fetching, pushing, landing):
            for stall in publisher.ssh.parent.glob("STALL-*"):
                stall.unlink()
    assert set(done) == {"fetch", "push", "landed"}, "a publish did not end"
    assert left == {"fetch": [], "push": [], "landed": []}, "an ssh outlived the publish that started it"

    for name, publisher in (("fetch", fetching), ("push", pushing)):
        result = done[name]
        assert result.returncode == 2, result.stderr
        assert STALL_S - 1 < took[name] < STALL_S + SLACK_S, took[name]
        said = " ".join(result.stderr.split())
        assert f"{publisher.url} stalled: git {name} received nothing for {STALL_S} s" in said
        assert "run the command again" in said and "Traceback" not in result.stderr
        assert "hunter2" not in result.stderr and "deploy" not in result.stderr
        assert publisher.watch.tags() == ["config/v1"]  # nothing published, nothing moved
        again = publisher.publish()
        assert again.returncode == 0, again.stderr
        assert publisher.watch.tags() == ["config/v1", "config/v2"]
        on_remote = publisher.watch.check()
        assert on_remote["refs/tags/config/v2^{}"] == publisher.work.git("rev-parse", "HEAD")

    result = done["landed"]  # the remote has the version: the publish asked it, and is done
    assert result.returncode == 0, result.stderr
    assert STALL_S - 1 < took["landed"] < STALL_S + SLACK_S, took["landed"]
    assert landing.watch.tags() == ["config/v1", "config/v2"]
    assert landing.work.git("rev-parse", "config/v2^{commit}") == landing.work.git("rev-parse", "HEAD")
    landing.watch.check()


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
