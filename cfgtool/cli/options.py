"""Options shared by `compile`, `publish` and the query commands (`--ref`, `--var`, `--all`, ...), and their parsing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import typer

from cfgtool.cli.completion import complete_refs, complete_variables, complete_versions
from cfgtool.cli.context import CliContext
from cfgtool.store.assignments import parse_assignments

if TYPE_CHECKING:
    from cfgtool.compile.compiler import CompileResult
    from cfgtool.snapshot.model import Reading

Ref = Annotated[
    str | None,
    typer.Option(
        "--ref",
        metavar="REF",
        help="Read the store at this git ref (branch, tag or commit; `current` or `previous`: that version)"
        " instead of the working tree.",
        show_default=False,
        autocompletion=complete_refs,
    ),
]

Version = Annotated[
    str | None,
    typer.Option(
        "--version",
        "-V",
        metavar="N",
        help="Read published version N (rolled back or not), `current` (the current version) or `previous` (the"
        " good version below it) instead of the working tree; not with --ref.",
        show_default=False,
        autocompletion=complete_versions,
    ),
]

Vars = Annotated[
    list[str] | None,
    typer.Option(
        "--var",
        metavar="NAME=VALUE",
        help="Set an includes variable declared in _CONFIG_STORE (repeatable); others take their default.",
        show_default=False,
        autocompletion=complete_variables,
    ),
]

ListAll = Annotated[
    bool,
    typer.Option(
        "--all",
        "-a",
        help="List every problem in the text report (default: the first 50 causes, each once, then how many more).",
    ),
]


def compile_for(
    ctx: typer.Context, ref: str | None, variables: Sequence[str] | None, *, base: str | None, principal: str | None
) -> CompileResult:
    """The store named by the global options (`--repo`, `--store`) at `ref` with `--var` values, compiled and checked
    as `cfgtool compile` reports it (`cfgtool.versions.sticky.compile_checked`). A compile that takes more than a
    second shows a progress bar on a terminal, when the command's `--format` is text."""
    from cfgtool.cli.progress import terminal_progress
    from cfgtool.versions.sticky import compile_checked  # imported by the command that compiles, not at start-up

    cli: CliContext = ctx.obj
    with terminal_progress(ctx.params.get("fmt", "text") == "text") as progress:
        return compile_checked(
            cli.repo, cli.store, ref_for(ctx, ref, None), parse_assignments(variables), base=base,
            principal=principal, progress=progress,
        )  # fmt: skip


def version_number_arg(text: str) -> int:
    """A version number on the command line, by the one rule (`version_number`): `007` is not version 7."""
    from cfgtool.versions.names import version_number

    number = version_number(text.strip())
    if number is None:
        raise typer.BadParameter(f"{text!r} is not a version number: 1 to 9 digits without a leading zero, as in 5")
    return number


def ref_for(ctx: typer.Context, ref: str | None, version: str | None) -> str | None:
    """The ref `--ref` or `--version` names; None is the working tree. `current` and `previous`, as either, name that
    version. Both at once is a usage error."""
    from cfgtool.versions.names import split_ref, version_spec

    cli: CliContext = ctx.obj
    ref, version = split_ref(ref, version)
    if version is None:
        return ref
    from cfgtool.versions.current import resolve_version

    return resolve_version(cli.repo, version_spec(version), cli.store)


def read_at_ref(ctx: typer.Context, ref: str | None, variables: Sequence[str] | None, version: str | None) -> Reading:
    """The store at `--ref` or `--version` as a query reads it (`cfgtool.versions.reading.read_for_query`), with a
    progress bar when a cold cache compiles. One of `ref` and `version` is given."""
    from cfgtool.cli.progress import terminal_progress
    from cfgtool.versions.reading import read_for_query

    cli: CliContext = ctx.obj
    with terminal_progress(ctx.params.get("fmt", "text") == "text") as progress:
        return read_for_query(cli.repo, cli.store, ref=ref, version=version, variables=variables, progress=progress)
