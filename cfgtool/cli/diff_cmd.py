"""`cfgtool diff` and `cfgtool audit` (docs/versions.md): one library call each, then rendering."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from cfgtool.cli.completion import complete_keys, complete_sides
from cfgtool.cli.context import CliContext
from cfgtool.cli.options import Vars
from cfgtool.diagnostics import plural
from cfgtool.errors import UsageError
from cfgtool.store.assignments import parse_assignments
from cfgtool.versions.names import WORKTREE


class DiffFormat(StrEnum):
    """How `diff` prints: text for people, json for scripts, markdown for a pull-request comment."""

    TEXT = "text"
    JSON = "json"
    MARKDOWN = "markdown"


class AuditFormat(StrEnum):
    """How `audit` prints."""

    TEXT = "text"
    JSON = "json"


_SIDE_HELP = (
    "A version (config/v5, v5 or 5; `current` or `previous`, the good version below it), any git ref (branch,"
    " tag, commit), or `worktree` for the working tree."
)


def diff_command(
    ctx: typer.Context,
    a: Annotated[str, typer.Argument(metavar="A", help="The old side. " + _SIDE_HELP, autocompletion=complete_sides)],
    b: Annotated[
        str,
        typer.Argument(
            metavar="B", help="The new side (default: worktree). " + _SIDE_HELP, autocompletion=complete_sides
        ),
    ] = WORKTREE,
    variables: Vars = None,
    fmt: Annotated[
        DiffFormat,
        typer.Option(
            "--format", "-f", help="Output: text for people, json for scripts, markdown for a pull-request comment."
        ),
    ] = DiffFormat.TEXT,
    exit_code: Annotated[
        bool,
        typer.Option(
            "--exit-code", help="Exit 1 when the resolved configs or the rules differ (like `git diff --exit-code`)."
        ),
    ] = False,
) -> None:
    """Show how resolved configs differ between A and B.

    Every value that changes, in every key it reaches: values added, removed
    or changed. Each new value comes with the file:line:col that set it. A
    summary comes first, grouping equal changes: "retention.ms 604800000 ->
    2592000000 in 1,243 keys, via /tags/retention/LONG". Both sides are
    compiled with the same --var values, without validation (that is
    `cfgtool compile`).

    A version is the configs and the rules. Rule files that differ are listed
    first: settings, schemas, policy code, the ACL, the recipients. With them
    come the ACL entries, super users, group members and GitHub names added
    (+) and removed (-).

    v5 or 5 names version 5 when it exists, else a git ref of that name. When
    both exist and differ, write config/v5 or refs/tags/v5. Exit 0 whether or
    not there are differences, unless --exit-code; exit 1 when a side does not
    compile (its keys cannot be compared).

    Examples:
      cfgtool diff v5 v6
      cfgtool diff origin/main HEAD -f markdown > comment.md
      cfgtool diff config/v12        # version 12 -> the working tree
      cfgtool diff previous current  # what the current version changed
    """
    from cfgtool.versions.diff import diff  # here, not when the CLI is built
    from cfgtool.versions.diff_render import render_json, render_markdown, render_text

    cli: CliContext = ctx.obj
    result = diff(cli.repo, a, b, cli.store, parse_assignments(variables))
    if fmt is DiffFormat.JSON:
        text = render_json(result)
    elif fmt is DiffFormat.MARKDOWN:
        text = render_markdown(result)
    else:
        text = render_text(result)
    typer.echo(text, nl=False)
    broken = [side for side in (result.a, result.b) if side.errors]
    if broken or result.unresolved:
        names = ", ".join(side.spec for side in broken) or "both sides"
        typer.echo(
            f"cfgtool: error: {names} did not compile cleanly, so {plural(len(result.unresolved), 'key')} were not"
            " compared; run `cfgtool compile` on it",
            err=True,
        )
        raise typer.Exit(1)
    if exit_code and (not result.empty or result.rules):
        raise typer.Exit(1)


def audit_command(
    ctx: typer.Context,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            "-k",
            metavar="KEY",
            help="Show the history of this key's resolved config.",
            show_default=False,
            autocompletion=complete_keys,
        ),
    ] = None,
    path: Annotated[
        str | None,
        typer.Option(
            "--path", "-p", metavar="PATH", help="With --key: only this value (a HOCON path).", show_default=False
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="DATE",
            help="Only what happened on or after DATE: 2024-05-01, 2024-05-01T12:00:00+02:00, or '3 weeks ago'.",
            show_default=False,
        ),
    ] = None,
    variables: Vars = None,
    fmt: Annotated[AuditFormat, typer.Option("--format", "-f", help="Output: text for people, json for scripts.")] = (
        AuditFormat.TEXT
    ),
) -> None:
    """Who published and rolled back which version, when and why.

    Without --key: every publish and rollback, newest first.
    With --key K [--path P]: every version in which that resolved value
    changed, old -> new. Each lists the commits since the previous version
    that touched the files K resolves from (author, date, subject), newest
    first.

    Examples:
      cfgtool audit --since "2 weeks ago"
      cfgtool audit --key /data/tracking/PageViewEvent --path retention.ms
    """
    from cfgtool.snapshot.formats import to_json
    from cfgtool.versions.audit import audit, audit_key, parse_since, render_events_text, render_history_text

    cli: CliContext = ctx.obj
    when = parse_since(since, cli.repo) if since is not None else None
    if key is None:
        if path is not None:
            raise UsageError("--path needs --key", hint="write --key KEY --path PATH")
        events = audit(cli.repo, when, cli.store)
        typer.echo(to_json(events.to_json()) if fmt is AuditFormat.JSON else render_events_text(events, when), nl=False)
        return
    found = audit_key(cli.repo, key, path, when, cli.store, parse_assignments(variables))
    typer.echo(to_json(found.to_json()) if fmt is AuditFormat.JSON else render_history_text(found, when), nl=False)
