"""`cfgtool acl check` and `cfgtool acl list` (docs/access.md#the-acl): ask the store's ACL, as the checks will."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from cfgtool.access.operations import KEY_OPERATIONS, OPERATIONS, STORE_OPERATIONS
from cfgtool.cli.context import CliContext
from cfgtool.cli.options import Ref
from cfgtool.cli.query_cmd import QueryFmt, QueryFormat
from cfgtool.diagnostics import Diagnostic
from cfgtool.errors import UsageError
from cfgtool.store.keys import BadKeyError, normalize_key

acl_app = typer.Typer(
    name="acl",
    help="""Ask the store's ACL: who may read, change, publish or roll back what; write CODEOWNERS from it.

    Examples:
      cfgtool acl check User:alice alter /data/tracking/PageViewEvent
      cfgtool acl list --principal User:alice
      cfgtool acl codeowners --check
    """,
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _warn(problems: list[Diagnostic]) -> None:
    """E_ACL problems on stderr: while the ACL has them, only super users are allowed."""
    for d in problems:
        if d.severity != "error":
            continue
        typer.echo(f"{d.location}: {d.code} {d.message}", err=True)


def _key(key: str | None, name: str | None) -> str | None:
    if key is None or key == "*":
        return key
    try:
        return normalize_key(key, name)
    except BadKeyError as err:
        raise UsageError(err.message, hint=err.hint) from err


@acl_app.command("check")
def check(
    ctx: typer.Context,
    principal: Annotated[str, typer.Argument(metavar="PRINCIPAL", help="User:NAME, Group:NAME, or a bare user name.")],
    operation: Annotated[str, typer.Argument(metavar="OPERATION", help=f"One of: {', '.join(OPERATIONS)}.")],
    key: Annotated[
        str | None,
        typer.Argument(
            metavar="[KEY]", help="The key, for key operations (store operations take none).", show_default=False
        ),
    ] = None,
    host: Annotated[
        str | None,
        typer.Option(
            "--host", metavar="H", help="The client's address (entries with a host need one).", show_default=False
        ),
    ] = None,
    ref: Ref = None,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """Say whether PRINCIPAL may do OPERATION (on KEY), and the rule that decided.

    Exit status: 0 allowed, 1 denied, 2 usage error.

    Examples:
      cfgtool acl check User:alice alter /data/tracking/PageViewEvent
      cfgtool acl check bob read /data/secure/payments --format json
      cfgtool acl check User:release-bot publish
      cfgtool acl check User:mallory read /data/x --host 10.0.0.9 --ref origin/main
    """
    from cfgtool.access.acl import checked_principal as as_principal  # here, not when the CLI is built
    from cfgtool.access.enforce import authorizer_at

    cli: CliContext = ctx.obj
    authorizer, problems, name = authorizer_at(cli.repo, cli.store, ref)
    _warn(problems)
    if operation not in OPERATIONS:
        raise UsageError(f"unknown operation {operation!r}", hint=f"use one of {', '.join(OPERATIONS)}")
    if key is not None and operation not in KEY_OPERATIONS:
        raise UsageError(
            f"{operation} is an operation on the store: give no KEY", hint=f"cfgtool acl check P {operation}"
        )
    if key is None and operation not in STORE_OPERATIONS:
        raise UsageError(
            f"{operation} is an operation on keys: give a KEY", hint=f"cfgtool acl check P {operation} /data/x"
        )
    decision = authorizer.authorize(as_principal(principal), operation, _key(key, name), host)
    if fmt is QueryFormat.JSON:
        typer.echo(json.dumps(decision.to_json(), indent=2))
    else:
        verdict = "ALLOWED" if decision.allowed else "DENIED"
        typer.echo(f"{verdict}  {decision.principal} {decision.operation} {decision.resource}\n  {decision.reason}")
    if not decision.allowed:
        raise typer.Exit(1)


@acl_app.command("list")
def list_entries(
    ctx: typer.Context,
    principal: Annotated[
        str | None,
        typer.Option(
            "--principal", metavar="P", help="Only entries that apply to P (its groups too).", show_default=False
        ),
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", metavar="K", help="Only entries that apply to key K.", show_default=False)
    ] = None,
    ref: Ref = None,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """List the ACL entries (all, or those that apply to a principal and/or key), in file order.

    Examples:
      cfgtool acl list
      cfgtool acl list --principal User:alice --key /data/tracking/PageViewEvent
      cfgtool acl list --format json
    """
    from cfgtool.access.acl import checked_principal as as_principal  # here, not when the CLI is built
    from cfgtool.access.enforce import authorizer_at

    cli: CliContext = ctx.obj
    authorizer, problems, name = authorizer_at(cli.repo, cli.store, ref)
    _warn(problems)
    who = as_principal(principal) if principal is not None else None
    entries = authorizer.entries(who, _key(key, name))
    acl = authorizer.acl
    if fmt is QueryFormat.JSON:
        out = {
            "file": acl.file,
            "present": acl.present,
            "broken": acl.broken,
            "super_users": sorted(acl.super_users),
            "allow_everyone_if_no_acl_found": acl.allow_everyone_if_no_acl_found,
            "entries": [e.to_json() for e in entries],
        }
        typer.echo(json.dumps(out, indent=2))
        return
    if not acl.present:
        typer.echo(f"no ACL file ({acl.file}): access control is off")
        return
    typer.echo(f"super users: {', '.join(sorted(acl.super_users)) or 'none'}")
    for entry in entries:
        typer.echo(entry.describe())
    if not entries:
        typer.echo("no entries apply")


@acl_app.command("codeowners")
def codeowners_command(
    ctx: typer.Context,
    check: Annotated[
        bool,
        typer.Option("--check", help="Write nothing: exit 1 and show the difference when the file is stale."),
    ] = False,
) -> None:
    """Write .github/CODEOWNERS from the ACL, so GitHub asks the right owners to review.

    Each key prefix's `alter` principals own its store directory
    (/data/tracking/ prefixed -> /store/data/tracking/). The super users and
    the principals allowed alter_store own the rule files: settings, schemas,
    policies, recipients, .github/, requirements.txt. Those allowed alter_acl
    own the ACL. Principals become GitHub names through `github:` in the ACL,
    e.g. github: {"Group:tracking": "@org/tracking", "User:alice": "@alice"}.
    A group without one is its members' names. Turn on "Require review from
    Code Owners" in the branch protection of main to enforce it.

    Exit status: 0 written or fresh, 1 stale (--check) or the ACL has errors.

    Examples:
      cfgtool acl codeowners
      cfgtool acl codeowners --check      # in CI: fails when the ACL changed and the file did not
    """
    from cfgtool.access.codeowners import CODEOWNERS, check_codeowners, write_codeowners  # not when the CLI is built

    cli: CliContext = ctx.obj
    if check:
        result = check_codeowners(cli.repo, cli.store)
        found = result.expected
    else:
        found, _, changed = write_codeowners(cli.repo, cli.store)
    for principal in found.unmapped:
        typer.echo(f"warning: {principal} has no GitHub name: add it to `github:` in the ACL", err=True)
    for entry in found.skipped:
        typer.echo(f"warning: left out, its key cannot be a CODEOWNERS path: {entry.describe()}", err=True)
    if not check:
        typer.echo(f"{'wrote' if changed else 'unchanged:'} {CODEOWNERS}")
        return
    if result.fresh:
        typer.echo(f"{CODEOWNERS} is up to date with the ACL")
        return
    typer.echo(result.diff, nl=False)
    typer.echo(f"cfgtool: error: {CODEOWNERS} is stale: run `cfgtool acl codeowners` and commit it", err=True)
    raise typer.Exit(1)
