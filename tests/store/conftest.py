"""Real git repositories for store tests: `repo` is an empty repository; `store_repo` holds a store."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from cfgtool.store.git import git_env
from cfgtool.store.nodes import Store, discover
from cfgtool.store.sources import GitSource, WorkTreeSource


class GitRepo:
    """A real repository in a temporary directory, with helpers to write files and commit them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Test")
        self.git("config", "user.email", "test@example.com")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        proc = subprocess.run(("git", *args), cwd=self.root, env=git_env(), capture_output=True, text=True, check=True)
        return proc.stdout.strip()

    def write(self, files: Mapping[str, str | bytes | None], under: str = "") -> None:
        """Write (or with None, delete) files; `under` prefixes every path (e.g. "store/")."""
        for rel, content in files.items():
            path = self.root / under / rel
            if content is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def store_repo(repo: GitRepo) -> GitRepo:
    """A repository whose `store/` has an empty `_CONFIG_STORE` and nothing else yet."""
    repo.write({"store/_CONFIG_STORE": ""})
    return repo


@pytest.fixture
def make_store(store_repo: GitRepo) -> Callable[..., Store]:
    """Write store files (paths relative to `store/`, `_CONFIG_STORE` optional) and discover the store.

    With `commit=True` the files are committed and read from HEAD; otherwise from the working tree.
    """

    def make(files: Mapping[str, str | bytes | None], commit: bool = False) -> Store:
        store_repo.write(files, under="store/")
        if commit:
            store_repo.commit()
            return discover(GitSource(store_repo.root, "HEAD"))
        return discover(WorkTreeSource(store_repo.root))

    return make
