"""`cfgtool publish`, `rollback` and `versions` (docs/versions.md): one library call each, then rendering."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cfgtool.cli.completion import complete_refs, complete_version_numbers
from cfgtool.cli.context import CliContext
from cfgtool.cli.options import ListAll, version_number_arg
from cfgtool.diagnostics import TEXT_CAUSES, render_text, summary_line
from cfgtool.versions.names import DEFAULT_SHOWN

if TYPE_CHECKING:  # the commands import them: building the CLI must not pay for the compiler
    from cfgtool.versions import PublishRefused, PublishResult, RollbackResult, Version


class OutputFormat(StrEnum):
    """How the version commands print their result."""

    TEXT = "text"
    JSON = "json"


Fmt = Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format: text for people, json for scripts.")]
Remote = Annotated[
    str | None,
    typer.Option(
        "--remote",
        metavar="NAME",
        help="Fetch this git remote's version tags first, and push the tags this command creates there"
        " (never with force).",
        show_default=False,
    ),
]


PublishRef = Annotated[
    str | None,
    typer.Option(
        "--ref",
        metavar="REF",
        help="The branch, tag or commit to publish (committed state only). Default: HEAD, refused while the"
        " store has uncommitted changes.",
        show_default=False,
        autocompletion=complete_refs,
    ),
]

PublishMessage = Annotated[
    str | None,
    typer.Option(
        "--message", "-m", metavar="MSG", help="Why this version exists (kept in the tag).", show_default=False
    ),
]

PublishDryRun = Annotated[
    bool, typer.Option("--dry-run", help="Run every check and say what would be published; create nothing.")
]

PublishPrincipal = Annotated[
    str | None,
    typer.Option(
        "--principal",
        metavar="NAME",
        help="Who publishes: recorded in the tag next to your git identity, checked against the current"
        " version's ACL, and seen by the policies (default: your git identity, not checked); CI passes the"
        " pusher's login.",
        show_default=False,
    ),
]

PublishAllowRolledBack = Annotated[
    bool,
    typer.Option(
        "--allow-rolled-back",
        help="Publish even when REF still holds values a rolled-back version introduced (on purpose; the"
        " tag records it).",
    ),
]

PublishAllAtOnce = Annotated[
    bool,
    typer.Option(
        "--all-at-once",
        help="Skip the store's rollout plan for this version: every reader gets it at once (the tag records it).",
    ),
]


def publish_command(
    ctx: typer.Context,
    ref: PublishRef = None,
    remote: Remote = None,
    message: PublishMessage = None,
    dry_run: PublishDryRun = False,
    principal: PublishPrincipal = None,
    allow_rolled_back: PublishAllowRolledBack = False,
    all_at_once: PublishAllAtOnce = False,
    fmt: Fmt = OutputFormat.TEXT,
    every: ListAll = False,
) -> None:
    """Compile and validate REF and publish it as the next version (tag config/vN).

    Refuses when REF has compile or validation errors. Publishes nothing when
    the snapshot is identical to the current version's. With --remote, fetches
    that remote's version tags first and pushes the new tag without force. If
    another publisher took the number meanwhile, it recomputes and retries.

    Restoring an old version is publishing it again: a new version on its commit.

    With a rollout plan in the store's settings, the new version reaches the
    instances step by step (cfgtool rollout status N follows it). A restore
    skips the plan, and so does --all-at-once.

    Rollbacks stick: refuses when REF still holds a value that a rolled-back
    version introduced. Such a value differs between it and the good version
    below it. Each one is listed: key, path, the rolled-back and the good
    value, the version and why. A later, different change to that value is
    fine. The watch on it ends once a version published after the rollback
    holds another value there. Revert the change on the branch, or pass
    --allow-rolled-back to publish the values on purpose (the tag records it).

    Without --ref, publishes HEAD and refuses while the store has uncommitted
    changes, which would not be in the version. Commit them, or pass --ref.

    Exit status: 0 published (or nothing to publish, or a dry run), 1 refused
    (config errors, rolled-back values, uncommitted store changes, or the remote
    rejected the tag), 2 usage or environment error.

    Examples:
      cfgtool publish -m "raise retention of tracking topics"
      cfgtool publish --remote origin --ref origin/main
      cfgtool publish --dry-run --format json
      cfgtool publish --ref config/v5 -m "restore v5" --remote origin
    """
    cli: CliContext = ctx.obj
    from cfgtool.versions import PublishRefused, publish
    from cfgtool.versions.publish import RolledBackContent

    try:
        result = publish(
            cli.repo, cli.store, ref, remote=remote, message=message, dry_run=dry_run, principal=principal,
            allow_rolled_back=allow_rolled_back, all_at_once=all_at_once,
        )  # fmt: skip
    except PublishRefused as refused:
        typer.echo(render_refused(refused, fmt, every=every), nl=False)
        raise  # the error handler prints the message and exits 1
    except RolledBackContent as held:
        if fmt is OutputFormat.JSON:
            typer.echo(json.dumps(held.to_json(), indent=2))
        if every:
            held.message = held.listing  # every value, not the first ones
        raise
    typer.echo(
        json.dumps(result.to_json(), indent=2) + "\n" if fmt is OutputFormat.JSON else render_published(result),
        nl=False,
    )


RollbackMessage = Annotated[
    str,
    typer.Option("--message", "-m", metavar="REASON", help="Why: required, kept in the marker, shown by versions."),
]

RollbackVersion = Annotated[
    int | None,
    typer.Argument(
        metavar="N",
        parser=version_number_arg,
        help="The version to roll back (default: the current one).",
        show_default=False,
        autocompletion=complete_version_numbers,
    ),
]

RollbackTo = Annotated[
    int | None,
    typer.Option(
        "--to",
        metavar="N",
        parser=version_number_arg,
        help="Roll back every good version above N, so N becomes current.",
        show_default=False,
        autocompletion=complete_version_numbers,
    ),
]

RollbackPrincipal = Annotated[
    str | None,
    typer.Option(
        "--principal",
        metavar="NAME",
        help="Who rolls back, checked against the current version's ACL (User:NAME; a bare NAME is a user).",
        show_default=False,
    ),
]

RollbackNotCurrent = Annotated[
    bool,
    typer.Option(
        "--not-current",
        help="Roll back N although it is not the current version: the values of N that later versions kept"
        " are then refused by the next publish until reverted.",
    ),
]

RollbackCancel = Annotated[
    int | None,
    typer.Option(
        "--cancel",
        metavar="N",
        parser=version_number_arg,
        help="Cancel the rollback of version N (made by mistake): tag config/restored/vN makes N good again"
        " and ends its watch. Needs the same permission as a rollback.",
        show_default=False,
        autocompletion=complete_version_numbers,
    ),
]


def rollback_command(
    ctx: typer.Context,
    message: RollbackMessage,
    version: RollbackVersion = None,
    to: RollbackTo = None,
    remote: Remote = None,
    principal: RollbackPrincipal = None,
    not_current: RollbackNotCurrent = False,
    cancel: RollbackCancel = None,
    fmt: Fmt = OutputFormat.TEXT,
) -> None:
    """Withdraw a bad version: mark it rolled back (tag config/rolledback/vN).

    Nothing is deleted: processes already running on the version keep reading
    it. New readers get the highest version that is not rolled back. Refuses
    when no good version would remain, or when the version is already rolled
    back.

    Then revert the bad change on the branch you publish from (git revert) and
    publish that. Rollbacks stick: until the revert is published, publish
    refuses any ref that still holds a value the rolled-back version
    introduced. Change-aware policies (e.g. partitions may only grow) do not
    judge a change that returns such values to the good version's
    (W_POLICY_SKIPPED_REVERT). A rollback killed midway is finished by running
    the same command again (same reason).

    Rolling back N when it is not the current version needs --not-current.
    Without it, nothing changes (exit 2). The message names N's values that
    the current version still holds. The next publish would refuse them until
    they are reverted.

    A rollback made by mistake is undone with --cancel N. The marker
    config/restored/vN (no tag is deleted) makes N good again and ends its
    watch. N is current again when it is the highest. Marker names are never
    reused, so a version whose rollback was cancelled cannot be rolled back
    again: publish a revert instead.

    Exit status: 0 rolled back (or restored), 1 refused (or the remote rejected
    the marker), 2 usage error (e.g. an unknown version, or N is not current).

    Examples:
      cfgtool rollback -m "retention too short for PageViewEvent"
      cfgtool rollback 12 -m "wrong cluster" --remote origin --not-current
      cfgtool rollback --to 9 -m "back to the last known good" --format json
      cfgtool rollback --cancel 12 -m "rolled back the wrong version" --remote origin
    """
    cli: CliContext = ctx.obj
    from cfgtool.errors import UsageError

    if cancel is not None:
        if version is not None or to is not None or not_current:
            raise UsageError(
                "--cancel N names the one version whose rollback to cancel: give no N, --to or --not-current"
            )
        from cfgtool.versions.rollback import cancel as cancel_rollback

        result = cancel_rollback(cli.repo, cancel, reason=message, remote=remote, store=cli.store, principal=principal)
    else:
        result = _rollback(cli, version, to, message, remote, principal, not_current, fmt)
    typer.echo(
        json.dumps(result.to_json(), indent=2) + "\n" if fmt is OutputFormat.JSON else render_rollback(result), nl=False
    )


def _rollback(
    cli: CliContext, version: int | None, to: int | None, message: str, remote: str | None, principal: str | None,
    not_current: bool, fmt: OutputFormat,
) -> RollbackResult:  # fmt: skip
    """`rollback`, with the refusal of a version that is not current also printed as JSON."""
    from cfgtool.versions import rollback
    from cfgtool.versions.rollback import NotCurrent

    try:
        return rollback(
            cli.repo, version, to=to, reason=message, remote=remote, store=cli.store, principal=principal,
            not_current=not_current,
        )  # fmt: skip
    except NotCurrent as refused:
        if fmt is OutputFormat.JSON:
            typer.echo(json.dumps(refused.to_json(), indent=2))
        raise


def versions_command(
    ctx: typer.Context,
    show_all: Annotated[
        bool, typer.Option("--all", "-a", help=f"List every version (default: the newest {DEFAULT_SHOWN}).")
    ] = False,
    fmt: Fmt = OutputFormat.TEXT,
) -> None:
    """List published versions, newest first: date, commit, status, publisher, message.

    The status is current (what new readers get), good, or rolled back (with
    by whom, when and why). Reads the local tags: run `git fetch --tags` (or
    publish/rollback with --remote) to see versions published elsewhere.

    Examples:
      cfgtool versions
      cfgtool versions --all --format json
    """
    cli: CliContext = ctx.obj
    from cfgtool.versions import history
    from cfgtool.versions.rollout import listing

    found = history(cli.repo, cli.store)
    shown = listing(found, all=show_all)
    if fmt is OutputFormat.JSON:
        typer.echo(json.dumps([v.to_json() for v in shown], indent=2))
    else:
        typer.echo(render_versions(shown, len(found), terminal_width()), nl=False)


# ------------------------------------------------------------------------------------------ rendering


def render_refused(refused: PublishRefused, fmt: OutputFormat, *, every: bool = False) -> str:
    """The problems that stopped a publish. As text, like `cfgtool compile`: the first causes, or `every` one. Else
    the publish object with all of them."""
    if fmt is OutputFormat.JSON:
        return json.dumps(refused.to_json(), indent=2) + "\n"
    result = refused.result
    limit = None if every else TEXT_CAUSES
    return render_text(result.diagnostics, result.store.source.line_reader(), summary=True, limit=limit)


def render_published(result: PublishResult) -> str:
    lines = []
    if result.published:
        pushed = f", pushed to {result.remote}" if result.remote else " (local only: push it, or use --remote)"
        lines.append(f"published version {result.version} ({result.tag}) on commit {result.commit[:7]}{pushed}")
    else:
        lines.append(result.reason or "nothing was published")
    lines.append(f"  ref        {result.ref} (commit {result.commit[:12]})")
    lines.append(f"  store      {result.store or '.'}/, {result.nodes:,} nodes")
    lines.append(f"  digest     {result.digest}")
    lines.append(f"  publisher  {result.publisher}")
    if result.principal:
        lines.append(f"  principal  {result.principal}")
    if result.allowed:
        shown = ("version " if len(result.allowed) == 1 else "versions ") + ", ".join(map(str, result.allowed))
        lines.append(f"  note       --allow-rolled-back: re-releases values of rolled-back {shown}")
    if result.diagnostics:
        lines.append(f"  checks     {summary_line(result.diagnostics)} (cfgtool compile --ref {result.ref} shows them)")
    if result.attempts > 1:
        lines.append(f"  note       another publisher took a version number meanwhile ({result.attempts} attempts)")
    if result.rollout is not None and result.version is not None:
        done, at_once = result.published, result.at_once
        lines.append(rollout_line(result.version, result.rollout, result.store, done=done, at_once=at_once))
    if result.waits_for is not None:
        lines.append(
            f"version {result.version} waits until version {result.waits_for} is done or rolled back"
            f" (it rolls out now: {status_command_for(result.waits_for, result.store)} follows it)"
        )
    return "\n".join(lines) + "\n"


SKIPPED = {"all-at-once": "--all-at-once", "restore": "a restore: going back is never slowed down"}


def rollout_line(n: int, record: Mapping[str, Any], store: str, *, done: bool, at_once: bool = False) -> str:
    """How version `n` goes out, from its tag's `rollout` record (`at_once`: its plan had nothing to fall back to)."""
    from cfgtool.store.rollout_plan import RolloutPlan

    skipped = record.get("skipped")
    if skipped is not None:
        return f"version {n} {'skips' if done else 'would skip'} the rollout plan ({SKIPPED.get(skipped, skipped)})"
    plan = RolloutPlan.from_json(record.get("plan"))
    shown = f": {plan.describe()}" if plan is not None else ""
    if at_once:
        why = "there is no good version before it to fall back to"
        return f"version {n} {'goes' if done else 'would go'} to every reader at once, plan or not: {why}"
    if not done:
        return f"version {n} would roll out by its plan{shown}"
    return f"version {n} rolls out by its plan{shown}; {status_command_for(n, store)} follows it"


