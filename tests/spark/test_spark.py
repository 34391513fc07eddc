"""ConfigLoader on a real local Spark session: pinned versions per application, attach, datasets, broadcast."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.client.local import compact_json
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.snapshot.model import KeyNotFound
from cfgtool.spark import ConfigLoader, PinConflict, SnapshotView, SparkNotInstalled, pin_keys, tables
from cfgtool.versions import publish, rollback
from cfgtool.versions.artifact import FORMAT
from cfgtool.versions.artifact_rows import row_seal
from tests.conftest import copy_embedded
from tests.spark.conftest import set_partitions

# One pytest-xdist worker runs them all (`--dist loadgroup`): one Spark session per run, not one per worker.
pytestmark = pytest.mark.xdist_group("spark")

if TYPE_CHECKING:
    from tests.conftest import GitRepo

TOPIC = "/data/tracking/PageViewEvent"
PHANTOM = "/data/tracking/NewTopic"
OUTSIDE = "/elsewhere/thing"


def test_loader_first_pins_later_loaders_read_the_pin(spark: Any, tmp_path: Path, cache: Path) -> None:
    repo = copy_embedded(tmp_path / "repo")
    publish(repo.root, message="first")
    set_partitions(repo, 256, "second")
    first = ConfigLoader(spark, repo.root, cache_dir=cache)
    assert first.version == 2
    assert spark.conf.get(pin_keys("store")[1]) == "2"
    assert spark.conf.get(pin_keys("store")[0]) == first.commit
    set_partitions(repo, 512, "third, mid-run")
    later: list[ConfigLoader] = []
    thread = threading.Thread(target=lambda: later.append(ConfigLoader(spark, repo.root, cache_dir=cache)))
    thread.start()
    thread.join()
    assert later[0].version == 2 and later[0].commit == first.commit
    row = later[0].configs([TOPIC]).collect()[0]
    assert json.loads(row.config)["kafka"]["partitions"] == 256


def test_loader_explicit_version_against_a_pin(spark: Any, published: GitRepo, cache: Path) -> None:
    old = ConfigLoader(spark, published.root, version=1, cache_dir=cache)
    assert old.version == 1
    assert old.client.get_value(TOPIC, "kafka.partitions") == 128
    assert ConfigLoader(spark, published.root, cache_dir=cache).version == 1  # reads the pin
    assert ConfigLoader(spark, published.root, version=1, cache_dir=cache).version == 1
    with pytest.raises(PinConflict, match="repin=True"):
        ConfigLoader(spark, published.root, version=2, cache_dir=cache)
    moved = ConfigLoader(spark, published.root, version=2, repin=True, cache_dir=cache)
    assert moved.version == 2 and spark.conf.get(pin_keys("store")[1]) == "2"


def test_loader_rolled_back_version_still_readable(spark: Any, tmp_path: Path, cache: Path) -> None:
    repo = copy_embedded(tmp_path / "repo")
    publish(repo.root, message="first")
    set_partitions(repo, 256, "second")
    rollback(repo.root, reason="too many partitions")
    assert ConfigLoader(spark, repo.root, cache_dir=cache).version == 1
    spark.conf.unset(pin_keys("store")[0])
    spark.conf.unset(pin_keys("store")[1])
    pinned = ConfigLoader(spark, repo.root, version=2, cache_dir=cache)
    rows = {r.key: r for r in pinned.configs().collect()}
    assert rows[TOPIC].version == 2 and json.loads(rows[TOPIC].config)["kafka"]["partitions"] == 256


def test_configs_dataframe_schema_and_rows(spark: Any, published: GitRepo, cache: Path) -> None:
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    df = loader.configs()
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "string"),
        ("version", "bigint"),
        ("commit", "string"),
        ("exists", "boolean"),
        ("config", "string"),
    ]
    rows = {r.key: r for r in df.collect()}
    assert set(rows) == set(loader.snapshot.nodes)
    assert rows[TOPIC].exists and rows[TOPIC].commit == loader.commit
    phantom = loader.configs([PHANTOM]).collect()[0]
    assert phantom.exists is False and json.loads(phantom.config)["kafka"]["topic"] == "NewTopic"


def _rows(spark: Any) -> Any:
    keys = [TOPIC, TOPIC, PHANTOM, OUTSIDE, "demo:/data/tracking/LoginEvent", None]
    return spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "id int, dataset string")


def test_attach_inherit_types_columns_from_schemas(spark: Any, published: GitRepo, cache: Path) -> None:
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    out = loader.attach(_rows(spark), paths=["kafka.partitions", "owner", "kafka.replication", "no.such"])
    types = {f.name: f.dataType.simpleString() for f in out.schema.fields}
    assert types == {
        "id": "int",
        "dataset": "string",
        "kafka_partitions": "bigint",
        "owner": "string",
        "kafka_replication": "string",
        "no_such": "string",
    }
    rows = {r.id: r for r in out.collect()}
    assert rows[0].kafka_partitions == 256 and rows[1].kafka_partitions == 256
    assert isinstance(rows[0].owner, str) and json.loads(rows[0].kafka_replication)["factor"] >= 2
    assert rows[0].no_such is None
    tracking = loader.client.get("/data/tracking")
    assert rows[2].kafka_partitions == tracking["kafka"]["partitions"]  # phantom: inherits /data/tracking
    assert rows[3].kafka_partitions is None  # inherits the root, which has no kafka settings
    assert rows[4].kafka_partitions is not None  # scheme-qualified key
    assert rows[5].kafka_partitions is None  # null key: no match


def test_attach_missing_null_and_error(spark: Any, published: GitRepo, cache: Path) -> None:
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    out = loader.attach(_rows(spark), paths={"parts": "kafka.partitions"}, missing="null", prefix="cfg_")
    rows = {r.id: r for r in out.collect()}
    assert rows[0].cfg_parts == 256 and rows[2].cfg_parts is None and rows[3].cfg_parts is None
    with pytest.raises(CfgtoolError, match=r"2 key\(s\) have no node.*/data/tracking/NewTopic"):
        loader.attach(_rows(spark), paths=["kafka.partitions"], missing="error")
    only_known = _rows(spark).where("id < 2")
    assert loader.attach(only_known, paths=["kafka.partitions"], missing="error").count() == 2
    with pytest.raises(CfgtoolError, match="overwrite"):
        loader.attach(_rows(spark), paths={"id": "kafka.partitions"})


def test_attach_a_column_named_key(spark: Any, published: GitRepo, cache: Path) -> None:
    """The lookup's own key column has a reserved name, so `key` is a column like any other."""
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    out = loader.attach(_rows(spark), paths={"key": "owner"})
    assert out.columns == ["id", "dataset", "key"]
    rows = {r.id: r for r in out.collect()}
    assert rows[0].key == loader.client.get_value(rows[0].dataset, "owner")


