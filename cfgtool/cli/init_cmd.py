"""`cfgtool init [DIR]`: one library call (cfgtool.scaffold), then rendering."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cfgtool.cli.context import CliContext
from cfgtool.cli.versions_cmd import Fmt, OutputFormat
from cfgtool.diagnostics import plural
from cfgtool.errors import UsageError

if TYPE_CHECKING:
    from cfgtool.scaffold import InitResult


def init_command(
    ctx: typer.Context,
    directory: Annotated[
        Path | None,
        typer.Argument(
            metavar="DIR",
            help="Where to scaffold (created if missing): a repository's root, or a directory outside any"
            " repository (default: --repo, else the current directory).",
            show_default=False,
        ),
    ] = None,
    add_missing: Annotated[
        bool,
        typer.Option(
            "--add-missing",
            help="DIR already holds a store: add only the workflows, hook, requirements and README it lacks;"
            " nothing under store/ or schemas/ is written and no existing file is overwritten.",
        ),
    ] = False,
    requirement: Annotated[
        str | None,
        typer.Option(
            "--requirement",
            metavar="SPEC",
            help='How CI installs cfgtool, written to requirements.txt, e.g. "cfgtool @'
            ' git+https://example.com/org/cfgtool@v0.1.0" (default: the git URL this cfgtool was installed from,'
            " else a placeholder to replace).",
            show_default=False,
        ),
    ] = None,
    fmt: Fmt = OutputFormat.TEXT,
) -> None:
    """Scaffold a new config repository that compiles cleanly out of the box.

    Writes a store: store/_CONFIG_STORE, the root node, an example dataset
    /data/orders and tag /tags/retention/LONG. Writes a JSON Schema and the
    config workflows (.github/workflows/config-pr.yml, config-publish.yml,
    config-rollback.yml). Writes a pre-commit hook that runs
    `cfgtool compile`, requirements.txt and a README. Runs `git init` when DIR
    is in no git repository. Never overwrites a file: it lists the ones it
    skipped.

    With --add-missing around an existing store, the store is left exactly as
    it is: no sample nodes, no ACL, no schema. Its configs, its rules and its
    digest do not change. Add an ACL in a reviewed change of its own
    (docs/access.md, "Rolling it out").

    Exit status: 0 done; 2 DIR already holds a store (without --add-missing),
    is inside a repository but not its root, or cannot be written.

    Examples:
      cfgtool init my-configs
      cfgtool init . --add-missing
      cfgtool init my-configs --requirement "cfgtool @ git+https://example.com/org/cfgtool@v0.1.0"
    """
    from cfgtool.scaffold import STORE_DIR, init_repository  # here, not when the CLI is built

    cli: CliContext = ctx.obj
    if cli.store != Path(STORE_DIR):
        raise UsageError(f"init always scaffolds {STORE_DIR}/ (the workflows name it)", hint="drop --store")
    target = directory or cli.repo or Path(".")
    result = init_repository(target, add_missing=add_missing, requirement=requirement)
    typer.echo(json.dumps(result.to_json(), indent=2) if fmt is OutputFormat.JSON else render_init(result, target))


def render_init(result: InitResult, directory: Path) -> str:
    """What was created and skipped, and the next steps."""
    from cfgtool.scaffold import PUBLISH_BRANCH, REQUIREMENTS, UNSET_REQUIREMENT

    git_note = f" (new git repository, branch {PUBLISH_BRANCH})" if result.git_initialized else ""
    head = "scaffolded a config repository" if result.created else "nothing to add: every file init would add exists"
    lines = [f"{head} in {result.root}{git_note}"]
    lines += [f"  created  {rel}" for rel in result.created]
    lines += [f"  skipped  {rel} (exists; left as it is)" for rel in result.skipped]
    if result.left_out:
        lines.append(
            f"  left out {plural(len(result.left_out), 'scaffold file')} of store/ and schemas/: the existing store"
            " keeps its configs and rules (add an ACL, store/_ACL.yaml, in a reviewed change of its own)"
        )
    cd = [] if result.root == Path.cwd().resolve() else [f"  cd {shlex.quote(os.fspath(directory))}"]
    add = "git add -A" if result.git_initialized else "git add " + " ".join(shlex.quote(r) for r in result.created)
    lines += ["next:", *cd, "  cfgtool compile"]
    if result.created:
        lines.append(f'  {add} && git commit -m "Start the config repository"')
    if result.requirement == UNSET_REQUIREMENT:
        lines.append(
            f"  set how CI installs cfgtool in {REQUIREMENTS} (its git URL, or --requirement SPEC next time);"
            " the PyPI project named cfgtool is a different one"
        )
    else:
        lines.append(f"  CI installs cfgtool as {result.requirement} ({REQUIREMENTS})")
    if result.branch not in (None, PUBLISH_BRANCH):
        lines.append(
            f"note: config-publish.yml publishes pushes to {PUBLISH_BRANCH}; this repository is on {result.branch}:"
            " edit its `branches:` if that is your main branch"
        )
    return "\n".join(lines)
