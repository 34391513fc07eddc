"""The stat cache of a working tree's blob ids (`cfgtool.store.statcache`): a compile after a one-file edit reads
that file only, and no change to a file's content goes unseen, however its timestamps are arranged."""

from __future__ import annotations

import hashlib
import os
import time
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack  # type: ignore[import-untyped]
import pytest

from cfgtool.compile.compiler import CompileResult, compile_source, compile_store
from cfgtool.errors import SourceError
from cfgtool.store.sources import WorkTreeSource, blob_id
from cfgtool.store.statcache import FORMAT, KEEP, MAGIC, StatCache, settled, signature

if TYPE_CHECKING:
    from tests.conftest import GitRepo

NODES = {f"data/n{i}/main.conf": f"value = {i}\nname = n{i}\n" for i in range(8)}


def wait_settled(paths: Iterable[Path]) -> None:
    """Wait until the stat cache may trust these files (their timestamps older than its racy margin)."""
    infos = [os.lstat(p) for p in paths]
    while not all(settled(i.st_mtime_ns, i.st_ctime_ns, time.time_ns()) for i in infos):
        time.sleep(0.02)


def stat_cache_of(repo: GitRepo) -> StatCache:
    return StatCache(repo.root, "store")


@pytest.fixture
def tree(store_repo: GitRepo) -> GitRepo:
    """A store of eight nodes in the working tree, settled, compiled once (the stat cache filled)."""
    store_repo.write(NODES, under="store/")
    store_repo.commit()
    wait_settled((store_repo.root / "store").rglob("*"))
    compile_store(store_repo.root)
    return store_repo


def value(repo: GitRepo, key: str) -> object:
    config = compile_store(repo.root).snapshot.nodes[key].config
    assert config is not None
    return config["value"]


def reads(repo: GitRepo) -> tuple[int, CompileResult]:
    """How many files a compile of the working tree read, and its result."""
    source = WorkTreeSource(repo.root)
    result = compile_source(source)
    return source.reads, result


def test_a_compile_after_a_one_file_edit_reads_that_file_only(tree: GitRepo) -> None:
    unchanged, _ = reads(tree)  # what every compile reads (the settings file)
    assert unchanged < len(NODES)
    tree.write({"data/n3/main.conf": "value = 33\nname = n3\n"}, under="store/")
    wait_settled([tree.root / "store/data/n3/main.conf"])
    read, result = reads(tree)
    assert read == unchanged + 1
    config = result.snapshot.nodes["/data/n3"].config
    assert config is not None and config["value"] == 33
    assert reads(tree)[0] == unchanged  # the edit is cached now


def test_same_size_and_mtime_set_back_within_the_second_the_cache_was_written(tree: GitRepo) -> None:
    path = tree.root / "store/data/n1/main.conf"
    before = os.lstat(path)
    compile_store(tree.root)  # writes the cache (the entry was trusted: the file had settled)
    path.write_text("value = 9\nname = n1\n", encoding="utf-8")  # same size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.lstat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert value(tree, "/data/n1") == 9
    wait_settled([path])
    assert value(tree, "/data/n1") == 9  # and once the new content is cached


def test_a_file_replaced_by_a_rename_with_the_same_size_and_mtime(tree: GitRepo) -> None:
    path = tree.root / "store/data/n2/main.conf"
    before = os.lstat(path)
    other = tree.root / "store/data/n2/.main.conf.new"
    other.write_text("value = 7\nname = n2\n", encoding="utf-8")
    os.utime(other, ns=(before.st_atime_ns, before.st_mtime_ns))
    os.replace(other, path)
    assert os.lstat(path).st_size == before.st_size and os.lstat(path).st_mtime_ns == before.st_mtime_ns
    assert value(tree, "/data/n2") == 7


