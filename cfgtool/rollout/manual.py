"""The rollout commands people run (docs/rollout.md "Commands"): promote, pause, resume and abort one version.

Each writes what the controller writes: a create-only step tag (`promote`, `pause`, `resume`), or the rollback
marker (`abort`, which always wins). Who and why are recorded in it. `--principal` is checked like publish and
rollback check it: `publish` on the store for promote, pause and resume, `rollback` for abort, under the ACL of the
current version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool.access.enforce import require
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.rollout.status import cli_command, rollout_of
from cfgtool.store import git
from cfgtool.store.urls import redact
from cfgtool.versions.messages import check_text
from cfgtool.versions.refs import checked_remote, identity
from cfgtool.versions.rollback import RollbackResult, rollback
from cfgtool.versions.rollout import Action, Rollout, Selection
from cfgtool.versions.rollout_tags import current, record
from cfgtool.versions.tags import History

MOVING = ("rolling", "paused", "baking")  # the states a person may promote, pause or resume


class RolloutRefused(CfgtoolError):
    """The rollout is not in a state where the command applies: done, rolled back, paused twice... (exit 1)."""


@dataclass(frozen=True)
class Recorded:
    """The step tag a command wrote: the version, the action and percent, who, why, and the state it left."""

    version: int
    action: Action
    percent: int
    tag: str
    by: str
    reason: str | None
    state: str
    remote: str | None

    def to_json(self) -> dict[str, Any]:
        """`{"version", "action", "percent", "tag", "by", "reason", "state", "remote"}`."""
        return {
            "version": self.version, "action": self.action, "percent": self.percent, "tag": self.tag, "by": self.by,
            "reason": self.reason, "state": self.state, "remote": self.remote,
        }  # fmt: skip


def promote(
    repo: Path | None, store: str | Path, n: int, *, reason: str | None = None, principal: str | None = None,
    remote: str | None = None,
) -> Recorded:  # fmt: skip
    """Take version N's next step now, gates or not: to the next percent, or `done` from 100%. A paused rollout
    stays paused: the step is the person's, not the controller's."""
    return _act(repo, store, n, "promote", f"promote: {reason or 'by hand'}", principal, remote)


def pause(
    repo: Path | None, store: str | Path, n: int, *, reason: str, principal: str | None = None,
    remote: str | None = None,
) -> Recorded:  # fmt: skip
    """Hold version N's rollout at its step: its cohort keeps reading it, and it grows no more until resumed."""
    if not reason.strip():
        raise UsageError("a pause needs a reason", hint='say why with -m "REASON"; rollout status shows it')
    return _act(repo, store, n, "pause", reason, principal, remote)


def resume(
    repo: Path | None, store: str | Path, n: int, *, reason: str | None = None, principal: str | None = None,
    remote: str | None = None,
) -> Recorded:  # fmt: skip
    """Let a paused rollout grow again, by the controller's rounds."""
    return _act(repo, store, n, "resume", reason, principal, remote)


def abort(
    repo: Path | None, store: str | Path, n: int, *, reason: str, principal: str | None = None,
    remote: str | None = None,
) -> RollbackResult:  # fmt: skip
    """Roll version N back (its rollback marker, reason `abort: ...`): its cohort returns to the stable version, and
    the rollback sticks. Refused when N has no rollout under way (use `cfgtool rollback` for any version)."""
    if not reason.strip():
        raise UsageError("an abort needs a reason", hint='say why with -m "REASON"; it is kept in the rollback marker')
    root, known, chosen = read_tags(repo, store, remote)
    _allowed(root, store, known, n, principal, "rollback")
    rollout = rollout_of(known, chosen, n)
    if rollout.state not in (*MOVING, "waiting"):
        raise _ended(rollout, "abort", store)
    return rollback(
        root, n, reason=f"abort: {reason}", remote=remote, store=store, principal=principal, not_current=True
    )


