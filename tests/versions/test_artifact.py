"""Version artifacts (cfgtool/versions/artifact.py): the snapshot read back equals the compiled one, provenance
included; reads decode only the rows they need; a damaged, foreign or stale artifact is a miss; a row found damaged
after opening is recovered by a compile; readers keep reading while the file is replaced."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

import cfgtool.versions.artifact_rows as rows_module
from cfgtool.client.client import ConfigClient
from cfgtool.client.local import GitBackend
from cfgtool.compile.compiler import CompileResult, compile_store
from cfgtool.snapshot.model import Snapshot
from cfgtool.spark.columns import column_kind
from cfgtool.versions import publish
from cfgtool.versions.artifact import FORMAT, artifact_path, compact_json, open_artifact, write_artifact
from cfgtool.versions.artifact_rows import RowSeal, row_seal, sqlite_path, values_at
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


def test_a_cached_client_decodes_only_the_rows_it_reads(embedded: GitRepo, tmp_path: Path, decoded: list[str]) -> None:
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


def test_an_artifact_from_before_the_digest_covered_the_rules_is_a_miss(
    compiled: CompileResult, tmp_path: Path
) -> None:
    """An intact artifact of the previous format has no rules in its header: its snapshot's digest would leave
    them out, so it must never be read as a version of this format."""
    assert compiled.snapshot.rules["store/_ACL.yaml"]
    path = written(compiled, tmp_path)
    with sqlite3.connect(path) as con:
        head = json.loads(con.execute("SELECT value FROM meta WHERE name = 'head'").fetchone()[0])
        del head["rules"]
        text = json.dumps({**head, "format": FORMAT - 1}, ensure_ascii=False)
        check = str(sealed(path).of(text))
        con.executemany("UPDATE meta SET value = ? WHERE name = ?", [(text, "head"), (check, "crc")])
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


VOUCHED = object()  # stands for the row's check, made by whoever holds the key (on purpose, not by damage)


def sealed(path: Path) -> RowSeal:
    seal = row_seal(path.name)
    assert seal is not None
    return seal


def hostile(config: str) -> tuple[str, object]:
    """A row's config that its check vouches for (written so by cfgtool's own key, not damaged)."""
    return config, VOUCHED


def vouched(path: Path, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """`args` with VOUCHED replaced by the check of the config before it, in the artifact at `path`."""
    return tuple(sealed(path).of(TOPIC, args[i - 1]) if a is VOUCHED else a for i, a in enumerate(args))


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
        con.execute(sql, vouched(path, args))
    con.close()
    compiles: list[int] = []
    original = GitBackend._compile

    def counted(self: GitBackend) -> CompileResult:
        compiles.append(1)
        return original(self)

    monkeypatch.setattr(GitBackend, "_compile", counted)
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


# -- the values at paths, extracted by SQLite (`Artifact.config_values`, what the Spark lookup reads) ---------------

_NAMED = ["a", "b", "a.b", 'q"uote', "back\\slash", "tab\there", "", "é", "x y", "0", "$", "[0]"]
_SEGMENTS = st.sampled_from(_NAMED) | st.sampled_from(_NAMED) | st.text(max_size=2)  # mostly keys that repeat
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # beyond 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)  # integral ones included: 8.0 stays a float
    | st.sampled_from([0, 1, 0.0, 1.0, -0.0, 2**63, -(2**63) - 1, 1e16, 5e-324])
    | st.text(max_size=4)
)
_VALUES = st.recursive(
    _SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_SEGMENTS, inner, max_size=3), max_leaves=8
)
_CONFIGS = st.lists(st.none() | st.dictionaries(_SEGMENTS, _VALUES, min_size=1, max_size=5), max_size=6)
_PATH = st.lists(_SEGMENTS, min_size=1, max_size=3).map(tuple)


def _artifact_of(configs: list[Any]) -> Any:
    """An artifact whose nodes hold `configs` (None: a node that did not resolve), as `write_artifact` stores them."""
    from cfgtool.versions.artifact import _SCHEMA, Artifact

    con = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    con.executescript(_SCHEMA)
    seal = RowSeal(b"k" * 32)
    for i, config in enumerate(configs):
        key, text = f"/n{i}", compact_json(config) if config is not None else None
        con.execute(
            "INSERT INTO nodes VALUES (?, ?, ?, '[]', ?, '[]', ?)",
            (key, text, seal.of(key, text), seal.of(key, "[]"), seal.of(key, "[]")),
        )
    return Artifact(con, {}, (), seal)


def _paths_in(value: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every path that names a value in `value`, so that the drawn paths mostly find something."""
    if not isinstance(value, dict):
        return []
    return [p for k, v in value.items() for p in [(*prefix, k), *_paths_in(v, (*prefix, k))]]


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_config_values_in_sqlite_type_every_value_as_decoding_each_config(data: st.DataObject) -> None:
    """The values SQLite extracts decode to exactly what decoding each whole config and walking the path gives
    (true/false not 1/0, null as absent, integers beyond 64 bits, integral floats, segments SQLite cannot
    name), so the columns are typed as before."""
    configs = data.draw(_CONFIGS)
    present = sorted({p for c in configs for p in _paths_in(c)})
    drawn = st.sampled_from(present) | _PATH if present else _PATH
    paths = data.draw(st.lists(drawn, max_size=4))
    found = _artifact_of(configs).config_values(paths)
    assert found is not None
    keys, values = found
    decoded = [json.loads(compact_json(c)) for c in configs if c is not None]
    assert keys == [f"/n{i}" for i, c in enumerate(configs) if c is not None]
    expected = [values_at(decoded, parts) for parts in paths]
    assert repr(values) == repr(expected)  # repr: 1, 1.0 and True differ
    assert [column_kind(None, v) for v in values] == [column_kind(None, v) for v in expected]
    walked = any(v is not None for p, vs in zip(paths, values, strict=True) if sqlite_path(p)[1] for v in vs)
    event("found at a segment SQLite cannot name" if walked else "none found at such a segment")