def status_command_for(n: int, store: str) -> str:
    """The `cfgtool rollout status N` to copy, with `--store DIR` for a store other than the default `store/`."""
    from cfgtool.rollout.status import cli_command

    return f"`{cli_command(f'rollout status {n}', store)}`"


def render_rollback(result: RollbackResult) -> str:
    numbers = ", ".join(str(n) for n in result.rolled_back or result.restored)
    where = f", pushed to {result.remote}" if result.remote else " (local only: push the tags, or use --remote)"
    noun = "version" if len(result.rolled_back or result.restored) == 1 else "versions"
    done = f"cancelled the rollback of {noun}" if result.restored else f"rolled back {noun}"
    return (
        f"{done} {numbers}{where}\n"
        f"  markers    {', '.join(result.tags)}\n"
        f"  reason     {result.reason}\n"
        f"  by         {result.by}\n"
        f"current version is now {result.current}\n"
    )


MIN_MESSAGE = 12  # a cut message keeps at least this much, a cut publisher MIN_PUBLISHER
MIN_PUBLISHER = 8


def terminal_width() -> int | None:
    """The width to fit the table to: `COLUMNS` when set, else the terminal's. None (cut nothing) when the output
    goes to a file or a pipe."""
    import os
    import shutil
    import sys

    if os.environ.get("COLUMNS", "").isdigit() or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return None


