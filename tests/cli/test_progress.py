"""The compile progress bar: drawn on a terminal (a real pseudo-terminal), never when stderr is piped or the
output is JSON. `CFGTOOL_PROGRESS_DELAY=0` shows it at once (by default only compiles over a second show it)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.conftest import GitRepo

BAR = b"resolving"  # the stage the bar names while nodes are resolved


def _on_terminal(repo: GitRepo, *args: str, delay: str) -> tuple[int, bytes]:
    """Run `cfgtool --repo REPO ARGS` with stdout and stderr on a pseudo-terminal: exit status and all it drew."""
    leader, follower = pty.openpty()
    env = {**os.environ, "CFGTOOL_PROGRESS_DELAY": delay, "COLUMNS": "100", "TERM": "xterm"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cfgtool", "--repo", str(repo.root), *args],
        stdin=subprocess.DEVNULL, stdout=follower, stderr=follower, env=env, cwd=Path(repo.root),
    )  # fmt: skip
    os.close(follower)
    drawn = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process ended
            break
        if not chunk:
            break
        drawn += chunk
    os.close(leader)
    return proc.wait(timeout=60), drawn


def test_progress_shown_on_a_terminal_for_a_slow_compile(
    embedded_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cold"))  # a cold compile resolves every node
    status, drawn = _on_terminal(embedded_repo, "compile", delay="0")
    assert status == 0, drawn
    assert BAR in drawn
    assert b"0 errors" in drawn  # the report follows (the bar is removed when the compile ends)


def test_progress_not_shown_for_a_fast_compile(
    embedded_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cold"))
    status, drawn = _on_terminal(embedded_repo, "compile", delay="30")
    assert status == 0, drawn
    assert BAR not in drawn


def test_progress_not_shown_with_format_json(
    embedded_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cold"))
    status, drawn = _on_terminal(embedded_repo, "compile", "--format", "json", delay="0")
    assert status == 0, drawn
    assert BAR not in drawn
    assert drawn.lstrip().startswith(b"{")


def test_progress_not_shown_when_piped(embedded_repo: GitRepo, tmp_path: Path) -> None:
    env = {**os.environ, "CFGTOOL_PROGRESS_DELAY": "0", "CFGTOOL_CACHE_DIR": str(tmp_path / "cold")}
    done = subprocess.run(
        [sys.executable, "-m", "cfgtool", "--repo", str(embedded_repo.root), "compile"],
        capture_output=True, env=env, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert BAR not in done.stderr and BAR not in done.stdout


def test_progress_shown_for_a_query_with_a_cold_cache(
    embedded_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cold"))
    status, drawn = _on_terminal(embedded_repo, "get", "--ref", "HEAD", "/", delay="0")
    assert status == 0, drawn
    assert BAR in drawn