@pytest.mark.parametrize(
    ("sql", "args"),
    [
        ("UPDATE nodes SET config = replace(config, '128', '129') WHERE key = ?", (TOPIC,)),  # a flipped byte
        ("UPDATE nodes SET config = ?, config_crc = ? WHERE key = ?", (*hostile("[" * 100_000 + "]" * 100_000), TOPIC)),
        ("UPDATE nodes SET config = ?, config_crc = ? WHERE key = ?", (*hostile("[1, 2]"), TOPIC)),  # not an object
    ],
)
def test_config_values_of_a_damaged_row_are_those_of_a_compile(
    embedded: GitRepo, tmp_path: Path, sql: str, args: tuple[Any, ...]
) -> None:
    paths = [("kafka", "partitions"), ("owner",)]
    expected = ConfigClient(embedded.root, cache_dir=tmp_path).config_values(paths)
    assert expected[1][0][expected[0].index(TOPIC)] == 128
    (path,) = (tmp_path / f"versions-v{FORMAT}").glob("*.sqlite")
    with sqlite3.connect(path) as con:
        con.execute(sql, vouched(path, args))
    con.close()
    client = ConfigClient(embedded.root, cache_dir=tmp_path)
    assert client.config_values(paths) == expected
    backend = client._backend
    assert isinstance(backend, GitBackend) and backend._artifact is not None  # the git backend reads artifacts
    assert backend._artifact.is_recovered  # answered by a compile


def test_a_forged_row_is_not_believed(embedded: GitRepo, tmp_path: Path) -> None:
    """Whoever can write the cache rewrites a config with a check it can compute (the CRC-32 that used to
    guard rows, or an unkeyed BLAKE2b): the client reads the real config, never the planted one."""
    expected = ConfigClient(embedded.root, cache_dir=tmp_path).get(TOPIC)
    (path,) = (tmp_path / f"versions-v{FORMAT}").glob("*.sqlite")
    text = '{"planted":true}'
    data = f"{TOPIC}\0{text}".encode()
    for check in (zlib.crc32(data), int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big", signed=True)):
        with sqlite3.connect(path) as con:
            con.execute("UPDATE nodes SET config = ?, config_crc = ? WHERE key = ?", (text, check, TOPIC))
        con.close()
        again = ConfigClient(embedded.root, cache_dir=tmp_path)
        assert again.get(TOPIC) == expected
        assert json.loads(again.config_json()[TOPIC]) == expected
