"""`cfgtool hocon FILE...`: resolve standalone HOCON files and print the result."""

from __future__ import annotations

from typing import Annotated

import typer

from cfgtool.snapshot.formats import Format, check_env_prefix, render


def hocon(
    files: Annotated[
        list[str],
        typer.Argument(
            help="HOCON files, the first file with the highest priority (.properties files are read as Java"
            " properties).",
            metavar="FILE",
            show_default=False,
        ),
    ],
    fmt: Annotated[
        Format,
        typer.Option("--format", "-f", help="Output format; properties flattens to a.b.c=value lines."),
    ] = Format.JSON,
    env_prefix: Annotated[
        str,
        typer.Option(
            "--env-prefix",
            metavar="PREFIX",
            help="Start every variable of --format env with PREFIX (APP_): without one, a variable that a shell, "
            "the dynamic linker or a runtime reads as code (LD_PRELOAD, BASH_ENV, PYTHONPATH, ...) is refused.",
        ),
    ] = "",
) -> None:
    """Parse standalone HOCON files, merge them (the first file wins), resolve once and print the config.

    Resolution is hermetic: ${...} never reads environment variables. It reads
    no store and needs no repository: a quick way to try HOCON.

    Examples:
      cfgtool hocon application.conf
      cfgtool hocon overrides.conf defaults.conf --format hocon
    """
    from cfgtool.compile.standalone import resolve_files  # here, not when the CLI is built

    check_env_prefix(env_prefix)
    typer.echo(render(resolve_files(files).value, fmt, env_prefix=env_prefix), nl=False)
