"""ConfigLoader (docs/spark.md): one pinned version of a store per Spark application.

The first loader of an application resolves the current version on the driver, through `ConfigClient`. It records it
in the Spark conf (`spark.cfgtool.<store>.commit`, `.version`). Every later loader reads that pin. So one application
never mixes versions, even when a version is published mid-run. During a staged rollout the application is one
instance, its id `spark.sparkContext.applicationId`: `current` is the version that id reads (docs/rollout.md). A
loader reads everything it needs from the repository when it is built: the snapshot, through the client's cache, and
the schema types. After that, neither the driver nor any executor touches git or the repository. Configs reach
executors as DataFrames built through Arrow with an explicit schema, or as a broadcast `SnapshotView`.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cfgtool._util.cachedir import cache_root, checked_root
from cfgtool.client.client import ConfigClient
from cfgtool.client.local import compact_json
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.hocon import split_path
from cfgtool.hocon.resolver import render_path
from cfgtool.snapshot.model import Lookup, Snapshot
from cfgtool.spark import stored, tables
from cfgtool.spark.columns import Kind, column_array, column_kind, revealed, spark_type
from cfgtool.spark.join import (
    DATA_KEY,
    LOOKUP_HASH,
    LOOKUP_KEY,
    canonical,
    join_lookup,
    keys_without_node,
    name,
    with_hash,
)
from cfgtool.spark.view import SnapshotView
from cfgtool.store.keys import normalize_key
from cfgtool.store.settings import parse_settings
from cfgtool.store.sources import settings_at
from cfgtool.validate import load_schemas, read_schema_files, schema_types
from cfgtool.versions.artifact_rows import values_at
from cfgtool.versions.names import version_spec

Missing = Literal["inherit", "null", "error"]
CONF_PREFIX = "spark.cfgtool."
VAR_PREFIX = "spark.cfgtool.var."
_PIN_LOCK = threading.Lock()  # loaders built from several driver threads agree on one pin
_SHOWN_MISSING = 5  # how many missing keys an error lists


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
            hint="in your cfgtool checkout: pip install -e '.[spark]'",
        ) from exc


def pin_keys(store: str) -> tuple[str, str]:
    """The Spark conf keys holding an application's pinned commit and version of `store`."""
    return f"{CONF_PREFIX}{store}.commit", f"{CONF_PREFIX}{store}.version"


