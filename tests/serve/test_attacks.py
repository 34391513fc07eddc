"""An attacker's requests against a real `cfgtool serve` on loopback: what one client can make the server hold or
reveal (docs/serving.md "Consumers", docs/security.md)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import httpx

from cfgtool.serve.consumers import MAX_PER_PRINCIPAL
from tests.conftest import GitRepo
from tests.serve.conftest import Server, StartServer, publish_change
from tests.serve.test_access import _token
from tests.serve.test_http_client import FAST

ACL = """\
super_users: [User:admin]
acls:
  - {principal: User:alice, operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:bob, operation: read, key: /data/, pattern: prefixed, permission: allow}
"""


def pipelined(server: Server, requests: list[bytes], batch: int = 50) -> int:
    """Send `requests` on one connection, `batch` at a time without waiting between them (HTTP/1.1 pipelining,
    as a flood would; a batch stays under the server's 16 KB limit on what a head may buffer); how many were
    answered 200. Each answer here is small and has a body, so counting status lines counts answers."""
    answered = 0
    with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
        for start in range(0, len(requests), batch):
            sent = requests[start : start + batch]
            sock.sendall(b"".join(sent))
            data = bytearray()
            while data.count(b"HTTP/1.1 ") < len(sent) or not data.endswith(b"}"):
                chunk = sock.recv(1 << 20)
                assert chunk, "the server closed the connection"
                data += chunk
            answered += data.count(b"HTTP/1.1 200 ")
    return answered


def test_one_principal_inventing_instance_ids_holds_a_bounded_share_of_the_consumers(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    """Any reader may name itself as it likes: a flood of made-up `Cfgtool-Instance` ids from one token keeps at
    most MAX_PER_PRINCIPAL of them (its oldest go), so it can neither fill the registry (every listing would
    carry its inventions, built on the event loop) nor push out another principal's instances."""
    publish_change(small, {"store/_ACL.yaml": ACL}, "acl")
    tokens = tmp_path / "tokens.json"
    alice, bob, admin = (_token(tokens, p) for p in ("User:alice", "User:bob", "User:admin"))
    server = start_server(small.root, *FAST, "--tokens", str(tokens))
    read = f"{server.url}/v1/small/current/keys/data/a"
    assert httpx.get(read, headers={"authorization": f"Bearer {bob}", "cfgtool-instance": "web-1"}).status_code == 200
    flood = MAX_PER_PRINCIPAL + 300
    requests = [
        b"GET /v1/small/current/keys/data/a HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
        b"Cfgtool-Instance: made-up-%d\r\n\r\n" % (alice.encode(), n)
        for n in range(flood)
    ]
    assert pipelined(server, requests) == flood
    found = httpx.get(f"{server.url}/v1/small/consumers", headers={"authorization": f"Bearer {admin}"}, timeout=30)
    instances = found.json()["instances"]
    made_up = [i["id"] for i in instances if i["principal"] == "User:alice"]
    assert len(made_up) == MAX_PER_PRINCIPAL
    assert made_up[0] == f"made-up-{flood - 1}" and f"made-up-{flood - MAX_PER_PRINCIPAL}" in made_up  # newest kept
    assert [i["id"] for i in instances if i["principal"] == "User:bob"] == ["web-1"]


def test_a_page_of_another_site_cannot_read_a_loopback_server_through_dns_rebinding(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    """Without tokens everyone on the machine may read everything, and a browser is on the machine: a page of
    attacker.example that points its own name at 127.0.0.1 reads the server with `Host: attacker.example`. Such
    requests are refused (the JSON API and the console alike); local names and addresses still answer."""
    server = start_server(small.root, *FAST)
    read = f"{server.url}/v1/small/current/keys/data/a"
    for host in ("attacker.example", f"attacker.example:{server.port}", "127.0.0.1.nip.io", "Attacker.Example."):
        refused = httpx.get(read, headers={"host": host}, timeout=10)
        assert refused.status_code == 421 and refused.json()["error"] == "misdirected_request", host
        assert "size" not in refused.text
        assert httpx.get(f"{server.url}/ui/small/v/1/key/data/a", headers={"host": host}).status_code == 421
    for host in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", "[::1]:8750", "cfgtool", "app.localhost"):
        assert httpx.get(read, headers={"host": host}, timeout=10).status_code == 200, host
    tokens = tmp_path / "tokens.json"
    reader = _token(tokens, "User:alice")
    guarded = start_server(small.root, *FAST, "--tokens", str(tokens))  # a token is needed: any name may be used
    answer = httpx.get(
        f"{guarded.url}/v1/small/current/keys/data/a",
        headers={"host": "configs.example.com", "authorization": f"Bearer {reader}"},
        timeout=10,
    )
    assert answer.status_code == 200


def _rss(pid: int) -> int:
    """The resident memory of process `pid`, in bytes."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) * 1024


def test_made_up_names_under_a_large_config_hold_bounded_memory(small: GitRepo, start_server: StartServer) -> None:
    """A key without a node answers with its nearest node's whole config, and any name may be asked for: 200
    made-up names under a 1 MB config must not keep 200 MB of answers (4,096 would keep 4 GB)."""
    big = "".join(f'v{i} = "{"x" * 1000}"\n' for i in range(1000))
    publish_change(small, {"store/data/big/main.conf": big}, "a large config")
    server = start_server(small.root, *FAST)
    with httpx.Client(base_url=server.url, timeout=60) as http:

        def read(name: str) -> None:
            found = http.get(f"/v1/small/versions/2/keys/data/big/{name}")
            assert found.status_code == 200 and len(found.content) > 1_000_000

        for n in range(5):
            read(f"warm-{n}")
        before = _rss(server.pid)
        for n in range(200):
            read(f"made-up-{n}")
        grown = _rss(server.pid) - before
    assert grown < 100 * 1024 * 1024, f"the server grew by {grown // 2**20} MB"


def test_forged_sign_outs_are_not_recorded(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    """Signing out records the session's nonce so that a copied cookie dies too; the record is bounded per token
    (the soonest to expire is forgotten first). Anyone may post `/ui/logout`: were forged cookies recorded, enough
    of them, expiring last, would push the real sign-outs out and revive their copied cookies (and each one is a
    write of the record)."""
    tokens = tmp_path / "tokens.json"
    alice = _token(tokens, "User:alice")
    server = start_server(small.root, *FAST, "--tokens", str(tokens))
    with httpx.Client(base_url=server.url, follow_redirects=False, timeout=30) as browser:
        assert browser.post("/ui/login", data={"token": alice, "next": "/ui/"}).status_code == 303
        cookie = browser.cookies["cfgtool_session"]
        assert browser.post("/ui/logout").status_code == 303
    copied = {"cfgtool_session": cookie}
    assert httpx.get(f"{server.url}/ui/small/", cookies=copied).status_code == 303  # to the sign-in: ended
    ident = cookie.split(".")[0]
    with httpx.Client(base_url=server.url, timeout=30) as anyone:
        for n in range(30):
            anyone.cookies.set("cfgtool_session", f"{ident}.9999999999.forged{n}.c2lnbmF0dXJl")
            assert anyone.post("/ui/logout").status_code == 303
    [record] = tmp_path.glob("serve-cache-*/**/console/ended.json")
    recorded = json.loads(record.read_text())["tokens"]  # token id -> {nonce: when its session would expire}
    assert {token: list(nonces) for token, nonces in recorded.items()} == {ident: [cookie.split(".")[2]]}
    assert httpx.get(f"{server.url}/ui/small/", cookies=copied).status_code == 303


def test_a_long_made_up_name_cannot_blow_up_a_config_that_repeats_it(small: GitRepo, start_server: StartServer) -> None:
    """A config that doubles `${cfgtool.name}` a few times is small for its own node, but a key without a node
    under it is resolved for its own name: a 1,000-character name made this one 12 MB (and a 14-fold doubling
    500 MB, a gigabyte in the server for one request). Such a key is refused; ordinary names still resolve."""
    doubled = [f"a{i} = ${{a{i - 1}}}${{a{i - 1}}}" for i in range(1, 11)]
    copies = [f"b{j} = ${{a10}}" for j in range(10)]
    config = "\n".join(["a0 = ${cfgtool.name}", *doubled, *copies]) + "\n"
    publish_change(small, {"store/data/b/main.conf": config}, "a config that repeats the name")
    server = start_server(small.root, *FAST)
    with httpx.Client(base_url=server.url, timeout=120) as http:
        ordinary = http.get("/v1/small/versions/2/keys/data/b/web")
        assert ordinary.status_code == 200 and ordinary.json()["config"]["a1"] == "webweb"
        refused = http.get("/v1/small/versions/2/keys/data/b/" + "n" * 1000)
        assert refused.status_code == 409 and refused.json()["error"] == "unresolved", refused.text[:200]
        assert "would hold more than" in refused.json()["message"]
        assert http.get("/v1/small/versions/2/keys/data/b/web").status_code == 200  # the resolver still answers


def test_made_up_applied_versions_make_no_metric_series(small: GitRepo, start_server: StartServer) -> None:
    """An agent's report names the version it applied; any client may send any number. `cfgtool_consumers` counts
    only versions the store has: one series per made-up number would blow up the metric's cardinality."""
    server = start_server(small.root, *FAST)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        assert http.post("/v1/small/consumers/real-1", json={"applied": 1}).status_code == 200
        for n in range(40):
            assert http.post(f"/v1/small/consumers/fake-{n}", json={"applied": 1000 + n}).status_code == 200
        assert len(http.get("/v1/small/consumers").json()["instances"]) == 41  # the listing keeps what they said
        series = [line for line in http.get("/metrics").text.splitlines() if line.startswith("cfgtool_consumers{")]
    assert series == ['cfgtool_consumers{store="small",version="1"} 1.0']