FLAGS_SCHEMA = """\
$schema: https://json-schema.org/draft/2020-12/schema
x-cfgtool:
  applies_to:
    keys: ["/data/tracking/**"]
type: object
properties:
  sampling: {type: number}
  audit: {type: object, properties: {enabled: {type: boolean}}}
  big: {type: integer}
  count: {type: integer}
"""


def _flags_loader(spark: Any, tmp_path: Path, cache: Path, additions: dict[str, str]) -> ConfigLoader:
    """A loader on the embedded store published with FLAGS_SCHEMA and `additions` ({main.conf: lines})."""
    repo = copy_embedded(tmp_path / "repo")
    repo.write({"schemas/flags.yaml": FLAGS_SCHEMA})
    for conf, lines in additions.items():
        path = repo.root / conf
        path.write_text(path.read_text() + f"\n{lines}\n")
    repo.commit("flags")
    publish(repo.root, message="flags")
    return ConfigLoader(spark, repo.root, cache_dir=cache)


TRACKING_CONF = "store/data/tracking/main.conf"


def test_attach_number_and_boolean_columns(spark: Any, tmp_path: Path, cache: Path) -> None:
    additions = {TRACKING_CONF: "sampling = 1\naudit.enabled = true\ncount = 8.0"}  # 8.0 is a JSON Schema integer
    loader = _flags_loader(spark, tmp_path, cache, additions)
    out = loader.attach(_rows(spark), paths=["sampling", "audit.enabled", "count"])
    types = {f.name: f.dataType.simpleString() for f in out.schema.fields}
    assert types["sampling"] == "double" and types["audit_enabled"] == "boolean" and types["count"] == "bigint"
    rows = {r.id: r for r in out.collect()}
    assert rows[0].sampling == 1.0 and rows[0].audit_enabled is True and rows[0]["count"] == 8
    assert rows[3].sampling is None  # the root has no sampling


