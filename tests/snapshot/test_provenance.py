"""cfgtool/snapshot/provenance.py: path names stay bounded in a long-lived process."""

from __future__ import annotations

from cfgtool.snapshot.provenance import path_name


def test_path_name_memo_is_bounded_over_many_distinct_paths() -> None:
    maxsize = path_name.cache_info().maxsize
    assert maxsize is not None
    for i in range(maxsize + 1000):  # every version of a store may bring new paths
        assert path_name(("kafka", f"field{i}")) == f"kafka.field{i}"
    assert path_name.cache_info().currsize <= maxsize
    assert path_name(("a.b", "c")) == '"a.b".c'
