"""Writing the steps of a staged rollout (docs/rollout.md): each is a create-only tag `config/rollout/vN/<seq>`.

Two controllers that race for the same `<seq>` cannot both win: git refuses the second tag, locally or on the
remote. The loser re-reads the tags and decides again, so no step is taken twice. Nothing else coordinates them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cfgtool.errors import UsageError
from cfgtool.versions.messages import check_text, format_message
from cfgtool.versions.refs import (
    RemoteUnavailable,
    create_tag,
    fetch_tags,
    identity,
    make_tag,
    push_tags,
    remote_tags,
    write_tags,
)
from cfgtool.versions.rollout import Action, Rollout, Selection, selection
from cfgtool.versions.tags import History, StoreTags, read_history, scheme_for

_SAID = {"step": "step to {percent}%", "pause": "pause at {percent}%", "resume": "resume at {percent}%",
         "done": "done"}  # fmt: skip


def current(root: Path, store: str | Path = "store", *, remote: str | None = None) -> tuple[History, Selection]:
    """The store's tags (fetched from `remote` first when given) and its version selection."""
    scheme: StoreTags = scheme_for(root, store)
    if remote is not None:
        fetch_tags(root, remote, scheme)
    known = read_history(root, scheme)
    return known, selection(known)


def record(
    root: Path,
    known: History,
    chosen: Selection,
    rollout: Rollout,
    action: Action,
    percent: int,
    *,
    by: str,
    reason: str | None = None,
    evidence: Sequence[Mapping[str, Any]] = (),
    remote: str | None = None,
) -> str | None:
    """Create the next step tag of `rollout` (pushed to `remote` when given) and return its name. None: another
    controller took that step first; re-read the tags and decide again."""
    check_text(reason, "reason")
    if action not in _SAID:
        raise UsageError(f"{action!r} is not a rollout action", hint="use step, pause, resume or done")
    n = rollout.version
    name = known.scheme.rollout_tag(n, chosen.next_seq(n))
    meta: dict[str, Any] = {
        "kind": "rollout",
        "version": n,
        "action": action,
        "percent": percent,
        "by": by,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "reason": reason,
        "evidence": [dict(e) for e in evidence],
        "store": known.scheme.path,
        "name": known.scheme.name,
    }
    text = f"version {n}: {_SAID[action].format(percent=percent)}" + (f"\n\n{reason}" if reason else "")
    message = format_message(text, meta)
    commit = known.tag(n).commit
    if remote is None:
        return name if create_tag(root, name, commit, message, identity(root)) else None
    oid = make_tag(root, name, commit, message, identity(root))
    outcome = push_tags(root, remote, {name: oid})
    if not outcome.ok:
        theirs = remote_tags(root, remote, [name]).get(name)
        if theirs is None:  # not a lost race: the remote refused it or could not be reached
            why = outcome.remote_said or "; ".join(outcome.rejected.values()) or "push failed"
            raise RemoteUnavailable(
                f"could not push {name} to {remote!r}: {why}",
                hint="check that the remote is up and that you may push tags to it; the next round tries again",
            )
        if theirs != oid:
            return None  # another controller took this step first
    write_tags(root, {name: oid})
    return name