def read_tags(repo: Path | None, store: str | Path, remote: str | None) -> tuple[Path, History, Selection]:
    """The repository's root, the store's tags (`remote`'s fetched first) and their selection."""
    root = git.locate(repo if repo is not None else Path.cwd()).root
    if remote is not None:
        remote = checked_remote(root, remote)
    return (root, *current(root, store, remote=remote))


def _allowed(root: Path, store: str | Path, known: History, n: int, principal: str | None, operation: str) -> None:
    """AccessDenied unless `principal` may do `operation` on the store, under the current version's ACL (that of
    version N when no version is good; docs/access.md#the-acl). No principal: not checked, as for publish."""
    if principal is not None:
        judge = known.current or known.require(n)
        require(root, store, judge.commit, principal, operation)


def _act(
    repo: Path | None, store: str | Path, n: int, command: str, reason: str | None, principal: str | None,
    remote: str | None,
) -> Recorded:  # fmt: skip
    """Decide the step tag `command` writes from the tags and write it. On a lost race, read the tags again and
    write it once more when it is still the same step; RolloutRefused when the rollout moved meanwhile."""
    check_text(reason, "reason")
    decided: tuple[Action, int] | None = None
    for _ in (1, 2):
        root, known, chosen = read_tags(repo, store, remote)
        if decided is None:
            _allowed(root, store, known, n, principal, "publish")
        rollout = rollout_of(known, chosen, n)
        action, percent = _next(rollout, command, store)
        if decided is not None and decided != (action, percent):
            break  # it moved meanwhile: what was asked for no longer means the same step
        decided = action, percent
        who = principal or str(identity(root))
        tag = record(root, known, chosen, rollout, action, percent, by=who, reason=reason, remote=remote)
        if tag is not None:
            state = "paused" if action == "pause" else "done" if action == "done" else rollout.state
            if action == "resume" or (action == "step" and state != "paused"):
                state = "baking" if percent >= 100 else "rolling"
            return Recorded(n, action, percent, tag, who, reason, state, redact(remote) if remote else None)
    raise RolloutRefused(
        f"the rollout of version {n} moved while this command ran (a controller or another person took a step)",
        hint=f"`{cli_command(f'rollout status {n}', store)}` shows where it is now; run the command again if it still"
        " applies",
    )


def _next(rollout: Rollout, asked: str, store: str | Path) -> tuple[Action, int]:
    """The action and percent of the step tag command `asked` writes now; RolloutRefused when it does not apply."""
    n, state, percent = rollout.version, rollout.state, rollout.percent
    if state not in MOVING:
        raise _ended(rollout, asked, store)
    if asked == "pause":
        if state == "paused":
            raise RolloutRefused(f"version {n} is already paused", hint=cli_command(f"rollout resume {n}", store))
        return "pause", percent
    if asked == "resume":
        if state != "paused":
            hint = cli_command(f"rollout pause {n} -m WHY", store)
            raise RolloutRefused(f"version {n} is not paused: it is {state}", hint=hint)
        return "resume", percent
    if percent >= 100:
        return "done", 100
    return "step", next(p for p in rollout.steps if p > percent)


def _ended(rollout: Rollout, asked: str, store: str | Path) -> RolloutRefused:
    """Why command `asked` does not apply to a rollout that is not under way (its hint names a second store)."""
    n, state = rollout.version, rollout.state
    said = {
        "done": (f"version {n} finished its rollout", f"to withdraw it, {cli_command(f'rollback {n} -m WHY', store)}"),
        "rolled_back": (f"version {n} is rolled back", "a rollback sticks: publish a fixed version"),
        "waiting": (
            f"version {n} waits for the version before it",
            f"{cli_command('rollout status', store)} shows that one",
        ),
        "superseded": (f"version {n} was superseded by a version published without a plan", None),
    }
    message, hint = said.get(state, (f"version {n} is {state}", None))
    return RolloutRefused(f"cannot {asked}: {message}", hint=hint)


__all__ = ["Recorded", "RolloutRefused", "abort", "pause", "promote", "read_tags", "resume"]
