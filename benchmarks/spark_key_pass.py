"""What finding the data's keys costs, against the join itself (how `attach` finds them).

Usage:
    python -m benchmarks.spark_key_pass [--keys 100000] [--rows 10000000] [--repeat 2]

No cfgtool involved: `rows` rows over `keys` distinct key strings, cached, on local[2]. It prints the best time of
- a plain broadcast join with four value columns, written to the `noop` sink (the baseline of spark_attach.py);
- the same join keyed on a 64-bit hash of the key (xxhash64, a long: Spark probes a compact long map), without
  and with a comparison of the strings (what an exact join on a hash must add);
- one pass that groups two hashes of every key (how `attach` used to find the data's keys);
- one pass that keeps the keys missing from a broadcast set of node keys, compared as strings, as 64-bit
  hashes, and as hashes then strings (what `attach` does now: exact, and it only tests membership).
`attach` needs one such pass before its join, because keys without a node are resolved on the driver.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.machine import print_machine


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print_machine()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    n = args.keys
    name = F.concat(F.lit("/data/g"), (F.col("id") % 30).cast("string"), F.lit("/t"), F.col("id").cast("string"))
    keys = spark.range(n).select(name.alias("dataset"), F.col("id").alias("i")).cache()
    rows = (
        spark.range(args.rows)
        .withColumn("i", (F.col("id") * 7919) % n)
        .join(F.broadcast(keys), "i")
        .select("id", "dataset")
        .cache()
    )
    values = keys.select(
        F.col("dataset").alias("k"),
        (F.col("i") % 7).alias("a"),
        F.lit("x").alias("b"),
        (F.col("i") / 3.0).alias("c"),
        (F.col("i") % 2 == 0).alias("d"),
    ).cache()
    nodes = keys.select(F.col("dataset").alias("key")).cache()
    hashed = values.select(F.xxhash64("k").alias("h"), *values.columns).cache()
    node_hashes = nodes.select(F.xxhash64("key").alias("h")).cache()
    for frame in (keys, rows, values, nodes, hashed, node_hashes):
        frame.count()

    def join() -> None:
        joined = rows.join(F.broadcast(values), rows["dataset"] == values["k"], "left").drop("k")
        joined.write.format("noop").mode("overwrite").save()

    def hash_join() -> None:
        joined = rows.join(F.broadcast(hashed), F.xxhash64(rows["dataset"]) == hashed["h"], "left")
        joined.drop("k", "h").write.format("noop").mode("overwrite").save()

    def hash_join_checked() -> None:
        same = (F.xxhash64(rows["dataset"]) == hashed["h"]) & hashed["k"].startswith(rows["dataset"])
        joined = rows.join(F.broadcast(hashed), same & rows["dataset"].startswith(hashed["k"]), "left")
        joined.drop("k", "h").write.format("noop").mode("overwrite").save()

    def hashes() -> None:
        rows.select(F.xxhash64("dataset"), F.hash("dataset")).distinct().count()

    def missing() -> None:
        without = rows.join(F.broadcast(nodes), rows["dataset"] == nodes["key"], "left_anti")
        without.select("dataset").distinct().collect()

    def missing_checked() -> None:
        key = rows["dataset"]
        same = (F.xxhash64(key) == hashed["h"]) & hashed["k"].startswith(key) & key.startswith(hashed["k"])
        without = rows.join(F.broadcast(hashed.select("h", "k")), same, "left_anti")
        without.select("dataset").distinct().collect()

    def missing_hash() -> None:
        key = rows["dataset"]
        without = rows.join(F.broadcast(node_hashes), F.xxhash64(key) == node_hashes["h"], "left_anti")
        without.select("dataset").distinct().collect()

    join()  # warm up
    passes = (
        ("join", join),
        ("hash_join", hash_join),
        ("hash_join_checked", hash_join_checked),
        ("hashes", hashes),
        ("missing", missing),
        ("missing_hash", missing_hash),
        ("missing_checked", missing_checked),
    )
    figures = {name: best(fn, args.repeat) for name, fn in passes}
    spark.stop()
    base = figures["join"]
    print(f"{args.rows:,} rows over {args.keys:,} keys, local[2], best of {args.repeat}")
    print(f"plain broadcast join (baseline)          {base:.2f} s")
    joins = {"hash_join": "join on a 64-bit hash", "hash_join_checked": "join on a hash, strings compared"}
    for kind, label in joins.items():
        print(f"{label:40s} {figures[kind]:.2f} s  ({figures[kind] / base:.2f}x of the join)")
    labels = {
        "hashes": "pass grouping two key hashes",
        "missing": "pass keeping keys without a node",
        "missing_hash": "the same pass on a 64-bit hash",
        "missing_checked": "on a hash, strings compared (attach)",
    }
    for kind, label in labels.items():
        print(f"{label:40s} {figures[kind]:.2f} s  (+{figures[kind] / base:.2f}x of the join)")


if __name__ == "__main__":
    main()
