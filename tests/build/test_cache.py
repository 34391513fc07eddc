"""The on-disk caches: parse trees survive a round trip exactly, damaged files are misses, writes are atomic."""

from __future__ import annotations

import hashlib
import zlib
from pathlib import Path
from typing import Any

import pytest

from cfgtool._util.cacheauth import seal
from cfgtool._util.codec import pack, unpack
from cfgtool.build.cache import (
    NodeCache,
    NodeEntry,
    PackedConfig,
    ParseCache,
    decode_tree,
    encode_tree,
    join_maps,
)
from cfgtool.errors import CfgtoolError
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


def plain(entry: NodeEntry | None) -> tuple[object, ...] | None:
    """A node cache entry with its config unpacked (entries read back keep it packed until read)."""
    if entry is None:
        return None
    config, *rest = entry
    return (config.load() if isinstance(config, PackedConfig) else config, *rest)


def leaves_with_origins(node: Node) -> list[tuple[str, Origin]]:
    """Every node of a tree, depth first, as its repr and origin."""
    out = [(repr(node), node.origin)]
    children = (
        list(node.fields.values())
        if isinstance(node, Obj)
        else node.stack
        if isinstance(node, Merge)
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
    assert cache.has("0123") and plain(cache.get("0123")) == entry  # before the flush too
    cache.flush()
    fresh = NodeCache(tmp_path)
    assert fresh.has("0123") and not fresh.has("0999")
    assert plain(fresh.get("0123")) == entry


def shard(directory: Path, name: str, entries: dict[str, Any]) -> None:
    """Write shard `name` of the cache in `directory` as cfgtool would, sealed with the user's key: what its
    entries hold is then checked entry by entry."""
    sealed = seal(f"{directory.name}/{name}", pack(entries))
    assert sealed is not None
    (directory / f"{name}.msgpack").write_bytes(sealed)


def test_a_forged_shard_is_a_miss(tmp_path: Path) -> None:
    """Whoever can write the cache rewrites a node's config with every CRC right (as a plain shard, and with a
    checksum where the key's tag goes): the entry is a miss, never the planted config."""
    cache = NodeCache(tmp_path)
    cache.put("c0", ({"size": 1}, False, "h", 4))
    cache.flush()
    data = pack({"size": 999})
    forged = pack({"c0": [data, False, "h", 4, zlib.crc32(data)]})
    for planted in (forged, hashlib.sha256(forged).digest() + forged):
        (tmp_path / "c.msgpack").write_bytes(planted)
        assert NodeCache(tmp_path).get("c0") is None


def test_cache_damaged_shard_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    (tmp_path / "0.msgpack").write_bytes(b"\xc1not msgpack data")
    cache = NodeCache(tmp_path)
    assert cache.get("0123") is None
    cache.put("0123", ({}, False, "h", 4))
    cache.flush()
    assert plain(NodeCache(tmp_path).get("0123")) == ({}, False, "h", 4)


def test_cache_damaged_entry_is_a_miss(tmp_path: Path) -> None:
    shard(tmp_path, "ef", {"ef\0m.conf": [3, "m.conf", 1]})  # a truncated record
    cache = ParseCache(tmp_path)
    assert cache.get(("ef", "m.conf")) is None


def test_cache_flush_writes_whole_files_only(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path / "nodes")
    for i in range(40):
        cache.put(f"{i:x}{i}", ({"i": i}, False, str(i), 5))
    cache.flush()
    names = sorted(p.name for p in (tmp_path / "nodes").iterdir())
    assert names == sorted({f"{i:x}"[0] + ".msgpack" for i in range(40)})  # no temporary files are left
    fresh = NodeCache(tmp_path / "nodes")
    assert all(plain(fresh.get(f"{i:x}{i}")) == ({"i": i}, False, str(i), 5) for i in range(40))


def test_cache_flush_keeps_entries_another_process_wrote_since_the_read(tmp_path: Path) -> None:
    # a compile and its forked worker: both read the shard, the worker adds its entries, then the compile
    old, worker, parent = NodeCache(tmp_path), NodeCache(tmp_path), NodeCache(tmp_path)
    old.put("10", ({"old": 0}, False, "h0", 1))
    old.flush()
    assert worker.get("11") is None and parent.get("12") is None  # both read the shard before the worker writes
    worker.put("11", ({"w": 1}, False, "h1", 1))
    worker.flush()
    parent.put("12", ({"p": 2}, False, "h2", 1))
    parent.flush()
    fresh = NodeCache(tmp_path)
    assert [plain(fresh.get(k)) for k in ("10", "11", "12")] == [
        ({"old": 0}, False, "h0", 1),
        ({"w": 1}, False, "h1", 1),
        ({"p": 2}, False, "h2", 1),
    ]
    assert plain(parent.get("11")) == ({"w": 1}, False, "h1", 1)  # a flushed shard is read again when asked


@pytest.mark.parametrize("count", [14, 300, 70_000])  # the three sizes of a msgpack map header
def test_join_maps_counts_across_header_sizes(count: int) -> None:
    old = {f"o{i}": i for i in range(count)}
    joined = join_maps(pack(old), pack({"n": -1, "o0": "new"}))
    assert unpack(joined) == {**old, "n": -1, "o0": "new"}


def test_cache_unwritable_directory_is_skipped(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = NodeCache(blocker / "nodes")
    cache.put("01", ({}, False, "h", 4))
    cache.flush()  # no error: the cache is only an optimization
    assert plain(cache.get("01")) == ({}, False, "h", 4)


def test_node_cache_keeps_configs_packed_until_read(tmp_path: Path) -> None:
    cache = NodeCache(tmp_path)
    cache.put("ab", ({"a": {"b": [1]}}, False, "h", 7))
    cache.flush()
    found = NodeCache(tmp_path).get("ab")
    assert found is not None and isinstance(found[0], PackedConfig)
    assert found[0].load() == {"a": {"b": [1]}} and found[1:] == (False, "h", 7)


def test_node_cache_entry_failing_its_crc_is_a_miss(tmp_path: Path) -> None:
    data = pack({"a": 1})
    shard(tmp_path, "c", {"cd": [data[:-1] + b"\x02", False, "h", 1, zlib.crc32(data)]})
    assert NodeCache(tmp_path).get("cd") is None


def test_node_cache_forged_entry_that_is_not_a_map_is_a_miss(tmp_path: Path) -> None:
    data = pack([1, 2])  # not a config, with a matching CRC: written so on purpose
    shard(tmp_path, "c", {"cd": [data, False, "h", 1, zlib.crc32(data)]})
    assert NodeCache(tmp_path).get("cd") is None


def test_node_cache_forged_map_that_does_not_decode_is_an_error_not_a_crash(tmp_path: Path) -> None:
    data = b"\x81\xc1\xc1"  # a map header, then bytes msgpack never uses, with a matching CRC
    shard(tmp_path, "c", {"cd": [data, False, "h", 1, zlib.crc32(data)]})
    found = NodeCache(tmp_path).get("cd")
    assert found is not None and isinstance(found[0], PackedConfig)
    with pytest.raises(CfgtoolError, match="not a config"):
        found[0].load()


def test_cache_shard_keeps_at_most_max_entries_oldest_dropped(tmp_path: Path) -> None:
    """A long-lived process compiles version after version and each flush adds to its shard's file: a shard
    stays bounded on disk (the oldest entries go), so neither the disk nor a later read grows without end."""
    entry = ({"x": 1}, False, "h", 4)
    first = NodeCache(tmp_path)
    first.max_entries = 3
    for key in ("0a", "0b", "0c"):
        first.put(key, entry)
    first.flush()
    second = NodeCache(tmp_path)
    second.max_entries = 3
    second.put("0d", entry)
    second.put("0e", entry)
    second.flush()
    third = NodeCache(tmp_path)
    assert [key for key in ("0a", "0b", "0c", "0d", "0e") if third.has(key)] == ["0c", "0d", "0e"]
    assert plain(third.get("0e")) == entry
