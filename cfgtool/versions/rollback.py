"""`rollback`: withdraw bad versions without deleting them (DESIGN 9).

Rolling back version N creates the annotated marker tag `<rollback_tag_prefix>N` (default
`config/rolledback/vN`) on N's commit, with who, when (the tagger date) and why in its message. The version
tag stays, so processes already pinned to N keep reading it; new readers get the highest version without a
marker. Markers are pushed like version tags: without force, all at once (`--atomic`), and a marker that the
remote refuses is removed locally again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool._version import __version__
from cfgtool.access.enforce import require
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.store import git
from cfgtool.versions.messages import format_message
from cfgtool.versions.refs import (
    RemoteError,
    create_tag,
    drop_local_tag,
    fetch_tags,
    identity,
    push_tags,
    remote_tags,
)
from cfgtool.versions.tags import History, read_history, scheme_for

METADATA_SCHEMA = 1


class RollbackRefused(CfgtoolError):
    """The rollback would leave no good version, or names a version that is already rolled back (exit 1)."""


@dataclass(frozen=True)
class RollbackResult:
    """The versions rolled back (highest first), the current version afterwards, and the markers created."""

    rolled_back: tuple[int, ...]
    current: int
    tags: tuple[str, ...]
    reason: str
    by: str
    remote: str | None = None

    def to_json(self) -> dict[str, Any]:
        """DESIGN 9's `rollback` object plus the marker tags, the reason and who."""
        return {
            "rolled_back": list(self.rolled_back),
            "current": self.current,
            "tags": list(self.tags),
            "reason": self.reason,
            "by": self.by,
            "remote": self.remote,
        }


def rollback(
    repo: Path | None = None,
    version: int | None = None,
    *,
    to: int | None = None,
    reason: str,
    remote: str | None = None,
    by: str | None = None,
    store: str | Path = "store",
    principal: str | None = None,
) -> RollbackResult:
    """Roll back `version`, or every good version above `to`, or (neither given) the current version.

    Refuses (RollbackRefused) when no good version would remain, when a named version is already rolled back
    or nothing is above `to`; VersionNotFound when a named version does not exist. With `remote`, its tags are
    fetched first and the markers pushed without force.
    """
    if version is not None and to is not None:
        raise UsageError("give either a version to roll back or --to N, not both")
    if not reason.strip():
        raise UsageError("a rollback needs a reason", hint='say why with -m "REASON"; it is shown in `versions`')
    root = git.locate(repo if repo is not None else Path.cwd()).root
    scheme = scheme_for(root, store)
    if remote is not None:
        fetch_tags(root, remote, scheme)
    known = read_history(root, scheme)
    targets = _targets(known, version, to)
    current = known.current
    if principal is not None and current is not None:  # the current version's ACL decides (DESIGN 13)
        require(root, store, current.commit, principal, "rollback")
    left = [n for n in known.numbers if not known.is_rolled_back(n) and n not in targets]
    if not left:
        shown = ", ".join(str(n) for n in targets)
        raise RollbackRefused(
            f"rolling back version {shown} would leave no good version",
            hint="publish a fixed version first (cfgtool publish, or cfgtool publish --ref <an older version's tag>"
            " to restore one), then roll this one back",
        )
    tagger = identity(root)
    who = by or str(tagger)
    created: list[tuple[str, str]] = []
    try:
        for n in targets:
            name = scheme.rollback_tag(n)
            meta = {
                "kind": "rollback",
                "schema": METADATA_SCHEMA,
                "version": n,
                "tag": scheme.version_tag(n),
                "commit": known.tag(n).commit,
                "by": who,
                "reason": reason,
                "cfgtool_version": __version__,
            }
            text = f"roll back {scheme.version_tag(n)}: {reason}"
            oid = create_tag(root, name, known.tag(n).commit, format_message(text, meta), tagger)
            if not oid:
                raise RollbackRefused(f"version {n} was rolled back meanwhile by another process ({name} exists)")
            created.append((name, oid))
        if remote is not None:
            _push(root, remote, created)
    except BaseException:
        for name, oid in created:
            drop_local_tag(root, name, oid)
        raise
    return RollbackResult(
        rolled_back=tuple(targets),
        current=max(left),
        tags=tuple(name for name, _ in created),
        reason=reason,
        by=who,
        remote=remote,
    )


def _targets(known: History, version: int | None, to: int | None) -> list[int]:
    """The versions to mark, highest first."""
    if version is not None:
        found = known.require(version)
        if found.rolled_back is not None:
            rb = found.rolled_back
            raise RollbackRefused(
                f"version {version} is already rolled back (by {rb.by} on {rb.date:%Y-%m-%d %H:%M}: {rb.reason})",
                hint="`cfgtool versions` shows every version's status",
            )
        return [version]
    if to is not None:
        found = known.require(to)
        if found.rolled_back is not None:
            raise RollbackRefused(
                f"--to {to}: version {to} is rolled back itself, so it would not become current",
                hint="name a good version (`cfgtool versions` shows which are good)",
            )
        above = [n for n in reversed(known.numbers) if n > to and not known.is_rolled_back(n)]
        if not above:
            raise RollbackRefused(f"--to {to}: no good version above {to}; version {to} already is current")
        return above
    current = known.current
    if current is None:
        raise RollbackRefused(
            f"there is no good version to roll back ({known.describe_range()})",
            hint="`cfgtool versions --all` shows every version",
        )
    return [current.version]


def _push(root: Path, remote: str, created: list[tuple[str, str]]) -> None:
    """Push the markers; RollbackRefused when someone else rolled one back meanwhile, else RemoteError."""
    names = [name for name, _ in created]
    outcome = push_tags(root, remote, names)
    if outcome.ok:
        return
    theirs = remote_tags(root, remote, names)
    if all(theirs.get(name) == oid for name, oid in created):
        return  # the push landed although its report did not say so
    taken = [name for name, oid in created if name in theirs and theirs[name] != oid]
    if taken:
        raise RollbackRefused(
            f"{', '.join(taken)} already exists on {remote!r}: another rollback got there first; nothing was pushed",
            hint="`cfgtool versions` (after a fetch) shows who rolled it back and why",
        )
    status = "; ".join(f"{name}: {why}" for name, why in outcome.rejected.items()) or "rejected"
    said = f"; the remote said: {outcome.remote_said}" if outcome.remote_said else ""
    raise RemoteError(
        f"the remote {remote!r} refused the rollback markers ({status}){said}. Nothing was rolled back and the"
        " local markers were removed",
        hint="ask the remote's administrators whether this repository accepts tag pushes from you",
    )
