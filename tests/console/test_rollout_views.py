"""Staged rollouts in the console (docs/console.md): the timeline shows a rolling version's state, percent, steps,
gates and cohort, and follows its cohort live; the consumers page marks which instances read the candidate."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from cfgtool.versions.rollout import admitted
from cfgtool.versions.rollout_tags import current, record
from tests.conftest import GitRepo
from tests.console.conftest import MakeClient, Page
from tests.serve.conftest import SMALL, StartServer, publish_change

PLAN = "name: small\nrollout:\n  steps: [5, 25, 100]\n  gates:\n    - consumers: {max_failed: 0}\n"
HOSTS = [f"web-{i}" for i in range(120)]
PASSED = {"gate": "consumers", "result": "pass", "detail": "0 of 3 instances failed --check on version 2"}


class Rolling:
    """Version 1 stable, version 2 rolling out at 25% (a step tag with the consumers gate's evidence); every host
    read the version it is given, and one host of the cohort reported a failed check on version 2."""

    def __init__(self, repo: GitRepo, connect: Callable[[GitRepo], httpx.Client]) -> None:
        publish_change(repo, {**SMALL, "store/_CONFIG_STORE": PLAN}, "v1: the first version goes to everyone")
        publish_change(repo, {"store/data/main.conf": "tier = bronze\n"}, "v2: a cheaper tier")
        known, chosen = current(repo.root)
        assert chosen.candidate is not None and chosen.candidate.version == 2
        self.salt = chosen.candidate.salt
        assert record(repo.root, known, chosen, chosen.candidate, "step", 25, by="controller", evidence=[PASSED])
        self.client = connect(repo)  # a test client of the application, or a client of a real server
        self.cohort = [h for h in HOSTS if admitted("small", 2, self.salt, h, 25)]
        self.others = [h for h in HOSTS if h not in self.cohort]
        assert self.cohort and self.others
        for host in HOSTS:
            self.read(host)
        report = {"applied": 2, "last_check": {"version": 2, "ok": False, "message": "bad", "keys": ["/data/a"]}}
        assert self.client.post(f"/v1/small/consumers/{self.cohort[0]}:7", json=report).status_code == 200

    def read(self, host: str) -> None:
        """`host` reads the current version: the server answers version 2 in the cohort, else version 1."""
        found = self.client.get("/v1/small/current/keys/data/a", headers={"cfgtool-instance": f"{host}:7"})
        assert found.status_code == 200, found.text


@pytest.fixture
def rolling(tmp_path: Path, make_client: MakeClient) -> Rolling:
    return Rolling(GitRepo(tmp_path / "small"), make_client)


def _entry(page: str, n: int) -> str:
    """The text of version N's publish on the timeline."""
    found = re.search(rf'<li class="[^"]*" id="v{n}">(.*?)</li>\n(?=<li class="event|</ol>)', page, re.S)
    assert found is not None, page
    return Page(found.group(1)).text


def test_the_timeline_shows_a_rolling_versions_state_percent_steps_gates_and_cohort(rolling: Rolling) -> None:
    page = rolling.client.get("/ui/small/")
    assert page.status_code == 200
    two = _entry(page.text, 2)
    assert "Staged rollout: rolling out at 25% of instances" in two
    assert "✓ 5% (reached) ▸ 25% (now) 100% (to come)" in two  # in text, not colour alone
    assert "next step (100%) at" in two.lower()
    assert f"consumers pass {PASSED['detail']}" in two
    cohort = len(rolling.cohort)
    assert f"Its cohort on this server: {cohort} instances, {cohort} read or applied version 2, 1 failed" in two
    assert "step to 25% by controller" in two
    parsed = Page(page.text)
    assert {"aria-current": "step"} in [{k: v for k, v in a.items() if k == "aria-current"} for a in parsed.all("li")]
    one = _entry(page.text, 1)
    assert "stable" in one and "readers without an instance id" in one and "Staged rollout" not in one


def test_the_timeline_follows_the_cohort_live(rolling: Rolling) -> None:
    """The live request carries what the page shows of the rollout: a new instance in the cohort is news."""
    page = rolling.client.get("/ui/small/")
    live = Page(page.text).all("section")[0]["hx-get"]
    assert live is not None and "rollout=2.rolling.25." in live
    newcomer = next(h for h in (f"db-{i}" for i in range(1000)) if admitted("small", 2, rolling.salt, h, 25))
    rolling.cohort.append(newcomer)
    rolling.read(newcomer)
    again = rolling.client.get(live, headers={"hx-request": "true"})
    assert again.status_code == 200
    cohort = len(rolling.cohort)
    assert f"Its cohort on this server: {cohort} instances" in Page(again.text).text


def test_the_consumers_page_marks_and_filters_the_candidates_readers(rolling: Rolling) -> None:
    def rows(url: str) -> dict[str, str]:
        page = rolling.client.get(url)
        assert page.status_code == 200
        found = re.findall(r'<th scope="row"><code>([^<]*)</code></th>(.*?)</tr>', page.text, re.S)
        return {ident.split(":")[0]: Page(rest).text for ident, rest in found}

    every = rows("/ui/small/consumers")
    assert set(every) == set(HOSTS)
    assert all(re.search(r" 2 (applied )?cohort reads version 2 ", every[h]) for h in rolling.cohort), every
    assert all(re.search(r" 1 reads the stable version 1 ", every[h]) for h in rolling.others), every
    assert set(rows("/ui/small/consumers?reads=candidate")) == set(rolling.cohort)
    assert set(rows("/ui/small/consumers?reads=stable")) == set(rolling.others)
    text = Page(rolling.client.get("/ui/small/consumers").text).text
    assert f"{len(rolling.cohort)} instances here are in its cohort" in text


@pytest.mark.xdist_group("browser")
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_rollout_markup_is_clean_of_serious_accessibility_violations(
    tmp_path: Path, start_server: StartServer, scheme: str
) -> None:
    """axe-core finds no serious or critical violation on the timeline and the consumers page of a real server while
    a version rolls out, in either scheme (as the console's other pages, tests/console/test_browser.py)."""
    browsing = pytest.importorskip("tests.console.test_browser", reason="playwright is not installed (the dev extra)")
    if not browsing.CHROMIUM.exists() or not browsing.AXE.exists():
        pytest.skip(f"needs a headless Chromium at {browsing.CHROMIUM} and axe-core at {browsing.AXE}")
    url = ""

    def connect(repo: GitRepo) -> httpx.Client:
        nonlocal url
        url = start_server(repo.root, "--cache-time", "0").url
        return httpx.Client(base_url=url, timeout=60)

    rolling = Rolling(GitRepo(tmp_path / "small"), connect)
    found = {}
    with browsing.playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(browsing.CHROMIUM))
        context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme, bypass_csp=True)
        tab = context.new_page()
        for page in ("/ui/small/", "/ui/small/consumers"):
            tab.goto(url + page)
            assert tab.locator("section.rollout, form.reads").count() == 1
            found[page] = browsing.serious_violations(tab)
        browser.close()
    rolling.client.close()
    assert {page: v for page, v in found.items() if v} == {}
