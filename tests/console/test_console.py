"""The console through Starlette's test client: pages and their structure, the security headers, sign-in by token
with the session cookie, the JSON API's filter on every page and fragment, and secrets always `[hidden]`."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import ClassVar
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from starlette.testclient import TestClient

from tests.conftest import GitRepo
from tests.console.conftest import MakeClient, Page, SignedIn, settled, sign_in
from tests.serve.conftest import publish_change

PAGES = [
    "/ui/",
    "/ui/small/",
    "/ui/small/v/1/tree/",
    "/ui/small/v/1/tree/data",
    "/ui/small/v/1/key/data/open",
    "/ui/small/v/1/explain/data/open?path=size",
    "/ui/small/history/data/open",
    "/ui/small/v/1/search?q=open",
    "/ui/small/consumers",
]


def walk(client: TestClient, start: list[str], limit: int = 400) -> dict[str, str]:
    """Every console page and fragment reachable from `start` (links, form-less `hx-get`s, and each page again
    as the fragment htmx asks for): their bodies by URL."""
    seen: dict[str, str] = {}
    todo = deque(start)
    while todo and len(seen) < limit:
        url = todo.popleft()
        if url in seen:
            continue
        for fragment in (False, True):
            headers = {"hx-request": "true"} if fragment else {}
            found = client.get(url, headers=headers)
            name = url + ("#fragment" if fragment else "")
            if found.status_code == 202:  # a diff being computed, a version being indexed: that page, then the answer
                seen[name + "#pending"] = found.text
                found = settled(client, url, headers)
            assert found.status_code < 500, (url, found.text)
            seen[name] = found.text
            if found.status_code != 200 or "text/html" not in found.headers.get("content-type", ""):
                continue
            for link in Page(found.text).links:
                target = urldefrag(urljoin(url, link)).url
                parts = urlsplit(target)
                if parts.path.startswith("/ui/") and not parts.path.startswith("/ui/static/"):
                    if "/live" in parts.path:
                        target = parts.path + "?since=0"  # at once, not after a long poll
                    todo.append(target if not parts.query or "/live" in parts.path else f"{parts.path}?{parts.query}")
    return seen


def _without(text: str, parts: tuple[str, ...]) -> str:
    for part in parts:
        text = text.replace(part, "")
    return text


def test_every_page_renders_with_landmarks_and_the_security_headers(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    client = make_client(small_acl)
    for url in PAGES:
        found = settled(client, url, timeout=30)  # the search page answers 202 while its version is indexed
        assert found.status_code == 200, (url, found.text)
        assert found.headers["content-security-policy"].startswith("default-src 'self'")
        assert found.headers["x-content-type-options"] == "nosniff"
        assert found.headers["cache-control"] == "no-store"
        page = Page(found.text)
        assert [t for t, _ in page.elements].count("main") == 1, url
        assert page.all("h1"), url
        assert all(s.get("src") for s in page.all("script")), f"inline script on {url}"
        assert not page.all("style") and not any("style" in a for _, a in page.elements), f"inline style on {url}"
        assert {"/ui/static/console.css"} <= {str(link.get("href")) for link in page.all("link")}


def test_the_timeline_marks_the_current_version_and_rollbacks_with_their_reason(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    from cfgtool.versions import rollback

    publish_change(small_acl, {"store/data/open/main.conf": "size = 3\n"}, "bigger open data")
    publish_change(small_acl, {"store/data/open/main.conf": "size = 4\n"}, "even bigger")
    rollback(small_acl.root, 3, reason="size 4 broke the loader")
    client = make_client(small_acl)
    page = Page(client.get("/ui/small/").text)
    items = {a.get("id"): a.get("class") or "" for a in page.all("li")}
    assert "current" in items["v2"] and "rolled-back" in items["v3"] and "rollback" in items["r3"]
    assert "size 4 broke the loader" in page.text and "even bigger" in page.text
    assert re.search(r"Current version: 2\b", page.text)
    undone = re.search(r'id="r3".*?</li>', client.get("/ui/small/").text, re.S)
    assert undone and '<a href="/ui/small/diff/3..2">' in undone.group(0)  # what the rollback changed back
    # the live fragment: the timeline section again, asking the change feed for what follows
    live = client.get("/ui/small/live?since=0", headers={"hx-request": "true"})
    section = Page(live.text).all("section")[0]
    assert section["id"] == "timeline" and section["hx-get"] == "/ui/small/live?since=4"


def test_the_version_switcher_chooses_the_current_version_and_marks_rolled_back_ones(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    """On a page of no one version the switcher shows the current version, not the newest (rolled back); each
    option says whether it is the current version or a rolled-back one."""
    from cfgtool.versions import rollback

    publish_change(small_acl, {"store/data/open/main.conf": "size = 3\n"}, "bigger open data")
    publish_change(small_acl, {"store/data/open/main.conf": "size = 4\n"}, "even bigger")
    rollback(small_acl.root, 3, reason="size 4 broke the loader")
    client = make_client(small_acl)
    for url, chosen in [("/ui/small/", "2"), ("/ui/small/consumers", "2"), ("/ui/small/v/1/tree/", "1")]:
        html = client.get(url).text
        options = re.findall(r'<option value="(\d+)"( selected)?>([^<]*)</option>', html)
        assert [(n, text) for n, _, text in options] == [("3", "3 (rolled back)"), ("2", "2 (current)"), ("1", "1")]
        assert [n for n, selected, _ in options if selected] == [chosen], url


def test_the_timeline_shows_the_changed_key_counts_the_change_feed_gives_the_same_principal(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    """A signed-in principal sees each event's changed-key count exactly when `/v1/{store}/changes` gives it to
    them (a super user), and the same number; alice, who may not describe every key, sees none in either."""
    publish_change(small_acl, {"store/data/open/main.conf": "size = 3\n"}, "bigger open data")
    for who, shown in (("User:admin", True), ("User:alice", False)):
        token = token_of(who)
        client = make_client(small_acl, tmp_path / "tokens.json")
        feed = client.get("/v1/small/changes?since=0", headers={"authorization": f"Bearer {token}"}).json()
        counts = [e["changed_keys"] for e in feed["events"]]
        assert counts == ([6, 1] if shown else [None, None]), who
        sign_in(client, token)
        text = Page(client.get("/ui/small/").text).text
        assert (
            bool(re.search(r"\b1 key changed\b", text)) is shown
            and bool(re.search(r"\b6 keys changed\b", text)) is shown
        )


def test_the_tree_opens_one_level_at_a_time(small_acl: GitRepo, make_client: MakeClient) -> None:
    client = make_client(small_acl)
    root = Page(client.get("/ui/small/v/1/tree/").text)
    shown = [a["href"] for a in root.all("a") if str(a.get("href", "")).startswith("/ui/small/v/1/tree/")]
    assert "/ui/small/v/1/tree/data" in shown and "/ui/small/v/1/tree/data/open" not in shown
    fragment = client.get("/ui/small/v/1/tree/data", headers={"hx-request": "true"})
    assert "<html" not in fragment.text and "/ui/small/v/1/tree/data/open" in fragment.text


def test_the_key_page_lays_out_the_config_with_an_explain_per_value_and_an_import_graph(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    client = make_client(small_acl)
    page = Page(client.get("/ui/small/v/1/key/data/open").text)
    explains = {str(d.get("hx-get")) for d in page.all("details") if d.get("hx-get")}
    assert {"/ui/small/v/1/explain/data/open?path=size", "/ui/small/v/1/explain/data/open?path=tier"} <= explains
    assert page.all("svg") and "/ui/small/v/1/key/tags/t" in {a.get("href") for a in page.all("a")}
    explained = client.get("/ui/small/v/1/explain/data/open?path=size", headers={"hx-request": "true"})
    assert "store/data/open/main.conf:1" in explained.text and "<html" not in explained.text


def test_sign_in_sets_a_session_cookie_and_sign_out_ends_it(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    token = token_of("User:alice")
    client = make_client(small_acl, tmp_path / "tokens.json")
    to_login = client.get("/ui/small/v/1/tree/")
    assert to_login.status_code == 303 and to_login.headers["location"].startswith("/ui/login?next=")
    wrong = client.post("/ui/login", data={"token": token[:-1] + "x"})
    assert wrong.status_code == 401 and "set-cookie" not in wrong.headers
    signed = client.post("/ui/login", data={"token": token, "next": "/ui/small/"})
    assert signed.status_code == 303 and signed.headers["location"] == "/ui/small/"
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Max-Age=43200" in cookie
    assert "Path=/ui/" in cookie and "Secure" not in cookie and token not in cookie
    assert "User:alice" in client.get("/ui/small/").text
    assert client.post("/ui/logout").status_code == 303
    assert client.get("/ui/small/").status_code == 303


def test_the_cookie_is_secure_behind_https_and_a_cross_site_sign_in_is_refused(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    token = token_of("User:alice")
    client = make_client(small_acl, tmp_path / "tokens.json")
    secure = client.post("https://127.0.0.1:8750/ui/login", data={"token": token})
    assert "Secure" in secure.headers["set-cookie"]
    forged = client.post("/ui/login", data={"token": token}, headers={"origin": "https://evil.example"})
    assert forged.status_code == 403 and "set-cookie" not in forged.headers


def test_a_revoked_token_ends_its_sessions(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    from cfgtool.serve.tokens import revoke_token

    token = token_of("User:alice")
    client = make_client(small_acl, tmp_path / "tokens.json")
    sign_in(client, token)
    assert client.get("/ui/small/").status_code == 200
    revoke_token(tmp_path / "tokens.json", token.split("_")[1])
    client.app.service.tokens.reload()  # type: ignore[attr-defined]  # the loader's next round
    assert client.get("/ui/small/").status_code == 303


@pytest.mark.parametrize("who", ["User:alice", "User:admin"])
def test_a_principal_never_sees_a_key_it_may_not_describe_on_any_page(
    small_acl: GitRepo, signed_in: SignedIn, who: str
) -> None:
    publish_change(small_acl, {"store/data/secret-project/main.conf": 'size = 5\nlabel = "classified-label"\n'}, "v2")
    client = signed_in(small_acl, who)
    start = [*PAGES, "/ui/small/v/1/search?q=size", "/ui/small/v/2/search?q=classified", "/ui/small/v/1/key/tags/t",
             "/ui/small/v/1/key/", "/ui/small/history/data?path=tier", "/ui/small/diff/1..2", "/ui/small/diff",
             "/ui/small/v/2/compare?a=/data/open&b=/data", "/ui/small/v/2/access/data/open", "/ui/small/v/2/tree/data",
             "/ui/small/v/2/key/tags/t", "/ui/small/consumers"]  # fmt: skip
    bodies = walk(client, start)
    asked = ("q=classified", 'value="classified"', "containing classified")
    leaks = [u for u, body in bodies.items() if "secret-project" in body or "classified" in _without(body, asked)]
    counts = "keys changed" in bodies["/ui/small/"] or "key changed" in bodies["/ui/small/"]
    if who == "User:admin":  # the control: the walk does reach the key where it may be seen
        assert leaks and counts
        return
    assert not counts  # a count of changed keys would count keys it may not describe
    assert len(bodies) > 20 and not leaks, leaks
    pages = ["key/data/secret-project", "tree/data/secret-project", "explain/data/secret-project?path=size"]
    for url in [*(f"/ui/small/v/1/{p}" for p in pages), "/ui/small/history/data/secret-project"]:
        found = client.get(url)  # 404 as a version that does not exist; only the asked key is echoed
        assert found.status_code == 404 and "secret-project" not in found.text.replace("/data/secret-project", ""), url


class Outline(HTMLParser):
    """A page's nesting as far as accessibility checks need it: controls inside a `summary` (itself one) and the
    landmarks (named sections, navs, asides, forms) with their accessible names."""

    VOID: ClassVar = frozenset(
        {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
    )
    CONTROLS: ClassVar = frozenset({"a", "button", "input", "select", "textarea", "details"})
    LANDMARKS: ClassVar = {
        "section": "region",
        "nav": "navigation",
        "aside": "complementary",
        "form": "form",
        "main": "main",
    }

    def __init__(self, html: str) -> None:
        super().__init__()
        self.open: list[tuple[str, dict[str, str | None]]] = []
        self.texts: dict[str, list[str]] = {}  # element id -> its text
        self.landmarks: list[tuple[str, dict[str, str | None]]] = []
        self.nested: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag in self.CONTROLS and any(t == "summary" for t, _ in self.open):
            self.nested.append(f"<{tag}> in <summary>")
        if tag in self.LANDMARKS:
            self.landmarks.append((self.LANDMARKS[tag], found))
        if found.get("id"):
            self.texts[str(found["id"])] = []
        if tag not in self.VOID:
            self.open.append((tag, found))

    def handle_endtag(self, tag: str) -> None:
        while self.open:
            if self.open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        for _, attrs in self.open:
            if attrs.get("id"):
                self.texts[str(attrs["id"])].append(data)

    def repeated_landmarks(self) -> list[str]:
        """Landmarks of one role sharing an accessible name (a screen reader's landmark list can't tell them
        apart); a section or form without a name is no landmark."""
        names: list[str] = []
        for role, attrs in self.landmarks:
            label = attrs.get("aria-label")
            if attrs.get("aria-labelledby"):
                label = " ".join("".join(self.texts.get(i, [])) for i in str(attrs["aria-labelledby"]).split())
            if label is None and role in ("region", "form"):
                continue
            names.append(f"{role}: {' '.join((label or '').split())}")
        return sorted({n for n in names if names.count(n) > 1})


def test_no_page_nests_a_control_in_a_summary_or_repeats_a_landmark(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    """Every page and fragment: no link or other control inside a `summary` (the tree's toggles), and no two
    landmarks of one role with one name (a diff's causes of the same path)."""
    publish_change(
        small_acl,
        {"store/data/open/main.conf": "size = 3\n", "store/data/secret-project/main.conf": "size = 5\n"},
        "v2",
    )
    client = make_client(small_acl)
    diff = settled(client, "/ui/small/diff/1..2").text
    assert diff.count('<code class="path">size</code>') == 2  # two causes: the same path, two changes
    bodies = walk(client, [*PAGES, "/ui/small/diff/1..2", "/ui/small/v/2/tree/data", "/ui/small/v/2/key/tags/t"])
    problems = {}
    for url, body in bodies.items():
        outline = Outline(body)
        if outline.nested or outline.repeated_landmarks():
            problems[url] = sorted(set(outline.nested)) + outline.repeated_landmarks()
    assert len(bodies) > 20 and problems == {}


def test_secrets_are_hidden_on_every_page(published: GitRepo, make_client: MakeClient) -> None:
    client = make_client(published)
    key = "data/databases/identity"
    urls = [
        f"/ui/demo/v/1/key/{key}",
        f"/ui/demo/v/1/tree/{key}",
        f"/ui/demo/v/1/explain/{key}?path=database.credentials.password",
        "/ui/demo/v/1/search?q=password",
        "/ui/demo/v/1/search?q=ENC",
        f"/ui/demo/history/{key}?path=database.credentials.password",
    ]
    for url in urls:
        found = settled(client, url)  # a search: once the version is indexed
        assert found.status_code == 200, (url, found.text)
        assert "ENC[" not in found.text, url
    assert "[hidden]" in client.get(urls[0]).text and "[hidden]" in client.get(urls[2]).text


def test_a_large_level_of_the_tree_comes_a_page_at_a_time(tmp_path: Path, make_client: MakeClient) -> None:
    from cfgtool.console.tree import PAGE

    repo = GitRepo(tmp_path / "wide")
    files = {"store/_CONFIG_STORE": "name: wide\n", "store/main.conf": "a = 1\n"}
    files.update({f"store/data/d{i:04d}/main.conf": f"n = {i}\n" for i in range(PAGE + 50)})
    publish_change(repo, files, "v1")
    client = make_client(repo)
    first = Page(client.get("/ui/wide/v/1/tree/data").text)
    nodes = [li for li in first.all("li") if "node" in str(li.get("class"))]
    assert len(nodes) == PAGE
    more = [a["href"] for a in first.all("a") if "after=" in str(a.get("href"))]
    assert more == [f"/ui/wide/v/1/tree/data?after=/data/d{PAGE - 1:04d}"]
    rest = Page(client.get(str(more[0]), headers={"hx-request": "true"}).text)
    assert len([li for li in rest.all("li") if "node" in str(li.get("class"))]) == 50


def test_the_consumers_page_lists_the_instances_that_read_the_store(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    client = make_client(small_acl)
    assert "No instance has read" in client.get("/ui/small/consumers").text
    heard = {"cfgtool-instance": "web-7.example:4242", "user-agent": "cfgtool/1.0 (client)"}
    assert client.get("/v1/small/versions/1/keys/data/open", headers=heard).status_code == 200
    page = Page(client.get("/ui/small/consumers").text)
    rows = [" ".join(r.split()) for r in page.text.split("web-7.example:4242")[1:]]
    assert rows and rows[0].startswith("client")
    assert "1 instance" in page.text and page.all("meter")[0]["value"] == "1"


def test_the_history_of_a_value_follows_new_versions(small_acl: GitRepo, make_client: MakeClient) -> None:
    client = make_client(small_acl)
    url = "/ui/small/history/data/open?path=size"
    assert "Version 1" in Page(client.get(url).text).text and "Version 2" not in client.get(url).text
    publish_change(small_acl, {"store/data/open/main.conf": 'size = 3\nlabel = "open-data"\n'}, "three is better")
    client.app.service.refresh()  # type: ignore[attr-defined]  # the loader's next round
    page = Page(client.get(url).text)
    assert "Version 2" in page.text and "three is better" in page.text
    assert [d.get("class") for d in page.all("del")] == ["old"]  # 1 -> 3 in version 2; version 1 set it
    assert [i.get("class") for i in page.all("ins")] == ["new", "new"]


def test_the_version_switcher_keeps_the_page_and_its_query(small_acl: GitRepo, make_client: MakeClient) -> None:
    publish_change(small_acl, {"store/data/open/main.conf": "size = 3\n"}, "v2")
    client = make_client(small_acl)
    page = Page(client.get("/ui/small/v/2/explain/data/open?path=size").text)
    form = page.all("form")[0]
    assert form["action"] == "/ui/small/switch" and form["method"] == "get"
    kept = [i["value"] for i in page.all("input") if i.get("name") == "page"]
    assert kept == ["explain/data/open?path=size"]
    moved = client.get("/ui/small/switch", params={"v": "1", "page": kept[0]})
    assert moved.status_code == 303 and moved.headers["location"] == "/ui/small/v/1/explain/data/open?path=size"
    assert "size" in client.get(moved.headers["location"]).text
    history = Page(client.get("/ui/small/history/data/open?path=size").text)  # of no one version: the key in N
    kept = [i["value"] for i in history.all("input") if i.get("name") == "page"]
    moved = client.get("/ui/small/switch", params={"v": "1", "page": kept[0]})
    assert moved.headers["location"] == "/ui/small/v/1/key/data/open"


@pytest.mark.parametrize("target", ["//evil.example/", "https://evil.example/ui/", "/ui/\\\\evil", "/v1/stores"])
def test_sign_in_redirects_only_within_the_console(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path, target: str
) -> None:
    token = token_of("User:alice")
    client = make_client(small_acl, tmp_path / "tokens.json")
    found = client.post("/ui/login", data={"token": token, "next": target})
    assert found.status_code == 303 and found.headers["location"] == "/ui/"


def test_an_address_under_ui_that_names_no_page_answers_a_page_not_the_apis_json(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    """A cut or mistyped permalink: the store's address without its slash and a version's without its page lead to
    them; any other address answers the console's own 404 page."""
    client = make_client(small_acl)
    assert client.get("/ui/small").headers["location"] == "/ui/small/"
    for short in ("/ui/small/v/1", "/ui/small/v/1/"):
        found = client.get(short)
        assert found.status_code == 303 and found.headers["location"] == "/ui/small/v/1/tree/", short
    for url in ("/ui/small/nosuch", "/ui/small/v/1/nosuch/data", "/ui/small/diff/", "/ui/small/v/1/search/"):
        found = client.get(url)
        assert found.status_code == 404 and found.headers["content-type"].startswith("text/html"), url
        assert found.headers["content-security-policy"].startswith("default-src 'self'")
        assert f"the console has no page {url}" in Page(found.text).text


def test_an_explain_marks_no_visible_layer_as_the_winner_when_a_hidden_one_won(
    tmp_path: Path, make_client: MakeClient, token_of: Callable[[str], str]
) -> None:
    """/tags/t, which alice may not describe, sets the tier of /data/open over /data's: the /data row is what it
    overrode, not the value that won."""
    repo = _hidden_tag(tmp_path)
    token, admin = token_of("User:alice"), token_of("User:admin")
    client = make_client(repo, tmp_path / "tokens.json")
    url = "/ui/small/v/1/explain/data/open?path=tier"
    sign_in(client, admin)  # the control: who sees every layer sees /tags/t win
    rows = Page(client.get(url).text).all("tr")
    assert [r.get("class") for r in rows].count("winner") == 1
    sign_in(client, token)
    page = Page(client.get(url).text)
    assert '"platinum"' in page.text and "[hidden layer]" in page.text
    assert not [r for r in page.all("tr") if r.get("class") == "winner"], "the /data row is marked as the winner"


def test_a_key_page_says_that_it_counts_only_the_imports_the_principal_may_see(
    tmp_path: Path, signed_in: SignedIn
) -> None:
    """/data/open imports /tags/t, which alice may not describe: "imports nothing" would be untrue."""
    client = signed_in(_hidden_tag(tmp_path), "User:alice")
    page = Page(client.get("/ui/small/v/1/key/data/open").text)
    assert "/tags/t" not in page.text
    assert "/data/open imports nothing and nothing imports it, of the keys you may see." in page.text


def _hidden_tag(tmp_path: Path) -> GitRepo:
    """The small store where alice may not describe /tags/t, which /data/open imports and which sets its tier."""
    from tests.console.conftest import STORE

    acl = STORE["store/_ACL.yaml"] + (
        "  - {principal: User:alice, operation: all, key: /tags/t, pattern: literal, permission: deny}\n"
    )
    repo = GitRepo(tmp_path / "small")
    publish_change(repo, {**STORE, "store/_ACL.yaml": acl, "store/tags/t/main.conf": "tier = platinum\n"}, "v1")
    return repo


def test_an_error_page_keeps_the_signed_in_header_with_its_sign_out(small_acl: GitRepo, signed_in: SignedIn) -> None:
    client = signed_in(small_acl, "User:alice")
    for url in ("/ui/small/v/9/tree/", "/ui/small/v/1/key/data/secret-project", "/ui/nosuch/"):
        found = client.get(url)
        assert found.status_code == 404, url
        page = Page(found.text)
        assert "signed in as User:alice" in page.text, url
        assert [f.get("action") for f in page.all("form")] == ["/ui/logout"], url


def test_a_live_update_without_news_swaps_nothing_and_asks_again(
    small_acl: GitRepo, make_client: MakeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A swap of the same timeline would move the keyboard's focus off the link it was on, every long poll."""
    from cfgtool.console import pages

    monkeypatch.setattr(pages, "LIVE_WAIT", 0.1)
    client = make_client(small_acl)
    section = Page(client.get("/ui/small/").text).all("section")[0]
    asked = str(section["hx-get"])
    idle = client.get(asked, headers={"hx-request": "true"})
    assert idle.status_code == 204 and not idle.content
    event = idle.headers["hx-trigger"]
    assert f"{event} delay:500ms" in str(section["hx-trigger"]).split(", ")  # the section asks again on it
    publish_change(small_acl, {"store/data/open/main.conf": "size = 3\n"}, "v2")
    client.app.service.refresh()  # type: ignore[attr-defined]  # the loader's next round
    news = client.get(asked, headers={"hx-request": "true"})
    assert news.status_code == 200 and "Version 2" in Page(news.text).text


def test_a_tree_level_whose_keys_are_all_hidden_does_not_open(
    tmp_path: Path, make_client: MakeClient, token_of: Callable[[str], str]
) -> None:
    """/tags holds only /tags/t, which alice may not describe: a /tags that opened on "Nothing below" would tell
    her there is a key there."""
    token, admin = token_of("User:alice"), token_of("User:admin")
    client = make_client(_hidden_tag(tmp_path), tmp_path / "tokens.json")

    def opening() -> list[str]:
        return [str(d.get("hx-get")) for d in Page(client.get("/ui/small/v/1/tree/").text).all("details")]

    sign_in(client, admin)  # the control
    assert "/ui/small/v/1/tree/tags" in opening()
    sign_in(client, token)
    assert "/ui/small/v/1/tree/tags" not in opening() and "/ui/small/v/1/tree/data" in opening()


def test_signing_in_from_a_permalink_returns_to_it_with_its_query(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    """An explain, a search or a history names what it shows in its query: signing in must not drop it."""
    token = token_of("User:alice")
    client = make_client(small_acl, tmp_path / "tokens.json")
    permalink = "/ui/small/v/1/explain/data/open?path=size"
    to_sign_in = client.get(permalink)
    assert to_sign_in.status_code == 303
    form = Page(client.get(to_sign_in.headers["location"]).text)
    kept = [i["value"] for i in form.all("input") if i.get("name") == "next"]
    assert kept == [permalink]
    signed_in = client.post("/ui/login", data={"token": token, "next": kept[0]})
    assert signed_in.headers["location"] == permalink
    assert client.get(permalink).status_code == 200
    client.cookies.clear()  # the session ended while the timeline followed the feed: back to the timeline
    live = {"hx-request": "true", "hx-current-url": "http://127.0.0.1:8750/ui/small/?from=x"}
    expired = client.get("/ui/small/live?since=1", headers=live)
    assert expired.status_code == 401 and expired.headers["hx-redirect"] == "/ui/login?next=%2Fui%2Fsmall%2F%3Ffrom%3Dx"


def test_an_error_page_heading_says_what_kind_of_error_it_is(small_acl: GitRepo, make_client: MakeClient) -> None:
    client = make_client(small_acl)
    for url, heading in [
        ("/ui/small/v/1/explain/data/open?path=a..b", "400: bad request"),
        ("/ui/small/v/1/key/" + "k" * 1100, "414: bad request"),
        ("/ui/small/v/9/tree/", "404: not found"),
    ]:
        page = Page(client.get(url).text)
        assert heading in page.text, (url, page.text[:200])


def test_a_server_with_nothing_published_says_to_publish_and_not_to_wait(
    tmp_path: Path, make_client: MakeClient
) -> None:
    repo = GitRepo(tmp_path / "unpublished")
    repo.write({"store/_CONFIG_STORE": "name: small\n", "store/main.conf": "owner = platform\n"})
    repo.commit("a store, not published yet")
    client = make_client(repo)
    stores = Page(client.get("/ui/").text)
    assert "No store to show. A store is listed once a version of it is published: run cfgtool publish" in stores.text
    answer = client.get("/ui/small/")
    page = Page(answer.text)
    assert answer.status_code == 503 and "503: this store has no version to show" in page.text, page.text[:300]
    assert "try again shortly" not in page.text and "none published" in page.text


def test_a_key_without_a_node_names_a_close_node_the_principal_may_see(
    small_acl: GitRepo, make_client: MakeClient, signed_in: SignedIn
) -> None:
    publish_change(small_acl, {"store/data/kafka/main.conf": 'kafka.config { "retention.ms" = 5 }\n'}, "kafka")
    client = make_client(small_acl)
    for url in ("/ui/small/v/2/key/data/opne", "/ui/small/v/2/explain/data/opne?path=size"):
        page = Page(client.get(url).text)
        assert "/data/opne has no node" in page.text and "Did you mean /data/open" in page.text, url
        assert "/ui/small/v/2/key/data/open" in page.links, url
    explained = Page(client.get("/ui/small/v/2/explain/data/kafka?path=kafka.config.retention.ms").text)
    assert 'Not set in any layer. Did you mean kafka.config."retention.ms"' in explained.text
    assert "/ui/small/v/2/explain/data/kafka?path=kafka.config.%22retention.ms%22" in explained.links
    alice = signed_in(small_acl, "User:alice")  # she may not describe /data/secret-project: never suggested
    for url in ("/ui/small/v/2/key/data/secret-projet", "/ui/small/v/2/explain/data/secret-projet?path=size"):
        hidden = alice.get(url)
        assert hidden.status_code == 200 and "has no node" in hidden.text, url
        assert "secret-project" not in hidden.text and "Did you mean" not in hidden.text, url
