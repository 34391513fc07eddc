"""ConfigClient against real repositories: pinned versions, rollback safety, keys without a node, the cache."""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.client.client import ConfigClient
from cfgtool.client.local import GitBackend, StoreNotFound, compact_json
from cfgtool.snapshot.model import KeyNotFound
from cfgtool.versions import VersionNotFound, publish, rollback
from cfgtool.versions.artifact import FORMAT
from tests.conftest import copy_embedded

if TYPE_CHECKING:
    from tests.conftest import GitRepo

TOPIC = "/data/tracking/PageViewEvent"


@pytest.fixture
def published(tmp_path: Path) -> GitRepo:
    """A copy of the embedded store with v1 published, then a commit published as v2 (partitions 128 -> 256)."""
    repo = copy_embedded(tmp_path / "repo")
    publish(repo.root, message="first")
    conf = repo.root / "store/data/tracking/PageViewEvent/main.conf"
    conf.write_text(conf.read_text().replace("kafka.partitions = 128", "kafka.partitions = 256"))
    subprocess.run(["git", "-C", str(repo.root), "commit", "-qam", "more partitions"], check=True)
    publish(repo.root, message="second")
    return repo


def test_client_pins_the_current_version(published: GitRepo, tmp_path: Path) -> None:
    client = ConfigClient(published.root, cache_dir=tmp_path / "cache")
    assert client.version == 2
    assert client.get_value(TOPIC, "kafka.partitions") == 256
    assert client.get(TOPIC)["kafka"]["topic"] == "PageViewEvent"


def test_client_closes_as_a_client_of_a_server_does(published: GitRepo, tmp_path: Path) -> None:
    """A program that reads either kind of location closes its client the same way; a read after still works."""
    client = ConfigClient(published.root, cache_dir=tmp_path / "cache")
    client.close()
    assert client.get_value(TOPIC, "kafka.partitions") == 256


def test_client_keeps_reading_its_version_after_a_rollback(published: GitRepo, tmp_path: Path) -> None:
    running = ConfigClient(published.root, cache_dir=tmp_path / "cache")
    rollback(published.root, reason="too many partitions")
    assert running.version == 2 and running.get_value(TOPIC, "kafka.partitions") == 256
    fresh = ConfigClient(published.root, cache_dir=tmp_path / "cache")
    assert fresh.version == 1 and fresh.get_value(TOPIC, "kafka.partitions") == 128
    pinned = ConfigClient(published.root, version=2, cache_dir=tmp_path / "cache")  # rolled back, still readable
    assert pinned.get_value(TOPIC, "kafka.partitions") == 256


def test_client_key_without_a_node_inherits_with_its_own_name(published: GitRepo, tmp_path: Path) -> None:
    client = ConfigClient(published.root, cache_dir=tmp_path / "cache")
    phantom = client.lookup("/data/tracking/NewTopic")
    assert phantom.exists is False and phantom.node == "/data/tracking"
    assert phantom.config["kafka"]["topic"] == "NewTopic"  # ${cfgtool.name} of the key itself
    assert client.get("/data/tracking/NewTopic", nearest=True) == phantom.config
    assert client.exists(TOPIC)


def test_client_reads_of_a_key_without_a_node_fail_unless_asked_for_the_nearest(
    published: GitRepo, tmp_path: Path
) -> None:
    client = ConfigClient(published.root, cache_dir=tmp_path / "cache")
    typo = "/data/tracking/PageVeiwEvent"
    for read in (lambda: client.get(typo), lambda: client.get_value(typo, "kafka.partitions")):
        with pytest.raises(KeyNotFound, match=f"{typo} has no node .*did you mean {TOPIC}\\?"):
            read()
    with pytest.raises(KeyNotFound, match="has no node") as raised:
        client.get("/data/tracking/NewTopic")
    assert "did you mean" not in str(raised.value) and "nearest=True" in str(raised.value)
    assert client.get_value(typo, "kafka.partitions", nearest=True) == 8  # /data/tracking's, on purpose
    assert client.get_value(typo, "kafka.partitions", None, nearest=True) == 8
    with pytest.raises(KeyNotFound, match=re.escape('did you mean kafka.config."retention.ms"?')):
        client.get_value(TOPIC, "kafka.config.retention.ms")


def test_client_reads_keep_the_older_strict_argument_working(published: GitRepo, tmp_path: Path) -> None:
    """Programs written for `get(key, strict=...)` still run: strict=True raises as the default does now, and
    strict=False reads the nearest ancestor's config as it always did, with a DeprecationWarning."""
    client = ConfigClient(published.root, cache_dir=tmp_path / "cache")
    typo = "/data/tracking/PageVeiwEvent"
    with pytest.warns(DeprecationWarning, match="nearest="), pytest.raises(KeyNotFound, match="has no node"):
        client.get(typo, strict=True)
    with pytest.warns(DeprecationWarning, match="nearest="):
        assert client.get_value(typo, "kafka.partitions", strict=False) == 8
    with pytest.warns(DeprecationWarning):
        assert client.get(typo, False)["kafka"]["partitions"] == 8  # positional, as the older signature allowed


