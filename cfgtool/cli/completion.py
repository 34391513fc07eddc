"""Tab completion of keys, tags, versions and `--var` values (the shell calls cfgtool at each Tab).

Each function is a typer `autocompletion` callback: it finds the repository and store the command line names
so far and asks the library (`cfgtool.store.completion`, `cfgtool.versions.completion`) for candidates. A
completion prints no error: anything that goes wrong gives no candidates.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import typer

from cfgtool.cli.context import CliContext


def complete_keys(ctx: typer.Context, incomplete: str) -> list[str]:
    from cfgtool.store.completion import complete_key

    return _candidates(ctx, lambda cli, cache: complete_key(_store_dir(cli, cache), incomplete))


def complete_tags(ctx: typer.Context, incomplete: str) -> list[str]:
    from cfgtool.store.completion import complete_tag

    return _candidates(ctx, lambda cli, cache: complete_tag(_store_dir(cli, cache), incomplete))


def complete_variables(ctx: typer.Context, incomplete: str) -> list[str]:
    from cfgtool.store.completion import complete_variable

    return _candidates(ctx, lambda cli, cache: complete_variable(_store_dir(cli, cache), incomplete))


def complete_versions(ctx: typer.Context, incomplete: str) -> list[str]:
    from cfgtool.versions.completion import version_candidates

    return _candidates(ctx, lambda cli, cache: version_candidates(cli.repo, cli.store, cache, incomplete))


def complete_refs(ctx: typer.Context, incomplete: str) -> list[str]:
    """A ref (`--ref`): `current`, `previous` or a version's tag."""
    from cfgtool.versions.completion import version_candidates

    return _candidates(ctx, lambda cli, cache: version_candidates(cli.repo, cli.store, cache, incomplete, tags=True))


def complete_version_numbers(ctx: typer.Context, incomplete: str) -> list[str]:
    """A version number (`rollback N`, `--to N`)."""
    return [name for name in complete_versions(ctx, incomplete) if name.isdigit()]


def complete_sides(ctx: typer.Context, incomplete: str) -> list[str]:
    """A side of `diff`: a version, or `worktree`."""
    from cfgtool.versions.names import WORKTREE

    found = complete_versions(ctx, incomplete)
    return [*found, WORKTREE] if WORKTREE.startswith(incomplete) else found


def _candidates(ctx: typer.Context, ask: Callable[[CliContext, Path], list[str]]) -> list[str]:
    from cfgtool._util.cachedir import cache_root

    try:
        return ask(cli_context(ctx), cache_root())
    except Exception:
        return []


def cli_context(ctx: typer.Context) -> CliContext:
    """The global options as given so far. The root command's callback has not run during a completion. So they are
    read from the root context's parameters, and from the command's own copies (`app.py`)."""
    if isinstance(ctx.obj, CliContext):
        return ctx.obj
    params = ctx.find_root().params
    repo, store = params.get("repo"), params.get("store")
    return CliContext(repo=Path(repo) if repo else None, store=Path(store) if store else Path("store"))


def _store_dir(cli: CliContext, cache: Path) -> Path:
    from cfgtool.store.completion import working_store

    return working_store(cli.repo, cli.store, cache)
