"""Run the installed `cfgtool` command in a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest


def _cfgtool_command() -> list[str]:
    script = Path(sysconfig.get_path("scripts")) / "cfgtool"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "cfgtool"]  # not pip-installed: run from the source tree


@pytest.fixture
def run_cfgtool(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_cfgtool(*args, cwd=tmp_path, env=None)`: the finished process, stdout and stderr as text."""
    base_env = {k: v for k, v in os.environ.items() if k != "CFGTOOL_DEBUG"}

    def run(*args: str, cwd: Path = tmp_path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*_cfgtool_command(), *args],
            cwd=cwd,
            env={**base_env, **(env or {})},
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=60,
            check=False,
        )

    return run
