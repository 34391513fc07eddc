"""How `attach` meets the data in Spark. It holds the join condition and keys in canonical form. It holds the one
pass that finds the data's keys without a node.

The lookup DataFrame carries a 64-bit hash of its key. Spark probes a compact map of longs, cheaper than hashing and
matching strings (`benchmarks/spark_key_pass.py`). It then compares the strings. So a hash collision can never join a
row to another key's values.

Expressions are written as Spark SQL text (`selectExpr`, one `expr`), not built from `Column` calls. PySpark records
the Python call site of every `Column` method and `functions` call, with several round trips to the JVM. That made
building the plan of an `attach` cost as much as a tenth of its join.
"""

from __future__ import annotations

import re
from typing import Any

from cfgtool.store.keys import ROOT

LOOKUP_KEY = "__cfgtool_key"  # the lookup's key column (any other name could be a requested column)
LOOKUP_HASH = "__cfgtool_key_hash"  # the xxhash64 of LOOKUP_KEY: the equi-key of the join
DATA_KEY = "__cfgtool_data_key"  # the data's key, projected once
# equal xxhash64, then equal strings: the string test is two prefix tests so that Spark keeps it a condition,
# not a second join key
_SAME_KEY = (
    f"xxhash64({DATA_KEY}) = {LOOKUP_HASH} AND startswith({LOOKUP_KEY}, {DATA_KEY}) "
    f"AND startswith({DATA_KEY}, {LOOKUP_KEY})"
)


def name(column: str) -> str:
    """`column` as a Spark SQL identifier (backquoted: any name, dots and backquotes included)."""
    return "`" + column.replace("`", "``") + "`"


def string(text: str) -> str:
    """`text` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def with_hash(lookup: Any) -> Any:
    """`lookup` with the LOOKUP_HASH of its LOOKUP_KEY first."""
    return lookup.selectExpr(f"xxhash64({LOOKUP_KEY}) AS {LOOKUP_HASH}", "*")


def canonical(key: str, store_name: str | None) -> str:
    """The SQL of key column `key` (an expression) in the canonical form of `normalize_key`. That form has the store
    scheme stripped, a leading `/` and no trailing `/`. An invalid key stays invalid, so it matches no node. Keys
    that are canonical already, nearly all of them, skip the regular expression."""
    key = f"CAST({key} AS STRING)"
    scheme = f"(?:{re.escape(store_name)}:(?=/))?" if store_name else ""
    plain = f"startswith({key}, '/') AND ({key} = {string(ROOT)} OR NOT endswith({key}, '/'))"
    return f"CASE WHEN {plain} THEN {key} ELSE regexp_replace({key}, {string(f'^{scheme}/?(.*?)/?$')}, '/$1') END"


def join_lookup(f: Any, df: Any, key: str, lookup: Any) -> Any:
    """`df` with the columns of `lookup` but its key and hash, by a broadcast left join. It joins on `key`, the SQL
    of an expression over `df`'s columns. The key is projected once before the join. Written into the condition,
    Spark would compute it for the hash and again for each string test."""
    keyed = df.selectExpr("*", f"CAST({key} AS STRING) AS {DATA_KEY}")
    joined = keyed.join(lookup.hint("broadcast"), f.expr(_SAME_KEY), "left")
    return joined.drop(DATA_KEY, LOOKUP_HASH, LOOKUP_KEY)


def keys_without_node(f: Any, df: Any, on: str, nodes: Any) -> list[str]:
    """The distinct non-null values of `df[on]` that are no node key as written. It takes one anti join of the data
    against the broadcast node keys. Then a distinct of what is left, usually little or nothing."""
    data = df.selectExpr(f"CAST({name(on)} AS STRING) AS {DATA_KEY}").where(f"{DATA_KEY} IS NOT NULL")
    nodes = nodes.select(LOOKUP_HASH, LOOKUP_KEY).hint("broadcast")
    rest = data.join(nodes, f.expr(_SAME_KEY), "left_anti").distinct()
    keys: list[str] = rest.toArrow().column(DATA_KEY).to_pylist()
    return keys
