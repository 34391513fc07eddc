"""`rollback`: withdraw bad versions without deleting them (docs/versions.md).

Rolling back version N creates the annotated marker tag `<rollback_tag_prefix>N` (default `config/rolledback/vN`) on
N's commit. Its message says who, when (the tagger date) and why. The version tag stays, so processes already pinned
to N keep reading it; new readers get the highest version without a marker. Markers are written like version tags
(`cfgtool.versions.refs`). The marker objects come first, pushed by object id without force and all at once
(`--atomic`). The local markers follow only once the remote has them. Before the push, a journal in the git directory
records what is being rolled back. A rollback may be killed after its push and run again (with the same reason). It
then finishes that same rollback instead of withdrawing the next version.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool._util.atomic import write_atomic
from cfgtool._version import __version__
from cfgtool.access.enforce import require
from cfgtool.diagnostics import plural
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.store import git
from cfgtool.store.urls import redact
from cfgtool.versions.messages import check_text, format_message
from cfgtool.versions.refs import (
    RemoteError,
    checked_remote,
    clear_stale_locks,
    fetch_tags,
    identity,
    make_tag,
    push_tags,
    remote_tags,
    require_pushed,
    write_tags,
)
from cfgtool.versions.sticky import Watch, still_held
from cfgtool.versions.tags import History, read_history, scheme_for

METADATA_SCHEMA = 1
SHOWN = 50  # values named in a refusal before "... and N more"


class RollbackRefused(CfgtoolError):
    """The rollback would leave no good version, or names a version that is already rolled back (exit 1)."""


class NotCurrent(UsageError):
    """`rollback N` of a good version that is not the current one, without `--not-current` (exit 2). `held` are N's
    values the current version still holds, which the next publish would refuse."""

    def __init__(self, message: str, held: Sequence[Watch], *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.held = tuple(held)

    def to_json(self) -> dict[str, Any]:
        """docs/cli.md's `rollback` object of this refusal, with every value the current version still holds."""
        return {"rolled_back": [], "reason": self.message, "still_held": [w.to_json() for w in self.held]}


@dataclass(frozen=True)
class RollbackResult:
    """The versions rolled back (highest first) or whose rollback was cancelled (`restored`), the current
    version afterwards, and the markers created."""

    rolled_back: tuple[int, ...]
    current: int
    tags: tuple[str, ...]
    reason: str
    by: str
    remote: str | None = None
    restored: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """docs/versions.md's `rollback` object plus the marker tags, the reason, who and what was restored."""
        return {
            "rolled_back": list(self.rolled_back),
            "restored": list(self.restored),
            "current": self.current,
            "tags": list(self.tags),
            "reason": self.reason,
            "by": self.by,
            "remote": self.remote,
        }


@dataclass(frozen=True)
class _Ask:
    """What one run asks for: roll back `version`, every good version above `to`, or the current one. Or (`cancel`)
    cancel the rollback of `version`."""

    version: int | None
    to: int | None
    reason: str
    cancel: bool = False
    not_current: bool = False

    @property
    def what(self) -> str:
        return "cancelling a rollback" if self.cancel else "a rollback"


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
    not_current: bool = False,
) -> RollbackResult:
    """Roll back `version`, or every good version above `to`, or (neither given) the current version.

    Refuses (RollbackRefused) when no good version would remain, or nothing is above `to`. Refuses too when a named
    version is already rolled back, or was and its rollback was cancelled: marker names are never reused.
    VersionNotFound when a named version does not exist. NotCurrent when `version` is a good version below the
    current one and `not_current` is not set. With `remote`, its tags are fetched first and the markers pushed
    without force.
    """
    if version is not None and to is not None:
        raise UsageError("give either a version to roll back or --to N, not both")
    return _run(repo, _Ask(version, to, reason, not_current=not_current), remote, by, store, principal)


def cancel(
    repo: Path | None,
    version: int,
    *,
    reason: str,
    remote: str | None = None,
    by: str | None = None,
    store: str | Path = "store",
    principal: str | None = None,
) -> RollbackResult:
    """Cancel the rollback of `version`, one made by mistake. The create-only restored marker makes it good again and
    ends its watch. No tag is deleted. The same permission, journal and remote handling as `rollback`.
    RollbackRefused when the version is not rolled back or its rollback is already cancelled."""
    return _run(repo, _Ask(version, None, reason, cancel=True), remote, by, store, principal)


