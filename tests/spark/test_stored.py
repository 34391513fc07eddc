"""The lookup kept on disk (cfgtool/spark/stored.py) on a real local Spark session: a later application reads it
instead of building, with the same rows and types; a damaged, truncated or foreign file is a miss; another
version, variable value or column set never reads it; lookups with opened secrets are never kept."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool._util.cacheauth import seal, unseal
from cfgtool.spark import ConfigLoader, stored, tables

pytestmark = pytest.mark.xdist_group("spark")

if TYPE_CHECKING:
    from tests.conftest import GitRepo

TOPIC = "/data/tracking/PageViewEvent"
PATHS = ["kafka.partitions", "owner", "cluster.name", "kafka.replication", "no.such"]
IDENTITY_KEY = "/data/databases/identity"
PASSWORD = "database.credentials.password"
DEMO_IDENTITY = Path(__file__).resolve().parents[2] / "examples/demo-age-identity.txt"


@pytest.fixture(autouse=True)
def new_application() -> Iterator[None]:
    """Each test starts as a new application would: no lookup kept in memory (the disk is the test's own)."""
    tables.clear()
    yield
    tables.clear()


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    """The column sets whose lookup of every node was built (not read from disk)."""
    seen: list[dict[str, str]] = []
    build = ConfigLoader._node_table

    def counted(self: ConfigLoader, columns: Any, reveal: bool) -> Any:
        seen.append(dict(columns))
        return build(self, columns, reveal)

    monkeypatch.setattr(ConfigLoader, "_node_table", counted)
    return seen


def _data(spark: Any) -> Any:
    keys = [TOPIC, "/data/tracking", "/data/tracking/NewTopic", "/elsewhere", IDENTITY_KEY, None]
    return spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "id int, dataset string")


def _attach(loader: ConfigLoader, paths: Any = PATHS, missing: Any = "inherit", reveal: bool = False) -> Any:
    out = loader.attach(_data(loader.spark), paths=paths, missing=missing, reveal=reveal)
    return sorted(out.collect()), out.dtypes


def _files(cache: Path) -> list[Path]:
    return sorted(stored.directory(cache).glob("*.arrow"))


def test_a_later_application_reads_the_kept_lookup_with_the_same_rows_and_types(
    spark: Any, published: GitRepo, cache: Path, builds: list[dict[str, str]]
) -> None:
    built = _attach(ConfigLoader(spark, published.root, cache_dir=cache))
    assert len(builds) == 1 and len(_files(cache)) == 1
    tables.clear()  # a new application: only the disk remembers
    read = _attach(ConfigLoader(spark, published.root, cache_dir=cache))
    assert len(builds) == 1  # read from disk, not built again
    assert read == built
    assert dict(read[1])["kafka_partitions"] == "bigint" and dict(read[1])["kafka_replication"] == "string"
    assert {r.id: r.kafka_partitions for r in read[0]}[0] == 256
    tables.clear()
    nulls = _attach(ConfigLoader(spark, published.root, cache_dir=cache), missing="null")
    assert len(builds) == 1  # every missing mode reads the same lookup of every node
    assert {r.id: r.kafka_partitions for r in nulls[0]}[2] is None


def _damage_truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _damage_flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[-100] ^= 0x01  # in the Arrow body: the checksum no longer agrees
    path.write_bytes(bytes(data))


