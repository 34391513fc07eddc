"""The on-disk caches: parse trees survive a round trip exactly, damaged files are misses, writes are atomic."""

from __future__ import annotations

from pathlib import Path

import pytest

from cfgtool.cache import NodeCache, ParseCache, decode_tree, encode_tree
from cfgtool.hocon import parse, resolve
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.values import Joined, Merge, Node, Obj

# Every kind of node a parse produces: quoted and unquoted strings, numbers as written, keywords, arrays,
# objects, optional and plain substitutions, concatenations with whitespace, `+=`, and a delayed Merge.
EVERY_KIND = """\
a = 1.50
b = "quoted"
c = unquoted text ${a} "and more"
d = [1, true, null, {e: ${?missing}}]
f { g = ${b} }
f = ${h} { i = 2 }
h { j = 3 }
k += 4
"""


def leaves_with_origins(node: Node) -> list[tuple[str, Origin]]:
    """Every node of a tree, depth first, as its repr and origin."""
    out = [(repr(node), node.origin)]
    children = (
        list(node.fields.values()) if isinstance(node, Obj)
        else node.stack if isinstance(node, Merge)
        else getattr(node, "items", None) or getattr(node, "parts", None) or []
    )
    for child in children:
        out += leaves_with_origins(child)
    return out


def test_parse_cache_round_trips_every_node_kind_with_origins(tmp_path: Path) -> None:
    doc = parse(EVERY_KIND, "store/x/main.conf")
    assert isinstance(doc.fields["f"], Merge)  # the text does exercise a delayed merge
    cache = ParseCache(tmp_path)
    cache.put(("ab12", "store/x/main.conf"), doc)
    cache.flush()
    back = ParseCache(tmp_path).get(("ab12", "store/x/main.conf"))
    assert back is not None and back is not doc
    assert leaves_with_origins(back) == leaves_with_origins(doc)
    assert encode_tree(back) == encode_tree(doc)
    assert resolve([back]).value == resolve([doc]).value == resolve([parse(EVERY_KIND, "x")]).value


def test_parse_cache_keeps_number_text_for_concatenation(tmp_path: Path) -> None:
    cache = ParseCache(tmp_path)
    cache.put(("cd", "m.conf"), parse("a = 1.50\nb = v${a}\n", "m.conf"))
    cache.flush()
    back = ParseCache(tmp_path).get(("cd", "m.conf"))
    assert back is not None
    assert resolve([back]).value == {"a": 1.5, "b": "v1.50"}


def test_encode_tree_refuses_resolved_values() -> None:
    with pytest.raises(TypeError, match="Joined is not a parse result"):
        encode_tree(Joined("x", Origin("f", 1, 1), ()))


def test_decode_tree_rejects_an_unknown_tag() -> None:
    with pytest.raises(ValueError, match="unknown or damaged node 99"):
        decode_tree((99, "f", 1, 1, None))


def test_node_cache_round_trips_plain_entries(tmp_path: Path) -> None:
    entry = ({"a": [1, 2.5, None, True, {"b": "é"}]}, True, "f" * 64, 9)
    cache = NodeCache(tmp_path)
    cache.put("0123", entry)
    assert cache.has("0123") and cache.get("0123") == entry  # before the flush too
    cache.flush()
    fresh = NodeCache(tmp_path)
    assert fresh.has("0123") and not fresh.has("0999")
    assert fresh.get("0123") == entry


def test_cache_damaged_shard_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    (tmp_path / "0.msgpack").write_bytes(b"\xc1not msgpack data")
    cache = NodeCache(tmp_path)
    assert cache.get("0123") is None
    cache.put("0123", ({}, False, "h", 4))
    cache.flush()
    assert NodeCache(tmp_path).get("0123") == ({}, False, "h", 4)


def test_cache_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ParseCache(tmp_path)
    cache.add_stored([(("ef", "m.conf"), (3, "m.conf", 1))])  # a truncated record
    assert cache.get(("ef", "m.conf")) is None


def test_cache_flush_writes_whole_files_only(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "nodes")
    for i in range(40):
        cache.put(f"{i:x}{i}", ({"i": i}, False, str(i), 5))
    cache.flush()
    names = sorted(p.name for p in (tmp_path / "nodes").iterdir())
    assert names == sorted({f"{i:x}"[0] + ".msgpack" for i in range(40)})  # no temporary files are left
    fresh = NodeCache(tmp_path / "nodes")
    assert all(fresh.get(f"{i:x}{i}") == ({"i": i}, False, str(i), 5) for i in range(40))


def test_cache_stored_entries_move_between_caches(tmp_path: Path) -> None:
    source = ParseCache(tmp_path / "a")
    doc = parse("x = ${y}\ny = 1\n", "m.conf")
    source.put(("12", "m.conf"), doc)
    target = ParseCache(tmp_path / "b")
    target.add_stored(source.stored_new())
    target.flush()
    back = ParseCache(tmp_path / "b").get(("12", "m.conf"))
    assert back is not None and encode_tree(back) == encode_tree(doc)


def test_cache_unwritable_directory_is_skipped(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = NodeCache(blocker / "nodes")
    cache.put("01", ({}, False, "h", 4))
    cache.flush()  # no error: the cache is only an optimization
    assert cache.get("01") == ({}, False, "h", 4)


def test_cache_shard_keeps_at_most_max_entries_least_recently_used_dropped(tmp_path: Path) -> None:
    """A long-lived process compiles version after version: each shard is read whole, so it must stay bounded
    (an unbounded one grew every later compile's memory with every version ever compiled)."""
    entry = ({"x": 1}, False, "h", 4)
    first = NodeCache(tmp_path)
    first.max_entries = 3
    for key in ("0a", "0b", "0c"):
        first.put(key, entry)
    first.flush()
    second = NodeCache(tmp_path)
    second.max_entries = 3
    assert second.get("0a") == entry  # used now: kept over "0b" and "0c"
    second.put("0d", entry)
    second.put("0e", entry)
    second.flush()
    third = NodeCache(tmp_path)
    assert [key for key in ("0a", "0b", "0c", "0d", "0e") if third.has(key)] == ["0a", "0d", "0e"]
