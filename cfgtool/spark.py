"""The PySpark loader (DESIGN 11): one pinned version of a store per Spark application.

The first `ConfigLoader` of an application resolves the current version on the driver (through
`ConfigClient`) and records it in the Spark conf (`spark.cfgtool.<store>.commit`, `.version`); every later
loader reads that pin, so one application never mixes versions, even when a version is published mid-run.
Executors never touch git: configs reach them as DataFrames (built through Arrow with an explicit schema)
or as a broadcast of plain dicts (`SnapshotView`, usable inside UDFs).

pyspark, pyarrow and pandas are imported lazily; without them, constructing a loader says to install
`cfgtool[spark]`. The pyspark boundary is typed `Any`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from cfgtool.client import ConfigClient, compact_json
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.hocon import split_path
from cfgtool.plain import MISSING, value_at
from cfgtool.snapshot import Snapshot
from cfgtool.store.keys import ROOT, normalize_key
from cfgtool.store.settings import SETTINGS_FILE, parse_settings
from cfgtool.store.sources import open_source
from cfgtool.validate import load_schemas, read_schema_files, schema_types

Missing = Literal["inherit", "null", "error"]
CONF_PREFIX = "spark.cfgtool."
VAR_PREFIX = "spark.cfgtool.var."
_PIN_LOCK = threading.Lock()  # loaders built from several driver threads agree on one pin
_SHOWN_MISSING = 5  # how many missing keys an error lists
_HASHES = ("__cfgtool_h1", "__cfgtool_h2")  # columns of the key hashes `attach` joins on
LOOKUP_KEY = "__cfgtool_key"  # the key column of `lookup_table` (any other name could be a requested column)


class SparkNotInstalled(CfgtoolError):
    """pyspark (or pyarrow/pandas) is not installed."""


class PinConflict(CfgtoolError):
    """An explicit version contradicts the version this Spark application is pinned to."""


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SparkNotInstalled(
            f"the Spark loader needs {module.split('.')[0]}, which is not installed",
            hint="pip install 'cfgtool[spark]'",
        ) from exc


def pin_keys(store: str) -> tuple[str, str]:
    """The Spark conf keys holding an application's pinned commit and version of `store`."""
    return f"{CONF_PREFIX}{store}.commit", f"{CONF_PREFIX}{store}.version"