def test_a_file_read_within_the_margin_of_its_last_change_is_not_kept(store_repo: GitRepo) -> None:
    """git's racy-timestamp rule: the content read may be followed, in the same clock tick, by another write
    that leaves every `lstat` field as it was; so the entry is kept only for a file that had settled."""
    path = store_repo.root / "store/main.conf"
    path.write_bytes(b"a = 1\n")
    info, oid = os.lstat(path), blob_id(b"a = 1\n")
    cache = stat_cache_of(store_repo)
    cache.put("store/main.conf", info, oid, read_at=max(info.st_mtime_ns, info.st_ctime_ns) + 1_000_000)
    cache.save()
    os.utime(cache.path, ns=(time.time_ns() + 5_000_000_000,) * 2)  # written well after the file settled
    assert stat_cache_of(store_repo).get("store/main.conf", info) is None
    cache.put("store/main.conf", info, oid, read_at=max(info.st_mtime_ns, info.st_ctime_ns) + 3_000_000_000)
    cache.save()
    os.utime(cache.path, ns=(time.time_ns() + 5_000_000_000,) * 2)  # written well after the file settled
    assert stat_cache_of(store_repo).get("store/main.conf", info) == oid


def test_a_file_changed_within_one_clock_tick_of_its_read_is_not_trusted(store_repo: GitRepo) -> None:
    """git's racy-timestamp case for real, where the kernel lets two writes fall within one clock tick with
    every `lstat` field left as it was (kernels with multigrain timestamps give a change after a `stat` a
    timestamp of its own: there the case cannot arise, and the test is skipped)."""
    path = store_repo.root / "store/main.conf"
    for _ in range(50):
        path.write_bytes(b"a = 1\n")
        first = os.lstat(path)
        cache = stat_cache_of(store_repo)
        read_at = time.time_ns()
        cache.put("store/main.conf", first, blob_id(path.read_bytes()), read_at)
        cache.save()
        path.write_bytes(b"a = 2\n")
        if signature(os.lstat(path)) == signature(first):
            break
    else:
        pytest.skip("this kernel gave each write after a stat its own timestamp (multigrain timestamps)")
    assert stat_cache_of(store_repo).get("store/main.conf", os.lstat(path)) is None
    source = WorkTreeSource(store_repo.root)
    assert source.oids(["store/main.conf"]) == {"store/main.conf": blob_id(b"a = 2\n")}


def test_an_entry_newer_than_the_cache_file_is_not_trusted(tree: GitRepo) -> None:
    """git's rule when reading: an entry whose file changed within the margin of the cache file's write time
    is read again (here the cache file's time is set back, as a clock set back would leave it)."""
    cache = stat_cache_of(tree)
    info = os.lstat(tree.root / "store/data/n4/main.conf")
    assert cache.get("store/data/n4/main.conf", info) is not None
    os.utime(cache.path, ns=(info.st_mtime_ns, info.st_mtime_ns))
    assert stat_cache_of(tree).get("store/data/n4/main.conf", info) is None


def test_a_file_changed_between_listing_and_reading_is_an_error_not_a_stale_answer(tree: GitRepo) -> None:
    source = WorkTreeSource(tree.root)
    path = "store/data/n5/main.conf"
    assert source.oids([path]) == {path: blob_id((tree.root / path).read_bytes())}  # from the stat cache
    (tree.root / path).write_text("value = 55\n", encoding="utf-8")
    with pytest.raises(SourceError, match="changed while it was being compiled"):
        source.load([path])


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated
        lambda data: data[:-30] + bytes(30),  # damaged: the CRC no longer matches
        lambda data: b"\x93\x01\x02",  # another shape
        lambda data: msgpack.packb(["cfgtool-stat-cache", 1, 0, b"\xc0"]),  # a forged CRC
        lambda data: b"",
    ],
)
def test_a_damaged_cache_file_is_a_miss(tree: GitRepo, damage: object) -> None:
    cache = stat_cache_of(tree)
    assert callable(damage)
    cache.path.write_bytes(damage(cache.path.read_bytes()))
    read, result = reads(tree)
    assert read >= len(NODES)  # every file read again
    config = result.snapshot.nodes["/data/n6"].config
    assert config is not None and config["value"] == 6


