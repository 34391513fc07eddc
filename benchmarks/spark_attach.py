"""Spark loader speed: `attach` against the hand-written jobs that give the same answer.

Usage:
    python -m benchmarks.spark_attach [--datasets 100000] [--rows 10000000] [--repeat 3] [--keep DIR]

Generates a store of `--datasets` datasets (benchmarks/gen_store.py), publishes v1, builds a first
ConfigLoader (which compiles and caches the snapshot; not timed), then on local[2], with `rows` rows over
every dataset key, cached in memory, each result written to the `noop` sink:

- attach (default, `missing="inherit"`) against the best hand-written job with the same answer, written as a
  user would: the data's distinct keys collected to the driver, resolved with a ConfigClient
  (`get_value` per key and path), a DataFrame of them with a hand-written schema, a broadcast join
  (target: attach at most 1.15x);
- attach(missing="null") against a plain broadcast join of a table of the same values built beforehand
  (target: at most 1.15x);
- configs(): the config DataFrame of every node, built through Arrow and counted (target: 2 s for 100,000).

Each attach is timed three ways, by a new loader each time:
- "first ever for this version and paths": no lookup kept anywhere (the application's kept lookups dropped,
  `tables.clear()`, and the lookups kept on disk deleted, `stored.directory`): the lookup of every node is
  built from the version artifact (the values at the paths extracted by SQLite), typed, and written to disk;
- "first of its application": the application's kept lookups dropped, the disk as a previous application
  left it: the lookup is read from disk (Arrow IPC) and handed to Spark; this is the row the target is for;
- "lookup kept": a second attach of the same paths in the application: no driver work beyond the join.

Every loader and client is built untimed (a new application reads the snapshot from the disk cache). The
rounds are interleaved (each round times every variant once) and medians are printed, with the load average
before and after (the machine is shared). A ratio is the ratio of the medians; "round by round" is the median of
each round's ratio, which a load that changes between rounds disturbs less.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.machine import print_machine

HERE = Path(__file__).resolve().parent
PATHS = ["kafka.partitions", "owner", "kafka.replication.factor", "retention.ms"]
USER_SCHEMA = "k string, kafka_partitions long, owner string, kafka_replication_factor long, retention_ms long"
CONFIGS_TARGET_S = 2.0
RATIO_TARGET = 1.15


def timed(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--keep", type=Path, default=None, metavar="DIR", help="generate and publish into DIR once, reuse it later"
    )
    args = parser.parse_args()
    print_machine()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from cfgtool.client.local import ConfigClient
    from cfgtool.spark import ConfigLoader, stored, tables

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="cfgtool-spark-bench-") as tmp:
        where = args.keep or Path(tmp)
        repo, cache = where / f"repo-{args.datasets}", where / "cache"
        if not (repo / ".git").is_dir():
            env = {**os.environ, "CFGTOOL_CACHE_DIR": str(cache)}
            generate = [
                sys.executable,
                str(HERE / "gen_store.py"),
                "--datasets",
                str(args.datasets),
                "--out",
                str(repo),
            ]
            subprocess.run([*generate, "--git"], check=True, capture_output=True)
            publish = [sys.executable, "-m", "cfgtool", "--repo", str(repo), "publish", "-m", "bench"]
            subprocess.run(publish, check=True, capture_output=True, env=env)
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("cfgtool-spark-bench")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.memory", "2g")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        first = timed(lambda: ConfigLoader(spark, repo, cache_dir=cache))
        loader = ConfigLoader(spark, repo, cache_dir=cache)
        nodes = len(loader.snapshot.nodes)
        keys = [k for k in loader.snapshot.keys("/data") if k.count("/") == 4]  # /data/<domain>/<group>/<dataset>
        cold_configs = timed(lambda: loader.configs())

        key_table = spark.createDataFrame([(i, k) for i, k in enumerate(keys)], "i long, dataset string")
        rows = (
            spark.range(args.rows)
            .withColumn("i", (F.col("id") * 7919) % len(keys))
            .join(F.broadcast(key_table), "i")
            .select("id", "dataset")
            .cache()
        )
        rows.count()

        def user_lookup(client: ConfigClient, data_keys: list[str]) -> Any:
            """What a user writes to resolve keys on the driver: get_value per key and path."""
            values = [(k, *(client.get_value(k, p, None) for p in PATHS)) for k in data_keys]
            return spark.createDataFrame(values, USER_SCHEMA)

        precomputed = user_lookup(ConfigClient(repo, cache_dir=cache), keys).cache()
        precomputed.count()

        def write(frame: Any) -> None:
            frame.write.format("noop").mode("overwrite").save()

        def handwritten() -> float:
            client = ConfigClient(repo, cache_dir=cache)  # a new application's client: untimed

            def job() -> None:
                data_keys = [r.dataset for r in rows.select("dataset").distinct().collect()]
                lookup = user_lookup(client, data_keys)
                write(rows.join(F.broadcast(lookup), rows["dataset"] == lookup["k"], "left").drop("k"))

            return timed(job)

        def plain() -> float:
            return timed(
                lambda: write(rows.join(F.broadcast(precomputed), rows["dataset"] == precomputed["k"], "left"))
            )

        def attach(missing: Any, kept: str) -> Callable[[], float]:
            """kept: "none" (first ever), "disk" (first of its application) or "application" (lookup kept)."""

            def run() -> float:
                if kept != "application":
                    tables.clear()
                if kept == "none":
                    shutil.rmtree(stored.directory(cache), ignore_errors=True)
                new = ConfigLoader(spark, repo, cache_dir=cache)  # untimed
                return timed(lambda: write(new.attach(rows, on="dataset", paths=PATHS, missing=missing)))

            return run

        def configs() -> float:
            new = ConfigLoader(spark, repo, cache_dir=cache)
            return timed(lambda: new.configs().count())

        variants: dict[str, Callable[[], float]] = {
            "handwritten": handwritten,
            "attach_ever": attach("inherit", kept="none"),
            "attach": attach("inherit", kept="disk"),
            "attach_kept": attach("inherit", kept="application"),
            "plain": plain,
            "attach_null_ever": attach("null", kept="none"),
            "attach_null": attach("null", kept="disk"),
            "attach_null_kept": attach("null", kept="application"),
            "configs": configs,
        }
        plain()  # warm up the JVM paths once
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.repeat):
            for name, run in variants.items():
                times[name].append(run())
        dtypes = loader.attach(rows, on="dataset", paths=PATHS).dtypes[2:]
        spark.stop()

    med = {name: statistics.median(ts) for name, ts in times.items()}
    load_after = os.getloadavg()

    def row(label: str, name: str, base: str | None = None, target: float | None = None) -> None:
        spread = ", ".join(f"{t:.2f}" for t in times[name])
        line = f"{label:62s} {med[name]:6.2f} s  [{spread}]"
        if base is not None:
            ratio = med[name] / med[base]
            paired = statistics.median(t / b for t, b in zip(times[name], times[base], strict=True))
            verdict = "" if target is None else f" <= {target}x {'PASS' if ratio <= target else 'MISS'}"
            line += f"  {ratio:.2f}x{verdict} (round by round: {paired:.2f}x)"
        print(line)

    print(
        f"store: {args.datasets:,} datasets, {nodes:,} nodes; {args.rows:,} rows over {len(keys):,} keys; "
        f"{len(PATHS)} values; local[2]; median of {args.repeat} interleaved rounds [each round]"
    )
    print(
        f"load average before {load_before[0]:.2f} {load_before[1]:.2f}, after {load_after[0]:.2f} {load_after[1]:.2f}"
    )
    print(f"columns: {', '.join(f'{n} {t}' for n, t in dtypes)}")
    print(f"{'first loader (compiles and caches the snapshot, unless kept)':62s} {first:6.2f} s")
    print(f"{'first configs() of a version (encodes, caches)':62s} {cold_configs:6.2f} s")
    row(f"configs() for {nodes:,} keys: build + count", "configs")
    if med["configs"] > CONFIGS_TARGET_S:
        print(f"  configs() target {CONFIGS_TARGET_S} s: MISS")
    row("hand-written: distinct keys, ConfigClient, join", "handwritten")
    row("attach (default), first ever for this version and paths", "attach_ever", "handwritten")
    row("attach (default), first of its application", "attach", "handwritten", RATIO_TARGET)
    row("attach (default), lookup kept from a first attach", "attach_kept", "handwritten")
    row("plain broadcast join of a table built beforehand", "plain")
    row("attach(missing='null'), first ever for this version and paths", "attach_null_ever", "plain")
    row("attach(missing='null'), first of its application", "attach_null", "plain", RATIO_TARGET)
    row("attach(missing='null'), lookup kept", "attach_null_kept", "plain")


if __name__ == "__main__":
    main()
