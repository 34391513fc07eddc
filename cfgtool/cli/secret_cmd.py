"""`cfgtool secret set` and `cfgtool secret reseal` (docs/access.md#secrets): seal secrets into the working tree."""

from __future__ import annotations

import getpass
import sys
from pathlib import Path
from typing import Annotated

import typer

from cfgtool.cli.context import CliContext
from cfgtool.errors import UsageError

secret_app = typer.Typer(
    name="secret",
    help="Seal secrets for the store's recipients (docs/access.md#secrets): values that no output of cfgtool shows.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _read_value() -> str:
    """The secret from standard input (never an argument: arguments end up in shell history and `ps`)."""
    if sys.stdin.isatty():
        value = getpass.getpass("secret value (not shown): ")
    else:
        value = sys.stdin.read()
        if value.endswith("\n"):  # `echo` and here-strings add one; a value that needs it can use printf '...\n\n'
            value = value[:-1]
    if not value:
        raise UsageError(
            "the secret is empty", hint="pipe the value in: printf %s 'VALUE' | cfgtool secret set KEY PATH"
        )
    return value


@secret_app.command("set")
def set_command(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(metavar="KEY", help="The node the secret belongs to, e.g. /data/db/orders.")],
    path: Annotated[str, typer.Argument(metavar="PATH", help="Where in its config, e.g. db.password.")],
) -> None:
    """Seal a value from standard input for KEY's PATH and write it into KEY's main.conf.

    The value is sealed with age to the recipients in the store's _RECIPIENTS;
    only their identities can open it. Every existing assignment of PATH in
    the file is replaced in place, whatever its form (quoted, unquoted,
    triple-quoted). Otherwise a line is added. A PATH that no schema selecting
    KEY marks writeOnly is refused (exit 2). Commit the file as usual. A
    trailing newline of the input is dropped. On a terminal, the value is
    asked for without echo.

    Examples:
      printf %s "$DB_PASSWORD" | cfgtool secret set /data/databases/orders db.password
      cfgtool secret set /data/databases/orders db.password < password.txt
    """
    from cfgtool.edit.secrets import set_secret  # here, not when the CLI is built

    cli: CliContext = ctx.obj
    result = set_secret(cli.repo, cli.store, key, path, _read_value())
    how = "replaced" if result.replaced else "added"
    typer.echo(f"sealed {result.key} {result.path}: {how} at {result.file}:{result.line}")


@secret_app.command("reseal")
def reseal_command(
    ctx: typer.Context,
    identity: Annotated[
        Path,
        typer.Option("--identity", "-i", metavar="FILE", help="An age identity of a current recipient, to open them."),
    ],
) -> None:
    """Seal every secret of the store again, to the recipients now in _RECIPIENTS.

    Run it after adding or removing a recipient. A removed recipient can still
    open the old commits: real revocation is changing the secret itself.

    Examples:
      cfgtool secret reseal --identity ~/.config/age/key.txt
    """
    from cfgtool.access.secrets import load_identities
    from cfgtool.edit.secrets import reseal

    cli: CliContext = ctx.obj
    files = reseal(cli.repo, cli.store, load_identities(identity))
    for file in files:
        typer.echo(f"resealed {file}")
    typer.echo(f"{len(files)} file(s) resealed" if files else "no sealed secrets found")
