"""Import chains in linear memory: a chain's layer lists share their storage (the graph's, the snapshot's, and
those restored from the structure cache), so memory grows with the depth, not with its square."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from cfgtool.build.builder import FLAT_LAYERS
from cfgtool.compile.compiler import compile_store
from cfgtool.snapshot.model import LayersJson, hash_content
from cfgtool.store.lin import Lin
from tests.conftest import GitRepo


def chain_files(depth: int) -> dict[str, str]:
    """A store whose node `/nNNNN` sets `a` and imports the node before it."""
    files = {"_CONFIG_STORE": ""}
    for i in range(depth):
        files[f"n{i:04d}/main.conf"] = f"a = {i}\n"
        if i:
            files[f"n{i:04d}/includes"] = f"/n{i - 1:04d}\n"
    return files


def layers_size(repo: GitRepo) -> int:
    """The pickled size of every node's layers in a compile of HEAD: shared storage is pickled once."""
    snapshot = compile_store(repo.root, ref="HEAD", validate=False).snapshot
    last = f"/n{len(snapshot.nodes) - 2:04d}"
    expected = (*(f"/n{i:04d}" for i in range(len(snapshot.nodes) - 2, -1, -1)), "/")
    assert snapshot.nodes[last].layers == expected  # the same L as ever
    return len(pickle.dumps({key: snap.layers for key, snap in snapshot.nodes.items()}))


def test_a_chains_layer_lists_share_storage_when_compiled_and_when_restored(tmp_path: Path) -> None:
    sizes = []
    for depth in (100, 400):
        repo = GitRepo(tmp_path / f"chain{depth}")
        repo.write(chain_files(depth), under="store/")
        repo.commit()
        built, restored = layers_size(repo), layers_size(repo)  # the second reads the structure cache
        sizes.append((built, restored))
    (built_small, restored_small), (built_large, restored_large) = sizes
    # four times deeper: about four times larger (tuples of every L: about sixteen times)
    assert built_large < 6 * built_small, sizes
    assert restored_large < 6 * restored_small, sizes


_GRAPH_MEMORY = """
import json, subprocess, sys, tracemalloc
from pathlib import Path
from cfgtool.store.graph import Graph
from cfgtool.store.nodes import discover
from cfgtool.store.sources import WorkTreeSource
from tests.build.test_chain_memory import chain_files
out = {}
for depth in (300, 1200):
    root = Path(sys.argv[1]) / f"chain{depth}"
    for rel, text in chain_files(depth).items():
        (root / "store" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "store" / rel).write_text(text)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    store = discover(WorkTreeSource(root))
    tracemalloc.start()
    graph = Graph(store)
    out[depth] = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert graph.linearization(f"/n{depth - 1:04d}")[-2:] == ("/n0000", "/")
print(json.dumps(out))
"""


def test_the_graph_of_an_import_chain_takes_memory_linear_in_its_depth(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", _GRAPH_MEMORY, str(tmp_path)], check=True, capture_output=True, text=True, cwd=root
    )
    used = json.loads(out.stdout)
    # four times deeper: about four times the memory (tuples of every L: about twelve times at these depths)
    assert used["1200"] < 6 * used["300"], used


def test_a_lin_reads_as_the_tuple_of_its_keys() -> None:
    base = Lin(("/b", "/"))
    first, second = base.over("/a"), base.over("/c")  # the first extends the shared list, the second copies it
    assert first == ("/a", "/b", "/") and second == ("/c", "/b", "/") and base == ("/b", "/")
    expected = ("/a", "/b", "/")
    assert expected == first and first != second and first[1:] == base and first[1:] is not base
    assert list(first) == ["/a", "/b", "/"] and list(reversed(first)) == ["/", "/b", "/a"]
    assert first[0] == "/a" and first[-1] == "/" and first[:2] == ("/a", "/b") and first[::2] == ("/a", "/")
    assert "/b" in first and "/c" not in first and first.index("/") == 2 and len(first[3:]) == 0
    assert hash(first) == hash(("/a", "/b", "/")) and pickle.loads(pickle.dumps(first)) == first


def test_an_edit_deep_in_a_long_chain_resolves_the_nodes_above_it_again_and_reuses_those_below(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cache"))  # no entries of other tests' chains
    depth = 3 * FLAT_LAYERS  # fingerprints of long Ls take the hash chain, of short ones the layers one by one
    repo = GitRepo(tmp_path / "chain")
    repo.write(chain_files(depth), under="store/")
    repo.commit()
    first = compile_store(repo.root, ref="HEAD", validate=False)
    assert first.stats["resolved"] == depth + 1  # and the root
    repo.write({"n0040/main.conf": "a = 40\nb = 1\n"}, under="store/")
    repo.commit()
    again = compile_store(repo.root, ref="HEAD", validate=False)
    assert (again.stats["resolved"], again.stats["reused"]) == (depth - 40, 41)
    assert again.snapshot.nodes[f"/n{depth - 1:04d}"].config == {"a": depth - 1, "b": 1}


def test_node_hashes_of_long_lins_read_their_lists_text_and_hash_as_ever() -> None:
    lists = LayersJson()
    chain = Lin(("/",))
    for i in range(3 * LayersJson.LONG):
        chain = chain.over(f"/n{i:04d}")
        config = {"a": i}
        assert hash_content(config, chain, ("/x",), lists) == hash_content(config, tuple(chain), ("/x",))
    view = chain[5:]  # a shorter view, then the list grows and is encoded again
    longer = chain.over("/ü")
    for keys in (view, longer, longer.over('/"q"')):  # the last needs escaping: joined as it is
        assert hash_content(None, keys, (), lists) == hash_content(None, tuple(keys), ())


def test_too_many_definitions_merged_over_a_chain_are_an_error_of_that_node_not_an_exception(
    tmp_path: Path,
) -> None:
    over = "a = 1\n" + "b = ${a}\n" * 600  # 600 definitions of `b` each: 1,200 once /b merges over /a
    repo = GitRepo(tmp_path / "repo")
    repo.write({"_CONFIG_STORE": "", "a/main.conf": over, "b/main.conf": over, "b/includes": "/a\n"}, under="store/")
    repo.commit()
    result = compile_store(repo.root, ref="HEAD", validate=False)
    assert [(d.code, d.key, d.file, d.line) for d in result.diagnostics] == [
        ("E_LIMIT", "/b", "store/b/main.conf", 601)
    ]
    assert result.snapshot.nodes["/a"].config == {"a": 1, "b": 1} and not result.snapshot.nodes["/b"].resolved