def _run(
    repo: Path | None, ask: _Ask, remote: str | None, by: str | None, store: str | Path, principal: str | None
) -> RollbackResult:
    """Write the markers `ask` needs: checked, journaled, pushed without force, then written here."""
    if not ask.reason.strip():
        raise UsageError(f"{ask.what} needs a reason", hint='say why with -m "REASON"; it is shown in `versions`')
    root = git.locate(repo if repo is not None else Path.cwd()).root
    check_text(ask.reason, "reason")
    if remote is not None:
        remote = checked_remote(root, remote)
    scheme = scheme_for(root, store)
    clear_stale_locks(root, scheme)
    journal = _journal(root)
    pending = _pending(journal)
    if remote is not None:
        fetch_tags(root, remote, scheme)
        if pending is not None and not pending.get("done"):
            return _finish(root, remote, journal, pending, ask)
    known = read_history(root, scheme)
    if remote is not None:
        require_pushed(root, remote, known.scheme)
    if pending is not None and _same_again(pending, known, ask):
        return _result(pending)  # the previous run did it all but was killed before it could say so
    targets = _restore_targets(known, ask) if ask.cancel else _targets(known, ask.version, ask.to)
    current = known.current
    judge = current or known.get(targets[0])  # with no current version, the version that becomes current
    if principal is not None and judge is not None:  # the current version's ACL decides (docs/access.md#the-acl)
        require(root, store, judge.commit, principal, "rollback")
    if ask.cancel:
        after = max(targets[0], current.version if current is not None else 0)
    else:
        after = _after_rollback(root, store, known, ask, targets)
    tagger = identity(root)
    who = by or str(tagger)
    markers = {name: make_tag(root, name, commit, text, tagger) for name, commit, text in
               _markers(known, ask, targets, who)}  # fmt: skip
    result = RollbackResult(
        rolled_back=() if ask.cancel else tuple(targets),
        restored=tuple(targets) if ask.cancel else (),
        current=after,
        tags=tuple(markers),
        reason=ask.reason,
        by=who,
        remote=redact(remote) if remote is not None else None,  # shown and journaled: no URL's credentials
    )
    if remote is not None:
        journal.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(journal, json.dumps({"result": result.to_json(), "markers": markers}))
        _push(root, remote, markers, journal, ask)
    if not write_tags(root, markers):
        done = "had its rollback cancelled" if ask.cancel else "was rolled back"
        raise RollbackRefused(f"version {targets[0]} {done} meanwhile by another process in this repository")
    if remote is not None:
        write_atomic(journal, json.dumps({"result": result.to_json(), "markers": markers, "done": True}))
    return result


def _after_rollback(root: Path, store: str | Path, known: History, ask: _Ask, targets: list[int]) -> int:
    """The current version once `targets` are rolled back. RollbackRefused when none would be left. NotCurrent for a
    good version below the current one without `not_current`."""
    left = [n for n in known.numbers if not known.is_rolled_back(n) and n not in targets]
    if not left:
        shown = ", ".join(str(n) for n in targets)
        raise RollbackRefused(
            f"rolling back version {shown} would leave no good version",
            hint="publish a fixed version first (cfgtool publish, or cfgtool publish --ref <an older version's tag>"
            " to restore one), then roll this one back",
        )
    current = known.current_number
    if ask.version is not None and current is not None and ask.version != current and not ask.not_current:
        _refuse_not_current(root, store, known, ask.version, current)
    return max(left)


