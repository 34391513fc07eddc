"""Version artifacts (cfgtool/artifact.py): the snapshot read back equals the compiled one, provenance included;
reads decode only the rows they need; a damaged, foreign or stale artifact is a miss; a row found damaged after
opening is recovered by a compile; readers keep reading while the file is replaced."""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cfgtool.artifact_rows as rows_module
from cfgtool.artifact import FORMAT, artifact_path, open_artifact, write_artifact
from cfgtool.client import ConfigClient
from cfgtool.compile import CompileResult, compile_store
from cfgtool.snapshot import Snapshot
from cfgtool.versions import publish
from tests.conftest import GitRepo, copy_embedded

TOPIC = "/data/tracking/PageViewEvent"


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    repo = copy_embedded(tmp_path_factory.mktemp("artifact") / "repo")
    publish(repo.root, message="v1")
    return repo


@pytest.fixture(scope="module")
def compiled(embedded: GitRepo) -> CompileResult:
    return compile_store(embedded.root, "store", "config/v1", {}, check_variables=False, validate=False)


def written(result: CompileResult, cache: Path, variables: dict[str, str] | None = None) -> Path:
    snapshot = result.snapshot
    assert snapshot.source.commit is not None
    path = artifact_path(cache, snapshot.source.commit, snapshot.store, variables or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    write_artifact(path, snapshot, result.diagnostics, variables or {})
    return path


def reopened(result: CompileResult, path: Path, variables: dict[str, str] | None = None) -> Snapshot:
    commit = result.snapshot.source.commit
    assert commit is not None
    found = open_artifact(path, commit=commit, store=result.snapshot.store, variables=variables or {})
    assert found is not None
    assert found.diagnostics == result.diagnostics
    return found.reading("config/v1", lambda: pytest.fail("recovered an intact artifact")).snapshot


def test_the_artifact_reads_back_the_compiled_snapshot_with_its_provenance(
    compiled: CompileResult, tmp_path: Path
) -> None:
    snapshot = reopened(compiled, written(compiled, tmp_path))
    assert snapshot.digest == compiled.snapshot.digest
    # the versioned JSON form covers every node's config, layers, imports, provenance (computed again from the
    # artifact's texts), the texts and the sealed secrets
    assert json.dumps(snapshot.to_json()) == json.dumps(compiled.snapshot.to_json())
    assert snapshot.lookup("/data/tracking/NewTopic") == compiled.snapshot.lookup("/data/tracking/NewTopic")


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The keys whose rows were decoded, in order."""
    seen: list[str] = []
    decode = rows_module.Nodes._decode

    def counting(self: Any, key: str, *args: Any) -> Any:
        seen.append(key)
        return decode(self, key, *args)

    monkeypatch.setattr(rows_module.Nodes, "_decode", counting)
    yield seen


def test_a_cached_client_decodes_only_the_rows_it_reads(
    embedded: GitRepo, tmp_path: Path, decoded: list[str]
) -> None:
    ConfigClient(embedded.root, cache_dir=tmp_path)  # compiles and writes the artifact
    decoded.clear()
    client = ConfigClient(embedded.root, cache_dir=tmp_path)
    assert decoded == []  # nothing is unpacked to start
    assert client.get_value(TOPIC, "kafka.partitions") == 128
    assert decoded == [TOPIC]
    client.tags(TOPIC)
    assert set(decoded) == {TOPIC}  # the layers of a node are in its own row
    client.lookup("/data/tracking/NoSuchTopic")  # inherits from /data/tracking, which templates its own name
    layers = {"/data/tracking", *client.imports("/data/tracking", recursive=True)}
    assert set(decoded) == {TOPIC} | layers  # to resolve it again, those layers' documents are read
    client.explain(TOPIC, "kafka.partitions")
    assert set(decoded) == {TOPIC, *client.imports(TOPIC, recursive=True)} | layers
    assert len(set(decoded)) < len(client.keys()) / 2


@pytest.mark.parametrize(
    "damage",
    [
        f"UPDATE meta SET value = replace(value, '\"format\": {FORMAT}', '\"format\": {FORMAT + 1}')"
        " WHERE name = 'head'",
        "UPDATE meta SET value = '{}' WHERE name = 'head'",
        "DELETE FROM meta",
        "DROP TABLE meta",
    ],
)
def test_a_damaged_or_foreign_header_is_a_miss(compiled: CompileResult, tmp_path: Path, damage: str) -> None:
    path = written(compiled, tmp_path)
    with sqlite3.connect(path) as con:
        con.execute(damage)
    con.close()
    commit = compiled.snapshot.source.commit
    assert commit is not None
    assert open_artifact(path, commit=commit, store="store", variables={}) is None


def test_an_artifact_of_another_commit_store_or_variables_is_a_miss(compiled: CompileResult, tmp_path: Path) -> None:
    path = written(compiled, tmp_path)
    commit = compiled.snapshot.source.commit
    assert commit is not None
    assert open_artifact(path, commit=commit, store="store", variables={}) is not None
    assert open_artifact(path, commit="0" * 40, store="store", variables={}) is None
    assert open_artifact(path, commit=commit, store="other", variables={}) is None
    assert open_artifact(path, commit=commit, store="store", variables={"local_cluster.name": "lva1"}) is None
    elsewhere = tmp_path / "elsewhere.sqlite"
    shutil.copy(path, elsewhere)  # renamed into another entry's place: its header still names its own
    assert open_artifact(elsewhere, commit="1" * 40, store="store", variables={}) is None


def hostile(config: str) -> tuple[str, int]:
    """A row's config that its CRC vouches for (made on purpose, not by damage)."""
    return config, rows_module.crc(TOPIC, config)


@pytest.mark.parametrize(
    ("sql", "args"),
    [
        ("UPDATE nodes SET config = replace(config, '128', '129') WHERE key = ?", (TOPIC,)),  # a flipped byte
        ("UPDATE nodes SET config = ?, config_crc = ? WHERE key = ?", (*hostile("[" * 100_000 + "]" * 100_000), TOPIC)),
        ("UPDATE nodes SET config = ?, config_crc = ? WHERE key = ?", (*hostile("[1, 2]"), TOPIC)),  # not an object
        ("UPDATE nodes SET node = '[]' WHERE key = ?", (TOPIC,)),
    ],
)
def test_a_row_found_damaged_after_opening_is_recovered_by_a_compile(
    embedded: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sql: str, args: tuple[Any, ...]
) -> None:
    expected = ConfigClient(embedded.root, cache_dir=tmp_path).get(TOPIC)
    (path,) = (tmp_path / f"versions-v{FORMAT}").glob("*.sqlite")
    with sqlite3.connect(path) as con:
        con.execute(sql, args)
    con.close()
    compiles: list[int] = []
    original = ConfigClient._compile

    def counted(self: ConfigClient) -> CompileResult:
        compiles.append(1)
        return original(self)

    monkeypatch.setattr(ConfigClient, "_compile", counted)
    client = ConfigClient(embedded.root, cache_dir=tmp_path)
    assert compiles == []  # the header is intact: the artifact opens
    assert client.get(TOPIC) == expected and compiles == [1]  # the damaged row: compiled, never a wrong answer
    fresh = ConfigClient(embedded.root, cache_dir=tmp_path / "fresh")
    assert client.get("/data/tracking") == fresh.get("/data/tracking")
    if "config_crc" not in sql:
        assert json.loads(client.config_json()[TOPIC]) == expected


def test_readers_keep_reading_while_the_artifact_is_replaced(
    embedded: GitRepo, compiled: CompileResult, tmp_path: Path
) -> None:
    ConfigClient(embedded.root, cache_dir=tmp_path)
    keys = sorted(compiled.snapshot.nodes)
    expected = {k: compiled.snapshot.lookup(k).config for k in keys if k not in compiled.snapshot.failed}
    errors: list[BaseException] = []
    stop = threading.Event()

    def read() -> None:
        try:
            while not stop.is_set():
                client = ConfigClient(embedded.root, cache_dir=tmp_path)  # opens whichever file is in place
                for key, config in expected.items():
                    assert client.get(key) == config
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        for _ in range(8):  # a writer replaces the artifact again and again while they read
            written(compiled, tmp_path)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert errors == []
    assert not [p for p in (tmp_path / f"versions-v{FORMAT}").iterdir() if p.name.startswith(".")]
