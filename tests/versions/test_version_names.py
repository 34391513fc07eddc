"""`current` and `previous` wherever a version or ref is accepted: the CLI (`get --version`, `--ref`, `diff`,
`publish --ref`) and ConfigClient(version=), with clear errors when there is no such version."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from cfgtool import ConfigClient
from cfgtool.versions import VersionNotFound, publish, rollback
from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def three(repo: GitRepo) -> GitRepo:
    """Versions 1 (size 1), 2 (size 2) and 3 (size 3, rolled back): current is 2, previous is 1."""
    repo.write({"store/_CONFIG_STORE": "", "store/main.conf": "owner = demo\n"})
    for size in (1, 2, 3):
        repo.write({"store/data/a/main.conf": f"size = {size}\n"})
        repo.commit(f"size {size}")
        assert publish(repo.root, message=f"size {size}").version == size
    rollback(repo.root, reason="size 3 broke it")
    return repo


def _size(proc: subprocess.CompletedProcess[str]) -> object:
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["size"]


def test_the_cli_reads_current_and_previous(three: GitRepo, run_cfgtool: Run) -> None:
    def get(*args: str) -> object:
        return _size(run_cfgtool("get", "/data/a", *args, "--format", "json", cwd=three.root))

    assert get("--version", "current") == 2
    assert get("--version", "previous") == 1
    assert get("--ref", "previous") == 1
    assert get("--version", "3") == 3
    diff = run_cfgtool("diff", "previous", "current", "--format", "json", cwd=three.root)
    assert diff.returncode == 0, diff.stderr
    sides = json.loads(diff.stdout)
    assert (sides["from"]["version"], sides["to"]["version"]) == (1, 2)
    assert sides["changes"][0]["values"][0] == {**sides["changes"][0]["values"][0], "old": 1, "new": 2}
    restored = run_cfgtool("publish", "--ref", "previous", "-m", "restore", "--format", "json", cwd=three.root)
    assert restored.returncode == 0, restored.stderr
    assert json.loads(restored.stdout)["version"] == 4
    assert get("--version", "current") == 1


def test_no_current_or_previous_version_is_a_clear_error(repo: GitRepo, run_cfgtool: Run) -> None:
    repo.write({"store/_CONFIG_STORE": "", "store/data/a/main.conf": "size = 1\n"})
    repo.commit("one")
    proc = run_cfgtool("get", "/data/a", "--version", "current", cwd=repo.root)
    assert proc.returncode == 2 and "there is no current version: no version has been published yet" in proc.stderr
    publish(repo.root)
    proc = run_cfgtool("get", "/data/a", "--version", "previous", cwd=repo.root)
    assert proc.returncode == 2, proc.stderr
    assert "there is no previous version: no good version is below the current version 1" in proc.stderr
    proc = run_cfgtool("get", "/data/a", "--version", "latest", cwd=repo.root)
    assert proc.returncode == 2 and "'latest' is not a version" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_client_pins_current_and_previous(three: GitRepo) -> None:
    previous = ConfigClient(three.root, version="previous")
    assert (previous.version, previous.get("/data/a")["size"]) == (1, 1)
    current = ConfigClient(three.root, version="current")
    assert (current.version, current.get("/data/a")["size"]) == (2, 2)
    assert ConfigClient(three.root).version == 2
    rollback(three.root, reason="2 is bad too")
    with pytest.raises(VersionNotFound, match="no good version is below the current version 1"):
        ConfigClient(three.root, version="previous")
