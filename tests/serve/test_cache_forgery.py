"""Every cache directory, damaged and forged: whoever can write the cache (a shared CI cache, a planted directory)
changes no answer and crashes nothing. One scene fills every cache a reader fills (the CLI's reads and publish,
the git-backed client, the HTTP client), then each attack is applied to every file of every cache directory at
once and the same questions are asked again. A cache directory this test does not know fails it: a new cache
must say here (and in docs/security.md) how it is checked."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cfgtool import ConfigClient, HttpConfigClient
from cfgtool.versions import rollback
from cfgtool.versions.artifact_rows import RowSeal
from tests.conftest import GitRepo
from tests.serve.conftest import SIZE_SCHEMA, SharedSmall, publish_change

Run = Callable[..., subprocess.CompletedProcess[str]]

# Every cache directory a reader fills, by the start of its name, and what checks its entries.
KNOWN = {
    "http": "sealed (the HTTP client's answers)",
    "refs-v": "sealed (ref and version answers)",
    "versions-v": "artifacts: rows under a keyed MAC; verdicts (.validated) sealed",
    "watches-v": "sealed (rollback watch lists)",
    "parse-v": "sealed shards",
    "nodes-v": "sealed shards",
    "schema-passes-v": "sealed shards",
    "settings-passes-v": "sealed shards",
    "structure-v": "sealed entries",
    "stat-v": "sealed files",
    "policy-code": "checked against the blob ids of the trusted ref on every use",
}


def _tag_forged(data: bytes) -> bytes:
    """The entry with other content and a tag made under another key (an attacker's own cfgtool)."""
    body = data[32:]
    changed = body.replace(b"3", b"7") if b"3" in body else body + b"\x00"
    return os.urandom(32) + changed


def _flipped(data: bytes) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 1]) if data else b"\x01"


ATTACKS: dict[str, Callable[[bytes], bytes]] = {
    "forged under another key": _tag_forged,
    "truncated": lambda data: data[: len(data) // 2],
    "a flipped byte": _flipped,
    "empty": lambda data: b"",
    "not this format": lambda data: b"\xff\xfe\x00 planted",
}


@pytest.fixture(scope="module")
def scene(shared_small: SharedSmall) -> SharedSmall:
    """`shared_small` changed once for the module's tests, which only read it (each through a cache of its own):
    v2 adds a schema (size at most 10) and sets /data/b size = 3; v3, tagged by hand, sets it to 5000 (it does
    not validate); v4 sets 4 and is rolled back; the branch still holds 4, with an unrelated change."""
    small = shared_small.repo
    files = {"store/_CONFIG_STORE": "name: small\nschemas: ../schemas\n", "schemas/size.yaml": SIZE_SCHEMA}
    publish_change(small, {**files, "store/data/b/main.conf": "size = 3\n"}, "a schema")
    small.write({"store/data/b/main.conf": "size = 5000\n"})
    small.commit("too big")
    small.git("tag", "-a", "config/v3", "-m", "made by hand")
    publish_change(small, {"store/data/b/main.conf": "size = 4\n"}, "four")
    rollback(small.root, reason="four is bad")
    small.write({"store/data/a/main.conf": "size = 2\n"})
    small.commit("unrelated")
    time.sleep(0.3)  # the working tree settled: the stat cache keeps its files
    return shared_small


def answers(repo: GitRepo, cache: Path, url: str, run: Run) -> list[Any]:
    """What every reader of the scene answers, reading through `cache`."""
    env = {"CFGTOOL_CACHE_DIR": str(cache)}

    def cli(*args: str) -> tuple[int, str]:
        done = run(*args, cwd=repo.root, env=env)
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout if done.returncode == 0 else done.stderr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the client names the version it skipped
        client = ConfigClient(repo.root, cache_dir=cache)
    remote = HttpConfigClient(url, store="small", version=2, cache_dir=cache)
    return [
        cli("get", "/data/b", "size", "--version", "2"),
        cli("get", "/data/b", "size", "--version", "3"),  # made by hand: refused
        cli("get", "/data/b", "size"),  # the working tree
        cli("compile"),  # the working tree, through the stat cache
        cli("publish"),  # refused: the branch still holds the rolled-back value
        (client.version, client.get_value("/data/b", "size")),
        (remote.version, remote.get_value("/data/b", "size"), remote.get_value("/data/a", "size")),
    ]


def attack(cache: Path, damage: Callable[[bytes], bytes]) -> int:
    """Apply `damage` to every file of every cache directory (an artifact's rows: forged under another key when
    the attack forges); how many files it touched."""
    touched = 0
    for path in sorted(p for p in cache.rglob("*") if p.is_file()):
        if path.suffix == ".sqlite" and damage is _tag_forged:
            with sqlite3.connect(path) as con:
                seal = RowSeal(os.urandom(32))
                rows = con.execute("SELECT key, config FROM nodes WHERE config IS NOT NULL").fetchall()
                for key, config in rows:
                    planted = config.replace("3", "7")
                    con.execute(
                        "UPDATE nodes SET config = ?, config_crc = ? WHERE key = ?",
                        (planted, seal.of(key, planted), key),
                    )
            con.close()
        else:
            path.write_bytes(damage(path.read_bytes()))
        touched += 1
    return touched


def test_every_cache_directory_is_known(scene: SharedSmall, run_cfgtool: Run, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    answers(scene.repo, cache, scene.server().url, run_cfgtool)
    found = sorted(p.name for p in cache.iterdir())
    unknown = [name for name in found if not any(name.startswith(prefix) for prefix in KNOWN)]
    assert not unknown, f"{unknown}: say how their entries are checked, here and in docs/security.md"
    assert {prefix for prefix in KNOWN for name in found if name.startswith(prefix)} >= set(KNOWN) - {"policy-code"}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_a_damaged_or_forged_cache_changes_no_answer(
    scene: SharedSmall, run_cfgtool: Run, tmp_path: Path, name: str
) -> None:
    url = scene.server().url
    cache = tmp_path / "cache"
    expected = answers(scene.repo, cache, url, run_cfgtool)
    assert expected[0][:2] == (0, "3\n") and expected[1][0] == 1 and expected[4][0] == 1
    assert expected[5] == (2, 3) and expected[6] == (2, 3, 1)
    assert attack(cache, ATTACKS[name]) >= 20
    assert answers(scene.repo, cache, url, run_cfgtool) == expected