def _markers(known: History, ask: _Ask, targets: list[int], who: str) -> list[tuple[str, str, str]]:
    """(tag name, commit, message) of each marker to write: a rollback marker per target, or (cancel) the
    restored marker."""
    names = known.scheme
    earlier = len(known.rollback_markers) + len(known.restorations)
    out = []
    for n in targets:
        meta = {
            "kind": "restore" if ask.cancel else "rollback",
            "schema": METADATA_SCHEMA,
            "version": n,
            "tag": names.version_tag(n),
            "store": names.path,
            "name": names.name,
            "commit": known.tag(n).commit,
            "by": who,
            "reason": ask.reason,
            "after": known.highest,  # versions above it were published after this marker (`sticky`, `readers`)
            "markers": earlier,  # the markers written before it (`readers`: their order)
            "cfgtool_version": __version__,
        }
        if ask.cancel:
            meta["rollback"] = names.rollback_tag(n)
            name, text = names.restored_tag(n), f"cancel the rollback of {names.version_tag(n)}: {ask.reason}"
        else:
            name, text = names.rollback_tag(n), f"roll back {names.version_tag(n)}: {ask.reason}"
        out.append((name, known.tag(n).commit, format_message(text, meta)))
    return out


def _restore_targets(known: History, ask: _Ask) -> list[int]:
    """[N] for cancelling N's rollback; RollbackRefused when N is not rolled back (now)."""
    assert ask.version is not None
    n = ask.version
    found = known.require(n)
    if found.restored is not None:
        rs = found.restored
        raise RollbackRefused(
            f"the rollback of version {n} is already cancelled (by {rs.by} on {rs.date:%Y-%m-%d %H:%M}: {rs.reason})",
            hint="`cfgtool versions` shows every version's status",
        )
    if found.rolled_back is None:
        raise RollbackRefused(
            f"version {n} is not rolled back: there is no rollback to cancel",
            hint="`cfgtool versions` shows which versions are rolled back",
        )
    return [n]


def _refuse_not_current(root: Path, store: str | Path, known: History, n: int, current: int) -> None:
    """NotCurrent: rolling back N, which is not current, withdraws the changes N made. The current version may still
    hold some of them, and the next publish would refuse those. Say which, and ask for the flag."""
    held = still_held(root, store, known, n)
    lines = "".join(f"\n  {w.value_line()}" for w in held[:SHOWN])
    more = f"\n  ... and {len(held) - SHOWN} more (cfgtool diff shows them all)" if len(held) > SHOWN else ""
    if held:
        what = (
            f"the current version {current} still holds {plural(len(held), 'value')} version {n} introduced,"
            f" which the next publish will refuse until they are reverted:{lines}{more}\n"
        )
    else:
        what = f"the current version {current} holds none of the values version {n} introduced. "
    raise NotCurrent(
        f"version {n} is not the current version ({current} is): rolling it back withdraws the changes it"
        f" made; {what}Nothing was rolled back",
        held,
        hint=f"to roll back version {n} anyway, run the command again with --not-current; to roll back the"
        " current version, leave out the number",
    )


def _same_again(pending: dict[str, Any], known: History, ask: _Ask) -> bool:
    """Whether this run repeats the journaled, finished run: the same kind, reason and versions. And nothing was
    published, rolled back or restored since: the current version is still the one it left."""
    r = pending["result"]
    current = known.current
    done = [int(n) for n in r.get("restored" if ask.cancel else "rolled_back", ())]
    asked = [ask.version] if ask.version is not None else None
    return (
        r.get("reason") == ask.reason
        and ask.to is None
        and bool(done)
        and asked in (None, done)
        and current is not None
        and current.version == r.get("current")
        and all(known.is_rolled_back(n) != ask.cancel for n in done)
    )


def unfinished(repo: Path) -> RollbackResult | None:
    """The rollback an earlier run journaled and did not finish, killed perhaps after its push (None: none). Asking
    for it again, with the same reason, finishes it; any other rollback is refused until then."""
    pending = _pending(_journal(git.locate(repo).root))
    return _result(pending) if pending is not None and not pending.get("done") else None


def _journal(root: Path) -> Path:
    return git.git_dir(root) / "cfgtool" / "rollback-journal.json"


def _result(pending: dict[str, Any]) -> RollbackResult:
    r = pending["result"]
    return RollbackResult(
        rolled_back=tuple(int(n) for n in r["rolled_back"]), current=int(r["current"]), tags=tuple(r["tags"]),
        reason=str(r["reason"]), by=str(r["by"]), remote=r.get("remote"),
        restored=tuple(int(n) for n in r.get("restored", ())),
    )  # fmt: skip


