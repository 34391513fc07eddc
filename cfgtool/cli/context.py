"""Global options, parsed once by the root command and handed to every command through `typer.Context.obj`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CliContext:
    """`repo`: the config repository (None: the git repository containing the current directory). `store`: the store
    directory, relative to the repository root unless absolute."""

    repo: Path | None
    store: Path
