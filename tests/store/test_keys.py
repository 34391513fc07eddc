from __future__ import annotations

import time

import pytest

from cfgtool.errors import UsageError
from cfgtool.store.keys import (
    BadKeyError,
    ancestors,
    depth,
    glob_match,
    is_strictly_under,
    is_under,
    is_valid_segment,
    join,
    key_problem,
    last_segment,
    near_node,
    nearest,
    normalize_key,
    parent,
    segments,
    siblings,
)
from tests.machine import slowness_now


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/", "/"),
        ("", "/"),
        ("/data/x", "/data/x"),
        ("data/x", "/data/x"),
        ("/data/x/", "/data/x"),
        ("demo:/data/x", "/data/x"),
        ("demo:/", "/"),
        ("/a.b/c_d/e~f/g-h/0x", "/a.b/c_d/e~f/g-h/0x"),
    ],
)
def test_normalize_key_accepts_and_canonicalizes(text: str, expected: str) -> None:
    assert normalize_key(text, "demo") == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("/data//x", "empty segment"),
        ("/data/_x", "invalid segment '_x'"),
        ("/data/.x", "invalid segment '.x'"),
        ("/data/a b", "invalid segment 'a b'"),
        ("other:/data/x", "scheme 'other:', but this store's scheme is 'demo:'"),
    ],
)
def test_normalize_key_rejects_bad_keys_with_usage_error(text: str, problem: str) -> None:
    with pytest.raises(BadKeyError) as info:
        normalize_key(text, "demo")
    assert problem in info.value.message
    assert info.value.hint
    assert isinstance(info.value, UsageError) and info.value.exit_code == 2
    assert key_problem(text, "demo") == info.value.message


def test_normalize_key_scheme_without_store_name_is_rejected() -> None:
    assert "the store has no name" in (key_problem("demo:/x") or "")
    assert key_problem("/x") is None


def test_key_helpers_navigate_the_hierarchy() -> None:
    assert parent("/") is None
    assert parent("/data") == "/"
    assert parent("/data/x") == "/data"
    assert ancestors("/data/x/y") == ["/data/x", "/data", "/"]
    assert ancestors("/") == []
    assert last_segment("/data/tracking/PageViewEvent") == "PageViewEvent"
    assert last_segment("/") == ""
    assert segments("/") == ()
    assert segments("/a/b") == ("a", "b")
    assert join("/", "a") == "/a"
    assert join("/a", "b") == "/a/b"


def test_is_under_is_segment_aware() -> None:
    assert is_under("/data", "/data")
    assert is_under("/data/x", "/data")
    assert not is_under("/database", "/data")
    assert is_under("/anything", "/")
    assert not is_strictly_under("/data", "/data")
    assert is_strictly_under("/data/x", "/data")


def test_is_valid_segment() -> None:
    assert is_valid_segment("PageViewEvent")
    assert is_valid_segment("0day.v2~x-y_z")
    assert not is_valid_segment("-x")
    assert not is_valid_segment("")
    assert not is_valid_segment("a/b")


@pytest.mark.parametrize(
    ("pattern", "key", "matches"),
    [
        ("/data/*", "/data/x", True),
        ("/data/*", "/data/x/y", False),
        ("/data/*", "/data", False),
        ("/data/**", "/data/x/y/z", True),
        ("/data/**", "/data", False),
        ("/data/**", "/database/x", False),
        ("/a/**/b", "/a/b", True),
        ("/a/**/b", "/a/x/y/b", True),
        ("/**/b", "/b", True),
        ("/**", "/x", True),
        ("/**", "/", False),
        ("/", "/", True),
        ("/data/*Event", "/data/PageViewEvent", True),
        ("/data/*Event", "/data/Eventful", False),
        ("/data/x?", "/data/x1", True),
        ("/data/x.y", "/data/xzy", False),
        ("data/*", "/data/x", True),
    ],
)
def test_glob_match_one_segment_star_and_any_depth_double_star(pattern: str, key: str, matches: bool) -> None:
    assert glob_match(pattern, key) is matches


def _nearest_by_parents(key: str, nodes: set[str]) -> str:
    while key not in nodes:
        key = parent(key) or "/"
    return key


def test_nearest_finds_what_walking_up_the_parents_finds() -> None:
    nodes = {"/", "/a", "/a/b/c", "/d", "/a/bb"}
    deepest = max(map(depth, nodes))
    for key in ("/", "/a", "/a/b", "/a/b/c", "/a/b/c/d/e", "/a/bb/x", "/x/y/z/w", "/d/e", "/aa", "/a/b/cc"):
        assert nearest(key, nodes, deepest) == _nearest_by_parents(key, nodes), key
    assert nearest("/q/r", {"/"}, 0) == "/"


def test_nearest_is_linear_in_the_key_s_length() -> None:
    key = "/a" + "/b" * 500_000  # a megabyte in 500,001 segments: walking up one parent at a time is quadratic
    assert nearest(key, {"/", "/a"}, 1) == "/a"


def _near(key: str, nodes: set[str]) -> str | None:
    """`near_node` over a set of node keys (the root among them)."""
    names: dict[str, list[str]] = {}
    for node in sorted(nodes - {"/"}):
        names.setdefault(parent(node) or "/", []).append(last_segment(node))
    deepest = max(map(depth, nodes))
    return near_node(key, lambda k: nearest(k, nodes, deepest), lambda k: siblings(names.get(k, [])))


def test_near_node_corrects_each_missing_segment_from_the_nearest_node_down() -> None:
    nodes = {"/", "/data", "/data/kafka", "/data/kafka/order-created", "/data/kafka/order-deleted", "/tags"}
    assert _near("/data/kafka/order-creatd", nodes) == "/data/kafka/order-created"
    assert _near("/data/kafak/order-created", nodes) == "/data/kafka/order-created"  # two segments away
    assert _near("/Data/Kafka", nodes) == "/data/kafka"  # case aside
    assert _near("/data/kafka/payments", nodes) is None  # a key without a node, and no node close to it
    assert _near("/data/kafak/payments", nodes) is None  # the close key has no node either: nothing to name
    assert _near("/data/kafka", nodes) is None  # a node: nothing to suggest


def test_near_node_is_bounded_in_a_huge_folder_and_for_the_longest_keys() -> None:
    nodes = {"/", "/data", *(f"/data/event-{i:06d}" for i in range(100_000))}
    names = {"/": siblings(["data"]), "/data": siblings(last_segment(k) for k in nodes if k.startswith("/data/"))}
    start = time.process_time()
    for i in range(20):  # a typo early in the name sorts it far away, but its end sorts where the name's does
        for typo in (f"/data/evnt-{i * 4999:06d}", f"/data/event-{i * 4999:06d}x", f"/data/Event_{i * 4999:06d}"):
            found = near_node(typo, lambda k: nearest(k, nodes, 2), names.__getitem__)
            assert found == f"/data/event-{i * 4999:06d}", typo
    assert near_node("/data/" + "x" * 1000, lambda k: nearest(k, nodes, 2), names.__getitem__) is None
    assert near_node("/" + "/".join(["a"] * 511), lambda k: nearest(k, nodes, 2), lambda k: siblings([])) is None
    assert time.process_time() - start < 2 * slowness_now()  # 200 names compared per segment at most