class ConfigLoader:
    """Reads the pinned version of a store into Spark: `configs()`, `attach()`, `datasets()`, `broadcast()`."""

    def __init__(
        self,
        spark: Any,
        location: str | Path,
        store: str = "store",
        version: int | None = None,
        repin: bool = False,
        variables: Mapping[str, str] | None = None,
        *,
        cache_dir: str | Path | None = None,
    ) -> None:
        self._pa: Any = _require("pyarrow")
        self._functions: Any = _require("pyspark.sql.functions")
        self._types: Any = _require("pyspark.sql.types")
        self.spark = spark
        self.store = store
        self.variables = {**_conf_variables(spark), **(variables or {})}
        commit_key, version_key = pin_keys(store)
        with _PIN_LOCK:
            pinned = spark.conf.get(version_key, None)
            pinned_commit = spark.conf.get(commit_key, None)
            if pinned is not None and (version is None or int(pinned) == version):
                version = int(pinned)
            elif pinned is not None and not repin:
                raise PinConflict(
                    f"this Spark application reads store {store!r} at version {pinned}, not version {version}",
                    hint="drop version=, or pass repin=True to move the whole application to it",
                )
            else:
                pinned_commit = None  # first loader, or an explicit repin
            self.client = ConfigClient(location, store, variables=self.variables, version=version, cache_dir=cache_dir)
            if pinned_commit is not None and pinned_commit != self.client.commit:
                raise PinConflict(
                    f"version {version} of store {store!r} is commit {self.client.commit[:12]} in {location}, "
                    f"but this application is pinned to commit {pinned_commit[:12]}",
                    hint="read the same repository as the first loader, or pass a different store name",
                )
            spark.conf.set(commit_key, self.client.commit)
            spark.conf.set(version_key, str(self.client.version))

    @property
    def version(self) -> int:
        return self.client.version

    @property
    def commit(self) -> str:
        return self.client.commit

    @property
    def snapshot(self) -> Snapshot:
        return self.client.snapshot

    def __repr__(self) -> str:
        return f"ConfigLoader(store={self.store!r}, version={self.version}, commit={self.commit[:7]})"

    # -- DataFrames --------------------------------------------------------------------------------------
    def configs(self, keys: Iterable[str] | None = None) -> Any:
        """DataFrame(key, version, commit, exists, config): every node, or the given keys (a key without
        a node reads as its nearest ancestor's config, with exists=false). `config` is JSON."""
        wanted = sorted(self.snapshot.nodes) if keys is None else [self._key(k) for k in keys]
        cached = self.client.config_json()  # encoded once per version, then read from the client's cache
        exists: list[bool] = []
        configs: list[str] = []
        for key in wanted:
            text = cached.get(key)
            exists.append(text is not None)
            if text is None:  # no node of its own (or one that failed to resolve: lookup raises)
                hit = self.snapshot.lookup(key)
                inherited = hit.config is self.snapshot.nodes[hit.node].config
                text = cached[hit.node] if inherited else compact_json(hit.config)
            configs.append(text)
        pa = self._pa
        table = pa.table(
            {
                "key": pa.array(wanted, pa.string()),
                "version": pa.repeat(pa.scalar(self.version, pa.int64()), len(wanted)),
                "commit": pa.repeat(pa.scalar(self.commit, pa.string()), len(wanted)),
                "exists": pa.array(exists, pa.bool_()),
                "config": pa.array(configs, pa.string()),
            }
        )
        t = self._types
        schema = t.StructType(
            [
                t.StructField("key", t.StringType(), True),
                t.StructField("version", t.LongType(), True),
                t.StructField("commit", t.StringType(), True),
                t.StructField("exists", t.BooleanType(), True),
                t.StructField("config", t.StringType(), True),
            ]
        )
        return self._frame(table, schema)

    def datasets(self, tag: str) -> Any:
        """DataFrame(key) of the datasets that carry `tag`."""
        keys = self.client.datasets(tag)
        table = self._pa.table({"key": self._pa.array(keys, self._pa.string())})
        t = self._types
        return self._frame(table, t.StructType([t.StructField("key", t.StringType(), True)]))

    def attach(
        self,
        df: Any,
        on: str = "dataset",
        paths: Sequence[str] | Mapping[str, str] = (),
        missing: Missing = "inherit",
        prefix: str = "",
    ) -> Any:
        """`df` with one column per path (named prefix + path with `.` as `_`, or as given by a mapping
        {column: path}), read from the config of each row's `on` key, by a broadcast join.

        Columns are typed where the JSON Schemas give the path a simple type (string, integer as long,
        number as double, boolean); other values arrive as JSON strings. A key without a node reads its
        nearest ancestor's config (`missing="inherit"`), nulls (`"null"`), or fails (`"error"`)."""
        if missing not in ("inherit", "null", "error"):
            raise UsageError(f"missing={missing!r}: expected 'inherit', 'null' or 'error'")
        if on not in df.columns:
            raise UsageError(f"attach(on={on!r}): the DataFrame has no such column", hint=f"columns: {df.columns}")
        columns = (
            {f"{prefix}{p.replace('.', '_')}": p for p in paths}
            if not isinstance(paths, Mapping)
            else {f"{prefix}{c}": p for c, p in paths.items()}
        )
        clash = sorted(set(columns) & set(df.columns))
        if clash:
            raise UsageError(f"attach would overwrite columns {clash}", hint="pass prefix= or a {column: path} mapping")
        with ThreadPoolExecutor(1) as pool:  # read the schemas from git while Spark finds the keys
            loading = pool.submit(self._load_specs)
            keys = self._distinct_keys(df, on)
            loading.result()
        table, schema = self.lookup_table(keys, columns, missing)
        lookup = self._frame(table, schema)
        f = self._functions
        joined = df.join(f.broadcast(lookup), df[on] == lookup[LOOKUP_KEY], "left")
        return joined.select(*[df[c] for c in df.columns], *[lookup[c] for c in columns])

    def _hashes(self, column: Any) -> list[Any]:
        """Two independent hashes of a key column (xxhash64 and murmur3: 96 bits), null for a null key.
        Grouping them is several times cheaper than grouping the strings; two keys taken for one would need
        a 96-bit collision."""
        f = self._functions
        return [f.when(column.isNotNull(), f.xxhash64(column)), f.hash(column)]

    def _with_hashes(self, frame: Any) -> Any:
        """`frame` with the `_hashes` of its `key` column first."""
        hashes = [h.alias(name) for h, name in zip(self._hashes(frame["key"]), _HASHES, strict=True)]
        return frame.select(*hashes, *frame.columns)

    def _distinct_keys(self, df: Any, on: str) -> list[str]:
        """The distinct non-null values of `df[on]`, from one pass that groups their hashes, matched to the
        node keys in Spark; hashes of keys without a node are read back as strings by a second pass."""
        f, t = self._functions, self._types
        hashes = [h.alias(name) for h, name in zip(self._hashes(df[on]), _HASHES, strict=True)]
        distinct = df.select(*hashes).where(f.col(_HASHES[0]).isNotNull()).distinct()
        found = distinct.join(f.broadcast(self._node_hashes()), list(_HASHES), "left").toArrow()
        keys: list[str] = found.column("key").drop_null().to_pylist()
        unknown = found.filter(found.column("key").is_null()).select(list(_HASHES))
        if unknown.num_rows:
            schema = t.StructType([t.StructField(_HASHES[0], t.LongType()), t.StructField(_HASHES[1], t.IntegerType())])
            rows = self._with_hashes(df.select(df[on].alias("key")))
            rest = rows.join(f.broadcast(self._frame(unknown, schema)), list(_HASHES), "left_semi").select("key")
            keys.extend(rest.distinct().toArrow().column("key").to_pylist())
        return keys

    def _node_hashes(self) -> Any:
        """DataFrame(_HASHES..., key) of every node key, built once per loader."""
        if not hasattr(self, "_nodes_hashed"):
            pa, t = self._pa, self._types
            table = pa.table({"key": pa.array(sorted(self.snapshot.nodes), pa.string())})
            nodes = self._frame(table, t.StructType([t.StructField("key", t.StringType(), True)]))
            self._nodes_hashed: Any = self._with_hashes(nodes)
        return self._nodes_hashed

    def lookup_table(self, raw_keys: Sequence[str], columns: Mapping[str, str], missing: Missing) -> tuple[Any, Any]:
        """The pyarrow table (column LOOKUP_KEY: the raw keys as given, then one column per entry of `columns`)
        and the Spark schema that `attach` joins; public so a benchmark can time the build on its own."""
        found: dict[str, Mapping[str, Any] | None] = {}
        nodes: set[str] = set()
        absent: list[str] = []
        for raw in raw_keys:
            node = self.snapshot.nodes.get(raw)
            if node is not None and node.config is not None:  # a node key as written: the common case
                found[raw] = node.config
                nodes.add(raw)
                continue
            try:
                hit = self.snapshot.lookup(self._key(raw))
            except CfgtoolError:  # an invalid key: as missing as a key can be
                found[raw] = None
                absent.append(raw)
                continue
            if not hit.exists:
                absent.append(raw)
            if hit.exists or missing == "inherit":
                found[raw] = hit.config
                nodes.add(hit.node)
            else:
                found[raw] = None
        if missing == "error" and absent:
            shown = ", ".join(sorted(absent)[:_SHOWN_MISSING])
            more = f" and {len(absent) - _SHOWN_MISSING} more" if len(absent) > _SHOWN_MISSING else ""
            raise CfgtoolError(
                f"{len(absent)} key(s) have no node in store {self.store!r} version {self.version}: {shown}{more}",
                hint="fix the keys, or pass missing='inherit' or missing='null'",
            )
        declared = self._schema_types(nodes) if nodes else {}
        pa, t = self._pa, self._types
        arrow_types = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}
        spark_types = {
            "string": t.StringType(),
            "integer": t.LongType(),
            "number": t.DoubleType(),
            "boolean": t.BooleanType(),
        }
        keys = list(found)
        arrays = {LOOKUP_KEY: pa.array(keys, pa.string())}
        fields = [t.StructField(LOOKUP_KEY, t.StringType(), True)]
        for column, path in columns.items():
            kind = declared.get(path)
            arrays[column] = pa.array(
                _column(found, split_path(path), kind, path), arrow_types.get(kind or "", pa.string())
            )
            fields.append(t.StructField(column, spark_types.get(kind or "", t.StringType()), True))
        return pa.table(arrays), t.StructType(fields)

    def broadcast(self, keys: Iterable[str] = ()) -> Any:
        """A broadcast `SnapshotView` of every node's config (plain dicts) for UDFs: `.value.get(key)`.

        A key without a node reads its nearest ancestor's config on executors; pass such keys here to have
        them resolved on the driver instead (needed when an ancestor uses `${cfgtool.name}`)."""
        configs = {key: snap.config for key, snap in self.snapshot.nodes.items() if snap.config is not None}
        for raw in keys:
            hit = self.snapshot.lookup(self._key(raw))
            configs.setdefault(hit.key, hit.config)
        view = SnapshotView(configs, self.snapshot.name, self.version, self.commit)
        return self.spark.sparkContext.broadcast(view)

    # -- helpers -----------------------------------------------------------------------------------------
    def _key(self, key: str) -> str:
        return normalize_key(key, self.snapshot.name)

    def _frame(self, table: Any, schema: Any) -> Any:
        # every field nullable, as in the Arrow table: a non-null Spark field costs a check of each batch
        return self.spark.createDataFrame(table, schema=schema)

    def _schema_types(self, keys: Iterable[str]) -> dict[str, str]:
        """Declared simple types of config paths, from the schemas at the pinned commit that select `keys`."""
        specs = self._load_specs()
        return schema_types(specs, self.snapshot, keys) if specs else {}

    def _load_specs(self) -> list[Any]:
        """The schemas at the pinned commit, read once per loader."""
        if not hasattr(self, "_specs"):
            specs: list[Any] = []
            source = open_source(self.client.repo, self.store, self.commit)
            blob = source.read(source.path(SETTINGS_FILE))
            settings, _ = parse_settings(blob.text() if blob is not None else "", source.path(SETTINGS_FILE))
            schemas_dir = settings.schemas_dir(source.store)
            if schemas_dir is not None:
                files = read_schema_files(self.client.repo, schemas_dir, self.commit)
                specs, _ = load_schemas(files, settings.name)
            self._specs: list[Any] = specs
        return self._specs