def _damage_header(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(b"{not json" + data[data.index(b"\n") :])


def _damage_empty(path: Path) -> None:
    path.write_bytes(b"")


def _opened(path: Path) -> tuple[dict[str, Any], bytes]:
    """The header and body of a kept lookup, after its tag."""
    data = unseal(f"spark {path.name}", path.read_bytes())
    assert data is not None
    head, body = data.split(b"\n", 1)
    return json.loads(head), body


def _resealed(path: Path, header: dict[str, Any], body: bytes) -> None:
    """Write a lookup as a cfgtool with another idea of it would: sealed with the user's key."""
    sealed = seal(f"spark {path.name}", json.dumps(header).encode() + b"\n" + body)
    assert sealed is not None
    path.write_bytes(sealed)


def _damage_body(path: Path) -> None:
    """A body that is no Arrow stream, under a valid tag (made, not damaged)."""
    header, _ = _opened(path)
    _resealed(path, header, b"\xff" * 64)


def _damage_kinds(path: Path) -> None:
    """A header whose column types disagree with the table it vouches for."""
    header, body = _opened(path)
    header["kinds"]["kafka_partitions"] = "boolean"
    _resealed(path, header, body)


def _forged(path: Path) -> None:
    """Whoever can write the cache plants a lookup with other partitions and a right checksum: a miss."""
    pa = _pa()
    data = path.read_bytes()
    head, body = data[data.index(b'{"identity"') :].split(b"\n", 1)
    table = pa.ipc.open_stream(pa.py_buffer(body)).read_all()
    column = table.schema.get_field_index("kafka_partitions")
    table = table.set_column(column, table.field(column), pa.array([999] * table.num_rows, table.field(column).type))
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    planted = sink.getvalue().to_pybytes()
    header = {**json.loads(head), "sha256": hashlib.sha256(planted).hexdigest()}
    path.write_bytes(json.dumps(header).encode() + b"\n" + planted)


@pytest.mark.parametrize(
    "damage", [_damage_truncate, _damage_flip, _damage_header, _damage_empty, _damage_body, _damage_kinds, _forged]
)
def test_a_damaged_kept_lookup_is_a_miss_built_again(
    spark: Any, published: GitRepo, cache: Path, builds: list[dict[str, str]], damage: Any
) -> None:
    expected = _attach(ConfigLoader(spark, published.root, cache_dir=cache))
    (path,) = _files(cache)
    damage(path)
    tables.clear()
    again = _attach(ConfigLoader(spark, published.root, cache_dir=cache))
    assert again == expected and len(builds) == 2  # built again: the right answer, never an error
    assert _files(cache) == [path] and stored.read(_pa(), path, _identity_in(path)) is not None  # rewritten


def _pa() -> Any:
    import pyarrow  # type: ignore[import-untyped]

    return pyarrow


def _identity_in(path: Path) -> Any:
    return _opened(path)[0]["identity"]


def _plant(cache: Path, source: Path, loader: ConfigLoader, paths: Any) -> None:
    """Copy `source` (another lookup's file) to where `loader` looks for the lookup of `paths`."""
    columns = {p.replace(".", "_"): p for p in paths} if not isinstance(paths, dict) else paths
    ident = stored.identity(loader.client.store, loader.commit, loader.variables, columns)
    target = stored.lookup_path(loader.cache, ident)
    assert target != source  # another file by name
    shutil.copy(source, target)


def test_another_version_variable_or_column_set_never_reads_a_lookup_kept_for_another(
    spark: Any, published: GitRepo, cache: Path, builds: list[dict[str, str]]
) -> None:
    """Each has a file of its own; and another's file planted under its name is foreign: a miss."""
    v1 = ConfigLoader(spark, published.root, cache_dir=cache, version=1)
    first = _attach(v1)
    (v1_file,) = _files(cache)
    assert {r.id: r.kafka_partitions for r in first[0]}[0] == 128

    tables.clear()
    v2 = ConfigLoader(spark, published.root, cache_dir=cache, version=2, repin=True)
    _plant(cache, v1_file, v2, PATHS)
    assert {r.id: r.kafka_partitions for r in _attach(v2)[0]}[0] == 256  # not v1's 128

    tables.clear()
    lva1 = ConfigLoader(spark, published.root, cache_dir=cache, version=1, repin=True,
                        variables={"local_cluster.name": "lva1"})  # fmt: skip
    _plant(cache, v1_file, lva1, PATHS)
    assert {r.id: r.cluster_name for r in _attach(lva1)[0]}[0] == "lva1"  # not ltx1

    tables.clear()
    other = {"kafka_partitions": "owner", "owner": "kafka.partitions", "cluster_name": "cluster.name",
             "kafka_replication": "kafka.replication", "no_such": "no.such"}  # fmt: skip
    v1 = ConfigLoader(spark, published.root, cache_dir=cache, version=1, repin=True)
    _plant(cache, v1_file, v1, other)
    swapped = {r.id: r for r in _attach(v1, paths=other)[0]}
    assert swapped[0].owner == 128 and isinstance(swapped[0].kafka_partitions, str)  # its own columns
    assert len(builds) == 4  # each was built, none read another's file
    assert len(_files(cache)) == 4


def test_lookups_with_opened_secrets_are_never_written_nor_read(
    spark: Any, published: GitRepo, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    keyed = ConfigLoader(spark, published.root, cache_dir=cache, identity=DEMO_IDENTITY)
    hidden = {r.id: r.password for r in _attach(keyed, paths={"password": PASSWORD})[0]}
    assert hidden[4] == "[hidden]" and len(_files(cache)) == 1  # kept: it holds no opened secret

    def untouched(*args: Any) -> Any:
        raise AssertionError("a lookup with opened secrets went through the disk")

    monkeypatch.setattr(stored, "read", untouched)
    monkeypatch.setattr(stored, "write", untouched)
    opened = {r.id: r.password for r in _attach(keyed, paths={"password": PASSWORD}, reveal=True)[0]}
    assert opened[4] == "correct-horse-battery-staple"
    (path,) = _files(cache)
    assert b"correct-horse" not in path.read_bytes()


def test_kept_lookups_are_bounded_the_least_recently_used_removed_first(
    spark: Any, published: GitRepo, cache: Path, monkeypatch: pytest.MonkeyPatch, builds: list[dict[str, str]]
) -> None:
    monkeypatch.setattr(stored, "LIMIT", 2)
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    _attach(loader, paths=["owner"])
    _attach(loader, paths=["kafka.partitions"])
    tables.clear()
    _attach(loader, paths=["owner"])  # read from disk: now the most recently used
    _attach(loader, paths=["cluster.name"])  # a third: the oldest used, kafka.partitions, goes
    assert [list(b.values()) for b in builds] == [["owner"], ["kafka.partitions"], ["cluster.name"]]
    kept = sorted(json.dumps(_identity_in(p)["columns"]) for p in _files(cache))
    assert kept == sorted(json.dumps([[c, c.replace("_", ".")]]) for c in ("owner", "cluster_name"))
