"""How `attach` meets the data in Spark: the join condition, keys in canonical form, and the one pass that
finds the data's keys without a node.

The lookup DataFrame carries a 64-bit hash of its key: Spark probes a compact map of longs, cheaper than
hashing and matching strings (`benchmarks/spark_key_pass.py`), and then compares the strings, so a hash
collision can never join a row to another key's values.
"""

from __future__ import annotations

import re
from typing import Any

from cfgtool.store.keys import ROOT

LOOKUP_KEY = "__cfgtool_key"  # the lookup's key column (any other name could be a requested column)
LOOKUP_HASH = "__cfgtool_key_hash"  # the xxhash64 of LOOKUP_KEY: the equi-key of the join
_DATA_KEY = "__cfgtool_data_key"


def with_hash(f: Any, lookup: Any) -> Any:
    """`lookup` with the LOOKUP_HASH of its LOOKUP_KEY first."""
    return lookup.select(f.xxhash64(lookup[LOOKUP_KEY]).alias(LOOKUP_HASH), *lookup.columns)


def same_key(f: Any, key: Any, lookup: Any) -> Any:
    """The condition joining a data key to its lookup row: equal xxhash64, then equal strings. The string
    test is two prefix tests so that Spark keeps it a condition, not a second join key."""
    other = lookup[LOOKUP_KEY]
    key = key.cast("string")  # a no-op on strings, which keys are
    return (f.xxhash64(key) == lookup[LOOKUP_HASH]) & other.startswith(key) & key.startswith(other)


def canonical(f: Any, key: Any, store_name: str | None) -> Any:
    """A key column in the canonical form of `normalize_key` (store scheme stripped, leading `/`, no
    trailing `/`), computed in Spark; an invalid key stays invalid, so it matches no node. Keys that are
    canonical already, nearly all of them, skip the regular expression."""
    key = key.cast("string")
    is_canonical = key.startswith("/") & ((key == ROOT) | ~key.endswith("/"))
    scheme = f"(?:{re.escape(store_name)}:(?=/))?" if store_name else ""
    return f.when(is_canonical, key).otherwise(f.regexp_replace(key, f"^{scheme}/?(.*?)/?$", "/$1"))


def join_lookup(f: Any, df: Any, key: Any, lookup: Any, columns: list[str]) -> Any:
    """`df` with `columns` of `lookup` joined on `key` (an expression over `df`'s columns), by a broadcast
    left join. The key is projected once before the join: written into the condition, Spark would compute
    it for the hash and again for each string test."""
    keyed = df.select(*[df[c] for c in df.columns], key.cast("string").alias(_DATA_KEY))
    joined = keyed.join(f.broadcast(lookup), same_key(f, keyed[_DATA_KEY], lookup), "left")
    return joined.select(*[keyed[c] for c in df.columns], *[lookup[c] for c in columns])


def keys_without_node(f: Any, df: Any, on: str, nodes: Any) -> list[str]:
    """The distinct non-null values of `df[on]` that are no node key as written: one anti join of the data
    against the broadcast node keys, then a distinct of what is left (usually little or nothing)."""
    data = df.select(df[on].cast("string").alias(_DATA_KEY)).where(f.col(_DATA_KEY).isNotNull())
    nodes = nodes.select(LOOKUP_HASH, LOOKUP_KEY)
    rest = data.join(f.broadcast(nodes), same_key(f, data[_DATA_KEY], nodes), "left_anti").distinct()
    keys: list[str] = rest.toArrow().column(_DATA_KEY).to_pylist()
    return keys
