"""`diff` (`cfgtool/versions/diff.py`) and its renderers (`diff_render.py`) on real repositories: a copy of the
embedded store with several commits and annotated version tags, and small stores for the edge cases."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from cfgtool.compile.compiler import compile_store
from cfgtool.hocon import Origin
from cfgtool.versions.diff import (
    ABSENT,
    VIA_OWN,
    Diff,
    ValueChange,
    diff,
    same,
)
from cfgtool.versions.diff_render import render_json, render_markdown, render_text

if TYPE_CHECKING:
    from tests.conftest import GitRepo
    from tests.versions.conftest import Versioned

LONG = "/tags/retention/LONG"
LONG_FILE = "store/tags/retention/LONG/main.conf"
DAYS_60 = 5_184_000_000
DAYS_90 = 7_776_000_000


def value(found: Diff, key: str, path: str) -> ValueChange:
    change = next(c for c in found.changes if c.key == key)
    return next(v for v in change.values if v.path == path)


# ------------------------------------------------------------------------------------------ diff


def test_diff_tag_change_is_grouped_via_the_tag(versioned: Versioned) -> None:
    found = diff(versioned.root, "v1", "v2")
    before = compile_store(versioned.root, "store", versioned.c1, validate=False, check_variables=False).snapshot
    reached = sorted(
        k
        for k, n in before.nodes.items()
        if LONG in n.layers and k != LONG and n.config is not None and n.config["retention"]["ms"] == DAYS_90
    )
    assert len(reached) >= 6
    top = next(g for g in found.groups if g.path == "retention.ms" and g.via == LONG)
    assert (top.old, top.new, top.count, list(top.keys)) == (DAYS_90, DAYS_60, len(reached), reached)
    own = next(g for g in found.groups if g.path == "retention.ms" and g.via == VIA_OWN)
    assert own.keys == (LONG,)
    assert found.count("changed") == len(reached) + 1 and not found.count("added") and not found.count("removed")
    assert (found.a.version, found.b.version, found.a.commit, found.b.commit) == (1, 2, versioned.c1, versioned.c2)


def test_diff_origin_is_the_line_that_set_the_new_value(versioned: Versioned) -> None:
    found = diff(versioned.root, "v1", "v2")
    v = value(found, "/data/tracking/SearchQueryEvent", "retention.ms")
    assert v.origin is not None and v.origin.file == LONG_FILE
    line = (versioned.root / LONG_FILE).read_text().splitlines()[v.origin.line - 1]
    assert str(DAYS_60) in line and line[v.origin.col - 1 :].startswith(str(DAYS_60))


def test_diff_substituted_value_is_credited_to_the_changed_layer(versioned: Versioned) -> None:
    """kafka.config."retention.ms" = ${retention.ms} is written in /data/tracking, but LONG changed it."""
    found = diff(versioned.root, "v1", "v2")
    v = value(found, "/data/tracking/SearchQueryEvent", 'kafka.config."retention.ms"')
    assert (v.old, v.new, v.via) == (DAYS_90, DAYS_60, LONG)
    assert v.origin is not None and v.origin.file == "store/data/tracking/main.conf"


def test_diff_added_and_removed_nodes_count_as_keys_with_all_their_values(versioned: Versioned) -> None:
    found = diff(versioned.root, "v2", "HEAD~1")
    added = next(c for c in found.changes if c.key == "/data/tracking/NewEvent")
    removed = next(c for c in found.changes if c.key == "/data/tracking/ConnectionInviteEvent")
    assert (added.kind, removed.kind) == ("added", "removed")
    owner = next(v for v in added.values if v.path == "owner")
    assert (owner.old, owner.new, owner.via) == (ABSENT, "new-team", VIA_OWN)
    assert owner.origin == Origin("store/data/tracking/NewEvent/main.conf", 1, 9)
    assert len(added.values) > 10  # every inherited value too
    assert all(v.new is ABSENT and v.origin is None and v.via is None for v in removed.values)
    assert {c.kind for c in found.changes} == {"added", "removed"}
    assert found.b.version is None and found.b.ref == "HEAD~1"


def test_diff_version_against_the_working_tree(versioned: Versioned) -> None:
    page = versioned.root / "store/data/tracking/PageViewEvent/main.conf"
    page.write_text(page.read_text().replace("kafka.partitions = 128", "kafka.partitions = 256"))
    found = diff(versioned.root, "v3")
    assert found.b.worktree and found.b.dirty and found.b.commit == versioned.c4
    assert [c.key for c in found.changes] == ["/data/tracking/PageViewEvent"]
    v = value(found, "/data/tracking/PageViewEvent", "kafka.partitions")
    assert (v.old, v.new, v.via) == (128, 256, VIA_OWN)
    assert v.origin is not None and v.origin.file == "store/data/tracking/PageViewEvent/main.conf"


def test_diff_of_equal_states_is_empty(versioned: Versioned) -> None:
    found = diff(versioned.root, "v3", "HEAD")
    assert found.empty and not found.groups
    assert "no differences" in render_text(found)
    assert "No differences" in render_markdown(found)


def test_diff_json_follows_the_contract(versioned: Versioned) -> None:
    data = json.loads(render_json(diff(versioned.root, "v2", "v3")))
    assert set(data) >= {"from", "to", "summary", "changes", "groups"}
    for side in (data["from"], data["to"]):
        assert set(side) >= {"ref", "commit", "version"}
    assert (data["from"]["version"], data["to"]["version"], data["to"]["ref"]) == (2, 3, "config/v3")
    assert set(data["summary"]) >= {"added", "removed", "changed"}
    assert data["summary"]["added"] == 1 and data["summary"]["removed"] == 1 and data["summary"]["changed"] >= 1
    for change in data["changes"]:
        assert set(change) >= {"key", "kind", "values"} and change["kind"] in {"added", "removed", "changed"}
        for v in change["values"]:
            assert "path" in v and "origin" in v
            if change["kind"] == "added":
                assert "old" not in v and "new" in v
            if change["kind"] == "removed":
                assert "new" not in v and v["origin"] is None
            if v["origin"] is not None:
                assert set(v["origin"]) == {"file", "line", "col"}
    for group in data["groups"]:
        assert set(group) >= {"path", "count", "via", "keys"} and group["count"] == len(group["keys"])
    described = next(
        v
        for c in data["changes"]
        if c["key"] == "/data/tracking/SearchQueryEvent"
        for v in c["values"]
        if v["path"] == "description"
    )
    assert described["old"].startswith("A search") and described["new"].startswith("One search")


# ------------------------------------------------------------------------------------------ small stores


def small(store_repo: GitRepo, before: dict[str, str], after: dict[str, str | None]) -> Diff:
    store_repo.write(before, under="store/")
    store_repo.commit("before")
    store_repo.write(after, under="store/")
    store_repo.commit("after")
    return diff(store_repo.root, "HEAD~1", "HEAD")


def test_diff_types_are_strict(store_repo: GitRepo) -> None:
    found = small(
        store_repo,
        {"main.conf": "a = 1\nb = true\nc = 1.5\nd = 10\n"},
        {"main.conf": 'a = 1.0\nb = 1\nc = 1.5\nd = "10"\n'},
    )
    assert [(v.path, v.old, v.new) for v in found.changes[0].values] == [
        ("a", 1, 1.0),
        ("b", True, 1),
        ("d", 10, "10"),
    ]
    assert not same(1, 1.0) and not same(True, 1) and same({"x": [1, {"y": 2}]}, {"x": [1, {"y": 2}]})


def test_diff_arrays_are_whole_values_and_objects_are_walked(store_repo: GitRepo) -> None:
    found = small(
        store_repo,
        {"main.conf": "hosts = [a, b]\nk { x = 1, y { z = 2 } }\nobj { p = 1 }\n"},
        {"main.conf": "hosts = [a, b, c]\nk { x = 1, y { z = 3 } }\nobj = gone\n"},
    )
    values = [(v.path, v.old, v.new) for v in found.changes[0].values]
    assert values == [
        ("hosts", ["a", "b"], ["a", "b", "c"]),
        ("k.y.z", 2, 3),
        ("obj.p", 1, ABSENT),
        ("obj", ABSENT, "gone"),
    ]


def test_diff_reports_keys_that_did_not_resolve_instead_of_comparing_them(store_repo: GitRepo) -> None:
    found = small(
        store_repo,
        {"main.conf": "a = 1\n", "x/main.conf": "b = 2\n", "y/main.conf": "c = 3\n"},
        {"x/main.conf": "b = ${missing}\n", "y/main.conf": "c = 4\n"},
    )
    assert found.unresolved == ("/x",)
    assert [c.key for c in found.changes] == ["/y"]
    assert found.b.errors == 1
    assert "did not resolve" in render_text(found)


def test_diff_to_json_omits_absent_sides() -> None:
    change: Any = ValueChange("x", ABSENT, 1, None, None).to_json()
    assert change == {"path": "x", "new": 1, "origin": None, "via": None, "file": None}
