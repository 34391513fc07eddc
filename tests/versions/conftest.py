"""A copy of the embedded store in git with several commits, annotated version tags and a rollback marker,
for the diff and audit tests."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from cfgtool.store.git import git_env
from tests.conftest import CHECKOUT, GitRepo, copy_template

LONG_FILE = "store/tags/retention/LONG/main.conf"
DAYS_60 = 5_184_000_000
DAYS_90 = 7_776_000_000


def git_at(repo: GitRepo, date: str, *args: str) -> str:
    """git with author, committer and tagger dates set to `date`."""
    env = {**git_env(), "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
    proc = subprocess.run(("git", *args), cwd=repo.root, env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def commit_at(repo: GitRepo, date: str, message: str) -> str:
    git_at(repo, date, "add", "-A")
    git_at(repo, date, "commit", "-q", "--allow-empty", "-m", message)
    return git_at(repo, date, "rev-parse", "HEAD")


def tag_at(repo: GitRepo, date: str, name: str, commit: str, message: str) -> None:
    git_at(repo, date, "tag", "-a", name, commit, "-m", message)


@dataclass
class Versioned:
    """The embedded store in git: v1 (as shipped), v2 (LONG retention 90 -> 60 days), then a commit that adds
    /data/tracking/NewEvent and removes /data/tracking/ConnectionInviteEvent, and one that edits
    SearchQueryEvent's description: v3, rolled back."""

    repo: GitRepo
    c1: str
    c2: str
    c3: str
    c4: str

    @property
    def root(self) -> Path:
        return self.repo.root

    def tag(self, date: str, name: str, commit: str, message: str) -> None:
        tag_at(self.repo, date, name, commit, message)


def build_versioned(repo: GitRepo, source: Path) -> Versioned:
    for part in ("store", "schemas", "policies"):
        if (source / part).is_dir():
            shutil.copytree(source / part, repo.root / part, ignore=shutil.ignore_patterns("__pycache__"))
    c1 = commit_at(repo, "2024-01-01T10:00:00+00:00", "The embedded store")
    tag_at(repo, "2024-01-01T11:00:00+00:00", "config/v1", c1, "First release")
    long_file = repo.root / LONG_FILE
    long_file.write_text(long_file.read_text().replace(str(DAYS_90), str(DAYS_60)))
    c2 = commit_at(repo, "2024-02-01T10:00:00+00:00", "Shorter LONG retention")
    tag_at(repo, "2024-02-01T11:00:00+00:00", "config/v2", c2, "Retention review")
    repo.write({"data/tracking/NewEvent/main.conf": "owner = new-team\nkafka.partitions = 4\n"}, under="store/")
    shutil.rmtree(repo.root / "store/data/tracking/ConnectionInviteEvent")
    c3 = commit_at(repo, "2024-03-01T10:00:00+00:00", "Add NewEvent, drop ConnectionInviteEvent")
    search = repo.root / "store/data/tracking/SearchQueryEvent/main.conf"
    search.write_text(search.read_text().replace("A search request", "One search request"))
    c4 = commit_at(repo, "2024-03-02T10:00:00+00:00", "SearchQueryEvent: clearer description")
    tag_at(repo, "2024-03-03T11:00:00+00:00", "config/v3", c4, "March release")
    tag_at(repo, "2024-03-04T11:00:00+00:00", "config/rolledback/v3", c4, "NewEvent broke the consumers")
    return Versioned(repo, c1, c2, c3, c4)


@pytest.fixture
def versioned(repo: GitRepo) -> Versioned:
    """`repo`, replaced by a copy of this process's template of `build_versioned` over the embedded store: its
    commits have fixed dates, so the copy's are the same commits."""
    shutil.rmtree(repo.root)
    copy = copy_template("versioned", lambda root: build_versioned(GitRepo(root), CHECKOUT), repo.root)
    c1, c2, c3, c4 = copy.git("rev-list", "--reverse", "HEAD").split()
    return Versioned(copy, c1, c2, c3, c4)