def test_attach_column_types_do_not_depend_on_the_data(spark: Any, tmp_path: Path, cache: Path) -> None:
    """A schema typing a path for some nodes types the column even when the data holds none of them, so
    one job writes one output schema whatever keys today's data happens to hold."""
    loader = _flags_loader(spark, tmp_path, cache, {TRACKING_CONF: "sampling = 1"})
    outside = spark.createDataFrame([(0, OUTSIDE), (1, "/data/databases")], "id int, dataset string")
    out = loader.attach(outside, paths=["sampling"])
    assert dict(out.dtypes)["sampling"] == "double"  # flags.yaml selects only /data/tracking/**
    assert [r.sampling for r in out.orderBy("id").collect()] == [None, None]


def test_attach_a_value_the_type_does_not_cover_makes_a_json_column(spark: Any, tmp_path: Path, cache: Path) -> None:
    """A node no typing schema selects may hold another type at that path: the column is then JSON text,
    rather than a failure that would depend on whether the data holds that node."""
    # (an integer beyond 64 bits, the other case this test had, is now text when HOCON reads it, as in Lightbend)
    additions = {TRACKING_CONF: "sampling = 0.5", "store/data/databases/main.conf": 'sampling = "high"'}
    loader = _flags_loader(spark, tmp_path, cache, additions)
    df = spark.createDataFrame([(0, TOPIC), (1, "/data/databases")], "id int, dataset string")
    out = loader.attach(df, paths=["sampling"])
    assert dict(out.dtypes)["sampling"] == "string"
    rows = out.orderBy("id").collect()
    assert [json.loads(r.sampling) for r in rows] == [0.5, "high"]
    only_tracking = loader.attach(df.where("id = 0"), paths=["sampling"])  # the data need not hold that node
    assert dict(only_tracking.dtypes)["sampling"] == "string"


def test_datasets_and_broadcast(spark: Any, published: GitRepo, cache: Path) -> None:
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    keys = [r.key for r in loader.datasets("/tags/priority/HIGH").collect()]
    assert TOPIC in keys
    view = loader.broadcast(keys=[PHANTOM])
    topic_of = spark.sparkContext.parallelize([TOPIC, PHANTOM, "/data/tracking/Other", "/nowhere"], 2).map(
        lambda k: (k, view.value.get_value(k, "kafka.topic", nearest=True), view.value.exists(k))
    )
    got = dict((k, (t, e)) for k, t, e in topic_of.collect())
    assert got[TOPIC] == ("PageViewEvent", True)
    assert got[PHANTOM] == ("NewTopic", False)  # resolved on the driver, with its own name: still no node
    assert got["/data/tracking/Other"][1] is False  # inherits /data/tracking on the executor
    assert isinstance(view.value, SnapshotView) and view.value.version == loader.version


def test_a_udf_reading_a_key_without_a_node_fails_unless_nearest(spark: Any, published: GitRepo, cache: Path) -> None:
    view = ConfigLoader(spark, published.root, cache_dir=cache).broadcast(keys=[PHANTOM])
    typo = "/data/tracking/PageVeiwEvent"
    read = spark.sparkContext.parallelize([typo], 1).map(lambda k: view.value.get_value(k, "kafka.partitions"))
    with pytest.raises(Exception, match=f"{typo} has no node .*did you mean {TOPIC}\\?"):
        read.collect()  # on the executor: KeyNotFound, which Spark reports as the job's failure
    with pytest.raises(KeyNotFound, match=f"{PHANTOM} has no node"):
        view.value.get(PHANTOM)  # resolved on the driver, but a key without a node all the same
    assert view.value.get_value(typo, "kafka.partitions", nearest=True) == 8  # /data/tracking's, on purpose
    assert view.value.get_value(PHANTOM, "kafka.topic", nearest=True) == "NewTopic"


