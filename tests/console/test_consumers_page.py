"""The console's consumers page on a real `cfgtool serve` process: it lists the first rows of what
`GET /v1/{store}/consumers` answers, and counts the rest (it converts only the rows it shows: the listing of
every instance is the JSON API's work, not the page's)."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.conftest import GitRepo
from tests.console.conftest import MakeClient, sign_in
from tests.serve.conftest import Server, StartServer

INSTANCES = 1_200  # more than the page lists
SHOWN = 500  # the rows the page lists

NOTE = """
import asyncio, sys
port, first, count = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
async def run(part, parts):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for n in range(first + part, count, parts):
        writer.write(("GET /v1/small/versions/1/keys/data/a HTTP/1.1\\r\\nHost: x\\r\\n"
                      f"Cfgtool-Instance: i-{n}\\r\\nUser-Agent: cfgtool/1 (agent)\\r\\n\\r\\n").encode())
        head = await reader.readuntil(b"\\r\\n\\r\\n")
        assert head.split()[1] == b"200", head
        length = [line for line in head.split(b"\\r\\n") if line.lower().startswith(b"content-length:")][0]
        await reader.readexactly(int(length.split(b":")[1]))
    writer.close()
async def main():
    await asyncio.gather(*(run(part, 8) for part in range(8)))
asyncio.run(main())
"""


def _note(server: Server, first: int, count: int) -> None:
    """Instances `i-{first}` to `i-{count - 1}` each read a key (8 connections, one request after another)."""
    subprocess.run([sys.executable, "-c", NOTE, str(server.port), str(first), str(count)], check=True, timeout=300)


def test_the_consumers_page_lists_the_first_rows_of_the_api_s_listing_and_counts_the_rest(
    small: GitRepo, start_server: StartServer
) -> None:
    """The page shows the first 500 instances of the JSON API's listing, in its order, and how many there are."""
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url, timeout=60) as http:
        _note(server, 0, INSTANCES)
        page = http.get("/ui/small/consumers")
        listing = http.get("/v1/small/consumers").json()
    assert len(listing["instances"]) == INSTANCES and listing["by_version"] == {"1": INSTANCES}
    shown = re.findall(r'<th scope="row"><code>([^<]*)</code>', page.text)
    assert shown == [i["id"] for i in listing["instances"][:SHOWN]]
    assert f"{INSTANCES:,} instances" in page.text and "the first 500 listed" in page.text


def test_the_consumers_page_shows_a_reports_text_only_to_who_may_read_its_keys(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    """A check's output quotes the config it checked: alice may not read /data/secret-project, so she sees that
    the check failed, not what it said, nor the key; the admin sees both."""
    admin, alice = token_of("User:admin"), token_of("User:alice")
    client = make_client(small_acl, tmp_path / "tokens.json")
    report = {"applied": 1, "last_check": {"version": 1, "ok": False, "message": 'label = "classified-label"',
                                           "keys": ["/data/open", "/data/secret-project"]}}  # fmt: skip
    sent = client.post("/v1/small/consumers/agent-1", json=report, headers={"authorization": f"Bearer {admin}"})
    assert sent.status_code == 200, sent.text
    sign_in(client, alice)
    page = client.get("/ui/small/consumers")
    assert page.status_code == 200 and "agent-1" in page.text and "failed (version 1)" in page.text
    assert "classified" not in page.text and "secret-project" not in page.text
    assert "output withheld" in page.text
    sign_in(client, admin)
    assert "classified-label" in client.get("/ui/small/consumers").text


def test_a_flood_of_one_principal_leaves_every_other_principals_instances_on_the_page(
    small_acl: GitRepo, make_client: MakeClient, token_of: Callable[[str], str], tmp_path: Path
) -> None:
    """600 made-up instances of one token, reported after the real ones, would fill the 500 rows listed: the
    page lists each client's instances in rounds, and counts the flood's rest."""
    admin, flood = token_of("User:admin"), token_of("User:alice")
    client = make_client(small_acl, tmp_path / "tokens.json")
    for name, token in (("web-1", admin), ("web-2", admin)):
        assert (
            client.get(
                "/v1/small/current/keys/data/open",
                headers={"authorization": f"Bearer {token}", "cfgtool-instance": name},
            ).status_code
            == 200
        )
    for n in range(600):
        sent = client.post(f"/v1/small/consumers/fake-{n}", json={"applied": 1},
                           headers={"authorization": f"Bearer {flood}"})  # fmt: skip
        assert sent.status_code == 200, sent.text
    sign_in(client, admin)
    page = client.get("/ui/small/consumers")
    shown = re.findall(r'<th scope="row"><code>([^<]*)</code>', page.text)
    assert len(shown) == SHOWN and {"web-1", "web-2"} <= set(shown)
    assert "102 more instances not listed: 102 of User:alice" in page.text
