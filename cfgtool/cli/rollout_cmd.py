"""`cfgtool rollout ...` (docs/rollout.md): staged rollouts. `status` shows one; `promote`, `pause`, `resume` and
`abort` are what people do to it; `run` is the controller."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cfgtool.cli.completion import complete_version_numbers
from cfgtool.cli.context import CliContext
from cfgtool.cli.options import version_number_arg
from cfgtool.cli.versions_cmd import Fmt, OutputFormat, Remote, render_rollback
from cfgtool.errors import SourceError, UsageError

if TYPE_CHECKING:
    from cfgtool.rollout.manual import Recorded

rollout_app = typer.Typer(
    name="rollout",
    help="""Staged rollouts: a version reaches a growing share of the instances, judged by its gates.

    Examples:
      cfgtool rollout status
      cfgtool rollout promote 7 -m "the canary looks fine" --remote origin
      cfgtool rollout abort 7 -m "latency up in eu-west" --remote origin
      cfgtool rollout run --server http://configs:8750 --remote origin
    """,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

Version = Annotated[
    int,
    typer.Argument(
        metavar="N", parser=version_number_arg, help="The version rolling out.", autocompletion=complete_version_numbers
    ),
]
Principal = Annotated[
    str | None,
    typer.Option(
        "--principal",
        metavar="NAME",
        help="Who acts: recorded in the tag and checked against the current version's ACL (User:NAME; a bare NAME"
        " is a user). Default: your git identity, not checked.",
        show_default=False,
    ),
]
Why = Annotated[str, typer.Option("--message", "-m", metavar="REASON", help="Why: required, kept in the tag.")]
MaybeWhy = Annotated[
    str | None, typer.Option("--message", "-m", metavar="MSG", help="Why (kept in the tag).", show_default=False)
]


@rollout_app.command("status")
def status_command(
    ctx: typer.Context,
    version: Annotated[
        int | None,
        typer.Argument(
            metavar="[N]",
            parser=version_number_arg,
            help="The version (default: the one rolling out, else the newest with a rollout).",
            show_default=False,
            autocompletion=complete_version_numbers,
        ),
    ] = None,
    servers: Annotated[
        list[str] | None,
        typer.Option(
            "--server",
            metavar="URL",
            help="A cfgtool server whose consumers report counts the cohort. Repeat for every replica: each knows"
            " only its own clients. Without it, the cohort counts are null.",
            show_default=False,
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file", metavar="FILE", help="A file holding the bearer token for the servers.", show_default=False
        ),
    ] = None,
    remote: Annotated[
        str | None,
        typer.Option(
            "--remote", metavar="NAME", help="Fetch this git remote's tags first (it writes none).", show_default=False
        ),
    ] = None,
    fmt: Fmt = OutputFormat.TEXT,
) -> None:
    """Show a version's staged rollout: state, step, cohort, gates and why it waits.

    Reads the local tags (with --remote, that remote's first). The gates are
    the evidence recorded when the rollout last moved; `holding` is said only
    by the controller, which has just run them.

    Exit status: 0 shown, 1 the version has no rollout, 2 usage or environment
    error (e.g. no such version).

    Examples:
      cfgtool rollout status
      cfgtool rollout status 7 --server http://configs-a:8750 --server http://configs-b:8750
      cfgtool rollout status 7 --remote origin --format json
    """
    from cfgtool.rollout.gates import read_reports
    from cfgtool.rollout.manual import read_tags
    from cfgtool.rollout.status import default_version, status

    cli: CliContext = ctx.obj
    _check_servers(servers or [])
    _, known, chosen = read_tags(cli.repo, cli.store, remote)
    n = version if version is not None else default_version(chosen)
    reports = None
    if servers:
        reports = read_reports(servers, chosen.store, token=_token(token_file))
        for report in reports:
            if report.error is not None:
                typer.echo(f"warning: {report.problem} (not counted)", err=True)
    found = status(known, chosen, n, reports=reports)
    typer.echo(json.dumps(found, indent=2) if fmt is OutputFormat.JSON else render_status(found))


@rollout_app.command("promote")
def promote_command(
    ctx: typer.Context, version: Version, message: MaybeWhy = None, remote: Remote = None,
    principal: Principal = None, fmt: Fmt = OutputFormat.TEXT,
) -> None:  # fmt: skip
    """Take the next step now, gates or not (from 100%: finish the rollout).

    Writes the next step tag, with who and why. Needs publish on the store
    with --principal. A paused rollout stays paused.

    Exit status: 0 promoted, 1 refused (done, rolled back, waiting,
    superseded, or the principal may not publish), 2 usage or environment
    error.

    Examples:
      cfgtool rollout promote 7 -m "the canary looks fine" --remote origin
      cfgtool rollout promote 7 --principal User:release-bot --format json
    """
    from cfgtool.rollout.manual import promote

    cli: CliContext = ctx.obj
    _echo(promote(cli.repo, cli.store, version, reason=message, principal=principal, remote=remote), fmt)


@rollout_app.command("pause")
def pause_command(
    ctx: typer.Context, version: Version, message: Why, remote: Remote = None, principal: Principal = None,
    fmt: Fmt = OutputFormat.TEXT,
) -> None:  # fmt: skip
    """Hold a rollout at its step: its cohort keeps the version, it grows no more.

    Needs publish on the store with --principal. `rollout resume` lets it
    grow again.

    Exit status: 0 paused, 1 refused (already paused, done, rolled back),
    2 usage or environment error.

    Examples:
      cfgtool rollout pause 7 -m "watching the error rate after the deploy" --remote origin
    """
    from cfgtool.rollout.manual import pause

    cli: CliContext = ctx.obj
    _echo(pause(cli.repo, cli.store, version, reason=message, principal=principal, remote=remote), fmt)


@rollout_app.command("resume")
def resume_command(
    ctx: typer.Context, version: Version, message: MaybeWhy = None, remote: Remote = None,
    principal: Principal = None, fmt: Fmt = OutputFormat.TEXT,
) -> None:  # fmt: skip
    """Let a paused rollout grow again, by the controller's rounds.

    Needs publish on the store with --principal.

    Exit status: 0 resumed, 1 refused (not paused), 2 usage or environment
    error.

    Examples:
      cfgtool rollout resume 7 -m "error rate is back to normal" --remote origin
    """
    from cfgtool.rollout.manual import resume

    cli: CliContext = ctx.obj
    _echo(resume(cli.repo, cli.store, version, reason=message, principal=principal, remote=remote), fmt)


@rollout_app.command("abort")
def abort_command(
    ctx: typer.Context, version: Version, message: Why, remote: Remote = None, principal: Principal = None,
    fmt: Fmt = OutputFormat.TEXT,
) -> None:  # fmt: skip
    """Stop a rollout: roll the version back (reason "abort: REASON").

    The same rollback marker as `cfgtool rollback N`: its cohort returns to
    the stable version, and the rollback sticks. Needs rollback on the store
    with --principal.

    Exit status: 0 aborted, 1 refused (done: use cfgtool rollback; already
    rolled back; the principal may not roll back), 2 usage or environment
    error.

    Examples:
      cfgtool rollout abort 7 -m "latency up in eu-west" --remote origin
    """
    from cfgtool.rollout.manual import abort

    cli: CliContext = ctx.obj
    result = abort(cli.repo, cli.store, version, reason=message, principal=principal, remote=remote)
    typer.echo(
        json.dumps(result.to_json(), indent=2) + "\n" if fmt is OutputFormat.JSON else render_rollback(result), nl=False
    )


@rollout_app.command("run")
def run_command(
    ctx: typer.Context,
    servers: Annotated[
        list[str],
        typer.Option(
            "--server",
            metavar="URL",
            help="A cfgtool server whose consumers report the gates read. Repeat for every replica: each knows only "
            "its own clients.",
        ),
    ],
    remote: Annotated[
        str | None,
        typer.Option("--remote", metavar="NAME", help="Fetch the tags from and push the steps to this remote."),
    ] = None,
    interval: Annotated[
        str, typer.Option("--interval", metavar="DURATION", help="Time between rounds: 5s, 1m, or seconds.")
    ] = "5s",
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            metavar="FILE",
            help="A file holding the bearer token for the servers (a principal that may describe the store).",
            show_default=False,
        ),
    ] = None,
    once: Annotated[bool, typer.Option("--once", help="Run one round and exit (a scheduled CI job).")] = False,
) -> None:
    """Drive the staged rollout of the store: the controller.

    Each round it fetches the tags, reads the consumers reports of every
    --server, judges the gates of the candidate's step, and then rolls it back
    (a gate failed), takes the next step or finishes it (every gate passed
    after the step time or the bake), or holds (a gate could not judge). It
    runs until SIGTERM or SIGINT; a restarted controller carries on from the
    tags. Needs push rights on the remote.

    Examples:
      cfgtool rollout run --server http://configs-a:8750 --server http://configs-b:8750 --remote origin
      cfgtool rollout run --server http://configs:8750 --remote origin --interval 30s
      cfgtool rollout run --server http://configs:8750 --remote origin --once
    """
    from cfgtool.rollout.controller import Options, start
    from cfgtool.store.rollout_plan import PlanError, duration

    cli: CliContext = ctx.obj
    _check_servers(servers)
    try:
        seconds = duration(interval)
    except PlanError as exc:
        raise UsageError(f"--interval: {exc.message}", hint="--interval 5s") from None
    if seconds <= 0:
        raise UsageError("--interval must be more than 0 seconds", hint="--interval 5s")
    options = Options(cli.repo or Path.cwd(), cli.store, tuple(servers), remote, _token(token_file), seconds)
    decision = start(options, once=once)
    if once and decision.action == "error":
        raise SourceError(decision.line(), hint="the next round tries again; check the remote and the servers")


def _check_servers(servers: list[str]) -> None:
    """Refuse a `--server` that is not an http(s) URL now (exit 2), rather than hold every round on it."""
    from cfgtool.client.http import check_http_url

    for server in servers:
        try:
            check_http_url(server)
        except UsageError as exc:
            raise UsageError(f"--server {exc.message}", hint=exc.hint) from None


def _token(token_file: Path | None) -> str | None:
    if token_file is None:
        return None
    try:
        return token_file.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise UsageError(f"--token-file {token_file}: {exc.strerror or exc}", hint="check the path") from exc


def _echo(done: Recorded, fmt: OutputFormat) -> None:
    if fmt is OutputFormat.JSON:
        typer.echo(json.dumps(done.to_json(), indent=2))
        return
    where = f", pushed to {done.remote}" if done.remote else " (local only: push the tag, or use --remote)"
    what = {"step": "step to", "pause": "paused at", "resume": "resumed at"}.get(done.action)
    what = f"{what} {done.percent}%" if what else "rollout finished"
    typer.echo(f"version {done.version}: {what} ({done.tag}){where}\n  by     {done.by}\n  now    {done.state}")
    if done.reason:
        typer.echo(f"  reason {done.reason}")


def render_status(found: dict[str, Any]) -> str:
    """`rollout status` for people."""
    taken = found["step"] if found["state"] != "waiting" else None  # a waiting version has taken no step yet
    steps = " -> ".join(f"[{p}%]" if i == taken else f"{p}%" for i, p in enumerate(found["steps"]))
    at = f" at {found['percent']}%" if found["state"] != "waiting" else ""
    lines = [
        f"version {found['version']} of store {found['store']}: {found['state'].replace('_', ' ')}{at}"
        f" (stable version: {found['stable']})",
        f"  steps   {steps}, since {found['since'] or '-'}",
    ]
    counts = found["cohort"]
    if counts is not None:
        lines.append(f"  cohort  {counts['instances']} instances, {counts['applied']} on it, {counts['failed']} failed")
    lines += [f"  gate    {g['gate']}: {g['result']} ({g['detail']})" for g in found["gates"]]
    if found["why"]:
        lines.append(f"  why     {found['why']}")
    if found["state"] == "rolled_back":
        lines.append("  next    revert the change (git revert) and publish that: publish refuses its values until then")
    for e in found["events"]:
        why = f": {e['reason']}" if e["reason"] else ""
        lines.append(f"  {e['date']}  {e['action']} {e['percent']}% by {e['by']}{why}")
    return "\n".join(lines)
