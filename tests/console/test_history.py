"""The console's history of a key or value: from a per-store index that grows as versions load, telling what
`cfgtool audit KEY` tells (a key without a node in some version reads its nearest node's config there)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from cfgtool.console import changes, history
from cfgtool.hocon import split_path
from cfgtool.versions.audit import audit_key
from tests.conftest import GitRepo
from tests.console.conftest import MakeClient, Page, settled
from tests.serve.conftest import publish_change

ASKED = [("/data/open", None), ("/data/open", "size"), ("/data/open/child", "size"), ("/data", "tier"),
         ("/data/open/child", None), ("/data/open", "tagged")]  # fmt: skip


def _events(found: Any) -> list[tuple[int, Any, Any]]:
    return [(e.version, e.old, e.new) for e in found.history]


def _covered(index: history.HistoryIndex, view: Any) -> None:
    deadline = time.monotonic() + 120
    while not index.covers(view) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert index.covers(view)


def test_the_history_comes_from_the_index_as_cfgtool_audit_tells_it_and_follows_new_versions(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    client = make_client(small_acl)
    service = client.app.service  # type: ignore[attr-defined]
    publish_change(small_acl, {"store/data/open/main.conf": 'size = 3\nlabel = "open-data"\n'}, "three")
    service.refresh()  # the loader's round: the index is built on a background thread
    state = service.stores["small"]
    index = history.INDEXES[state]
    _covered(index, state.view)
    publish_change(small_acl, {"store/data/open/child/main.conf": "size = 7\n", "store/data/main.conf": "tier = x\n"},
                   "a child")  # fmt: skip
    publish_change(small_acl, {"store/tags/t/main.conf": "tagged = false\n"}, "untagged")
    service.refresh()
    page = Page(settled(client, "/ui/small/history/data/open?path=tagged").text)  # once the new versions are in
    assert "Version 4" in page.text and "untagged" in page.text
    assert index.covers(state.view)
    for key, path in ASKED:
        parts = split_path(path) if path else ()
        found = index.history(key, parts, path, state.view)
        assert found is not None, key
        assert _events(found) == _events(audit_key(small_acl.root, key, path, None, "store")), (key, path)
    assert index.history("/data/never", (), None, state.view) is None  # audit says it never had a node
    assert client.get("/ui/small/history/data/never").status_code == 400


def test_a_history_asked_before_its_versions_are_indexed_answers_at_once_a_page_that_asks_again(
    small_acl: GitRepo, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexing reads every version loaded since (in a worker process for those the server does not hold): the page
    does not wait for it, as a diff being computed does not."""
    monkeypatch.setattr(changes, "WAIT", 0.0)  # the page answers without waiting for the index
    publish_change(small_acl, {"store/data/open/main.conf": 'size = 3\nlabel = "open-data"\n'}, "three")
    client = make_client(small_acl)  # nothing indexed: the loader's round ran before the console's routes
    url = "/ui/small/history/data/open?path=size"
    found = client.get(url)
    assert found.status_code == 202, found.text
    page = Page(found.text)
    assert "is being indexed" in page.text and url in page.links and "/ui/small/" in page.links
    assert [p for p in page.all("p") if p.get("role") == "status" and p.get("aria-live") == "polite"]
    assert [s for s in page.all("section") if s.get("hx-get") == url and "load" in str(s.get("hx-trigger"))]
    assert [m for m in page.all("meta") if m.get("http-equiv") == "refresh"]  # without scripts (in <noscript>)
    update = settled(client, url, {"hx-request": "true"})  # what htmx asks: it waits for the index
    assert update.status_code == 200 and "<html" not in update.text
    assert "<title>small: history of /data/open · cfgtool console</title>" in update.text
    assert "Version 2" in Page(update.text).text and "three" in Page(update.text).text
    assert client.get(url).status_code == 200


def test_a_revert_after_a_rollback_is_no_change_and_the_rollback_is_an_event(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    """v3 sets /data/open size 9 and is rolled back; v4 reverts it and sets a label: /data/open size did not
    change in v4 for readers (they had v2's again), the rollback is the event that changed it back, and v4's
    change of label counts against v2; the timeline links v4's diff to 2..4."""
    from cfgtool.versions import rollback

    publish_change(small_acl, {"store/data/open/main.conf": "size = 3\n"}, "two")
    publish_change(small_acl, {"store/data/open/main.conf": "size = 9\n"}, "three")
    rollback(small_acl.root, reason="9 is too big")
    publish_change(small_acl, {"store/data/open/main.conf": 'size = 3\nlabel = "x"\n'}, "four")
    client = make_client(small_acl)
    state = client.app.service.stores["small"]  # type: ignore[attr-defined]
    page = Page(settled(client, "/ui/small/history/data/open?path=size").text)  # once the versions are indexed
    assert "Version 3 rolled back" in page.text and "readers went from version 3 to version 2" in page.text
    assert "— four" not in page.text  # version 4 changed no size readers read
    index = history.INDEXES[state]
    _covered(index, state.view)
    found = index.history("/data/open", ("size",), "size", state.view)
    assert found is not None
    told = [(e.kind, e.version, e.old, e.new, e.previous, e.current) for e in found.history]
    assert told[:3] == [("rollback", 3, 9, 3, 3, 2), ("publish", 3, 3, 9, 2, 3), ("publish", 2, 1, 3, 1, 2)]
    cli = audit_key(small_acl.root, "/data/open", "size", None, "store")
    assert told == [(e.kind, e.version, e.old, e.new, e.previous, e.current) for e in cli.history]
    label = index.history("/data/open", ("label",), "label", state.view)
    assert label is not None and [(e.version, e.previous) for e in label.history] == [(4, 2), (2, 1), (1, None)]
    timeline = client.get("/ui/small/").text
    assert "/ui/small/diff/2..4" in timeline and "/ui/small/diff/3..4" not in timeline