class SnapshotView:
    """Plain configs of one version for executors: `get(key)` and `get_value(key, path)` read a key
    without a node as its nearest ancestor. Picklable; holds no git, repository or Spark state."""

    def __init__(self, configs: Mapping[str, Mapping[str, Any]], name: str | None, version: int, commit: str) -> None:
        self.configs = dict(configs)
        self.name = name
        self.version = version
        self.commit = commit

    def key(self, key: str) -> str:
        """The canonical form of `key` (scheme stripped, leading `/`, no trailing `/`)."""
        if self.name is not None and key.startswith(f"{self.name}:"):
            key = key[len(self.name) + 1 :]
        key = "/" + key.strip("/")
        return key

    def nearest(self, key: str) -> str | None:
        """`key` if it has a config, else its nearest ancestor that has one."""
        key = self.key(key)
        while key not in self.configs:
            if key == ROOT:
                return None
            key = key.rsplit("/", 1)[0] or ROOT
        return key

    def exists(self, key: str) -> bool:
        return self.key(key) in self.configs

    def get(self, key: str) -> Mapping[str, Any] | None:
        node = self.nearest(key)
        return self.configs[node] if node is not None else None

    def get_value(self, key: str, path: str, default: Any = None) -> Any:
        """The value at the dotted `path` (quote segments containing dots) in `key`'s config, or `default`."""
        value = value_at(self.get(key), split_path(path))
        return default if value is MISSING else value

    def __repr__(self) -> str:
        return f"SnapshotView({len(self.configs)} keys, version={self.version}, commit={self.commit[:7]})"