class ConfigLoader:
    """Reads the pinned version of a store into Spark: `configs()`, `attach()`, `datasets()`, `broadcast()`.

    `identity` is an age identity file of one of the store's recipients. With it, `attach(..., reveal=True)` and
    `configs(reveal=True)` open the secrets they read, on the driver. Otherwise secrets read `[hidden]`."""

    def __init__(
        self,
        spark: Any,
        location: str | Path,
        store: str = "store",
        version: int | str | None = None,
        repin: bool = False,
        variables: Mapping[str, str] | None = None,
        *,
        cache_dir: str | Path | None = None,
        identity: str | Path | None = None,
    ) -> None:
        self._pa: Any = _require("pyarrow")
        self._functions: Any = _require("pyspark.sql.functions")
        self._types: Any = _require("pyspark.sql.types")
        self.spark = spark
        self.store = store
        self.variables = {**_conf_variables(spark), **(variables or {})}
        self._identity = identity
        # the client's, and `stored`'s
        self.cache = checked_root(Path(cache_dir)) if cache_dir is not None else cache_root()
        app = spark.sparkContext.applicationId  # the instance whose `current` a staged rollout decides
        if isinstance(version, str):  # N, or the number `current` / `previous` stands for now (then pinned as N)
            named = version_spec(version)
            version = (
                named
                if isinstance(named, int)
                else ConfigClient(
                    location, store, variables=self.variables, version=named, cache_dir=self.cache, instance=app
                ).version
            )
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
            self.client = ConfigClient(
                location, store, variables=self.variables, version=version, cache_dir=self.cache, identity=identity,
                instance=app,
            )  # fmt: skip
            if pinned_commit is not None and pinned_commit != self.client.commit:
                raise PinConflict(
                    f"version {version} of store {store!r} is commit {self.client.commit[:12]} in {location}, "
                    f"but this application is pinned to commit {pinned_commit[:12]}",
                    hint="read the same repository as the first loader, or pass a different store name",
                )
            spark.conf.set(commit_key, self.client.commit)
            spark.conf.set(version_key, str(self.client.version))
        self._version_key = (self.store, self.commit, tuple(sorted(self.variables.items())))
        # read now, so that nothing later needs the repository (it may be gone: docs/spark.md)
        self._declared: dict[str, str] = tables.kept(("schema types", *self._version_key), self._schema_types)

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
    def configs(self, keys: Iterable[str] | None = None, reveal: bool = False) -> Any:
        """DataFrame(key, version, commit, exists, config): every node, or the given keys. A key without a node reads
        as its nearest ancestor's config, with exists=false. `config` is JSON; its secrets are `[hidden]` unless
        `reveal` (which needs the loader's identity)."""
        self._check_reveal(reveal)
        wanted = sorted(self.snapshot.nodes) if keys is None else [self._key(k) for k in keys]
        cached = self.client.config_json()  # encoded once per version, then read from the client's cache
        exists: list[bool] = []
        configs: list[str] = []
        for key in wanted:
            text = cached.get(key)
            exists.append(text is not None)
            node = key
            if text is None:  # no node of its own (or one that failed to resolve: lookup raises)
                hit = self.snapshot.lookup(key)
                node = hit.node
                inherited = hit.config is self.snapshot.nodes[hit.node].config
                text = cached[hit.node] if inherited else compact_json(hit.config)
            if reveal and self.snapshot.secrets.get(node):
                text = compact_json(revealed(self.client.lookup(key).config))
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
        names = {"key": t.StringType(), "version": t.LongType(), "commit": t.StringType()}
        names |= {"exists": t.BooleanType(), "config": t.StringType()}
        return self._frame(table, t.StructType([t.StructField(n, k, True) for n, k in names.items()]))

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
        reveal: bool = False,
    ) -> Any:
        """`df` with one column per path, read from the config of each row's `on` key, by a broadcast join. A column
        is named prefix + path with `.` as `_`, or as given by a mapping {column: path}.

        Each column is typed by the version, never by the rows (docs/spark.md, `columns.column_kind`). It takes a
        schema's simple type, else the type all nodes' values share, else JSON text. A key without a node reads its
        nearest ancestor's config (`missing="inherit"`, docs/resolution.md#keys-without-a-node), nulls (`"null"`), or
        fails (`"error"`). Secret paths read `[hidden]` unless `reveal` (which needs the loader's identity).

        The lookup of every node is kept per application and paths (`tables`). It is also kept on disk for later
        applications of the same version (`stored`). It is built only when neither has it. With "inherit" and
        "error", one pass over `df` first finds its keys that are no node key as written. Those are then resolved on
        the driver. "null" needs no pass: Spark puts each key in canonical form itself."""
        if missing not in ("inherit", "null", "error"):
            raise UsageError(f"missing={missing!r}: expected 'inherit', 'null' or 'error'")
        if on not in df.columns:
            raise UsageError(f"attach(on={on!r}): the DataFrame has no such column", hint=f"columns: {df.columns}")
        self._check_reveal(reveal)
        columns = (
            {f"{prefix}{p.replace('.', '_')}": p for p in paths}
            if not isinstance(paths, Mapping)
            else {f"{prefix}{c}": p for c, p in paths.items()}
        )
        clash = sorted((set(columns) | {DATA_KEY, LOOKUP_HASH, LOOKUP_KEY}) & set(df.columns))
        if clash:
            raise UsageError(f"attach would overwrite columns {clash}", hint="pass prefix= or a {column: path} mapping")
        f = self._functions
        if reveal:  # opened secrets are never kept beyond this call
            lookup, kinds = self._lookup_frame(*self._node_table(columns, reveal=True))
        else:
            app = self.spark.sparkContext.applicationId
            key = ("lookup", app, *self._version_key, tuple(columns.items()))
            lookup, kinds = tables.kept(key, lambda: self._lookup_frame(*self._kept_table(columns)))
        data_key = name(on)
        if missing == "null":  # every node is in the lookup: the data's keys need no pass, only a spelling
            data_key = canonical(data_key, self.snapshot.name)
        else:
            others = keys_without_node(f, df, on, lookup)
            if others:
                lookup = lookup.unionByName(self._other_lookup(others, columns, kinds, missing, reveal))
        return join_lookup(f, df, data_key, lookup)

    def broadcast(self, keys: Iterable[str] = ()) -> Any:
        """A broadcast `SnapshotView` of every node's config (plain dicts, secrets `[hidden]`) for UDFs:
        `.value.get(key)`. A key without a node is KeyNotFound there unless read with `nearest=True`. That reads its
        nearest ancestor's config on executors. Pass such keys here to have them resolved on the driver instead. That
        is needed when an ancestor uses `${cfgtool.name}`."""
        configs = {key: snap.config for key, snap in self.snapshot.nodes.items() if snap.config is not None}
        phantoms = []
        for raw in keys:
            hit = self.snapshot.lookup(self._key(raw))
            if not hit.exists:
                configs[hit.key] = hit.config
                phantoms.append(hit.key)
        view = SnapshotView(configs, self.snapshot.name, self.version, self.commit, phantoms)
        return self.spark.sparkContext.broadcast(view)

    # -- lookups -----------------------------------------------------------------------------------------
    def _kept_table(self, columns: Mapping[str, str]) -> tuple[Any, dict[str, Kind]]:
        """The lookup table of every node for `columns`, as the disk keeps it for this version (`stored`). A previous
        application built it. Else it is built now and kept there."""
        ident = stored.identity(self.client.store, self.commit, self.variables, columns)
        path = stored.lookup_path(self.cache, ident)
        found = stored.read(self._pa, path, ident)
        if found is not None:
            return found
        table, kinds = self._node_table(columns, reveal=False)
        stored.write(self._pa, path, ident, table, kinds)
        return table, kinds

    def _node_table(self, columns: Mapping[str, str], reveal: bool) -> tuple[Any, dict[str, Kind]]:
        """The Arrow lookup table of every node that resolved: LOOKUP_KEY, then `columns`. Also each column's type,
        decided over every node. Only the values at the paths are decoded (`ConfigClient.config_values`)."""
        parts = {column: split_path(path) for column, path in columns.items()}
        keys, found = self.client.config_values(list(parts.values()))
        values = dict(zip(columns, found, strict=True))
        kinds = {c: column_kind(self._declared.get(render_path(parts[c])), values[c]) for c in columns}
        if reveal:
            secret = [i for i, k in enumerate(keys) if self.snapshot.secrets.get(k)]
            opened = [self.client.lookup(keys[i]).config for i in secret]
            for column, path in parts.items():
                for i, value in zip(secret, values_at(opened, path), strict=True):
                    values[column][i] = revealed(value)
        return self._lookup_table(keys, values, kinds), kinds

    def _other_lookup(
        self,
        raw_keys: Sequence[str],
        columns: Mapping[str, str],
        kinds: Mapping[str, Kind],
        missing: Missing,
        reveal: bool,
    ) -> Any:
        """The lookup rows of keys that are no node key as written. Such a key is another spelling of a node key, or
        an invalid key (nulls). Or it is a key without a node: its nearest ancestor's config, resolved again where it
        uses the intrinsics."""
        configs: list[Any] = []
        absent: list[str] = []
        for raw in raw_keys:
            try:
                hit: Lookup | None = (self.client.lookup if reveal else self.snapshot.lookup)(self._key(raw))
            except CfgtoolError:  # an invalid key: as missing as a key can be
                hit = None
            if hit is None or not hit.exists:
                absent.append(raw)
            configs.append(hit.config if hit is not None and (hit.exists or missing == "inherit") else None)
        if missing == "error" and absent:
            shown = ", ".join(sorted(absent)[:_SHOWN_MISSING])
            more = f" and {len(absent) - _SHOWN_MISSING} more" if len(absent) > _SHOWN_MISSING else ""
            raise CfgtoolError(
                f"{len(absent)} key(s) have no node in store {self.store!r} version {self.version}: {shown}{more}",
                hint="fix the keys, or pass missing='inherit' or missing='null'",
            )
        values = {c: values_at(configs, split_path(p)) for c, p in columns.items()}
        if reveal:
            values = {c: [revealed(v) for v in vs] for c, vs in values.items()}
        return self._lookup_frame(self._lookup_table(list(raw_keys), values, kinds), kinds)[0]

    def _lookup_table(self, keys: list[str], values: Mapping[str, list[Any]], kinds: Mapping[str, Kind]) -> Any:
        pa = self._pa
        arrays = {LOOKUP_KEY: pa.array(keys, pa.string())}
        arrays |= {column: column_array(pa, vs, kinds[column]) for column, vs in values.items()}
        return pa.table(arrays)

    def _lookup_frame(self, table: Any, kinds: Mapping[str, Kind]) -> tuple[Any, dict[str, Kind]]:
        """The lookup DataFrame of an Arrow lookup table (LOOKUP_HASH first), and the kinds it was built with."""
        t = self._types
        fields = [t.StructField(LOOKUP_KEY, t.StringType(), True)]
        fields += [t.StructField(column, spark_type(t, kinds[column]), True) for column in kinds]
        return with_hash(self._frame(table, t.StructType(fields))), dict(kinds)

    # -- helpers -----------------------------------------------------------------------------------------
    def _key(self, key: str) -> str:
        return normalize_key(key, self.snapshot.name)

    def _check_reveal(self, reveal: bool) -> None:
        if reveal and self._identity is None:
            raise UsageError(
                "reveal=True opens secrets, which needs the loader's identity",
                hint="ConfigLoader(spark, location, identity=PATH_TO_AGE_IDENTITY)",
            )

    def _frame(self, table: Any, schema: Any) -> Any:
        # every field nullable, as in the Arrow table: a non-null Spark field costs a check of each batch
        return self.spark.createDataFrame(table, schema=schema)

    def _schema_types(self) -> dict[str, str]:
        """The simple types the version's schemas declare, by rendered path (`schema_types`)."""
        store_dir, settings_path, text = settings_at(self.client.repo, self.store, self.commit)
        settings, _ = parse_settings(text, settings_path)
        schemas_dir = settings.schemas_dir(store_dir)
        if schemas_dir is None:
            return {}
        specs, _ = load_schemas(read_schema_files(self.client.repo, schemas_dir, self.commit), settings.name)
        return schema_types(specs, self.snapshot) if specs else {}


def _conf_variables(spark: Any) -> dict[str, str]:
    """`spark.cfgtool.var.<name>` entries of the Spark conf, as variables."""
    entries: Mapping[str, str] = getattr(spark.conf, "getAll", None) or dict(spark.sparkContext.getConf().getAll())
    return {k[len(VAR_PREFIX) :]: str(v) for k, v in entries.items() if k.startswith(VAR_PREFIX)}