def test_variables_from_spark_conf(spark: Any, published: GitRepo, cache: Path) -> None:
    default = ConfigLoader(spark, published.root, cache_dir=cache)
    assert default.client.get(TOPIC)["cluster"]["name"] == "ltx1"
    spark.conf.set("spark.cfgtool.var.local_cluster.name", "lva1")
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    assert loader.variables == {"local_cluster.name": "lva1"}
    out = loader.attach(_rows(spark).where("id = 0"), paths=["cluster.name"]).collect()
    assert out[0].cluster_name == "lva1"  # no schema types cluster.name: every node holds a string there
    explicit = ConfigLoader(spark, published.root, variables={"local_cluster.name": "ltx1"}, cache_dir=cache)
    assert explicit.client.get(TOPIC)["cluster"]["name"] == "ltx1"


def test_loader_without_pyspark_names_the_extra(monkeypatch: pytest.MonkeyPatch, spark: Any, tmp_path: Path) -> None:
    import importlib

    real = importlib.import_module

    def no_pyarrow(name: str, package: str | None = None) -> Any:
        if name.startswith("pyarrow"):
            raise ImportError(name)
        return real(name, package)

    monkeypatch.setattr(importlib, "import_module", no_pyarrow)
    with pytest.raises(SparkNotInstalled, match=r"pip install -e '\.\[spark\]'"):
        ConfigLoader(spark, tmp_path)


def test_loader_pin_of_another_repository_is_a_conflict(spark: Any, published: GitRepo, cache: Path) -> None:
    commit_key, version_key = pin_keys("store")
    spark.conf.set(commit_key, "0" * 40)
    spark.conf.set(version_key, "2")
    with pytest.raises(PinConflict, match="pinned to commit 000000000000"):
        ConfigLoader(spark, published.root, cache_dir=cache)


def test_configs_ships_the_client_json_cache(spark: Any, tmp_path: Path, cache: Path) -> None:
    repo = copy_embedded(tmp_path / "repo")
    root = repo.root / "store/main.conf"  # without its `urn`, the root and some tags use no intrinsic
    root.write_text("".join(line for line in root.read_text().splitlines(True) if not line.startswith("urn")))
    repo.commit("no urn")
    publish(repo.root, message="no urn")
    loader = ConfigLoader(spark, repo.root, cache_dir=cache)
    plain = next(key for key, node in sorted(loader.snapshot.nodes.items()) if not node.intrinsic)
    child = f"{plain.rstrip('/')}/NoSuchChild"  # inherits a config that needs no re-resolving
    wanted = [TOPIC, PHANTOM, child]
    rows = {r.key: r for r in loader.configs(wanted).collect()}
    assert [rows[k].exists for k in wanted] == [True, False, False]
    assert all(rows[k].config == compact_json(loader.client.get(k, nearest=True)) for k in wanted)
    assert all(r.config == compact_json(loader.client.get(r.key)) for r in loader.configs().collect())
    (cached,) = (cache / f"versions-v{FORMAT}").glob("*.sqlite")  # the version artifact holds each config's JSON
    seal = row_seal(cached.name)
    assert seal is not None
    with sqlite3.connect(cached) as con:  # planted (with their checks): read back as stored, not encoded again
        for key, text in ((TOPIC, '{"from":"cache"}'), (plain, '{"plain":1}')):
            con.execute("UPDATE nodes SET config = ?, config_crc = ? WHERE key = ?", (text, seal.of(key, text), key))
    con.close()
    again = ConfigLoader(spark, repo.root, cache_dir=cache).configs(wanted).collect()
    expected = {TOPIC: '{"from":"cache"}', PHANTOM: rows[PHANTOM].config, child: '{"plain":1}'}
    assert {r.key: r.config for r in again} == expected


