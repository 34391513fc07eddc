"""What building the lookup of every node costs on the driver, step by step (`attach`, first of its
application).

Usage:
    python -m benchmarks.spark_lookup_build --keep DIR [--datasets 100000] [--repeat 5]

Reuses (or creates) the store of `benchmarks/spark_attach.py --keep DIR` and times, for its four paths, the
median of `--repeat` runs of:
- decoding every config in Python (`config_json()`, one `json.loads` of all of them, `values_at` per path): how
  the lookup was built before;
- extracting only the values at the paths in SQLite (`ConfigClient.config_values`, a new client each time);
- typing the columns and building the Arrow table (`ConfigLoader._node_table`, which includes the extraction);
- reading the lookup kept on disk (`stored.read`);
- handing it to Spark (`ConfigLoader._lookup_frame`: `createDataFrame` and the hash column).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.machine import print_machine

HERE = Path(__file__).resolve().parent
PATHS = ["kafka.partitions", "owner", "kafka.replication.factor", "retention.ms"]


def median_time(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, required=True, metavar="DIR")
    parser.add_argument("--datasets", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_machine()
    repo, cache = args.keep / f"repo-{args.datasets}", args.keep / "cache"
    if not (repo / ".git").is_dir():
        make = [sys.executable, str(HERE / "spark_attach.py"), "--keep", str(args.keep), "--rows", "1000"]
        subprocess.run([*make, "--datasets", str(args.datasets), "--repeat", "1"], check=True, capture_output=True)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from cfgtool.client.local import ConfigClient
    from cfgtool.hocon import split_path
    from cfgtool.spark import ConfigLoader, stored
    from cfgtool.versions.artifact_rows import values_at

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    load_before = os.getloadavg()
    parts = [split_path(p) for p in PATHS]
    columns = {p.replace(".", "_"): p for p in PATHS}

    def decode_all() -> None:
        texts = ConfigClient(repo, cache_dir=cache).config_json()
        configs = json.loads("[" + ",".join(texts[k] for k in sorted(texts)) + "]")
        for path in parts:
            values_at(configs, path)

    loader = ConfigLoader(spark, repo, cache_dir=cache)
    ident = stored.identity(loader.client.store, loader.commit, loader.variables, columns)
    path = stored.lookup_path(cache, ident)
    table, kinds = loader._node_table(columns, reveal=False)
    stored.write(loader._pa, path, ident, table, kinds)
    rows = [
        ("every config decoded in Python, values walked", median_time(decode_all, args.repeat)),
        ("values at the paths extracted by SQLite", median_time(
            lambda: ConfigClient(repo, cache_dir=cache).config_values(parts), args.repeat)),
        ("the same, typed, as an Arrow table", median_time(lambda: loader._node_table(columns, False), args.repeat)),
        ("the lookup kept on disk, read", median_time(lambda: stored.read(loader._pa, path, ident), args.repeat)),
        ("handed to Spark (createDataFrame, hash column)", median_time(
            lambda: loader._lookup_frame(table, kinds), args.repeat)),
    ]  # fmt: skip
    load_after = os.getloadavg()
    spark.stop()
    print(f"{len(table):,} nodes, {len(PATHS)} paths; median of {args.repeat}; {path.stat().st_size:,} bytes on disk")
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    for label, seconds in rows:
        print(f"{label:50s} {seconds:6.3f} s")


if __name__ == "__main__":
    main()
