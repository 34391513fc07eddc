"""Helpers of the version tests: a bare git remote that remembers every tag it has shown (so a test can assert
that none was moved or deleted), and a commit that changes the store."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from cfgtool.store.git import git_env

if TYPE_CHECKING:
    from tests.conftest import GitRepo


class RemoteWatch:
    """A bare remote; `check()` asserts that every tag seen so far is still there with the same target."""

    def __init__(self, bare: Path) -> None:
        self.bare = bare
        self.seen: dict[str, str] = {}

    def check(self) -> dict[str, str]:
        """Every tag ref on the remote (peeled `^{}` entries included) -> object id, after the check."""
        out = subprocess.run(
            ["git", "ls-remote", "--tags", str(self.bare)], capture_output=True, text=True, check=True, env=git_env()
        ).stdout
        now = {ref: oid for oid, _, ref in (line.partition("\t") for line in out.splitlines())}
        for ref, oid in self.seen.items():
            assert now.get(ref) == oid, f"{ref} was moved or deleted on the remote"
        self.seen = now
        return now

    def tags(self) -> list[str]:
        """The remote's tag names, sorted, after the check."""
        return sorted(r.removeprefix("refs/tags/") for r in self.check() if not r.endswith("^{}"))

    def add_hook(self, script: str) -> None:
        """Install a pre-receive hook (a /bin/sh script) on the remote."""
        hook = self.bare / "hooks" / "pre-receive"
        hook.write_text("#!/bin/sh\n" + script, encoding="utf-8")
        hook.chmod(0o755)


def add_origin(repo: GitRepo, bare: Path) -> RemoteWatch:
    """Create a bare repository at `bare`, add it to `repo` as `origin` and push main; watch it."""
    repo.git("init", "-q", "--bare", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main")
    return RemoteWatch(bare)


def bump(repo: GitRepo, value: str) -> str:
    """Commit a change to the store's root config; returns the commit."""
    path = repo.root / "store" / "main.conf"
    path.write_text(path.read_text(encoding="utf-8") + f"\nbump = {value}\n", encoding="utf-8")
    return repo.commit(f"bump {value}")
