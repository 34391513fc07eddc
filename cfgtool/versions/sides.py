"""The two sides of a diff: what `cfgtool diff A B` names by A and B, resolved to a commit (or the working tree).

A side spec is one of:

- `worktree`: the working tree as it is on disk (tracked and untracked files git would commit). A branch
  or tag literally called `worktree` is still reachable as `refs/heads/worktree` / `refs/tags/worktree`.
- a version: `config/v5` (the version tag itself, with the store's `version_tag_prefix`), or the short forms
  `v5` and `5`. A short form names version N when that version exists; when it does not, it is read as a
  git ref if one has that name. When both a version N and a *different* commit answer to the short form,
  that is ambiguous and refused: write `config/v5`, or the ref's full name (`refs/tags/v5`).
- `current` (the version a reader without an instance id reads: `versions.current`) or `previous` (the good
  version below it); a branch of that name is reachable as `refs/heads/current`.
- anything else git can resolve to a commit: a branch, a tag, a sha, `HEAD~3`, `origin/main`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool.errors import SourceError, UsageError
from cfgtool.store import git
from cfgtool.versions.current import named
from cfgtool.versions.names import VERSION_NAMES, WORKTREE, version_number
from cfgtool.versions.tags import History, TagScheme, read_history, scheme_for


@dataclass(frozen=True)
class Side:
    """One side of a diff: what was named (`spec`), the ref read (None: the working tree) and its commit. Also the
    version it names (None unless named as a version). Once compiled, also whether the working tree differed from
    HEAD and how many compile errors it had."""

    spec: str
    ref: str | None
    commit: str | None
    version: int | None = None
    dirty: bool = False
    errors: int = 0

    @property
    def worktree(self) -> bool:
        return self.ref is None

    def label(self) -> str:
        """For people: `v5 (config/v5, 1a2b3c4)`, `main (2b3c4d5)`, `worktree (HEAD 1a2b3c4, modified)`."""
        short = (self.commit or "")[:7] or "no commit"
        if self.worktree:
            return f"worktree (HEAD {short}{', modified' if self.dirty else ''})"
        if self.version is not None:
            return f"v{self.version} ({self.ref}, {short})"
        return f"{self.spec} ({short})"

    def to_json(self) -> dict[str, Any]:
        return {
            "ref": self.ref,
            "commit": self.commit,
            "version": self.version,
            "spec": self.spec,
            "worktree": self.worktree,
            "dirty": self.dirty,
            "errors": self.errors,
        }


def resolve_side(root: Path, spec: str, store: str | Path = "store") -> Side:
    """What a side spec names (module doc); VersionNotFound, UnknownRefError or UsageError (ambiguous)."""
    if spec == WORKTREE:
        return Side(spec, None, git.resolve_commit(root, "HEAD"))
    if not spec or spec.startswith("-"):
        raise UsageError(
            f"{spec!r} is not a version, ref or `{WORKTREE}`", hint="name a version (v5), a ref or worktree"
        )
    if spec in VERSION_NAMES:
        version = named(read_history(root, scheme_for(root, store)), spec)
        return Side(spec, version.tag, version.commit, version.version)
    number, explicit, history = _named_version(root, spec, store)
    if number is not None and history is not None:
        found = history.get(number)
        as_ref = None if explicit else git.resolve_commit(root, spec)
        if found is None:
            if as_ref is not None:
                return Side(spec, spec, as_ref)
            history.require(number)  # raises VersionNotFound with the versions that exist
        assert found is not None
        if as_ref is not None and as_ref != found.commit:
            raise UsageError(
                f"{spec!r} is ambiguous: it names version {number} (commit {found.commit[:7]}) and a git ref"
                f" (commit {as_ref[:7]})",
                hint=f"write {found.tag} for the version, or the ref's full name (e.g. refs/tags/{spec})",
            )
        return Side(spec, found.tag, found.commit, number)
    commit = git.resolve_commit(root, spec)
    if commit is None:
        raise git.UnknownRefError(
            f"{spec!r} is not a version, a git ref or `{WORKTREE}` in {root}",
            hint="name a version (config/v5, v5 or 5), a branch, tag or commit, or `worktree`",
        )
    return Side(spec, spec, commit)


def _named_version(root: Path, spec: str, store: str | Path) -> tuple[int | None, bool, History | None]:
    """(N, named by its full tag, the store's versions) when `spec` looks like a version, else (None, False,
    None)."""
    if not spec[-1].isdigit():
        return None, False, None
    try:
        history = read_history(root, scheme_for(root, store))
    except SourceError:
        history = read_history(root, TagScheme())
    prefix = history.scheme.version_prefix
    rest = spec.removeprefix("refs/tags/")
    number = version_number(rest[len(prefix) :]) if rest.startswith(prefix) else None
    if number is not None:
        return number, True, history
    number = version_number(spec.removeprefix("v"))
    return (number, False, history) if number is not None else (None, False, None)