def test_another_trees_cache_file_is_a_miss(tree: GitRepo, store_repo: GitRepo, tmp_path: Path) -> None:
    """A cache file copied from another working tree (or planted under this one's name) answers nothing."""
    from tests.conftest import GitRepo as Repo

    other = Repo(tmp_path / "other")
    other.write({"store/_CONFIG_STORE": "", **{f"store/{p}": "value = 0\nname = zz\n" for p in NODES}})
    wait_settled((other.root / "store").rglob("*"))
    compile_store(other.root)
    stat_cache_of(tree).path.write_bytes(stat_cache_of(other).path.read_bytes())
    assert value(tree, "/data/n7") == 7


def test_the_cache_file_is_plain_data_in_a_private_directory(tree: GitRepo) -> None:
    cache = stat_cache_of(tree)
    magic, version, root, store, entries = msgpack.unpackb(cache.path.read_bytes()[32:], raw=False)  # after the tag
    assert (magic, version) == ("cfgtool-stat-cache", FORMAT)
    assert (root, store) == (str(tree.root), "store")
    assert set(map(type, entries["store/data/n0/main.conf"])) == {int, str}
    assert cache.directory.stat().st_mode & 0o777 == 0o700


def test_entries_of_deleted_files_are_dropped(tree: GitRepo) -> None:
    tree.write({"data/n0/main.conf": None, "data/n1/main.conf": "value = 11\nname = n1\n"}, under="store/")
    wait_settled([tree.root / "store/data/n1/main.conf"])
    compile_store(tree.root)
    paths = msgpack.unpackb(stat_cache_of(tree).path.read_bytes()[32:], raw=False)[4]
    assert "store/data/n0/main.conf" not in paths and "store/data/n1/main.conf" in paths


def test_the_caches_of_the_least_recently_written_trees_are_pruned(tree: GitRepo, tmp_path: Path) -> None:
    directory = stat_cache_of(tree).directory
    for i in range(KEEP + 3):
        planted = directory / f"{i:032x}.msgpack"
        planted.write_bytes(b"old")
        os.utime(planted, ns=(i, i))
    tree.write({"data/n2/main.conf": "value = 22\nname = n2\n"}, under="store/")
    wait_settled([tree.root / "store/data/n2/main.conf"])
    compile_store(tree.root)  # writes this tree's cache
    left = sorted(directory.glob("*.msgpack"))
    assert len(left) == KEEP and stat_cache_of(tree).path in left and directory / f"{0:032x}.msgpack" not in left


def test_a_forged_cache_file_is_a_miss(tree: GitRepo) -> None:
    """Whoever can write the cache rewrites /data/n6's entry to the blob id of /data/n1's content, with its
    checksum right (in the layout of a checksummed file, and with a checksum where the key's tag goes): the
    compile reads the file itself."""
    cache = stat_cache_of(tree)
    raw = cache.path.read_bytes()
    decoded = next(d for d in map(_unpacked, (raw, raw[32:])) if d is not None)
    root, store, entries = decoded[-3:]
    entries["store/data/n6/main.conf"][5] = blob_id(NODES["data/n1/main.conf"].encode())
    inner = msgpack.packb([root, store, entries], use_bin_type=True)
    sealed_layout = msgpack.packb([MAGIC, FORMAT, root, store, entries], use_bin_type=True)
    for planted in (
        msgpack.packb([MAGIC, 1, zlib.crc32(inner), inner], use_bin_type=True),
        hashlib.sha256(sealed_layout).digest() + sealed_layout,
    ):
        cache.path.write_bytes(planted)
        config = reads(tree)[1].snapshot.nodes["/data/n6"].config
        assert config is not None and config["value"] == 6


def _unpacked(data: bytes) -> list[Any] | None:
    """A stat cache file's fields, in either layout: [magic, format, root, store, entries]."""
    try:
        fields = msgpack.unpackb(data, raw=False)
        if len(fields) == 4 and type(fields[3]) is bytes:  # [magic, format, crc, payload]
            return [*fields[:2], *msgpack.unpackb(fields[3], raw=False)]
        return fields if len(fields) == 5 else None
    except (ValueError, TypeError, msgpack.UnpackException):
        return None
