"""Kill sweep (docs/security.md): SIGKILL `publish` and `rollback` at points spread over their run, against a
bare remote, from one persistent clone, and check what a crashing CI runner leaves behind.

The remote is reached over ssh://, through a stand-in for ssh that runs the remote's side (git-upload-pack,
git-receive-pack) in a session of its own, as a server would: the kill takes the client and every process it
started, never the server, which finishes or abandons its side by itself (a local path as the remote would run
the server's side as the client's child, and the kill would leave the remote's ref locks behind, which no real
server does). After a kill the sweep waits until the remote's side has ended.

Usage:
    python -m benchmarks.kill_sweep [--publish 200] [--rollback 100] [--seed 15]

Half the kill points are spread over the whole run, half over its last 40% (the push and the local write).

After every kill: the clone's index is not locked, no tag on the remote moved, the remote's versions are
contiguous, every local version tag is on the remote with the same object, and the same command run again does
the right thing (publish: the commit becomes the next version, once; rollback: the version that was current
before the killed run is rolled back, and no other). Prints how many runs were killed before, during and after
the push, and any failure.
`tests/versions/test_kill_sweep.py` runs a few dozen of these points in the suite.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.machine import print_machine

CHECKOUT = Path(__file__).resolve().parents[1]
SSH = """\
#!/bin/sh
# ssh's stand-in: `-G` (git asking which ssh this is) answers nothing; else it runs the remote command (the last
# argument) here, as sshd would: in a session of its own, holding the lock `busy` beside it while it runs.
[ "$1" = -G ] && exit 0
for last; do :; done
exec setsid -w flock "$(dirname "$0")/busy" sh -c "$last"
"""


def git(cwd: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    proc = subprocess.run(("git", *args), cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: exit {proc.returncode}\n{proc.stderr}")
    return proc.stdout.strip()


def cfgtool(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "cfgtool", *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group: the kill takes git's children too
    )


def remote_tags(bare: Path) -> dict[str, str]:
    out = git(bare, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags")
    return dict(line.split(" ") for line in out.splitlines())


def numbers(tags: dict[str, str], prefix: str) -> list[int]:
    return sorted(int(ref.removeprefix(prefix)) for ref in tags if ref.startswith(prefix))


@dataclass
class Sweep:
    """A persistent clone `work` of a config repository whose remote `origin` is the bare repository `bare`."""

    work: Path
    bare: Path
    spans: dict[str, float] = field(default_factory=lambda: {"publish": 1.0, "rollback": 1.0})

    @classmethod
    def create(cls, root: Path) -> Sweep:
        work, bare = root / "work", root / "remote.git"
        work.mkdir(parents=True)
        for name in ("store", "schemas", "policies"):
            shutil.copytree(CHECKOUT / name, work / name, ignore=shutil.ignore_patterns("__pycache__"))
        git(work, "init", "-q", "-b", "main")
        git(work, "config", "user.name", "Sweep")
        git(work, "config", "user.email", "sweep@example.com")
        git(work, "add", "-A")
        git(work, "commit", "-qm", "store")
        git(root, "init", "-q", "--bare", str(bare))
        ssh = root / "ssh" / "ssh"
        ssh.parent.mkdir()
        ssh.write_text(SSH, encoding="utf-8")
        ssh.chmod(0o755)
        git(work, "config", "core.sshCommand", str(ssh))
        git(work, "remote", "add", "origin", f"ssh://remote{bare}")
        git(work, "push", "-q", "origin", "main")
        sweep = cls(work, bare)
        sweep.bump("start")
        sweep.run("publish", "--remote", "origin", "-m", "start")
        return sweep

    def bump(self, value: str) -> str:
        conf = self.work / "store" / "main.conf"
        conf.write_text(conf.read_text(encoding="utf-8") + f"\nsweep = {value}\n", encoding="utf-8")
        git(self.work, "commit", "-qam", f"sweep {value}")
        return git(self.work, "rev-parse", "HEAD")

    def run(self, *args: str) -> str:
        """Run cfgtool to the end; its duration updates the estimate the kill points are spread over (the
        machine's load changes, and a fixed estimate would put every point before or after the push)."""
        started = time.perf_counter()
        proc = cfgtool(*args, cwd=self.work)
        out, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise AssertionError(f"cfgtool {' '.join(args)}: exit {proc.returncode}\n{out}{err}")
        if args[0] in self.spans:
            self.spans[args[0]] = 0.7 * self.spans[args[0]] + 0.3 * (time.perf_counter() - started)
        return out

    def killed(self, delay: float, *args: str) -> bool:
        """Run cfgtool and SIGKILL it (and its git children) after `delay` seconds; True if it was killed."""
        proc = cfgtool(*args, cwd=self.work)
        try:
            proc.wait(timeout=delay)
            return False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            self.settle()
            return True

    def settle(self) -> None:
        """Wait until the remote's side of the killed run has ended (the stand-in's lock is free)."""
        with (self.bare.parent / "ssh" / "busy").open("a") as busy:
            deadline = time.monotonic() + 60
            while True:
                try:
                    fcntl.flock(busy, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    assert time.monotonic() < deadline, "the remote's side never ended"
                    time.sleep(0.05)

    def check(self, before: dict[str, str]) -> dict[str, str]:
        """The remote's tags, after asserting that none moved and the versions are contiguous, and that the
        clone's index is not locked (a kill must not stop the user's next `git commit`)."""
        assert not (self.work / ".git" / "index.lock").exists(), "the killed run left .git/index.lock behind"
        after = remote_tags(self.bare)
        moved = {ref: oid for ref, oid in before.items() if after.get(ref) != oid}
        assert not moved, f"tags moved or deleted on the remote: {moved}"
        versions = numbers(after, "refs/tags/config/v")
        assert versions == list(range(1, len(versions) + 1)), f"the remote's versions have a gap: {versions}"
        for line in git(self.work, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags").splitlines():
            ref, oid = line.split(" ")
            assert after.get(ref) == oid, f"{ref} exists here but not (or differently) on the remote"
        return after

    def publish_round(self, at: float) -> str:
        """Kill a publish at `at` (a fraction of how long one takes now), publish again; how far the killed
        run got."""
        delay = at * self.spans["publish"]
        head = self.bump(f"p{time.monotonic_ns()}")
        before = remote_tags(self.bare)
        was_killed = self.killed(delay, "publish", "--remote", "origin", "-m", "sweep")
        mid = self.check(before)
        pushed = len(numbers(mid, "refs/tags/config/v")) > len(numbers(before, "refs/tags/config/v"))
        self.run("publish", "--remote", "origin", "-m", "sweep")
        after = self.check(mid)
        versions = numbers(after, "refs/tags/config/v")
        assert len(versions) == len(numbers(before, "refs/tags/config/v")) + 1, "not exactly one new version"
        assert git(self.bare, "rev-parse", f"refs/tags/config/v{versions[-1]}^{{commit}}") == head
        return "finished" if not was_killed else "killed after the push" if pushed else "killed before the push"

    def rollback_round(self, at: float) -> str:
        """Publish a version, kill its rollback at `at` (a fraction of how long one takes now), run the same
        rollback again."""
        self.bump(f"r{time.monotonic_ns()}")
        self.run("publish", "--remote", "origin", "-m", "to roll back")
        delay = at * self.spans["rollback"]
        before = remote_tags(self.bare)
        target = numbers(before, "refs/tags/config/v")[-1]
        good = set(numbers(before, "refs/tags/config/v")) - set(numbers(before, "refs/tags/config/rolledback/v"))
        was_killed = self.killed(delay, "rollback", "-m", f"bad {target}", "--remote", "origin")
        mid = self.check(before)
        marked = target in numbers(mid, "refs/tags/config/rolledback/v")
        if was_killed:
            self.run("rollback", "-m", f"bad {target}", "--remote", "origin")
        after = self.check(mid)
        rolled = set(numbers(after, "refs/tags/config/rolledback/v")) - set(
            numbers(before, "refs/tags/config/rolledback/v")
        )
        assert rolled == {target}, f"rolled back {sorted(rolled)} instead of {target} (good before: {sorted(good)})"
        return "finished" if not was_killed else "killed after the push" if marked else "killed before the push"


def warm_up(sweep: Sweep) -> None:
    """One whole publish and rollback: the first estimates of how long each takes."""
    sweep.bump("timing")
    sweep.spans = {"publish": 0.0, "rollback": 0.0}
    for _ in range(4):  # the estimate weighs each run 0.3: a few runs settle it
        sweep.bump(f"timing{time.monotonic_ns()}")
        sweep.run("publish", "--remote", "origin", "-m", "timing")
    sweep.spans["publish"] /= 1 - 0.7**4
    sweep.run("rollback", "-m", "timing", "--remote", "origin")
    sweep.spans["rollback"] /= 0.3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--publish", type=int, default=200, help="publish runs to kill")
    parser.add_argument("--rollback", type=int, default=100, help="rollback runs to kill")
    parser.add_argument("--seed", type=int, default=15)
    args = parser.parse_args()
    print_machine()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Sweep.create(Path(tmp))
        warm_up(sweep)
        shown = ", ".join(f"one {kind} {span:.2f} s" for kind, span in sweep.spans.items())
        print(f"{shown} (the estimate follows the load); load average {os.getloadavg()[0]:.2f}")
        for kind, runs, round_ in (
            ("publish", args.publish, sweep.publish_round),
            ("rollback", args.rollback, sweep.rollback_round),
        ):
            outcomes: Counter[str] = Counter()
            for i in range(runs):
                # half the points anywhere in the run, half in its last 40% (where the push and the local write
                # are: a uniform spread would spend most kills on the compile)
                at = rng.uniform(0.0, 1.1) if i % 2 else rng.uniform(0.6, 1.1)
                try:
                    outcomes[round_(at)] += 1
                except AssertionError as err:
                    outcomes["FAILED"] += 1
                    print(f"{kind}: {err}")
            shown = ", ".join(f"{n} {what}" for what, n in sorted(outcomes.items()))
            print(f"{kind}: {runs} runs: {shown}")


if __name__ == "__main__":
    main()
