"""`cfgtool init [DIR]`: one library call (cfgtool.scaffold), then rendering."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Annotated

import typer

from cfgtool.cli.context import CliContext
from cfgtool.cli.versions_cmd import Fmt, OutputFormat
from cfgtool.errors import UsageError
from cfgtool.scaffold import REQUIREMENTS, STORE_DIR, InitResult, init_repository


def init_command(
    ctx: typer.Context,
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="Where to scaffold (created if missing).", show_default=".")
    ] = Path("."),
    add_missing: Annotated[
        bool,
        typer.Option(
            "--add-missing",
            help="DIR already holds a store: add only the scaffold files it lacks (existing files are never"
            " overwritten).",
        ),
    ] = False,
    requirement: Annotated[
        str | None,
        typer.Option(
            "--requirement",
            metavar="SPEC",
            help="How CI installs cfgtool, written to requirements.txt (default: this installation, e.g."
            " cfgtool==X.Y.Z or its git URL).",
            show_default=False,
        ),
    ] = None,
    fmt: Fmt = OutputFormat.TEXT,
) -> None:
    """Scaffold a new config repository that compiles cleanly out of the box.

    Writes a store (store/_CONFIG_STORE, the root node, an example dataset
    /data/orders and tag /tags/retention/LONG), a JSON Schema, the config
    workflows (.github/workflows/config-pr.yml, config-publish.yml,
    config-rollback.yml), a pre-commit hook that runs `cfgtool compile`,
    requirements.txt and a README; runs `git init` when DIR is in no git
    repository. Never overwrites a file: it lists the ones it skipped.

    Exit status: 0 done, 2 DIR already holds a store (without --add-missing)
    or cannot be written.

    Examples:
      cfgtool init my-configs
      cfgtool init . --add-missing
      cfgtool init my-configs --requirement "cfgtool @ git+https://example.com/org/cfgtool@v0.1.0"
    """
    cli: CliContext = ctx.obj
    if cli.store != Path(STORE_DIR):
        raise UsageError(f"init always scaffolds {STORE_DIR}/ (the workflows name it)", hint="drop --store")
    result = init_repository(directory, add_missing=add_missing, requirement=requirement)
    typer.echo(json.dumps(result.to_json(), indent=2) if fmt is OutputFormat.JSON else render_init(result, directory))


def render_init(result: InitResult, directory: Path) -> str:
    """What was created and skipped, and the next steps."""
    git_note = " (new git repository, branch main)" if result.git_initialized else ""
    head = "scaffolded a config repository" if result.created else "nothing to add: every scaffold file exists"
    lines = [f"{head} in {result.root}{git_note}"]
    lines += [f"  created  {rel}" for rel in result.created]
    lines += [f"  skipped  {rel} (exists; left as it is)" for rel in result.skipped]
    cd = [] if result.root == Path.cwd().resolve() else [f"  cd {shlex.quote(os.fspath(directory))}"]
    lines += [
        "next:",
        *cd,
        "  cfgtool compile",
        '  git add -A && git commit -m "Start the config repository"',
        f"  edit {REQUIREMENTS} so CI installs cfgtool from where your team gets it (now: {result.requirement})",
    ]
    return "\n".join(lines)
