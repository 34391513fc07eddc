"""A version tagged by hand whose compile, schemas or policies report an error is never applied: the server
does not serve it, the git-backed ConfigClient pins the newest good version below it (with a warning naming
the tag) or refuses it when asked for by number, and `cfgtool get --version` prints its error, exit 1."""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cfgtool.client.client import ConfigClient
from cfgtool.client.local import SkippedVersionWarning, VersionHasErrors
from tests.conftest import GitRepo
from tests.serve.conftest import SIZE_SCHEMA, publish_change

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def bad_current(small: GitRepo) -> GitRepo:
    """Version 2 adds a schema (size at most 10); version 3, tagged by hand, sets /data/b size = 5000."""
    files = {"store/_CONFIG_STORE": "name: small\nschemas: ../schemas\n", "schemas/size.yaml": SIZE_SCHEMA}
    publish_change(small, {**files, "store/data/b/main.conf": "size = 3\n"}, "a schema")
    small.write({"store/data/b/main.conf": "size = 5000\n"})
    small.commit("too big")
    small.git("tag", "-a", "config/v3", "-m", "made by hand")
    return small


def test_the_client_skips_a_current_version_with_errors_and_names_it(bad_current: GitRepo, tmp_path: Path) -> None:
    with pytest.warns(SkippedVersionWarning, match=r"reading version 2: skipped config/v3: .*E_SCHEMA") as said:
        client = ConfigClient(bad_current.root, cache_dir=tmp_path / "cache")
    assert [w.filename for w in said] == [__file__]  # the line that made the client
    assert client.version == 2 and client.get_value("/data/b", "size") == 3
    with pytest.warns(SkippedVersionWarning):  # the verdict is cached: the same answer again
        assert ConfigClient(bad_current.root, cache_dir=tmp_path / "cache", version="current").version == 2


def test_the_client_refuses_a_version_with_errors_asked_for_by_number(bad_current: GitRepo, tmp_path: Path) -> None:
    with pytest.raises(VersionHasErrors, match=r"version 3 \(\w+\) does not validate: .*E_SCHEMA"):
        ConfigClient(bad_current.root, cache_dir=tmp_path / "cache", version=3)
    assert ConfigClient(bad_current.root, cache_dir=tmp_path / "cache", version=2).get_value("/data/b", "size") == 3


def test_the_client_skips_a_current_version_that_does_not_compile(small: GitRepo, tmp_path: Path) -> None:
    small.write({"store/data/a/main.conf": "size = {\n"})
    small.commit("broken")
    small.git("tag", "-a", "config/v2", "-m", "made by hand")
    with pytest.warns(SkippedVersionWarning, match=r"skipped config/v2: .*E_SYNTAX"):
        assert ConfigClient(small.root, cache_dir=tmp_path / "cache").version == 1


@pytest.mark.parametrize("version", ["current", "3"])
def test_get_prints_the_error_of_a_version_with_errors(bad_current: GitRepo, run_cfgtool: Run, version: str) -> None:
    got = run_cfgtool("get", "/data/b", "size", "--version", version, cwd=bad_current.root)
    assert got.returncode == 1 and got.stdout == "", got.stdout
    assert "version 3" in got.stderr and "E_SCHEMA" in got.stderr and "Traceback" not in got.stderr
    good = run_cfgtool("get", "/data/b", "size", "--version", "2", cwd=bad_current.root)
    assert good.returncode == 0 and good.stdout.strip() == "3", good.stderr


@pytest.mark.parametrize(
    "planted",
    [b"", b"\xff\xfe not text", b"E_SCHEMA planted", hashlib.sha256(b"").digest()],
    ids=["empty-says-valid", "not-utf8", "text-says-invalid", "checksum-as-tag"],
)
def test_a_planted_verdict_is_a_miss(bad_current: GitRepo, tmp_path: Path, planted: bytes) -> None:
    """Whoever can write the cache rewrites every cached verdict: the bad hand-made version 3 is still refused,
    the good version 2 still read, and nothing crashes."""
    cache = tmp_path / "cache"
    with pytest.warns(SkippedVersionWarning):
        ConfigClient(bad_current.root, cache_dir=cache)
    verdicts = list(cache.rglob("*.validated"))
    assert len(verdicts) == 2  # versions 3 and 2
    for verdict in verdicts:
        verdict.write_bytes(planted)
    with pytest.raises(VersionHasErrors, match="E_SCHEMA"):
        ConfigClient(bad_current.root, cache_dir=cache, version=3)
    assert ConfigClient(bad_current.root, cache_dir=cache, version=2).get_value("/data/b", "size") == 3
