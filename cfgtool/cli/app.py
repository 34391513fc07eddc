"""Builds the typer app: the root command with the global options, and one module per command group."""

from __future__ import annotations

import copy
import dataclasses
import gc
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any

import typer

from cfgtool.cli.completion import cli_context
from cfgtool.cli.context import CliContext
from cfgtool.cli.error_handler import run_handled

HELP = """Git-backed config-as-code: compile, validate, explain and version HOCON config stores.

Exit status: 0 success, 1 config errors, 2 usage or environment errors, 3 internal error, 130 interrupted.
Set CFGTOOL_DEBUG=1 to see tracebacks.
The global options --repo and --store may also follow the command (`cfgtool get KEY --store other`), and so may
--version where the command has no --version of its own."""

# name -> (module under cfgtool.cli, attribute): a function is a command, a typer app a group of them. In the
# order of `cfgtool --help` (typer lists the commands before the groups).
_COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("init_cmd", "init_command"),
    "compile": ("compile_cmd", "compile_command"),
    "get": ("query_cmd", "get"),
    "explain": ("query_cmd", "explain_command"),
    "imports": ("query_cmd", "imports"),
    "imported-by": ("query_cmd", "imported_by"),
    "tags": ("query_cmd", "tags"),
    "datasets": ("query_cmd", "datasets"),
    "hocon": ("hocon_cmd", "hocon"),
    "publish": ("versions_cmd", "publish_command"),
    "rollback": ("versions_cmd", "rollback_command"),
    "versions": ("versions_cmd", "versions_command"),
    "diff": ("diff_cmd", "diff_command"),
    "audit": ("diff_cmd", "audit_command"),
    "serve": ("serve_cmd", "serve_command"),
    "consumers": ("consumers_cmd", "consumers_command"),
    "agent": ("agent_cmd", "agent_command"),
    "rollout": ("rollout_cmd", "rollout_app"),
    "acl": ("acl_cmd", "acl_app"),
    "secret": ("secret_cmd", "secret_app"),
    "token": ("serve_cmd", "token_app"),
}
_ROOT_VALUED = ("--repo", "--store")  # the root options that take a value


def build_app(only: str | None = None) -> typer.Typer:
    """A fresh typer app with every command registered, or only the command `only`. Building the click command of all
    of them costs about 30 ms of every run: their signatures, options and help."""
    app = typer.Typer(
        name="cfgtool",
        help=HELP,
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    for name, (module, attribute) in _COMMANDS.items():
        if only is None or name == only:
            target = getattr(import_module(f"cfgtool.cli.{module}"), attribute)
            if isinstance(target, typer.Typer):
                app.add_typer(target)
            else:
                app.command(name)(target)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    """Run cfgtool with `argv` (default: the process arguments) and return its exit status.

    A command runs for seconds and builds large acyclic structures. The cyclic garbage collector would rescan them
    again and again, so it stays off for the run. Reference counting frees memory.
    """
    gc.disable()
    command = typer.main.get_command(build_app(named_command(sys.argv[1:] if argv is None else argv)))
    _flags_without_metavar(command)
    if isinstance(command, typer.core.TyperGroup):
        _global_options_after(command)

    def invoke() -> int:
        try:
            command.main(args=argv, prog_name="cfgtool", standalone_mode=True)
        except SystemExit as exc:  # standalone mode always ends here: help, usage errors and success alike
            return _exit_status(exc.code)
        return 0

    return run_handled(invoke)


def named_command(args: Sequence[str]) -> str | None:
    """The command `args` run, when it can be told before parsing them. It is the first argument after the root
    options that take values (`--repo PATH`, `--store=DIR`), if it names a command. None (every command is built) for
    anything else: no command, root help, `--version`, or an unknown command. Its error suggests the near ones.
    During a shell completion, the words before the one being completed are looked at instead. Completing
    `cfgtool get /da` builds `get` alone."""
    if os.environ.get("_CFGTOOL_COMPLETE"):
        args = _completed_words()
    rest = iter(args)
    for arg in rest:
        if arg in _ROOT_VALUED:
            next(rest, None)
        elif not arg.startswith(tuple(f"{option}=" for option in _ROOT_VALUED)):
            return arg if arg in _COMMANDS else None
    return None


def _completed_words() -> list[str]:
    """The words a completing shell passed before the one being completed, without the program's name. bash sets
    COMP_WORDS and COMP_CWORD. zsh, fish and PowerShell set `_TYPER_COMPLETE_ARGS`, the incomplete word last unless
    the line ends with a space. A word split at a quoted space only makes `named_command` say None."""
    if "COMP_WORDS" in os.environ:
        words = os.environ["COMP_WORDS"].split()
        cword = os.environ.get("COMP_CWORD", "")
        return words[1 : int(cword)] if cword.isdigit() else []
    line = os.environ.get("_TYPER_COMPLETE_ARGS", "")
    words = line.split()
    return words[1:] if line.endswith(" ") else words[1:-1]


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


def _global_options_after(root: typer.core.TyperGroup) -> None:
    """Accept the root's options after the command too (`cfgtool get --store other KEY`). Each command and group gets
    a hidden copy of every root option (`_AFTER_COMMAND`), unless it has an option or argument of that name. Its
    value replaces the root's in the command's `CliContext`; the root callback has run by then. Given twice, the
    later one wins."""
    copies = []
    for param in root.params:
        if param.name in _AFTER_COMMAND:
            option = copy.copy(param)
            option.hidden, option.expose_value = True, False  # type: ignore[attr-defined]
            option.callback = _AFTER_COMMAND[param.name]
            option.default = None if param.name != "version" else False
            copies.append(option)

    def add(command: object) -> None:
        for sub in getattr(command, "commands", {}).values():
            taken = {opt for param in sub.params for opt in param.opts}
            names = {param.name for param in sub.params}  # `rollback N` names its argument `version`
            sub.params += [option for option in copies if not taken & set(option.opts) and option.name not in names]
            add(sub)

    add(root)


def _set_context(field: str) -> Callable[[typer.Context, object, Any], None]:
    """A callback that sets the path `field` of the command's `CliContext`."""

    def callback(ctx: typer.Context, _param: object, value: Any) -> None:
        if value is not None:  # during a completion the root callback has not run: the root's values then
            ctx.obj = dataclasses.replace(cli_context(ctx), **{field: Path(value)})

    return callback


_AFTER_COMMAND: dict[str, Callable[..., Any]] = {
    "repo": _set_context("repo"),
    "store": _set_context("store"),
    "version": lambda _ctx, _param, value: _show_version(value),
}


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
