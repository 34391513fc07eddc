"""A small Spark job: enrich event counts with dataset configs from the embedded example store.

    pip install -e '.[spark]'          # pyspark needs Java 17+
    cfgtool publish -m "first"         # once, if the repository has no published version yet
    spark-submit --master 'local-cluster[2,1,1024]' examples/spark_job.py [--version N]

(`python examples/spark_job.py` runs it in one local process instead.) The driver reads the store of the
repository this file lives in at its current published version, pinned for the whole application in the
Spark conf, then adds each dataset's owner, partition count and cluster to a small DataFrame by a broadcast
join, and its Kafka topic inside a Python UDF on the executors, from a broadcast `SnapshotView`. Executors
never touch git or the repository: give them a PATH without git (`--conf spark.executorEnv.PATH=...`), or
move the repository away while the job waits (`--wait-for`), and the rows stay the same. Variables come from
the Spark conf (`--conf spark.cfgtool.var.local_cluster.name=lva1`); here `--cluster` sets one.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EVENTS = [
    ("/data/tracking/PageViewEvent", 1_204_332),
    ("/data/tracking/LoginEvent", 88_120),
    ("/data/tracking/BrandNewEvent", 12),  # no node yet: reads as /data/tracking, with its own name
    ("/data/databases/jobs/postings", 5_310),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository (default: the one holding this file)")
    parser.add_argument("--version", type=int, default=None, help="read this version instead of the current one")
    parser.add_argument("--cluster", default=None, help="local_cluster.name (ltx1 or lva1)")
    parser.add_argument(
        "--wait-for",
        type=Path,
        default=None,
        metavar="FILE",
        help="once the version is loaded, wait until FILE exists before running the job (publish a new "
        "version or move the repository meanwhile: the job keeps its pin)",
    )
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # executors start the driver's Python
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from cfgtool.errors import CfgtoolError
    from cfgtool.spark import ConfigLoader

    builder = SparkSession.builder.appName("cfgtool-example").config("spark.ui.enabled", "false")
    if args.cluster:
        builder = builder.config("spark.cfgtool.var.local_cluster.name", args.cluster)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        loader = ConfigLoader(spark, args.repo, version=args.version)
    except CfgtoolError as exc:
        spark.stop()
        sys.exit(f"error: {exc}")
    print(f"{loader}: {len(loader.snapshot.nodes)} nodes", flush=True)
    if args.wait_for is not None:  # (spark-submit gives the driver no standard input to wait on)
        print(f"loaded; waiting for {args.wait_for}", flush=True)
        while not args.wait_for.exists():
            time.sleep(0.2)

    events = spark.createDataFrame(EVENTS, "dataset string, events long")
    enriched = loader.attach(events, paths=["owner", "kafka.partitions", "cluster.name"])
    view = loader.broadcast(keys=[dataset for dataset, _ in EVENTS])  # keys without a node: resolved here
    # BrandNewEvent has no node: it is read as /data/tracking on purpose (else KeyNotFound, as for a typo)
    topic = F.udf(lambda dataset: view.value.get_value(dataset, "kafka.topic", nearest=True), "string")
    enriched.withColumn("topic", topic("dataset")).orderBy("dataset").show(truncate=False)
    enriched.printSchema()
    high = loader.datasets("/tags/priority/HIGH")
    print(f"{high.count()} datasets tagged /tags/priority/HIGH")
    spark.stop()


if __name__ == "__main__":
    main()
