"""The cache key and the cache directory's owner: refused, as ssh refuses a key file, when another user owns
them or others may write them (a key: read them); then the caches stay correct, only slower, and say so once."""

from __future__ import annotations

import hmac
import os
import subprocess
from collections.abc import Callable
from hashlib import sha256
from pathlib import Path

import pytest

from cfgtool import ConfigClient
from cfgtool._util.cacheauth import TAG_BYTES, Sealer, cache_key, seal, unseal
from tests.conftest import GitRepo
from tests.serve.conftest import publish_change

Run = Callable[..., subprocess.CompletedProcess[str]]
NOBODY = 65534


@pytest.fixture
def published(tmp_path: Path) -> GitRepo:
    repo = GitRepo(tmp_path / "repo")
    publish_change(repo, {"store/_CONFIG_STORE": "name: s\n", "store/data/a/main.conf": "size = 1\n"}, "v1")
    return repo


def get(run: Run, repo: GitRepo, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = run("get", "/data/a", "size", "--version", "1", cwd=repo.root, env=env)
    assert done.returncode == 0 and done.stdout == "1\n", done.stderr
    return done


def test_a_cache_directory_others_may_write_is_not_used(run_cfgtool: Run, published: GitRepo, tmp_path: Path) -> None:
    cache = tmp_path / "shared"
    cache.mkdir(mode=0o777)
    cache.chmod(0o777)  # as a planted or carelessly shared directory would be
    done = get(run_cfgtool, published, {"CFGTOOL_CACHE_DIR": str(cache)})
    assert done.stderr.count(f"cache directory {cache} is not used") == 1 and "0777" in done.stderr
    assert list(cache.iterdir()) == []  # nothing read from it, nothing written to it
    assert ConfigClient(published.root, cache_dir=cache).get_value("/data/a", "size") == 1
    assert list(cache.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_cache_directory_of_another_user_is_not_used(run_cfgtool: Run, published: GitRepo, tmp_path: Path) -> None:
    cache = tmp_path / "theirs"
    cache.mkdir(mode=0o700)
    os.chown(cache, NOBODY, NOBODY)
    done = get(run_cfgtool, published, {"CFGTOOL_CACHE_DIR": str(cache)})
    assert f"cache directory {cache} is not used: it is owned by uid {NOBODY}" in done.stderr
    assert list(cache.iterdir()) == []


def test_the_cache_key_is_made_private_outside_the_cache(run_cfgtool: Run, published: GitRepo, tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {
        "CFGTOOL_CACHE_KEY_FILE": "",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "CFGTOOL_CACHE_DIR": str(tmp_path / "c"),
    }
    get(run_cfgtool, published, env)
    key = home / ".config" / "cfgtool" / "cache.key"
    assert key.stat().st_size == 32 and key.stat().st_mode & 0o777 == 0o600
    assert key.parent.stat().st_mode & 0o777 == 0o700
    first = key.read_bytes()
    assert get(run_cfgtool, published, env).stderr == ""  # the same key, the entries it sealed read back
    assert key.read_bytes() == first


@pytest.mark.parametrize("mode", [0o644, 0o604, 0o660])
def test_a_cache_key_others_may_read_is_refused(
    run_cfgtool: Run, published: GitRepo, tmp_path: Path, mode: int
) -> None:
    key = tmp_path / "cache.key"
    key.write_bytes(os.urandom(32))
    key.chmod(mode)
    env = {"CFGTOOL_CACHE_KEY_FILE": str(key), "CFGTOOL_CACHE_DIR": str(tmp_path / "c")}
    done = get(run_cfgtool, published, env)
    assert done.stderr.count(f"cache key {key} is refused") == 1 and f"chmod 600 {key}" in done.stderr
    assert not list((tmp_path / "c").rglob("*.validated"))  # nothing sealed under a key others may know


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_a_cache_key_of_another_user_is_refused(run_cfgtool: Run, published: GitRepo, tmp_path: Path) -> None:
    key = tmp_path / "cache.key"
    key.write_bytes(os.urandom(32))
    key.chmod(0o600)
    os.chown(key, NOBODY, NOBODY)
    env = {"CFGTOOL_CACHE_KEY_FILE": str(key), "CFGTOOL_CACHE_DIR": str(tmp_path / "c")}
    assert f"cache key {key} is refused: it is owned by uid {NOBODY}" in get(run_cfgtool, published, env).stderr


def test_a_short_cache_key_is_refused(run_cfgtool: Run, published: GitRepo, tmp_path: Path) -> None:
    key = tmp_path / "cache.key"
    key.write_bytes(b"")
    key.chmod(0o600)
    env = {"CFGTOOL_CACHE_KEY_FILE": str(key), "CFGTOOL_CACHE_DIR": str(tmp_path / "c")}
    assert "does not hold 32 bytes" in get(run_cfgtool, published, env).stderr


@pytest.mark.parametrize("size", [100, 2**16, 2**16 + 1, 2**20], ids=["small", "one-call", "just-over", "large"])
def test_an_entry_is_tagged_alike_at_every_size_and_any_change_is_a_miss(size: int) -> None:
    """A small entry is tagged in one call, a large one incrementally: both are the one HMAC of docs/security.md.
    A `Sealer` seals and opens as `seal` and `unseal` do."""
    data = os.urandom(size)
    key = cache_key()
    assert key is not None
    sealed, sealer = seal("test slot", data), Sealer()
    assert sealed is not None and sealed[:TAG_BYTES] == hmac.new(key, b"test slot\0" + data, sha256).digest()
    assert sealer.seal("test slot", data) == sealed
    assert unseal("test slot", sealed) == data and sealer.unseal("test slot", sealed) == data
    changed = sealed[:-1] + bytes([sealed[-1] ^ 1])
    for opened in (unseal, sealer.unseal):
        assert opened("test slot", changed) is None
        assert opened("another slot", sealed) is None
        assert opened("test slot", sealed[: TAG_BYTES - 1]) is None