def test_attach_missing_null_agrees_with_the_client_on_every_spelling(
    spark: Any, published: GitRepo, cache: Path
) -> None:
    """missing="null" joins without a pass over the data, so Spark itself must read every spelling of a key
    as `normalize_key` does: a node key in any spelling gets its values, anything else nulls."""
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    login = "/data/tracking/LoginEvent"
    spellings = [f"demo:{login}", login[1:], f"{login}/", f"{login[1:]}/", "demo:/", "//", "", "/"]
    nothing = [PHANTOM, OUTSIDE, "/bad key", "other:/data", "demo:data/tracking", "/data//tracking", "///", None]
    keys = [*loader.snapshot.nodes, *spellings, *nothing]
    df = spark.createDataFrame(list(enumerate(keys)), "id int, dataset string")
    out = loader.attach(df, paths=["kafka.partitions", "owner"], missing="null").collect()
    assert sorted(r.id for r in out) == list(range(len(keys)))
    for row in out:
        try:
            hit = loader.snapshot.lookup(loader._key(row.dataset)) if row.dataset is not None else None
        except CfgtoolError:
            hit = None
        expected = hit.config if hit is not None and hit.exists else {}
        assert row.kafka_partitions == expected.get("kafka", {}).get("partitions"), row.dataset
        assert row.owner == expected.get("owner"), row.dataset
    assert sum(r.kafka_partitions is not None for r in out if r.dataset in spellings) == 4  # the LoginEvent ones


def test_attach_agrees_with_the_client_on_every_key(spark: Any, published: GitRepo, cache: Path) -> None:
    loader = ConfigLoader(spark, published.root, cache_dir=cache)
    odd = [PHANTOM, OUTSIDE, f"demo:{TOPIC}", "data/tracking/LoginEvent/", "/bad key", None]
    keys = [*loader.snapshot.nodes, *odd] * 3
    df = spark.createDataFrame(list(enumerate(keys)), "id int, dataset string")
    out = loader.attach(df, paths=["kafka.partitions", "kafka.replication"]).collect()
    assert sorted(r.id for r in out) == list(range(len(keys)))  # the join neither drops nor repeats rows
    for row in out:
        if row.dataset in (None, "/bad key"):
            assert row.kafka_partitions is None and row.kafka_replication is None
            continue
        assert row.kafka_partitions == loader.client.get_value(row.dataset, "kafka.partitions", None, nearest=True)
        replication = loader.client.get_value(row.dataset, "kafka.replication", None, nearest=True)
        assert (json.loads(row.kafka_replication) if row.kafka_replication else None) == replication


UNTYPED = """\
misc {
  label = "plain text"
  shards = 3
  ratio = 2
  strict = true
  mixed = 1
}
"""


def test_attach_untyped_values_take_the_type_of_the_version_s_values(spark: Any, tmp_path: Path, cache: Path) -> None:
    """No schema types `misc`: a column holds plain values of the one type every node has there (a string
    `web`, not the JSON text `"web"`), a double where integers and decimals meet, JSON text for a mix; the
    same whatever rows the data holds."""
    repo = copy_embedded(tmp_path / "repo")
    root = repo.root / "store/main.conf"
    root.write_text(root.read_text() + "\n" + UNTYPED)
    tracking = repo.root / TRACKING_CONF
    tracking.write_text(tracking.read_text() + '\nmisc { ratio = 0.25, mixed = "many", shards = 4 }\n')
    repo.commit("untyped values")
    publish(repo.root, message="untyped")
    loader = ConfigLoader(spark, repo.root, cache_dir=cache)
    paths = ["misc.label", "misc.shards", "misc.ratio", "misc.strict", "misc.mixed", "owner", "cluster.name"]
    out = loader.attach(_rows(spark), paths=paths)
    assert {n: t for n, t in out.dtypes if n.startswith("misc")} == {
        "misc_label": "string",
        "misc_shards": "bigint",
        "misc_ratio": "double",
        "misc_strict": "boolean",
        "misc_mixed": "string",
    }
    rows = {r.id: r for r in out.collect()}
    assert rows[0].misc_label == "plain text" and rows[0].misc_shards == 4 and rows[0].misc_ratio == 0.25
    assert rows[3].misc_shards == 3 and rows[3].misc_ratio == 2.0 and rows[3].misc_strict is True
    assert json.loads(rows[0].misc_mixed) == "many" and json.loads(rows[3].misc_mixed) == 1  # a mix: JSON text
    assert rows[0].owner == loader.client.get_value(TOPIC, "owner") and not rows[0].owner.startswith('"')
    assert rows[0].cluster_name == "ltx1"
    outside_only = loader.attach(_rows(spark).where("id = 3"), paths=paths)  # the root only: same schema
    assert outside_only.dtypes == out.dtypes


