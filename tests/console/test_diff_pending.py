"""The diff of two versions never holds a page for long: its first view starts the computation and answers a
"being computed" page (202) that asks again by itself, each pair computed on its own, and the diffs the timeline
leads to computed ahead."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cfgtool.console import changes
from tests.conftest import GitRepo
from tests.console.conftest import MakeClient, Page, settled
from tests.serve.conftest import publish_change

TAG_CHANGE = {"store/tags/t/main.conf": "tagged = true\nretention.days = 30\n"}


def pending(page: Page, url: str) -> None:
    """What a "being computed" page holds: a status, how to go on, and the way it asks again (no inline script)."""
    assert [t for t, _ in page.elements].count("main") == 1 and page.all("h1")
    assert [p for p in page.all("p") if p.get("role") == "status" and p.get("aria-live") == "polite"]
    assert "is being computed" in page.text
    assert url in page.links and "/ui/small/" in page.links  # again, and back to the timeline
    assert [s for s in page.all("section") if s.get("hx-get") == url and "load" in str(s.get("hx-trigger"))]
    assert all(s.get("src") for s in page.all("script")) and not page.all("style")


def test_a_diff_not_computed_ahead_answers_at_once_a_page_that_asks_again_then_the_diff(
    small_acl: GitRepo, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "WAIT", 0.0, raising=False)  # none on old code
    publish_change(small_acl, TAG_CHANGE, "v2")
    publish_change(small_acl, {"store/data/open/main.conf": 'size = 9\nlabel = "open-data"\n'}, "v3")
    client = make_client(small_acl)  # nothing computed ahead: the loader's round ran before the console's routes
    url = "/ui/small/diff/1..3"
    t0 = time.monotonic()
    found = client.get(url)
    assert found.status_code == 202, found.text
    assert time.monotonic() - t0 < 5.0  # not the whole computation (202)
    assert found.headers["content-security-policy"].startswith("default-src 'self'")
    assert found.headers["cache-control"] == "no-store"
    page = Page(found.text)
    pending(page, url)
    assert [m for m in page.all("meta") if m.get("http-equiv") == "refresh"]  # without scripts (in <noscript>)
    update = client.get(url, headers={"hx-request": "true"})  # what htmx asks: it waits for the diff
    assert update.status_code == 200 and "<html" not in update.text
    assert "<title>small: diff 1..3 · cfgtool console</title>" in update.text  # htmx sets the page's title
    assert "retention.days" in update.text and "size" in update.text
    whole = client.get(url)
    assert whole.status_code == 200 and "3 changed keys" in Page(whole.text).text


def test_two_pairs_do_not_wait_for_each_other(
    tmp_path: Path, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pair of large versions under way holds neither the page nor the computation of a pair of small ones."""
    monkeypatch.setattr(changes, "WAIT", 0.0, raising=False)  # none on old code
    repo = GitRepo(tmp_path / "wide")
    files: dict[str, str | bytes | None] = {
        "store/_CONFIG_STORE": "name: small\n",
        "store/main.conf": "owner = platform\n",
        "store/tags/t/main.conf": "tagged = true\n",
    }
    wide = {f"store/data/d{i:04d}/main.conf": f"n = {i}\nname = d{i}\n" for i in range(1500)}
    wide.update({f"store/data/d{i:04d}/includes": "/tags/t\n" for i in range(1500)})
    publish_change(repo, {**files, **wide}, "v1 wide")
    publish_change(repo, {"store/tags/t/main.conf": "tagged = false\n"}, "v2 wide")
    publish_change(repo, {"store/main.conf": "owner = data\n"}, "v3 wide")
    publish_change(repo, dict.fromkeys(wide), "v4 small: the datasets leave")
    publish_change(repo, {"store/main.conf": "owner = web\n"}, "v5 small")
    publish_change(repo, {"store/tags/t/main.conf": "tagged = maybe\n"}, "v6 small")
    client = make_client(repo)
    large, small = "/ui/small/diff/1..3", "/ui/small/diff/4..6"
    assert client.get(large).status_code == 202
    t0 = time.monotonic()
    assert client.get(small).status_code in (200, 202)  # at once: the large one holds no lock
    assert time.monotonic() - t0 < 5.0
    # The small diff is known while the large one is still under way: its computation did not wait. (Their pages
    # also load the versions the server does not hold, one at a time, so the pages' order proves nothing.)
    state = client.app.service.stores["small"]  # type: ignore[attr-defined]
    versions = state.view.versions
    idents = {name: (str(state.root), state.path, versions[a].commit, versions[b].commit) for name, a, b in
              (("large", 1, 3), ("small", 4, 6))}  # fmt: skip
    deadline = time.monotonic() + 120
    while changes.DIFFS.get(idents["small"], keep=False) is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert changes.DIFFS.get(idents["small"], keep=False) is not None
    assert changes.DIFFS.get(idents["large"], keep=False) is None  # still under way
    found = settled(client, small)
    assert found.status_code == 200 and "owner" in found.text
    assert settled(client, large).status_code == 200


