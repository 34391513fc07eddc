"""The global options (`--repo`, `--store`, `--version`) before or after the command, run as real subprocesses
against a real git repository holding two stores."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def two_stores(repo: GitRepo) -> GitRepo:
    repo.write({"store/_CONFIG_STORE": "", "store/data/a/main.conf": "where = main\n"})
    repo.write({"other/_CONFIG_STORE": "name: other\n", "other/data/a/main.conf": "where = other\n"})
    repo.commit("two stores")
    return repo


def _where(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stderr
    return str(json.loads(proc.stdout))


@pytest.mark.parametrize(
    "args",
    [
        ["get", "--store", "other", "/data/a", "where"],
        ["get", "/data/a", "where", "--store=other"],
        ["--store", "store", "get", "/data/a", "where", "--store", "other"],  # the later one wins
    ],
    ids=["store-after-command", "store=-at-the-end", "later-wins"],
)
def test_global_store_after_the_command(run_cfgtool: Run, two_stores: GitRepo, args: list[str]) -> None:
    assert _where(run_cfgtool(*args, "--format", "json", cwd=two_stores.root)) == "other"


@pytest.mark.parametrize("spelling", [["--repo", "{}"], ["--repo={}"]], ids=["repo-space", "repo="])
def test_global_repo_after_the_command(
    run_cfgtool: Run, two_stores: GitRepo, tmp_path: Path, spelling: list[str]
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    repo_args = [part.format(two_stores.root) for part in spelling]
    proc = run_cfgtool("get", "/data/a", "where", "--format", "json", *repo_args, cwd=outside)
    assert _where(proc) == "main"


def test_global_options_after_a_group_command(run_cfgtool: Run, two_stores: GitRepo, tmp_path: Path) -> None:
    proc = run_cfgtool("acl", "list", "--repo", str(two_stores.root), "--store", "nosuch", cwd=tmp_path)
    assert proc.returncode == 2 and "no store directory 'nosuch'" in proc.stderr, proc.stderr


def test_global_version_after_a_command_without_its_own(run_cfgtool: Run, tmp_path: Path) -> None:
    proc = run_cfgtool("compile", "--version", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("cfgtool "), proc.stderr


def test_command_option_of_the_same_name_stays_the_commands(run_cfgtool: Run, two_stores: GitRepo) -> None:
    proc = run_cfgtool("get", "/data/a", "--version", "1", cwd=two_stores.root)  # get's --version: a config version
    assert proc.returncode == 2 and "version" in proc.stderr and not proc.stdout.startswith("cfgtool "), proc.stderr


def test_a_command_argument_named_like_a_global_option_stays_the_commands(run_cfgtool: Run, repo: GitRepo) -> None:
    """`rollback N` names its argument `version`: the hidden global `--version` must not take N's place."""
    repo.write({"store/_CONFIG_STORE": "", "store/main.conf": "a = 1\n"})
    repo.commit("one")
    assert run_cfgtool("publish", "-m", "one", cwd=repo.root).returncode == 0
    repo.write({"store/main.conf": "a = 2\n"})
    repo.commit("two")
    assert run_cfgtool("publish", "-m", "two", cwd=repo.root).returncode == 0
    proc = run_cfgtool("rollback", "2", "-m", "bad", cwd=repo.root)
    assert proc.returncode == 0, proc.stderr
    assert "rolled back" in run_cfgtool("versions", cwd=repo.root).stdout
