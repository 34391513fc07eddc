"""A small Spark job: enrich event counts with dataset configs from the embedded example store.

    pip install -e '.[spark]'          # pyspark needs Java 17+
    cfgtool publish -m "first"         # once, if the repository has no published version yet
    python examples/spark_job.py [--version N]

Reads the store of the repository this file lives in at its current published version (pinned for the
whole application in the Spark conf), then adds the owner, partition count and cluster of each dataset to a
small DataFrame. `--conf spark.cfgtool.var.local_cluster.name=lva1` style variables come from the Spark
conf; here `--cluster` sets one.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository (default: the one holding this file)")
    parser.add_argument("--version", type=int, default=None, help="read this version instead of the current one")
    parser.add_argument("--cluster", default=None, help="local_cluster.name (ltx1 or lva1)")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    from cfgtool.errors import CfgtoolError
    from cfgtool.spark import ConfigLoader

    builder = SparkSession.builder.master("local[2]").appName("cfgtool-example").config("spark.ui.enabled", "false")
    if args.cluster:
        builder = builder.config("spark.cfgtool.var.local_cluster.name", args.cluster)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        loader = ConfigLoader(spark, args.repo, version=args.version)
    except CfgtoolError as exc:
        spark.stop()
        sys.exit(f"error: {exc}")
    print(f"{loader}: {len(loader.snapshot.nodes)} nodes")

    events = spark.createDataFrame(
        [
            ("/data/tracking/PageViewEvent", 1_204_332),
            ("/data/tracking/LoginEvent", 88_120),
            ("/data/tracking/BrandNewEvent", 12),  # no node yet: inherits /data/tracking
            ("/data/databases/jobs/postings", 5_310),
        ],
        "dataset string, events long",
    )
    enriched = loader.attach(events, paths=["owner", "kafka.partitions", "cluster.name"])
    enriched.show(truncate=False)
    enriched.printSchema()
    high = loader.datasets("/tags/priority/HIGH")
    print(f"{high.count()} datasets tagged /tags/priority/HIGH")
    spark.stop()


if __name__ == "__main__":
    main()
