"""The compiled versions in the cache stay within their budget (`CFGTOOL_VERSIONS_CACHE_MB`): the least recently
read go first, the one just written and the ones open in a reader keep working, a killed writer's leftovers are
cleared, and a budget that is not a number is a usage error."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cfgtool._util.cachedir import MB, STALE_TEMPORARY_S
from cfgtool.client.client import ConfigClient
from cfgtool.versions import publish
from cfgtool.versions.artifact import FORMAT
from tests.conftest import GitRepo, copy_embedded

TOPIC = "/data/tracking/PageViewEvent"
CONF = "store/data/tracking/PageViewEvent/main.conf"


@pytest.fixture(scope="module")
def three_versions(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    """The embedded store published three times, with kafka.partitions 1, 2 and 3."""
    repo = copy_embedded(tmp_path_factory.mktemp("pruning") / "repo")
    conf = repo.root / CONF
    text = conf.read_text()
    for n in (1, 2, 3):
        conf.write_text(text.replace("kafka.partitions = 128", f"kafka.partitions = {n}"))
        repo.commit(f"partitions {n}")
        publish(repo.root, message=f"v{n}")
    return repo


def versions_dir(cache: Path) -> Path:
    return cache / f"versions-v{FORMAT}"


def partitions(repo: GitRepo, cache: Path, version: int) -> int:
    value = ConfigClient(repo.root, version=version, cache_dir=cache).get_value(TOPIC, "kafka.partitions")
    assert isinstance(value, int)
    return value


def artifact_of(repo: GitRepo, cache: Path, version: int) -> Path:
    """The artifact file a client of `version` reads (the only one named by its commit's content)."""
    before = set(versions_dir(cache).glob("*.sqlite")) if versions_dir(cache).is_dir() else set()
    partitions(repo, cache, version)
    new = set(versions_dir(cache).glob("*.sqlite")) - before
    assert len(new) == 1
    return new.pop()


def test_the_least_recently_read_version_goes_first(
    three_versions: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    v1 = artifact_of(three_versions, cache, 1)
    monkeypatch.setenv("CFGTOOL_VERSIONS_CACHE_MB", str(2.5 * v1.stat().st_size / MB))  # room for two
    v2 = artifact_of(three_versions, cache, 2)
    os.utime(v1, (time.time() - 60, time.time() - 60))
    os.utime(v2, (time.time() - 30, time.time() - 30))
    assert partitions(three_versions, cache, 1) == 1  # read again: now the most recently read of the two
    assert v1.stat().st_mtime > v2.stat().st_mtime
    v3 = artifact_of(three_versions, cache, 3)
    assert sorted(versions_dir(cache).glob("*.sqlite")) == sorted([v1, v3])
    assert partitions(three_versions, cache, 2) == 2  # a removed version is compiled again, same answer


def test_the_version_just_written_stays_even_over_the_budget_and_open_readers_keep_reading(
    three_versions: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CFGTOOL_VERSIONS_CACHE_MB", "0")
    reader = ConfigClient(three_versions.root, version=1, cache_dir=cache)
    assert len(list(versions_dir(cache).glob("*.sqlite"))) == 1
    assert partitions(three_versions, cache, 2) == 2  # writes v2's artifact, which removes v1's
    assert len(list(versions_dir(cache).glob("*.sqlite"))) == 1
    assert reader.get_value(TOPIC, "kafka.partitions") == 1  # still reads the file it opened
    assert reader.get(TOPIC) == ConfigClient(three_versions.root, version=1, cache_dir=tmp_path / "other").get(TOPIC)


def test_a_killed_writers_old_temporary_is_cleared_and_a_live_ones_is_not(
    three_versions: GitRepo, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    partitions(three_versions, cache, 1)
    old, live = versions_dir(cache) / ".abc.sqlite.killed", versions_dir(cache) / ".def.sqlite.writing"
    old.write_bytes(b"half an artifact")
    live.write_bytes(b"half an artifact")
    then = time.time() - STALE_TEMPORARY_S - 60
    os.utime(old, (then, then))
    partitions(three_versions, cache, 2)
    assert not old.exists()
    assert live.exists()


@pytest.mark.parametrize("budget", ["lots", "-1", "nan"])
def test_a_budget_that_is_not_a_size_is_a_usage_error(
    three_versions: GitRepo,
    tmp_path: Path,
    run_cfgtool: Callable[..., subprocess.CompletedProcess[str]],
    budget: str,
) -> None:
    env = {"CFGTOOL_CACHE_DIR": str(tmp_path / "cache"), "CFGTOOL_VERSIONS_CACHE_MB": budget}
    done = run_cfgtool("get", TOPIC, "--version", "1", cwd=three_versions.root, env=env)
    assert done.returncode == 2, done.stderr
    assert "CFGTOOL_VERSIONS_CACHE_MB" in done.stderr
    assert "megabytes" in done.stderr
    assert "Traceback" not in done.stderr