def _conf_variables(spark: Any) -> dict[str, str]:
    """`spark.cfgtool.var.<name>` entries of the Spark conf, as variables."""
    entries: Mapping[str, str] = getattr(spark.conf, "getAll", None) or dict(spark.sparkContext.getConf().getAll())
    return {k[len(VAR_PREFIX) :]: str(v) for k, v in entries.items() if k.startswith(VAR_PREFIX)}


_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def _matches(value: Any, kind: str) -> bool:
    """Whether a plain value is of the JSON Schema simple type `kind` (a bool is no number)."""
    return isinstance(value, _PYTHON_TYPES[kind]) and not (kind != "boolean" and isinstance(value, bool))


def _column(
    found: Mapping[str, Mapping[str, Any] | None], parts: tuple[str, ...], kind: str | None, path: str
) -> list[Any]:
    """The value at `parts` of each config, as the column type: the declared simple type, or JSON text.
    (`value_at` inlined: this runs for every key and path of an `attach`.)"""
    texts: dict[tuple[type, Any], str] = {}  # JSON of scalars by (type, value): they repeat across keys
    out: list[Any] = []
    for key, config in found.items():
        value: Any = config
        try:
            for part in parts:
                value = value[part]
        except (KeyError, TypeError):  # no such key, or not an object (plain configs only)
            value = None
        if value is None:
            out.append(None)
        elif kind is None:
            if not isinstance(value, str | int | float):  # objects and lists
                out.append(compact_json(value))
                continue
            text = texts.get((type(value), value))
            if text is None:
                text = texts[type(value), value] = compact_json(value)
            out.append(text)
        elif _matches(value, kind):
            out.append(float(value) if kind == "number" else value)
        else:
            raise CfgtoolError(
                f"{key}: {path} is {compact_json(value)}, but the schemas declare it {kind}",
                hint="fix the config: `cfgtool compile` reports the schema violation",
            )
    return out


__all__ = ["ConfigLoader", "PinConflict", "SnapshotView", "SparkNotInstalled", "pin_keys"]