def test_client_queries_and_explain(published: GitRepo, tmp_path: Path) -> None:
    client = ConfigClient(published.root, cache_dir=tmp_path / "cache")
    assert "/tags/priority/HIGH" in client.tags(TOPIC)
    assert TOPIC in client.datasets("/tags/priority/HIGH")
    assert TOPIC in client.keys("/data/tracking")
    assert client.imports(TOPIC) == ["/tags/priority/HIGH"]
    why = client.explain(TOPIC, "kafka.partitions")
    assert why.value == 256 and why.origin is not None
    assert why.origin.file == "store/data/tracking/PageViewEvent/main.conf"


def artifacts(cache: Path) -> list[Path]:
    return sorted((cache / f"versions-v{FORMAT}").glob("*.sqlite"))


def test_client_second_process_reads_the_cached_artifact(
    published: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ConfigClient(published.root, cache_dir=tmp_path / "cache")
    assert len(artifacts(tmp_path / "cache")) == 1
    with monkeypatch.context() as patched:  # the second client compiles nothing
        patched.setattr(GitBackend, "_compile", lambda self: pytest.fail("compiled a cached version"))
        again = ConfigClient(published.root, cache_dir=tmp_path / "cache")
        assert again.get_value(TOPIC, "kafka.partitions") == 256
    artifacts(tmp_path / "cache")[0].write_bytes(b"garbage")  # an unreadable artifact is a miss, not an error
    assert ConfigClient(published.root, cache_dir=tmp_path / "cache").get_value(TOPIC, "kafka.partitions") == 256


def test_client_reads_a_git_url_through_a_clone(published: GitRepo, tmp_path: Path) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(published.root), str(bare)], check=True)
    client = ConfigClient(f"file://{bare}", cache_dir=tmp_path / "cache")
    assert client.version == 2 and client.get_value(TOPIC, "kafka.partitions") == 256


def test_client_errors_are_clear(published: GitRepo, tmp_path: Path) -> None:
    with pytest.raises(VersionNotFound):
        ConfigClient(published.root, version=99, cache_dir=tmp_path / "cache")
    with pytest.raises(StoreNotFound, match="no such directory"):
        ConfigClient(tmp_path / "nowhere", cache_dir=tmp_path / "cache")
    empty = tmp_path / "empty"
    shutil.copytree(published.root, empty)
    subprocess.run(["git", "-C", str(empty), "tag", "-l"], check=True, capture_output=True)
    for tag in subprocess.run(["git", "-C", str(empty), "tag"], capture_output=True, text=True).stdout.split():
        subprocess.run(["git", "-C", str(empty), "tag", "-d", tag], check=True, capture_output=True)
    with pytest.raises(StoreNotFound, match="no published version"):
        ConfigClient(empty, cache_dir=tmp_path / "cache")


def test_client_config_json_is_read_from_the_artifact(
    published: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    texts = ConfigClient(published.root, cache_dir=cache).config_json()
    client = ConfigClient(published.root, cache_dir=cache)
    assert set(texts) == set(client.snapshot.nodes)
    assert texts[TOPIC] == compact_json(client.get(TOPIC)) and json.loads(texts[TOPIC]) == client.get(TOPIC)
    assert not [p for p in (cache / f"versions-v{FORMAT}").iterdir() if p.name.startswith(".")]  # no temporary file
    monkeypatch.setattr("cfgtool.client.local.compact_json", lambda value: pytest.fail("encoded a cached config"))
    assert ConfigClient(published.root, cache_dir=cache).config_json() == texts  # as stored: nothing encoded


class _Payload:
    """What a crafted pickle would run on load."""

    def __init__(self, canary: Path) -> None:
        self.canary = canary

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (os.system, (f"touch {self.canary}",))


def test_damaged_and_hostile_cache_files_are_misses_and_nothing_runs(
    published: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "shared"))  # the parse and node caches
    cache = tmp_path / "cache"
    client = ConfigClient(published.root, cache_dir=cache)
    expected = client.get(TOPIC)
    texts = client.config_json()
    canary = tmp_path / "pwned"
    (artifact,) = artifacts(cache)
    original = artifact.read_bytes()
    hostile = [
        pickle.dumps(_Payload(canary)),  # a crafted pickle where the cache expects its own format
        b"",  # empty
        b"SQLite format 3\x00" + os.urandom(4080),  # a header, then random bytes
        os.urandom(4096),  # random bytes
        original[: len(original) // 2],  # truncated
    ]
    for bad in hostile:
        artifact.write_bytes(bad)
        again = ConfigClient(published.root, cache_dir=cache)
        assert again.get(TOPIC) == expected
        assert again.config_json() == texts
        artifact.write_bytes(original)
    assert not canary.exists()
    shards = list((tmp_path / "shared").glob("*/*.msgpack"))
    assert {p.parent.name.split("-v")[0] for p in shards} >= {"parse", "nodes"}
    for shard in shards:
        shard.write_bytes(pickle.dumps(_Payload(canary)))
    first = ConfigClient(published.root, cache_dir=tmp_path / "another", version=1)  # compiles: reads the shards
    assert first.get(TOPIC) == ConfigClient(published.root, version=1, cache_dir=cache).get(TOPIC)
    assert not canary.exists()


def test_cache_directories_are_private(published: GitRepo, tmp_path: Path) -> None:
    cache = tmp_path / "fresh" / "cache"
    ConfigClient(published.root, cache_dir=cache).config_json()
    folders = [cache, *(p for p in cache.rglob("*") if p.is_dir())]
    assert len(folders) >= 2
    assert {oct(p.stat().st_mode & 0o777) for p in folders} == {"0o700"}