IDENTITY_KEY = "/data/databases/identity"
PASSWORD = "database.credentials.password"
DEMO_IDENTITY = Path(__file__).resolve().parents[2] / "examples/demo-age-identity.txt"


def test_attach_and_configs_hide_secrets_unless_an_identity_reveals_them(
    spark: Any, published: GitRepo, cache: Path
) -> None:
    child = f"{IDENTITY_KEY}/audit"  # no node: inherits the sealed password
    df = spark.createDataFrame([(0, IDENTITY_KEY), (1, child), (2, TOPIC)], "id int, dataset string")
    plain = ConfigLoader(spark, published.root, cache_dir=cache)
    hidden = {r.id: r.password for r in plain.attach(df, paths={"password": PASSWORD}).collect()}
    assert hidden == {0: "[hidden]", 1: "[hidden]", 2: None}
    with pytest.raises(UsageError, match="identity"):
        plain.attach(df, paths={"password": PASSWORD}, reveal=True)
    keyed = ConfigLoader(spark, published.root, cache_dir=cache, identity=DEMO_IDENTITY)
    assert keyed.attach(df, paths={"password": PASSWORD}).collect()[0].password == "[hidden]"  # not asked to
    opened = keyed.attach(df, paths={"password": PASSWORD, "database": "database"}, reveal=True)
    assert dict(opened.dtypes)["password"] == "string"
    rows = {r.id: r for r in opened.collect()}
    assert rows[0].password == rows[1].password == "correct-horse-battery-staple"
    assert json.loads(rows[0].database)["credentials"]["password"] == "correct-horse-battery-staple"
    again = {r.id: r.password for r in keyed.attach(df, paths={"password": PASSWORD}).collect()}
    assert again == hidden  # the revealed lookup was not kept for the application
    configs = {r.key: json.loads(r.config) for r in keyed.configs([IDENTITY_KEY, TOPIC], reveal=True).collect()}
    assert configs[IDENTITY_KEY]["database"]["credentials"]["password"] == "correct-horse-battery-staple"
    shown = keyed.configs([IDENTITY_KEY]).collect()[0].config
    assert "correct-horse" not in shown and "[hidden]" in shown


def test_attach_twice_in_an_application_builds_the_lookup_once(
    spark: Any, published: GitRepo, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second attach of the same paths, by any loader of the application, reuses the kept lookup; the
    driver only finds the data's keys without a node and joins."""
    paths = ["kafka.partitions", "owner"]
    first = ConfigLoader(spark, published.root, cache_dir=cache).attach(_rows(spark), paths=paths).collect()

    def no_rebuild(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the lookup of every node was built again")

    monkeypatch.setattr(ConfigLoader, "_node_table", no_rebuild)
    second = ConfigLoader(spark, published.root, cache_dir=cache)
    assert sorted(second.attach(_rows(spark), paths=paths).collect()) == sorted(first)
    with pytest.raises(AssertionError, match="built again"):  # other columns: another lookup
        second.attach(_rows(spark), paths=paths, prefix="b_")
    tables.clear()


def test_loader_reads_nothing_from_the_repository_after_it_is_built(spark: Any, tmp_path: Path, cache: Path) -> None:
    """The schema types are read when the loader is built: with the repository gone, attach still types
    and fills its columns."""
    repo = copy_embedded(tmp_path / "repo")
    publish(repo.root, message="first")
    loader = ConfigLoader(spark, repo.root, cache_dir=cache)
    repo.root.rename(tmp_path / "moved")
    out = loader.attach(_rows(spark), paths=["kafka.partitions", "owner"]).collect()
    assert {r.id: r.kafka_partitions for r in out}[0] == 128
    assert loader.configs([PHANTOM]).collect()[0].exists is False
