"""Builds the typer app: the root command with the global options, and one module per command group."""

from __future__ import annotations

import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from cfgtool.cli import compile_cmd, hocon_cmd, query_cmd
from cfgtool.cli.acl_cmd import acl_app
from cfgtool.cli.context import CliContext
from cfgtool.cli.diff_cmd import audit_command, diff_command
from cfgtool.cli.error_handler import run_handled
from cfgtool.cli.init_cmd import init_command
from cfgtool.cli.secret_cmd import secret_app
from cfgtool.cli.serve_cmd import serve_command, token_app
from cfgtool.cli.versions_cmd import publish_command, rollback_command, versions_command

HELP = """Git-backed config-as-code: compile, validate, explain and version HOCON config stores.

Exit status: 0 success, 1 config errors, 2 usage or environment errors, 3 internal error, 130 interrupted.
Set CFGTOOL_DEBUG=1 to see tracebacks."""


def build_app() -> typer.Typer:
    """A fresh typer app with every command registered."""
    app = typer.Typer(
        name="cfgtool",
        help=HELP,
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    app.command("init")(init_command)
    app.command("compile")(compile_cmd.compile_command)
    app.command("get")(query_cmd.get)
    app.command("explain")(query_cmd.explain_command)
    app.command("imports")(query_cmd.imports)
    app.command("imported-by")(query_cmd.imported_by)
    app.command("tags")(query_cmd.tags)
    app.command("datasets")(query_cmd.datasets)
    app.command("hocon")(hocon_cmd.hocon)
    app.command("publish")(publish_command)
    app.command("rollback")(rollback_command)
    app.command("versions")(versions_command)
    app.command("diff")(diff_command)
    app.command("audit")(audit_command)
    app.add_typer(acl_app)
    app.add_typer(secret_app)
    app.command("serve")(serve_command)
    app.add_typer(token_app)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    """Run cfgtool with `argv` (default: the process arguments) and return its exit status.

    A command runs for seconds and builds large acyclic structures, so the cyclic garbage collector
    (which would rescan them again and again) stays off for the run; reference counting frees memory.
    """
    gc.disable()
    command = typer.main.get_command(build_app())
    _flags_without_metavar(command)

    def invoke() -> int:
        try:
            command.main(args=argv, prog_name="cfgtool", standalone_mode=True)
        except SystemExit as exc:  # standalone mode always ends here: help, usage errors and success alike
            return _exit_status(exc.code)
        return 0

    return run_handled(invoke)


def _flags_without_metavar(command: typer.core.TyperCommand | typer.core.TyperGroup | object) -> None:
    """Show flags as flags in help (`--strict`, not `--strict <bool>`, which reads as if it took a value)."""
    for param in getattr(command, "params", ()):
        if isinstance(param, typer.core.TyperOption) and param.is_flag:
            param.metavar = ""
    make_help = getattr(command, "get_help_option", None)
    if make_help is not None:  # the help option is made afresh for each context

        def help_option(ctx: typer.Context, make: Any = make_help) -> Any:
            option = make(ctx)
            if option is not None:
                option.metavar = ""
            return option

        setattr(command, "get_help_option", help_option)  # noqa: B010 (an instance attribute over the method)
    for sub in getattr(command, "commands", {}).values():
        _flags_without_metavar(sub)


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1


def _show_version(value: bool) -> None:
    if value:
        from cfgtool._version import __version__

        typer.echo(f"cfgtool {__version__}")
        raise typer.Exit()


def _root(
    ctx: typer.Context,
    repo: Annotated[
        Path | None,
        typer.Option(
            "--repo",
            metavar="PATH",
            help="The config repository (default: the git repository containing the current directory).",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        Path,
        typer.Option("--store", metavar="DIR", help="The store directory, relative to the repository root."),
    ] = Path("store"),
    version: Annotated[
        bool,
        typer.Option("--version", help="Print the cfgtool version and exit.", callback=_show_version, is_eager=True),
    ] = False,
) -> None:
    ctx.obj = CliContext(repo=repo, store=store)
