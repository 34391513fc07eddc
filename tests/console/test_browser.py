"""The console's main flows in a real headless Chromium (docs/console.md), driving a real `cfgtool serve`.

Playwright for Python drives Debian's `chromium-headless-shell` (no browser download); the tests skip, saying why,
where either is missing (`.ci/run` installs the browser). Every page a test opens must log no console error, no
failed request and no Content-Security-Policy violation (Chromium reports those on the console). With
`CFGTOOL_SCREENSHOTS=1` the tests also write the screenshots that docs/console.md shows, into docs/images/.
axe-core (from npm: `.ci/run` installs it into .venv-ci/axe, `CFGTOOL_AXE` names another axe.min.js) checks
every kind of page in the light and the dark scheme; that test skips, saying why, without it.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.serve.tokens import add_token
from cfgtool.versions.rollback import rollback
from tests.conftest import GitRepo
from tests.serve.conftest import SMALL, Server, cfgtool_command, publish_change

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = Path(os.environ.get("CFGTOOL_CHROMIUM", "/usr/bin/chromium-headless-shell"))
ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "docs" / "images"
# axe-core from npm (`.ci/run` installs it there; CFGTOOL_AXE names another axe.min.js)
AXE = Path(os.environ.get("CFGTOOL_AXE", ROOT / ".venv-ci" / "axe" / "node_modules" / "axe-core" / "axe.min.js"))
ACL = """\
super_users: [User:admin]
allow_everyone_if_no_acl_found: false
acls:
  - {principal: "User:*", operation: read, key: /, pattern: prefixed, permission: allow}
  - {principal: User:alice, operation: alter, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:guest, operation: all, key: /data/b, permission: deny}
