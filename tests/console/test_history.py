"""The console's history of a key or value: from a per-store index that grows as versions load, telling what
`cfgtool audit KEY` tells (a key without a node in some version reads its nearest node's config there)."""

from __future__ import annotations

import time
from typing import Any

from cfgtool.console import history
from cfgtool.hocon import split_path
from cfgtool.versions.audit import audit_key
from tests.conftest import GitRepo
from tests.console.conftest import MakeClient, Page
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
    page = Page(client.get("/ui/small/history/data/open?path=tagged").text)  # waits for the versions just loaded
    assert "Version 4" in page.text and "untagged" in page.text
    assert index.covers(state.view)
    for key, path in ASKED:
        parts = split_path(path) if path else ()
        found = index.history(key, parts, path, state.view)
        assert found is not None, key
        assert _events(found) == _events(audit_key(small_acl.root, key, path, None, "store")), (key, path)
    assert index.history("/data/never", (), None, state.view) is None  # audit says it never had a node
    assert client.get("/ui/small/history/data/never").status_code == 400
