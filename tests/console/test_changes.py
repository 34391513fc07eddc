"""The console's diff, side-by-side and access pages through Starlette's test client: the diff is `cfgtool diff`'s,
grouped by cause with each cause's reach, and filtered as every page is; access says `acl check`'s verdict and the
deciding rule per operation."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from pathlib import Path

from cfgtool.versions.diff import diff
from cfgtool.versions.diff_render import value_text
from tests.conftest import GitRepo
from tests.console.conftest import MakeClient, Page, SignedIn, settled, sign_in
from tests.serve.conftest import publish_change

TAG_CHANGE = {"store/tags/t/main.conf": "tagged = true\nretention.days = 30\n"}


def causes(page: Page) -> list[str]:
    """The text of each cause section, in order."""
    text = page.text
    return [part.strip() for part in re.split(r"(?=\b\S+ \S+ → )", text.split("By cause", 1)[1].split("By key")[0])]


def test_the_diff_is_cfgtool_diffs_grouped_by_cause_with_its_reach(small_acl: GitRepo, make_client: MakeClient) -> None:
    publish_change(small_acl, {**TAG_CHANGE, "store/data/open/main.conf": 'size = 9\nlabel = "open-data"\n'}, "v2")
    client = make_client(small_acl)
    found = settled(client, "/ui/small/diff/1..2")
    assert found.status_code == 200, found.text
    assert found.headers["content-security-policy"].startswith("default-src 'self'")
    page = Page(found.text)
    expected = diff(small_acl.root, "1", "2")
    assert re.findall(r'<code class="path">([^<]*)</code>', found.text) == [g.path for g in expected.groups]
    assert "3 changed keys (4 values) of 6 in version 2" in page.text  # /tags/t and the two keys importing it
    meters = page.all("meter")
    assert [int(str(m["value"])) for m in meters] == [g.count for g in expected.groups]
    retention = next(g for g in expected.groups if g.path == "retention.days")
    assert retention.count == 2 and retention.via == "/tags/t"
    assert value_text(retention.old) in page.text and value_text(retention.new) in page.text
    assert "/ui/small/v/2/key/tags/t" in page.links  # the layer it came through
    assert {"/ui/small/v/2/key/data/open", "/ui/small/v/2/key/data/secret-project"} <= set(page.links)


def test_the_diff_hides_what_the_principal_may_not_describe_also_from_the_counts(
    small_acl: GitRepo, signed_in: SignedIn
) -> None:
    publish_change(small_acl, {**TAG_CHANGE, "store/data/secret-project/main.conf": "size = 3\n"}, "v2")
    client = signed_in(small_acl, "User:alice")
    page = Page(settled(client, "/ui/small/diff/1..2").text)
    assert "secret-project" not in page.text and "classified" not in page.text
    assert not any("secret-project" in link for link in page.links)
    assert "2 changed keys (2 values) of 5 in version 2" in page.text  # /tags/t and /data/open; 6 nodes, 1 hidden
    assert [int(str(m["value"])) for m in page.all("meter")] == [1, 1]  # via /tags/t it reached 1 key it may see


def test_the_diff_form_and_bad_spans(small_acl: GitRepo, make_client: MakeClient) -> None:
    publish_change(small_acl, TAG_CHANGE, "v2")
    client = make_client(small_acl)
    assert client.get("/ui/small/diff").headers["location"] == "/ui/small/diff/1..2"  # previous..current
    assert client.get("/ui/small/diff?a=v2&b=1").headers["location"] == "/ui/small/diff/2..1"
    for span in ("1..9", "1-2", "x..2", "1..2..3"):
        found = client.get(f"/ui/small/diff/{span}")
        assert found.status_code == 404 and "<h1>" in found.text, span


def test_the_diff_tab_opens_the_last_change(small_acl: GitRepo, make_client: MakeClient) -> None:
    """The Diff tab never opens a version against itself: with one version it says there is nothing to compare
    yet; when the current version has none good before it, it opens what the rollback changed back."""
    from cfgtool.versions import rollback

    client = make_client(small_acl)
    alone = client.get("/ui/small/diff")
    assert alone.status_code == 200 and "Nothing to compare yet" in Page(alone.text).text
    publish_change(small_acl, TAG_CHANGE, "v2")
    rollback(small_acl.root, 2, reason="30 days is too long")
    client = make_client(small_acl)
    assert client.get("/ui/small/diff").headers["location"] == "/ui/small/diff/2..1"  # the rollback's change


def test_two_keys_side_by_side(small_acl: GitRepo, make_client: MakeClient, signed_in: SignedIn) -> None:
    client = make_client(small_acl)
    page = Page(client.get("/ui/small/v/1/compare?a=/data/open&b=data/secret-project").text)
    rows = page.text.split("Path", 1)[1]
    assert "2 values differ" in page.text
    assert re.search(r"label \"open-data\" \"classified-label\"", rows) and re.search(r"size 1 2", rows)
    assert "tier" not in rows  # the same on both sides
    table = re.search(
        r"<table.*</table>", client.get("/ui/small/v/1/compare?a=/data/open&b=/data/secret-project").text, re.S
    )
    assert table and not re.search(
        r"<(del|ins)\b|class=\"(added|removed|changed)\"", table.group(0)
    )  # no side reads as deleted
    form = Page(client.get("/ui/small/v/1/compare").text)
    assert {str(i.get("name")) for i in form.all("input")} >= {"a", "b"}
    client = signed_in(small_acl, "User:alice")
    hidden = client.get("/ui/small/v/1/compare?a=/data/open&b=/data/secret-project")
    assert hidden.status_code == 404 and "classified" not in hidden.text


def test_the_access_page_gives_each_operations_verdict_and_deciding_rule(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    alice, admin = token_of("User:alice"), token_of("User:admin")
    client = make_client(small_acl, tmp_path / "tokens.json")
    sign_in(client, alice)
    own = Page(client.get("/ui/small/v/1/access/data/open").text)
    assert re.search(r"read allowed allow User:alice read / \(prefixed\), store/_ACL.yaml:3", own.text)
    assert re.search(r"alter denied no ACL entry allows User:alice to alter /data/open", own.text)
    assert client.get("/ui/small/v/1/access/data/open?principal=User:admin").status_code == 403  # no describe_acl
    assert client.get("/ui/small/v/1/access/data/secret-project").status_code == 404
    client.post("/ui/logout")
    sign_in(client, admin)
    other = Page(client.get("/ui/small/v/1/access/data/secret-project?principal=alice").text)
    assert re.search(r"read denied deny User:alice all /data/secret-project \(prefixed\)", other.text)
    assert "store/_ACL.yaml:4" in other.text  # the entries that apply to the key, with their lines
    assert client.get("/ui/small/v/1/access/data/open?principal=Robot:x").status_code == 400


def test_a_diff_made_in_a_worker_process_keeps_its_unset_marker() -> None:
    """The console computes diffs in a worker process: an unset side must still be `ABSENT` once unpickled."""
    import pickle

    from cfgtool.versions.diff import ABSENT, ValueChange

    change = pickle.loads(pickle.dumps(ValueChange("a.b", ABSENT, 1, None, None)))
    assert change.old is ABSENT


def test_the_latest_diff_is_computed_when_its_version_loads_before_anyone_asks(
    small_acl: GitRepo, make_client: MakeClient
) -> None:
    from cfgtool.console import changes

    client = make_client(small_acl)
    publish_change(small_acl, TAG_CHANGE, "v2")
    service = client.app.service  # type: ignore[attr-defined]
    service.refresh()  # the loader's round: version 2 loads and its diff to version 1 starts
    state = service.stores["small"]
    ident = (str(state.root), state.path or ".", state.view.versions[1].commit, state.view.versions[2].commit)
    deadline = time.monotonic() + 120
    while changes.DIFFS.get(ident) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    ready = changes.DIFFS.get(ident)
    assert ready is not None  # no request asked for it
    assert client.get("/ui/small/diff").headers["location"] == "/ui/small/diff/1..2"
    page = settled(client, "/ui/small/diff/1..2")  # (version 1 loaded, if not in memory)
    assert page.status_code == 200 and "retention.days" in page.text
    assert changes.DIFFS.get(ident) is ready  # the page read the one computed ahead