"""

LONG_KEY = "/services/checkout-payments-gateway"  # a key whose layers' names are long
LONG = {
    "store/services/checkout-payments-gateway/main.conf": "size = 3\n",
    "store/services/checkout-payments-gateway/includes": "/tags/regional-settlement-and-reconciliation\n",
    "store/tags/regional-settlement-and-reconciliation/main.conf": "retention.days = 90\n",
}

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the dev extra)")
pytestmark = [
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason=f"no headless Chromium at {CHROMIUM} (apt chromium-headless-shell)"
    ),
    pytest.mark.xdist_group("browser"),  # one worker starts the browser and the server once
]


class Console:
    """The server the flows read: its base URL and the tokens of its principals."""

    def __init__(self, server: Server, tokens: dict[str, str]) -> None:
        self.server = server
        self.url = server.url
        self.tokens = tokens


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    """A store `small` with versions 1-4: an ACL, a key with long layer names, two changes, version 4 rolled
    back; served with tokens."""
    base = tmp_path_factory.mktemp("console")
    repo = GitRepo(base / "small")
    first = {**SMALL, "store/_ACL.yaml": ACL, **LONG}
    publish_change(repo, first, "first version of the small store")
    publish_change(repo, {"store/tags/t/main.conf": "tagged = true\nretention.days = 30\n"}, "tag t keeps 30 days")
    publish_change(repo, {"store/data/b/main.conf": "size = 2\nowner = payments\n"}, "b is owned by payments")
    bad = publish_change(repo, {"store/data/main.conf": "tier = bronze\n"}, "cheaper tier for all data")
    rollback(repo.root, bad, reason="bronze tier is too slow for the dashboards")
    tokens_file = base / "tokens.json"
    tokens = {who: add_token(tokens_file, f"User:{who}")[1] for who in ("alice", "guest", "admin")}
    log_path = base / "serve.log"
    environ = {k: v for k, v in os.environ.items() if k != "CFGTOOL_DEBUG"}
    environ["CFGTOOL_CACHE_DIR"] = str(base / "cache")
    command = [*cfgtool_command(), "serve", "--repo", str(repo.root), "--port", "0", "--tokens", str(tokens_file),
               "--cache-time", "0", "--fetch-interval", "0.2"]  # fmt: skip
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environ, cwd=base)
    server = Server(proc, log_path)
    try:
        server.wait_port()
        server.wait_ready()
        yield Console(server, tokens)
    finally:
        server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with playwright_api.sync_playwright() as p:
        launched = p.chromium.launch(executable_path=str(CHROMIUM))
        yield launched
        launched.close()


class Problems(list[str]):
    """Console errors, uncaught exceptions and failed requests of one page."""


@pytest.fixture
def page(browser: Browser) -> Iterator[tuple[Page, Problems]]:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    opened = context.new_page()
    problems = Problems()
    opened.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    opened.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    opened.on("requestfailed", lambda r: failed(problems, r.url, r.failure))
    opened.on("response", lambda r: problems.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
    yield opened, problems
    context.close()


def failed(problems: Problems, url: str, failure: str | None) -> None:
    """A failed request is a problem, except one a navigation cancelled (the live timeline's waiting request)."""
    if failure != "net::ERR_ABORTED":
        problems.append(f"request failed: {url} {failure}")


def sign_in(page: Page, console: Console, who: str = "alice", target: str = "/ui/") -> None:
    page.goto(console.url + target)
    page.wait_for_url(re.compile(r"/ui/login"))
    page.get_by_label("Token").fill(console.tokens[who])
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()


def shot(page: Page, name: str, **options: Any) -> None:
    """Write docs/images/NAME.png when CFGTOOL_SCREENSHOTS=1 (normal runs leave the committed images alone)."""
    if os.environ.get("CFGTOOL_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), **options)


def test_sign_in_and_out(console: Console, page: tuple[Page, Problems]) -> None:
    tab, problems = page
    tab.goto(console.url + "/ui/small/")
    tab.wait_for_url(re.compile(r"/ui/login\?next="))
    shot(tab, "sign-in")
    tab.get_by_label("Token").fill("cfgtool_0000000000000000_wrong")
    tab.get_by_role("button", name="Sign in").click()
    assert "unknown or revoked token" in tab.get_by_role("alert").inner_text()
    problems.clear()  # the refused sign-in answers 401 on purpose
    tab.get_by_label("Token").fill(console.tokens["alice"])
    tab.get_by_role("button", name="Sign in").click()
    tab.wait_for_url(console.url + "/ui/small/")
    assert "User:alice" in tab.locator("header").inner_text()
    tab.get_by_role("button", name="Sign out").click()
    tab.wait_for_url(re.compile(r"/ui/login"))
    tab.goto(console.url + "/ui/small/")
    tab.wait_for_url(re.compile(r"/ui/login"))  # the session ended with the sign-out
    assert problems == []


def test_timeline_marks_the_rollback_and_follows_it_to_the_diff(console: Console, page: tuple[Page, Problems]) -> None:
    tab, problems = page
    sign_in(tab, console, target="/ui/small/")
    timeline = tab.locator("ol.timeline")
    assert timeline.locator("li.event").count() == 5  # four publishes and one rollback
    rollback_event = timeline.locator("li.event.rollback")
    assert "bronze tier is too slow" in rollback_event.inner_text()
    rolled = timeline.locator("li.rolled-back")
    assert rolled.count() == 1 and "Version 4" in rolled.inner_text()
    assert (
        "current" in timeline.locator("li.current").inner_text()
        and "Version 3" in timeline.locator("li.current").inner_text()
    )
    shot(tab, "timeline", full_page=True)
    rolled.get_by_role("link", name=re.compile("diff|what changed")).click()
    tab.wait_for_url(console.url + "/ui/small/diff/3..4")
    cause = tab.locator("article.cause").first
    assert "tier" in cause.inner_text() and '"gold"' in cause.locator("del").inner_text()
    assert '"bronze"' in cause.locator("ins").inner_text()
    assert re.search(r"2\s+keys", cause.inner_text())  # /data/a and /data/b, through /data: the change's reach
    shot(tab, "diff", full_page=True)
    assert problems == []


def test_a_diff_not_computed_ahead_shows_itself_once_computed(
    console: Console, page: tuple[Page, Problems], browser: Browser
) -> None:
    """1..4 and 2..4 are no pairs the timeline leads to: their first view may be the "being computed" page, which
    turns into the diff by itself, with scripts (htmx) and without (a meta refresh)."""
    tab, problems = page
    sign_in(tab, console, target="/ui/small/diff/1..4")
    tab.locator("article.cause").first.wait_for(timeout=60_000)
    assert tab.title() == "small: diff 1..4 · cfgtool console"
    assert "tier" in tab.locator("main").inner_text()
    assert problems == []
    context = browser.new_context(java_script_enabled=False)
    try:
        plain = context.new_page()
        sign_in(plain, console, target="/ui/small/diff/2..4")
        if "being computed" in plain.title():  # most often: two compiles take longer than the page waits
            assert "is being computed" in plain.get_by_role("status").inner_text()
            shot(plain, "diff-pending")
        plain.locator("article.cause").first.wait_for(timeout=60_000)
        assert plain.title() == "small: diff 2..4 · cfgtool console"
    finally:
        context.close()


def test_open_a_key_and_expand_a_values_explain(console: Console, page: tuple[Page, Problems]) -> None:
    tab, problems = page
    sign_in(tab, console, target="/ui/small/v/3/tree/data")
    tab.get_by_role("link", name="a", exact=True).click()
    tab.wait_for_url(console.url + "/ui/small/v/3/tree/data/a")
    tab.get_by_role("link", name="/data/a").click()
    tab.wait_for_url(console.url + "/ui/small/v/3/key/data/a")
    leaf = tab.locator("details.leaf", has=tab.locator("summary", has_text="days = 30"))
    leaf.locator("summary").first.click()
    explained = leaf.locator(".explained")
    explained.get_by_text("/tags/t").first.wait_for()  # htmx swapped in the explain: the tag that set it
    assert "main.conf" in explained.inner_text()
    assert explained.locator("tr.winner").inner_text().startswith("/tags/t")  # the layer whose value won
    graph = tab.get_by_role("group", name="two steps each way")  # its links reach a screen reader
    assert graph.get_by_role("link", name="/tags/t").count() == 1
    shot(tab, "key", full_page=True)
    assert problems == []


def test_search_and_switch_versions(console: Console, page: tuple[Page, Problems]) -> None:
    tab, problems = page
    sign_in(tab, console, target="/ui/small/v/3/search")
    tab.get_by_role("searchbox").fill("payments")
    tab.get_by_role("searchbox").press("Enter")
    tab.wait_for_url(re.compile(r"/ui/small/v/3/search\?q=payments"))
    tab.locator("main a", has_text="/data/b").wait_for()  # at once, or once the version is indexed (htmx swaps it in)
    shot(tab, "search")
    tab.get_by_label("Version").select_option("2")
    tab.get_by_role("button", name="Go").click()
    tab.wait_for_url(re.compile(r"/ui/small/v/2/search\?q=payments"))  # the same search, in version 2
    assert tab.get_by_label("Version").input_value() == "2"
    assert problems == []


def test_the_slash_key_opens_the_search_from_any_page(console: Console, page: tuple[Page, Problems]) -> None:
    tab, problems = page
    sign_in(tab, console, target="/ui/small/v/3/tree/data")
    tab.keyboard.press("/")
    tab.wait_for_url(console.url + "/ui/small/v/3/search#q")
    assert tab.evaluate("document.activeElement.id") == "q"
    tab.keyboard.type("payments")
    tab.keyboard.press("Enter")
    tab.wait_for_url(re.compile(r"/ui/small/v/3/search\?q=payments"))
    assert problems == []


def test_access_page_names_the_deciding_rule(console: Console, page: tuple[Page, Problems]) -> None:
    tab, problems = page
    sign_in(tab, console, who="admin", target="/ui/small/v/3/access/data/b")
    tab.get_by_label("Principal").fill("guest")
    tab.get_by_role("button", name="Check").click()
    tab.wait_for_url(re.compile(r"principal=guest"))
    rows = tab.locator("table.access-table tbody tr")
    read = rows.filter(has=tab.get_by_role("rowheader", name="read"))
    assert "denied" in read.inner_text() and "deny User:guest all /data/b (literal)" in read.inner_text()
    shot(tab, "access")
    assert problems == []


def test_narrow_screen_and_keyboard(console: Console, browser: Browser) -> None:
    """At 360 px nothing is wider than the screen (a key's import graph scrolls within its figure); Tab reaches
    the skip link first, and it moves focus to main."""
    context = browser.new_context(viewport={"width": 360, "height": 740}, color_scheme="dark")
    tab = context.new_page()
    try:
        sign_in(tab, console, target="/ui/small/v/3/key/data/a")
        width = tab.evaluate("document.documentElement.scrollWidth")
        assert width <= 360, f"the key page is {width} px wide on a 360 px screen"
        tab.goto(console.url + "/ui/small/")
        width = tab.evaluate("document.documentElement.scrollWidth")
        assert width <= 360, f"the timeline is {width} px wide on a 360 px screen"
        shot(tab, "timeline-narrow-dark", full_page=True)
        tab.keyboard.press("Tab")
        assert tab.evaluate("document.activeElement.textContent").strip() == "Skip to content"
    finally:
        context.close()


AXE_PAGES = [  # every kind of console page, each with what it shows at its fullest (signed in as admin)
    "/ui/",
    "/ui/small/",
    "/ui/small/v/3/tree/",
    "/ui/small/v/3/tree/data",
    "/ui/small/v/3/tree/services",
    "/ui/small/v/3/key/data/a",
    "/ui/small/v/3/key/tags/t",
    "/ui/small/v/3/explain/data/a?path=retention.days",
    "/ui/small/history/data/a?path=tier",
    "/ui/small/history/data/a",
    "/ui/small/v/3/search?q=payments",
    "/ui/small/v/3/compare?a=/data/a&b=/data/b",
    "/ui/small/diff/3..4",
    "/ui/small/consumers",
    "/ui/small/v/3/access/data/b",
    "/ui/small/v/3/access/data/b?principal=guest",
    "/ui/small/v/9/tree/",  # an error page
]


def serious_violations(tab: Page) -> list[str]:
    """axe-core's serious and critical violations on the page, as `rule: selector` lines."""
    tab.add_script_tag(path=str(AXE))
    found = tab.evaluate("axe.run(document, {resultTypes: ['violations']}).then(r => r.violations)")
    return [
        f"{v['id']} ({v['impact']}): {', '.join(str(n['target']) for n in v['nodes'][:5])}"
        for v in found
        if v["impact"] in ("serious", "critical")
    ]


@pytest.mark.skipif(not AXE.exists(), reason=f"no axe-core at {AXE} (.ci/run installs it with npm; or CFGTOOL_AXE)")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_page_is_clean_of_serious_accessibility_violations(
    console: Console, browser: Browser, scheme: str
) -> None:
    """axe-core (WCAG 2 A and AA, and its best practices) finds no serious or critical violation on any kind of
    page, in the light scheme and the dark one: an explain opened on the key page, the sign-in page included."""
    import httpx

    instance = {"authorization": f"Bearer {console.tokens['guest']}", "cfgtool-instance": "web-1"}
    assert httpx.get(f"{console.url}/v1/small/versions/3/keys/data/a", headers=instance).status_code == 200
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme, bypass_csp=True)
    tab = context.new_page()
    try:
        tab.goto(console.url + "/ui/login")
        found = {"/ui/login": serious_violations(tab)}
        sign_in(tab, console, who="admin", target="/ui/")
        for url in AXE_PAGES:
            tab.goto(console.url + url)
            if "/diff/" in url:
                tab.locator("article.cause").first.wait_for(timeout=60_000)
            if "/key/" in url:
                tab.locator("details.leaf summary").first.click()
                tab.locator(".explained table").first.wait_for()
            found[url] = serious_violations(tab)
    finally:
        context.close()
    assert {url: v for url, v in found.items() if v} == {}


BROKEN_WORDS = """selector => {
  const broken = [];
  for (const element of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const word of node.data.matchAll(/[^\\s\\/-]+[\\/-]?/g)) {
        const range = document.createRange();
        range.setStart(node, word.index);
        range.setEnd(node, word.index + word[0].length);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        if (lines.size > 1) broken.push(word[0]);
      }
    }
  }
  return broken;
}"""


@pytest.mark.parametrize("width", [1280, 360])
def test_headers_and_layer_names_never_break_inside_a_word(console: Console, browser: Browser, width: int) -> None:
    """The consumers table's headers and an explain's layer names wrap between words or after a path's `/` (or
    their table scrolls), never inside a word; nothing is wider than the screen."""
    import httpx

    admin = {"authorization": f"Bearer {console.tokens['admin']}"}
    with httpx.Client(base_url=console.url, headers=admin) as http:
        for n in range(3):
            instance = {"cfgtool-instance": f"checkout-payments-gateway-{n}.eu-west-1.internal:4242"}
            assert http.get(f"/v1/small/versions/3/keys{LONG_KEY}", headers=instance).status_code == 200
            check = {"version": 3, "ok": False, "message": "check command exited 1: " + "refused " * 20}
            report = http.post(
                f"/v1/small/consumers/{instance['cfgtool-instance']}", json={"applied": 3, "last_check": check}
            )
            assert report.status_code < 300, report.text
    context = browser.new_context(viewport={"width": width, "height": 900})
    tab = context.new_page()
    try:
        sign_in(tab, console, who="admin", target="/ui/small/consumers")
        assert tab.evaluate(BROKEN_WORDS, "table th") == []
        assert tab.evaluate("document.documentElement.scrollWidth") <= width
        tab.goto(console.url + f"/ui/small/v/3/explain{LONG_KEY}?path=retention.days")
        assert tab.evaluate(BROKEN_WORDS, "table.layers th, table.layers td") == []
        assert tab.evaluate("document.documentElement.scrollWidth") <= width
    finally:
        context.close()
