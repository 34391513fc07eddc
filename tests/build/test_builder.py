"""Building node snapshots: a build split over a forked worker gives exactly what one process gives."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cfgtool._util.forking import fork
from cfgtool.build.cache import PackedConfig
from cfgtool.compile.compiler import compile_store
from tests.conftest import GitRepo

SETTINGS = "tag_roots: [/tags]\nvariables:\n  cl:\n    values: [a1, b1]\n    default: a1\n"


def varied_store(repo: GitRepo) -> None:
    """A committed store with every kind of outcome: plain, inherited, imported and intrinsic values, a file
    that does not parse, a missing reference, an include, and imports that depend on a variable."""
    files: dict[str, str] = {
        "_CONFIG_STORE": SETTINGS,
        "main.conf": 'owner = root\nurn = "u:"${cfgtool.key}\n',
        "data/main.conf": "retention = 7\npath = /data/${cfgtool.name}\n",
        "tags/t/a1/main.conf": "cluster = a1\nretention = 30\n",
        "tags/t/b1/main.conf": "cluster = b1\n",
        "data/broken/main.conf": "a = {\n",
        "data/missing/main.conf": "a = ${nowhere}\n",
        "data/inc/main.conf": 'include "extra.conf"\nown = 1\n',
        "data/inc/extra.conf": "extra = ${retention}\n",
    }
    for g in range(3):
        files[f"data/g{g}/main.conf"] = f"group = g{g}\nsize = {g}0\n"
        for d in range(8):
            files[f"data/g{g}/d{d}/main.conf"] = f'name = d{d}\nlabel = ${{group}}"-"${{name}}\nn = {d}.50\n'
            if d % 3 == 0:
                files[f"data/g{g}/d{d}/includes"] = "/tags/t/${cl}\n"
    repo.write(files, under="store/")
    repo.commit()


# Runs in a fresh interpreter: a test process may have threads of its own (Spark's), and then no worker
# is forked. Prints, as JSON, what a compile produced and which keys the worker resolved instead of this process.
_RUN = """
import json, sys
from pathlib import Path
from cfgtool.build import builder as build
from cfgtool.compile.compiler import compile_store
from cfgtool.diagnostics import sort_key
from cfgtool.store.graph import Graph
from cfgtool.store.nodes import discover
from cfgtool.store.sources import open_source
build.PARALLEL_MIN = int(sys.argv[2])
if sys.argv[3:] == ["fail-flush"]:  # the child that writes the cache entries fails before writing any
    build.Builder._flushed = lambda self: sys.exit(1)
result = compile_store(Path(sys.argv[1]), ref="HEAD", validate=False)
diags = sorted(result.diagnostics, key=lambda d: (*sort_key(d), d.notes))
store = discover(open_source(Path(sys.argv[1]), ref="HEAD"))
graph = Graph(store)
builder = build.Builder(store, [])
builder.build(graph, graph.nodes)
print(json.dumps({"snapshot": result.snapshot.to_json(), "diagnostics": [repr(d) for d in diags],
                  "stats": result.stats, "here": sorted(builder.docs)}))
