"""What a reader means by a version name: `current` is the version it reads, `previous` the good one below.

The version a reader reads is the newest good version, except while a version rolls out under a plan
(docs/rollout.md): then it is the candidate for an instance in the candidate's cohort, and the stable version for
every other reader, including one without an instance id. This module is the one place that answers it outside the
server, from the tags alone: the CLI's `--version current`, `diff`, the git-backed `ConfigClient` and the Spark loader
all ask here.

Writers keep counting from the newest good version (`History.current_number`): `publish` compares with it and
restores from it (`publish --ref previous`), and `rollback` withdraws it. A rollout changes who reads a version, not
which version is the newest.
"""

from __future__ import annotations

from pathlib import Path

from cfgtool.store import git
from cfgtool.store.sources import Source
from cfgtool.versions.names import CURRENT
from cfgtool.versions.rollout import selection
from cfgtool.versions.tags import History, Version, history


def reading(known: History, instance: str | None = None) -> int | None:
    """The version the reader with id `instance` reads as `current` (None: no version is good)."""
    known.tags  # noqa: B018 -- every version's metadata in one decode: the selection reads them one by one
    return selection(known).version_for(instance)


def named(known: History, version: int | str, instance: str | None = None) -> Version:
    """Version N (rolled back or not), or the one `current` / `previous` names for the reader with id `instance`.
    VersionNotFound saying why when there is none."""
    if isinstance(version, int):
        return known.require(version)
    return known.named(version, reading(known, instance))


def current_version(repo: Path | None = None, store: str | Path = "store") -> Version | None:
    """The version a reader without an instance id reads as `current`, None when no version is good."""
    known = history(repo, store)
    return None if reading(known) is None else named(known, CURRENT)


def resolve_version(repo: Path | None, version: int | str, store: str | Path = "store") -> str:
    """The commit of version N (rolled back or not) or of the one `current` / `previous` names for a reader without
    an instance id. VersionNotFound when there is no such version."""
    return named(history(repo, store), version).commit


def unlike_current(source: Source) -> tuple[Version, bool] | None:
    """(the current version, whether the store has uncommitted changes), when a read of the working tree `source` may
    answer otherwise than the current version. That happens with uncommitted changes, or a store whose tree at HEAD
    is not the current version's. None when the two agree, or nothing is published; then nothing else is asked of
    git."""
    current = current_version(source.repo_root, source.store)
    if current is None:
        return None
    dirty = source.dirty
    if dirty or source.commit is None:
        return current, True
    head = _store_tree(source.repo_root, source.commit, source.store)
    return (
        None
        if head is not None and head == _store_tree(source.repo_root, current.commit, source.store)
        else (current, False)
    )


def _store_tree(root: Path, commit: str, store: str) -> str | None:
    """The id of the store directory's tree at `commit` (the commit's whole tree for a store at the root)."""
    proc = git.run_git(root, "rev-parse", "--verify", "--quiet", f"{commit}:{store}", check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None