def render_versions(shown: Sequence[Version], total: int, width: int | None = None) -> str:
    """One row per version (rolled-back ones followed by who, when and why); a note when some are hidden.

    Lines wider than `width` (None: no limit) are fitted to it. The message is cut first, down to MIN_MESSAGE
    characters. Then the publisher is, down to MIN_PUBLISHER. What fits is never cut."""
    if not shown:
        return "no version has been published yet (cfgtool publish creates version 1)\n"
    rows = [("VERSION", "DATE", "COMMIT", "STATUS")]
    publishers, messages = ["PUBLISHER"], ["MESSAGE"]
    extra: dict[int, str] = {}
    for v in shown:
        status: str = "rolled back" if v.rolled_back else v.status
        if v.restored is not None:
            status += " (restored)"
        if v.rollout is not None and v.rollout.get("state") not in ("done", "rolled_back"):
            state = v.rollout.get("state")  # a waiting version has taken no step: no percent to show
            status += (
                f" (rollout: {state})" if state == "waiting" else f" (rollout: {state} at {v.rollout.get('percent')}%)"
            )
        if v.allow_rolled_back:  # published with --allow-rolled-back
            status += " (re-released " + ", ".join(f"v{n}" for n in v.allow_rolled_back) + ")"
        rows.append((str(v.version), _date(v), v.commit[:7], status))
        publishers.append(_who(v))
        messages.append((v.message or "").splitlines()[0] if v.message else "")
        if v.rolled_back is not None:
            rb = v.rolled_back
            said = f"    rolled back by {_name(rb.by)} on {rb.date.isoformat(' ', 'minutes')}: {rb.reason}"
            extra[len(rows) - 1] = _cut(said.splitlines()[0], width)
        if v.restored is not None:
            rs = v.restored
            said = (
                f"    rolled back by {_name(rs.rolled_back.by)}, restored by {_name(rs.by)} on"
                f" {rs.date.isoformat(' ', 'minutes')}: {rs.reason}"
            )
            extra[len(rows) - 1] = _cut(said.splitlines()[0], width)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    who, room = max(map(len, publishers)), max(map(len, messages))
    if width is not None:
        avail = width - sum(widths) - 2 * (len(widths) + 1)  # the publisher and message columns share the rest
        if who + room > avail:
            least = min(room, MIN_MESSAGE)
            who = min(who, max(MIN_PUBLISHER, avail - least))
            room = max(avail - who, least)
    out = []
    for i, (row, publisher, message) in enumerate(zip(rows, publishers, messages, strict=True)):
        cells = [*(c.ljust(w) for c, w in zip(row, widths, strict=True)), _cut(publisher, who).ljust(who)]
        out.append("  ".join(cells) + "  " + _cut(message, room))
        if i in extra:
            out.append(extra[i])
    lines = [line.rstrip() for line in out]
    if total > len(shown):
        lines.append(f"({len(shown)} of {total:,} versions shown; --all lists every one)")
    return "\n".join(lines) + "\n"


def _date(v: Version) -> str:
    return v.date.isoformat(" ", "minutes")


def _who(v: Version) -> str:
    """The principal who released a version when it was recorded, else the publisher's git name."""
    return v.principal or _name(v.publisher or "")


def _name(person: str) -> str:
    """`Ann Example <ann@example.com>` as `Ann Example` (the table's width; --format json has it whole)."""
    name = person.split("<", 1)[0].strip()
    return name or person


def _cut(text: str, width: int | None) -> str:
    """`text`, or its start and `...` in `width` characters when longer (None: never cut)."""
    if width is None or len(text) <= width:
        return text
    return text[: max(width - 3, 0)] + "..."
