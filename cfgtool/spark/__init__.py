"""The PySpark loader (docs/spark.md): one pinned version of a store per Spark application.

`ConfigLoader` (loader.py) pins the version and builds DataFrames. `attach` types its columns (columns.py). It keeps
each lookup for the application (tables.py) and on disk (stored.py), and joins in Spark (join.py). `SnapshotView`
(view.py) is what executors receive. pyspark, pyarrow and pandas are imported lazily. Without them, constructing a
loader says to install the `spark` extra. Unpickling a `SnapshotView` on an executor imports only view.py. The
pyspark boundary is typed `Any`.
"""

import typing as _typing

from cfgtool._lazy import make_lazy as _make_lazy

if _typing.TYPE_CHECKING:
    from cfgtool.spark.loader import ConfigLoader as ConfigLoader
    from cfgtool.spark.loader import PinConflict as PinConflict
    from cfgtool.spark.loader import SparkNotInstalled as SparkNotInstalled
    from cfgtool.spark.loader import pin_keys as pin_keys
    from cfgtool.spark.view import SnapshotView as SnapshotView

__all__ = ["ConfigLoader", "PinConflict", "SnapshotView", "SparkNotInstalled", "pin_keys"]

_make_lazy(
    __name__,
    {
        "ConfigLoader": ("cfgtool.spark.loader", "ConfigLoader"),
        "PinConflict": ("cfgtool.spark.loader", "PinConflict"),
        "SnapshotView": ("cfgtool.spark.view", "SnapshotView"),
        "SparkNotInstalled": ("cfgtool.spark.loader", "SparkNotInstalled"),
        "pin_keys": ("cfgtool.spark.loader", "pin_keys"),
    },
)