def _pending(journal: Path) -> dict[str, Any] | None:
    """The rollback an earlier run journaled and did not finish (None: none, or an unreadable journal)."""
    try:
        data = json.loads(journal.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get("result"), dict) and isinstance(data.get("markers"), dict):
            return data
    except (OSError, ValueError):
        pass
    return None


def _finish(root: Path, remote: str, journal: Path, pending: dict[str, Any], ask: _Ask) -> RollbackResult:
    """Finish the journaled run when this run asks for the same one; else say how to finish it."""
    r = pending["result"]
    markers = {str(k): str(v) for k, v in pending["markers"].items()}
    restoring = bool(r.get("restored"))
    versions = [int(n) for n in r["restored" if restoring else "rolled_back"]]
    version = ask.version
    if restoring != ask.cancel or r["reason"] != ask.reason or (version is not None and version not in versions):
        shown = ", ".join(str(n) for n in versions)
        what = "cancelling of the rollback" if restoring else "rollback"
        again = f"--cancel {versions[0]}" if restoring else str(versions[0])
        raise RollbackRefused(
            f"an interrupted {what} of version {shown} ({r['reason']!r}) is unfinished in this repository",
            hint=f"finish it first: cfgtool rollback {again} -m {json.dumps(r['reason'])} --remote {remote}"
            f" (or delete {journal} if it must not happen)",
        )
    theirs = remote_tags(root, remote, list(markers))
    missing = {name: oid for name, oid in markers.items() if name not in theirs}
    if missing:
        _push(root, remote, missing, journal, ask)
    write_tags(root, {name: oid for name, oid in markers.items() if theirs.get(name, oid) == oid})
    write_atomic(journal, json.dumps({**pending, "done": True}))
    return _result(pending)


def _targets(known: History, version: int | None, to: int | None) -> list[int]:
    """The versions to mark, highest first."""
    targets = _chosen(known, version, to)
    again = [n for n in targets if n in known.restorations]
    if again:
        n = again[0]
        rs = known.require(n).restored
        assert rs is not None
        raise RollbackRefused(
            f"version {n} was rolled back once already, and that rollback was cancelled (by {rs.by} on"
            f" {rs.date:%Y-%m-%d %H:%M}: {rs.reason}); its marker {rs.rolled_back.tag} exists and tags are never"
            " moved or reused, so it cannot be rolled back again",
            hint="publish a version that reverts its changes (or `cfgtool publish --ref <the good version's tag>`"
            " to publish the good version's content again)",
        )
    return targets


def _chosen(known: History, version: int | None, to: int | None) -> list[int]:
    """The versions a rollback names, highest first."""
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


def _push(root: Path, remote: str, markers: dict[str, str], journal: Path, ask: _Ask) -> None:
    """Push the marker objects. RollbackRefused when someone else wrote one meanwhile. Else RemoteError; the journal
    is dropped then, since nothing was done."""
    outcome = push_tags(root, remote, markers)
    if outcome.ok:
        return
    theirs = remote_tags(root, remote, list(markers))
    if all(theirs.get(name) == oid for name, oid in markers.items()):
        return  # the push landed although its report did not say so
    if outcome.stalled is not None:  # it may land yet: the journal stays, and the next run finishes it
        raise outcome.stalled
    journal.unlink(missing_ok=True)
    taken = [name for name, oid in markers.items() if name in theirs and theirs[name] != oid]
    if taken:
        raise RollbackRefused(
            f"{', '.join(taken)} already exists on {remote!r}: another run got there first; nothing was pushed",
            hint="`cfgtool versions` (after a fetch) shows who wrote it and why",
        )
    status = "; ".join(f"{name}: {why}" for name, why in outcome.rejected.items()) or "rejected"
    said = f"; the remote said: {outcome.remote_said}" if outcome.remote_said else ""
    raise RemoteError(
        f"the remote {remote!r} refused the markers ({status}){said}. Nothing was"
        f" {'restored' if ask.cancel else 'rolled back'}",
        hint="ask the remote's administrators whether this repository accepts tag pushes from you",
    )