def test_a_diff_that_fails_says_why(
    small_acl: GitRepo, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "WAIT", 0.0, raising=False)  # none on old code
    publish_change(small_acl, TAG_CHANGE, "v2")
    publish_change(small_acl, {"store/data/open/main.conf": "size = 9\n"}, "v3")
    client = make_client(small_acl)
    (small_acl.root / ".git").rename(small_acl.root / "moved.git")  # the versions stay served from memory
    url = "/ui/small/diff/1..3"
    assert client.get(url).status_code == 202
    found = settled(client, url)
    assert found.status_code == 409 and "<h1>" in found.text, found.text
    update = client.get(url, headers={"hx-request": "true"})  # htmx swaps no 409: it reloads the page
    assert update.status_code == 409 and update.headers["hx-refresh"] == "true"


def test_the_pending_page_names_only_versions(
    small_acl: GitRepo,
    make_client: MakeClient,
    token_of: Callable[[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(changes, "WAIT", 0.0, raising=False)  # none on old code
    publish_change(small_acl, {"store/data/secret-project/main.conf": 'size = 5\nlabel = "classified-label"\n'}, "v2")
    publish_change(small_acl, {"store/data/secret-project/main.conf": "size = 6\n"}, "v3")
    token = token_of("User:alice")
    client = make_client(small_acl, tmp_path / "tokens.json")
    assert client.post("/ui/login", data={"token": token, "next": "/ui/"}).status_code == 303
    found = client.get("/ui/small/diff/1..3")
    assert found.status_code == 202 and "secret" not in found.text and "classified" not in found.text
    done = settled(client, "/ui/small/diff/1..3")
    assert done.status_code == 200 and "secret" not in done.text


def test_the_diffs_the_timeline_leads_to_are_computed_ahead_and_kept_apart(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    for n in range(2, 8):
        publish_change(small_acl, {"store/data/open/main.conf": f"size = {n}\n"}, f"v{n}")
    client = make_client(small_acl)
    client.app.service.refresh()  # type: ignore[attr-defined]  # the loader's next round: the console prepares
    timeline = Page(client.get("/ui/small/").text)
    linked = [link for link in timeline.links if "/diff/" in link]
    assert linked[:3] == ["/ui/small/diff/6..7", "/ui/small/diff/5..6", "/ui/small/diff/4..5"]
    state = client.app.service.stores["small"]  # type: ignore[attr-defined]
    assert changes.timeline_pairs(state.view) == [(6, 7), (5, 6), (4, 5), (3, 4)]  # newest first, bounded
    versions = state.view.versions
    deadline = time.monotonic() + 180
    idents = [(str(state.root), state.path, versions[a].commit, versions[a + 1].commit) for a in (6, 5, 4, 3)]
    while not all(changes.DIFFS.get(i, keep=False) for i in idents) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert all(changes.DIFFS.get(i, keep=False) for i in idents)
    assert changes.DIFFS.get((str(state.root), state.path, versions[2].commit, versions[3].commit), keep=False) is None
    ready = changes.DIFFS.get(idents[1], keep=False)
    assert settled(client, linked[1]).status_code == 200  # (versions 5 and 6 loaded, if not in memory yet)
    assert changes.DIFFS.get(idents[1]) is ready  # the page read the one computed ahead


def test_computing_ahead_never_drops_a_diff_someone_asked_for(
    small_acl: GitRepo, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(changes, "KEPT_AHEAD", 1, raising=False)  # a small bound: the same logic, fewer diffs
    monkeypatch.setattr(changes, "DIFFS", changes.Diffs())  # kept with that bound
    for n in range(2, 6):
        publish_change(small_acl, {"store/data/open/main.conf": f"size = {n}\n"}, f"v{n}")
    client = make_client(small_acl)
    assert settled(client, "/ui/small/diff/1..5").status_code == 200  # asked for
    client.app.service.refresh()  # type: ignore[attr-defined]  # the console computes 4..5, 3..4, 2..3, 1..2 ahead
    state = client.app.service.stores["small"]  # type: ignore[attr-defined]
    versions = state.view.versions

    def ident(a: int, b: int) -> tuple[str, str, str, str]:
        return (str(state.root), state.path, versions[a].commit, versions[b].commit)

    deadline = time.monotonic() + 180
    while changes.DIFFS.get(ident(1, 2), keep=False) is None and time.monotonic() < deadline:
        time.sleep(0.2)  # the last one computed ahead (one kept: each dropped the one before)
    assert changes.DIFFS.get(ident(1, 2), keep=False) is not None
    assert changes.DIFFS.get(ident(4, 5), keep=False) is None
    assert changes.DIFFS.get(ident(1, 5), keep=False) is not None
