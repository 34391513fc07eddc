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
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from cfgtool.client import ConfigClient, compact_json
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.hocon import split_path
from cfgtool.hocon.resolver import render_path
from cfgtool.plain import MISSING, value_at
from cfgtool.snapshot import Snapshot
from cfgtool.store.keys import ROOT, normalize_key
from cfgtool.store.settings import parse_settings
from cfgtool.store.sources import settings_at
from cfgtool.validate import load_schemas, read_schema_files, schema_types

Missing = Literal["inherit", "null", "error"]
CONF_PREFIX = "spark.cfgtool."
VAR_PREFIX = "spark.cfgtool.var."
_PIN_LOCK = threading.Lock()  # loaders built from several driver threads agree on one pin
_SHOWN_MISSING = 5  # how many missing keys an error lists
_HASHES = ("__cfgtool_h1", "__cfgtool_h2")  # columns of the key hashes `attach` joins on
LOOKUP_KEY = "__cfgtool_key"  # the key column of `lookup_table` (any other name could be a requested column)
_LOOKUP_HASH = "__cfgtool_key_hash"  # the xxhash64 of LOOKUP_KEY: the equi-key of `attach`'s join


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

        Columns are typed where the version's JSON Schemas give the path a simple type (string, integer as
        long, number as double, boolean) and every node's value there has it; other values arrive as JSON
        strings. The output schema thus depends on the version and the paths, not on the data's keys. A key
        without a node reads its nearest ancestor's config (`missing="inherit"`), nulls (`"null"`), or fails
        (`"error"`).

        The join is keyed on a hash of the key. With "inherit" and "error", one pass over `df` first finds
        its keys, since keys without a node are resolved on the driver; "null" needs no pass: every node is
        in the lookup, and Spark puts each key in canonical form itself."""
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
        key = df[on]
        if missing == "null":  # keys without a node read nulls: every node is the lookup, and no pass is needed
            node_keys = sorted(k for k, snap in self.snapshot.nodes.items() if snap.config is not None)
            table, schema = self.lookup_table(node_keys, columns, missing)
            key = self._canonical(key)
        else:
            with ThreadPoolExecutor(1) as pool:  # read the schemas from git while Spark finds the keys
                loading = pool.submit(self._load_specs)
                keys = self._distinct_keys(df, on)
                loading.result()
            table, schema = self.lookup_table(keys, columns, missing)
        f = self._functions
        lookup = self._frame(table, schema)
        lookup = lookup.select(f.xxhash64(lookup[LOOKUP_KEY]).alias(_LOOKUP_HASH), *lookup.columns)
        joined = df.join(f.broadcast(lookup), _same_key(f, key, lookup), "left")
        return joined.select(*[df[c] for c in df.columns], *[lookup[c] for c in columns])

    def _canonical(self, key: Any) -> Any:
        """A key column in the canonical form of `normalize_key` (store scheme stripped, leading `/`, no
        trailing `/`), computed in Spark; an invalid key stays invalid, so it matches no node. Keys that are
        canonical already, nearly all of them, skip the regular expression."""
        f = self._functions
        key = key.cast("string")
        canonical = key.startswith("/") & ((key == ROOT) | ~key.endswith("/"))
        scheme = f"(?:{re.escape(self.snapshot.name)}:(?=/))?" if self.snapshot.name else ""
        return f.when(canonical, key).otherwise(f.regexp_replace(key, f"^{scheme}/?(.*?)/?$", "/$1"))

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
        """The pyarrow table (column LOOKUP_KEY: the raw keys as given, then one column per entry of `columns`,
        typed by `_column_kind`) and the Spark schema that `attach` joins; public so a benchmark can time the
        build on its own."""
        found: dict[str, Mapping[str, Any] | None] = {}
        absent: list[str] = []
        nodes = self.snapshot.nodes
        for raw in raw_keys:
            node = nodes.get(raw)
            if node is not None and node.config is not None:  # a node key as written: the common case
                found[raw] = node.config
                continue
            try:
                hit = self.snapshot.lookup(self._key(raw))
            except CfgtoolError:  # an invalid key: as missing as a key can be
                found[raw] = None
                absent.append(raw)
                continue
            if not hit.exists:
                absent.append(raw)
            found[raw] = hit.config if hit.exists or missing == "inherit" else None
        if missing == "error" and absent:
            shown = ", ".join(sorted(absent)[:_SHOWN_MISSING])
            more = f" and {len(absent) - _SHOWN_MISSING} more" if len(absent) > _SHOWN_MISSING else ""
            raise CfgtoolError(
                f"{len(absent)} key(s) have no node in store {self.store!r} version {self.version}: {shown}{more}",
                hint="fix the keys, or pass missing='inherit' or missing='null'",
            )
        pa, t = self._pa, self._types
        arrow_types = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}
        spark_types = {
            "string": t.StringType(),
            "integer": t.LongType(),
            "number": t.DoubleType(),
            "boolean": t.BooleanType(),
        }
        configs = list(found.values())
        arrays = {LOOKUP_KEY: pa.array(list(found), pa.string())}
        fields = [t.StructField(LOOKUP_KEY, t.StringType(), True)]
        for column, path in columns.items():
            parts = split_path(path)
            kind = self._column_kind(path, parts)
            values = _values(configs, parts)
            if kind is None:
                arrays[column] = pa.array(_json_texts(values), pa.string())
            else:  # every node conforms (`_column_kind`); intrinsics re-resolved for keys without a node are strings
                convert = {"number": float, "integer": int}.get(kind)
                typed = [None if v is None else convert(v) for v in values] if convert else values
                arrays[column] = pa.array(typed, arrow_types[kind])
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

    def _column_kind(self, path: str, parts: tuple[str, ...]) -> str | None:
        """The simple type of `path`'s column: the one the version's schemas declare, if every node's value
        there has it (a node no such schema selects may hold another); else None, JSON text. Decided over
        every node, never the keys at hand, so the output schema depends on the version and paths only."""
        if not hasattr(self, "_kinds"):
            specs = self._load_specs()
            self._declared: dict[str, str] = schema_types(specs, self.snapshot) if specs else {}
            self._kinds: dict[str, str | None] = {}
        if path not in self._kinds:
            kind = self._declared.get(render_path(parts))
            if kind is not None:
                configs = [snap.config for snap in self.snapshot.nodes.values()]
                if not all(v is None or _matches(v, kind) for v in _values(configs, parts)):
                    kind = None
            self._kinds[path] = kind
        return self._kinds[path]

    def _load_specs(self) -> list[Any]:
        """The schemas at the pinned commit, read once per loader."""
        if not hasattr(self, "_specs"):
            specs: list[Any] = []
            store_dir, settings_path, text = settings_at(self.client.repo, self.store, self.commit)
            settings, _ = parse_settings(text, settings_path)
            schemas_dir = settings.schemas_dir(store_dir)
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


def _same_key(f: Any, key: Any, lookup: Any) -> Any:
    """The condition joining a data key to its lookup row: equal xxhash64 (a long, so Spark probes a compact
    long map, cheaper than hashing and matching strings: `benchmarks/spark_key_pass.py`), then equal strings.
    The string test is two prefix tests so that Spark keeps it a condition, not a second join key."""
    other = lookup[LOOKUP_KEY]
    key = key.cast("string")  # a no-op on strings, which keys are
    return (f.xxhash64(key) == lookup[_LOOKUP_HASH]) & other.startswith(key) & key.startswith(other)


def _conf_variables(spark: Any) -> dict[str, str]:
    """`spark.cfgtool.var.<name>` entries of the Spark conf, as variables."""
    entries: Mapping[str, str] = getattr(spark.conf, "getAll", None) or dict(spark.sparkContext.getConf().getAll())
    return {k[len(VAR_PREFIX) :]: str(v) for k, v in entries.items() if k.startswith(VAR_PREFIX)}


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "integer": int,
    "number": (int, float),
    "boolean": bool,
}


def _matches(value: Any, kind: str) -> bool:
    """Whether a plain value is of the JSON Schema simple type `kind` and fits its column (a bool is no
    number; an integer may be written `8.0`, as in JSON Schema; an integer column is 64-bit)."""
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        return isinstance(value, int) and not isinstance(value, bool) and _INT64_MIN <= value <= _INT64_MAX
    return isinstance(value, _PYTHON_TYPES[kind]) and not (kind != "boolean" and isinstance(value, bool))


def _values(configs: Sequence[Mapping[str, Any] | None], parts: tuple[str, ...]) -> list[Any]:
    """The value at `parts` of each config, None where it has none (`value_at` inlined: this runs for
    every key and path of an `attach`; configs are plain dicts)."""
    first, *rest = parts
    out = [config.get(first) if config is not None else None for config in configs]
    for part in rest:
        out = [value.get(part) if isinstance(value, dict) else None for value in out]
    return out


def _json_texts(values: Sequence[Any]) -> list[str | None]:
    """`values` as compact JSON text; scalars repeat across keys, so their texts are shared."""
    texts: dict[tuple[type, Any], str] = {}
    out: list[str | None] = []
    for value in values:
        if value is None:
            out.append(None)
        elif not isinstance(value, str | int | float):  # objects and lists
            out.append(compact_json(value))
        else:
            text = texts.get((type(value), value))
            if text is None:
                text = texts[type(value), value] = compact_json(value)
            out.append(text)
    return out


__all__ = ["ConfigLoader", "PinConflict", "SnapshotView", "SparkNotInstalled", "pin_keys"]
