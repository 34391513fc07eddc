"""Every command's help, as a new user reads it: examples, and flags shown as flags."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest
import typer

from cfgtool.cli.app import build_app

Run = Callable[..., subprocess.CompletedProcess[str]]


def commands() -> list[list[str]]:
    group = typer.main.get_command(build_app())
    assert isinstance(group, typer.core.TyperGroup)
    found = []
    for name, command in group.commands.items():
        subs = getattr(command, "commands", None)
        found += [[name, sub] for sub in subs] if subs else [[name]]
    return found


@pytest.mark.parametrize("command", commands(), ids=" ".join)
def test_help_has_examples_and_shows_flags_as_flags(run_cfgtool: Run, command: list[str]) -> None:
    proc = run_cfgtool(*command, "--help", env={"COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    assert "Example:" in proc.stdout or "Examples:" in proc.stdout
    flags = [line for line in proc.stdout.splitlines() if "<bool>" in line]
    assert not flags, f"flags shown as taking a value: {flags}"


def test_shell_completion_is_offered(run_cfgtool: Run) -> None:
    proc = run_cfgtool("--help")
    assert "--install-completion" in proc.stdout and "--show-completion" in proc.stdout


def test_acl_group_help_has_examples_and_diff_help_names_current_and_previous(run_cfgtool: Run) -> None:
    acl = run_cfgtool("acl", "--help", env={"COLUMNS": "100"})
    assert acl.returncode == 0 and "Examples:" in acl.stdout and "cfgtool acl check User:alice" in acl.stdout
    diff = run_cfgtool("diff", "--help", env={"COLUMNS": "100"})
    assert "`current`" in diff.stdout and "`previous`" in diff.stdout and "cfgtool diff previous current" in diff.stdout
