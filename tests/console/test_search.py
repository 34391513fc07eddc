"""The console's search: an index built once per version in a worker process (the current version's as soon as it
loads, another's when first searched), shared by every principal and filtered per principal on each hit; it finds
keys, paths and values as the pages show them, never a secret's sealed text, and counts only keys that really match.
A search before its version is indexed answers at once a page that asks again."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from cfgtool.console import changes, search
from tests.conftest import GitRepo
from tests.console.conftest import MakeClient, Page, settled, sign_in
from tests.serve.conftest import publish_change

ENVELOPE_PARTS = ("c64196f2c0e1a4e7", "YWdlLWVuY3J5cHRpb24ub3Jn", "cfgtool:v1,age", "ENC[")


def _count(page: Page) -> str:
    return next(p for p in page.text.split(". ") if "match" in p)


def test_a_secret_is_never_found_by_its_sealed_text(published: GitRepo, make_client: MakeClient) -> None:
    client = make_client(published)
    for q in ENVELOPE_PARTS:
        found = settled(client, "/ui/demo/v/1/search", params={"q": q})
        assert found.status_code == 200 and "0 keys match" in Page(found.text).text, q
    page = Page(settled(client, "/ui/demo/v/1/search", params={"q": "credentials.password"}).text)
    assert "/data/databases/identity" in page.text and "[hidden]" in page.text and "ENC[" not in page.text


def test_only_keys_that_really_match_are_counted_past_the_listed_ones(
    tmp_path: Path, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = GitRepo(tmp_path / "wide")
    files = {"store/_CONFIG_STORE": "name: wide\n", "store/main.conf": "a = 1\n"}
    listed, more = search.RESULTS, 50
    files.update({f"store/data/d{i:04d}/main.conf": 'label = "x\\""\n' for i in range(listed)})  # the value: x"
    files.update({f"store/data/d{i:04d}/main.conf": 'label = "x"\n' for i in range(listed, listed + more)})
    publish_change(repo, files, "v1")
    client = make_client(repo)
    everything = Page(settled(client, "/ui/wide/v/1/search?q=label").text)
    assert f"{listed + more} keys match; the first {listed} are shown" in everything.text
    # past the listed keys too, only a path or a value counts: not the JSON spelling of a config ({"label":"x"})
    quoted = Page(client.get("/ui/wide/v/1/search", params={"q": 'x"'}).text)
    assert f"{listed} keys match." in quoted.text and "are shown" not in quoted.text
    assert "0 keys match" in Page(client.get("/ui/wide/v/1/search", params={"q": '":"'}).text).text
    assert "1 key match" in Page(client.get("/ui/wide/v/1/search?q=d0149").text).text
    monkeypatch.setattr(search, "COUNTED", listed + 10)  # a query matching most keys stops counting
    capped = Page(client.get("/ui/wide/v/1/search?q=label").text)
    assert f"{listed + 10} or more keys match; the first {listed} are shown" in capped.text


def _built(loaded: object, timeout: float = 120) -> bool:
    """Whether `loaded`'s index is built (waiting for a build under way)."""
    deadline = time.monotonic() + timeout
    while loaded not in search.INDEXES._built and time.monotonic() < deadline:
        time.sleep(0.05)
    return loaded in search.INDEXES._built


def test_the_current_version_is_indexed_when_it_loads_and_hits_are_filtered_per_principal(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    alice, admin = token_of("User:alice"), token_of("User:admin")
    client = make_client(small_acl, tmp_path / "tokens.json")
    publish_change(small_acl, {"store/data/secret-project/main.conf": 'size = 5\nlabel = "classified-x"\n'}, "v2")
    service = client.app.service  # type: ignore[attr-defined]
    service.refresh()  # the loader's round: version 2 loads and becomes current, and its index is started there
    loaded = service.stores["small"].view.pinned[2]
    assert _built(loaded)  # before any request asked for it
    index = search.INDEXES._built[loaded]
    # the worker's index is the one the server's own answers make (secrets `[hidden]`, nodes that did not resolve)
    assert index == search.index_of(loaded.nodes, loaded.configs)
    sign_in(client, admin)
    assert "1 key match" in Page(client.get("/ui/small/v/2/search?q=classified").text).text
    sign_in(client, alice)
    for q in ("classified", "secret-project", "size"):
        page = Page(client.get("/ui/small/v/2/search", params={"q": q}).text)
        assert "secret-project" not in page.text and "classified" not in page.text.replace(f"{q}", ""), q
    assert "0 keys match" in Page(client.get("/ui/small/v/2/search?q=classified").text).text
    assert search.INDEXES._built[loaded] is index  # one index for both principals


def test_only_the_current_version_is_indexed_ahead_and_another_when_first_searched(
    small_acl: GitRepo, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Indexing reads every config of a version: the server does not do it for a version nobody searched, and a
    search of a version not indexed yet answers at once a page saying so, which asks again (htmx waits for it)."""
    monkeypatch.setattr(changes, "WAIT", 0.0)  # the page answers without waiting for the index
    client = make_client(small_acl)
    publish_change(small_acl, {"store/data/open/main.conf": 'size = 3\nlabel = "open-data"\n'}, "v2")
    service = client.app.service  # type: ignore[attr-defined]
    service.refresh()  # the loader's round: version 2 loads and is current
    state = service.stores["small"]
    current, first = state.view.pinned[2], state.loaded(1)  # version 1 as the page reads it
    assert _built(current)
    assert first not in search.INDEXES._built  # nobody searched version 1
    url = "/ui/small/v/1/search?q=open-data"
    found = client.get(url)
    assert found.status_code == 202, found.text
    assert found.headers["content-security-policy"].startswith("default-src 'self'")
    page = Page(found.text)
    assert "is being indexed" in page.text and url in page.links
    assert [p for p in page.all("p") if p.get("role") == "status" and p.get("aria-live") == "polite"]
    assert [s for s in page.all("section") if s.get("hx-get") == url and "load" in str(s.get("hx-trigger"))]
    assert [m for m in page.all("meta") if m.get("http-equiv") == "refresh"]  # without scripts (in <noscript>)
    assert [i for i in page.all("input") if i.get("name") == "q" and i.get("value") == "open-data"]
    update = settled(client, url, {"hx-request": "true"})  # what htmx asks: it waits for the index
    assert update.status_code == 200 and "<html" not in update.text
    assert "<title>small v1: search · cfgtool console</title>" in update.text  # htmx sets the page's title
    assert "1 key match" in Page(update.text).text and "/data/open" in update.text
    assert first in search.INDEXES._built
    whole = client.get(url)
    assert whole.status_code == 200 and "1 key match" in Page(whole.text).text