"""


def compiled(repo: GitRepo, cache: Path, parallel_min: int, *options: str) -> dict[str, Any]:
    """Compile `repo` at HEAD in a new process with the caches at `cache` (see `_RUN`)."""
    env = {**os.environ, "CFGTOOL_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", _RUN, str(repo.root), str(parallel_min), *options],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_build_split_over_a_worker_matches_one_process(store_repo: GitRepo, tmp_path: Path) -> None:
    varied_store(store_repo)
    one = compiled(store_repo, tmp_path / "one", 10**9)
    two = compiled(store_repo, tmp_path / "two", 1)
    assert any("E_SYNTAX" in d for d in one["diagnostics"]) and any("E_UNRESOLVED_REF" in d for d in one["diagnostics"])
    assert len(two["here"]) < len(one["here"])  # the worker did parse part of the store
    assert two["snapshot"] == one["snapshot"]  # digest, configs, hashes, provenance and texts
    assert two["diagnostics"] == one["diagnostics"]
    assert two["stats"] == one["stats"]
    again_one = compiled(store_repo, tmp_path / "one", 10**9)
    again_two = compiled(store_repo, tmp_path / "two", 10**9)  # the worker's cache entries were kept
    assert again_two["stats"] == again_one["stats"] and again_two["stats"]["resolved"] < one["stats"]["resolved"]
    assert again_two["snapshot"] == one["snapshot"]


def test_cache_entries_written_aside_are_whole_when_the_compile_returns_even_if_that_child_fails(
    store_repo: GitRepo, tmp_path: Path
) -> None:
    varied_store(store_repo)
    first = compiled(store_repo, tmp_path / "here", 10**9)  # written by this process, as it goes on
    assert compiled(store_repo, tmp_path / "failed", 1, "fail-flush")["snapshot"] == first["snapshot"]
    assert compiled(store_repo, tmp_path / "aside", 1)["snapshot"] == first["snapshot"]
    warm = compiled(store_repo, tmp_path / "here", 10**9)["stats"]
    assert warm["resolved"] < first["stats"]["resolved"] and warm["parsed"] < first["stats"]["parsed"]
    for cache in ("failed", "aside"):  # the entries were written here after the child failed / by the child
        again = compiled(store_repo, tmp_path / cache, 10**9)
        assert again["stats"] == warm and again["snapshot"] == first["snapshot"], cache


def test_fork_returns_the_child_result() -> None:
    join = fork(lambda: str(os.getpid()).encode())
    assert int(join() or b"0") not in (0, os.getpid())


def test_fork_failure_in_the_child_returns_none() -> None:
    def fail() -> bytes:
        raise RuntimeError("boom")

    assert fork(fail)() is None


def test_build_cached_configs_are_read_only_when_asked(
    store_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cache"))
    varied_store(store_repo)
    cold = compile_store(store_repo.root, ref="HEAD", validate=False)
    warm = compile_store(store_repo.root, ref="HEAD", validate=False)
    packed = {k for k, snap in warm.snapshot.nodes.items() if isinstance(snap.__dict__["_config"], PackedConfig)}
    # every node resolved from the cache, all but the one that includes a file (never cached); the digest and
    # the failed nodes need none of their configs
    assert packed == set(cold.snapshot.nodes) - cold.snapshot.failed - {"/data/inc"}
    assert warm.snapshot.digest == cold.snapshot.digest and warm.snapshot.failed == cold.snapshot.failed
    configs = {k: s.config for k, s in cold.snapshot.nodes.items()}
    assert {k: s.config for k, s in warm.snapshot.nodes.items()} == configs
    assert not any(isinstance(s.__dict__["_config"], PackedConfig) for s in warm.snapshot.nodes.values())


def test_node_snapshot_is_the_dataclass_made_with_every_field() -> None:
    import dataclasses

    from cfgtool.snapshot.model import NodeSnapshot, node_snapshot
    from cfgtool.snapshot.provenance import Provenance

    packed = PackedConfig(b"\x81\xa1a\x01", None)  # {"a": 1}, read when asked for
    values: dict[str, Any] = {
        "key": "/k", "config": packed, "layers": ("/k", "/"), "imports": ("/t",), "file": "store/k/main.conf",
        "intrinsic": True, "provenance": Provenance(), "content_hash": "h",
    }  # fmt: skip
    assert [f.name for f in dataclasses.fields(NodeSnapshot)] == list(values)  # a new field must be given here too
    made, fast = NodeSnapshot(**values), node_snapshot(*values.values())
    assert vars(fast) == vars(made) and fast.provenance is made.provenance
    assert fast.resolved and fast.config == {"a": 1} and fast == NodeSnapshot(**{**values, "config": {"a": 1}})


def test_fork_that_cannot_start_returns_none(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_more_processes() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", no_more_processes)
    assert fork(lambda: b"never")() is None
    assert len(os.listdir("/proc/self/fd")) == before  # the pipe was closed
