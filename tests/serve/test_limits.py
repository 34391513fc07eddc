"""The transport limits of a real server under attack (docs/serving.md): oversized heads, slow and excess
connections, long polls per principal, X-Forwarded-For, long keys, hostile version numbers, internal errors
and the access log."""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import socket
import subprocess
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest

from cfgtool import HttpConfigClient
from cfgtool.serve.app import Api
from cfgtool.serve.options import Options
from cfgtool.serve.routes import starlette_app
from cfgtool.serve.service import Service
from cfgtool.store.keys import KeyTooLongError
from tests.conftest import GitRepo
from tests.serve.conftest import Server, StartServer, cfgtool_command, publish_change
from tests.serve.test_access import _token


def _connect(server: Server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def _answer(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    """Read one answer up to the connection's close: its status and JSON body."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), json.loads(body)


def _rss(server: Server) -> int:
    """The server's resident memory in bytes."""
    for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_head_past_16_kb_is_431_and_memory_stays_bounded(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root)
    with _connect(server) as sock:  # within the limit: answered
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-pad: " + b"a" * 16000 + b"\r\nconnection: close\r\n\r\n")
        status, _ = _answer(sock)
        assert status == 200
    before = _rss(server)
    sending = [_connect(server) for _ in range(4)]
    for sock in sending:  # four connections each send up to 20 MB of short headers, until answered
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
    chunk = b"x-pad: " + b"a" * 57 + b"\r\n"
    chunk *= 65536 // len(chunk)
    answered: list[socket.socket] = []
    for _ in range(320):
        readable = select.select(sending, [], [], 0)[0]
        answered += readable
        sending = [sock for sock in sending if sock not in readable]
        for sock in sending:
            sock.sendall(chunk)
    assert not sending, "an oversized head was never answered"
    for sock in answered:
        status, body = _answer(sock)
        sock.close()
        assert status == 431 and body["error"] == "headers_too_large"
    assert _rss(server) - before < 50 * 2**20


def test_a_request_that_is_not_http_is_a_json_400_and_one_json_access_line(
    small: GitRepo, start_server: StartServer
) -> None:
    server = start_server(small.root)
    for garbage in (b"\x16\x03\x01 hello\r\n\r\n", b"GET / HTTP/1.1\r\nbad header\r\n\r\n"):
        with _connect(server) as sock:
            sock.sendall(garbage)
            status, body = _answer(sock)
        assert status == 400 and body["error"] == "bad_request", body
    deadline = time.monotonic() + 10
    while server.log().count('"status":400') < 2:  # the access log is written within half a second
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.1)
    assert "Invalid HTTP request" not in server.log()
    for line in server.log().splitlines()[1:]:  # after the line naming the port: JSON lines only
        assert isinstance(json.loads(line)["status"], int), line


def test_a_request_that_does_not_arrive_within_10_s_is_closed(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root)
    started = time.monotonic()  # before the server can start counting: a loaded machine only adds to what is measured
    silent, half = _connect(server), _connect(server)
    half.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
    status, body = _answer(half)
    assert status == 408 and body["error"] == "request_timeout"
    assert 10 <= time.monotonic() - started < 20  # 10 s and the sweep's second; not a shorter bound, nor none
    assert _answer(silent)[0] == 408  # a connection that never sends is closed too
    for sock in (silent, half):
        sock.close()
    assert httpx.get(f"{server.url}/healthz").status_code == 200


def _answered(server: Server, source: str = "127.0.0.1") -> socket.socket:
    """A keep-alive connection from `source` that has had one answer (`/healthz`, 200)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30, source_address=(source, 0))
    sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
        data += sock.recv(65536)
    assert data.startswith(b"HTTP/1.1 200"), data
    return sock


def _length(data: bytes) -> int:
    head = data.partition(b"\r\n\r\n")[0].lower()
    return int(head.split(b"content-length:")[1].split(b"\r\n")[0]) if b"content-length:" in head else 0


def test_connections_past_the_cap_are_refused_with_429(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, "--max-connections", "20")
    held = [_answered(server) for _ in range(20)]  # answered: none of them is reclaimed for a newcomer
    with _connect(server) as extra:
        status, body = _answer(extra)
    assert status == 429 and body["error"] == "too_many_connections"
    for sock in held:
        sock.close()
    deadline = time.monotonic() + 30  # the server frees the closed connections as its loop gets to them
    while (status := httpx.get(f"{server.url}/healthz").status_code) == 429 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert status == 200


def _silent(server: Server, source: str) -> socket.socket:
    """A connection from `source` that sends nothing (it holds a slot until the 10 s request timeout)."""
    return socket.create_connection(("127.0.0.1", server.port), timeout=30, source_address=(source, 0))


def test_one_address_holds_at_most_its_share_of_connections(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, "--max-client-connections", "5")
    held = [_silent(server, "127.0.0.2") for _ in range(5)]
    with _silent(server, "127.0.0.2") as extra:
        status, body = _answer(extra)
    assert status == 429 and body["error"] == "too_many_connections"
    assert "127.0.0.2 holds 5 connections: at most 5 per client address" in body["message"]
    assert httpx.get(f"{server.url}/healthz", timeout=10).status_code == 200  # another address: served
    # a refused connection lingers (its answer is read, not reset) but is an open file too: past 5 lingering
    # refusals of one address, the next is dropped without an answer
    refused = [_silent(server, "127.0.0.2") for _ in range(5)]
    for sock in refused:
        sock.settimeout(5)
        assert sock.recv(65536).startswith(b"HTTP/1.1 429")
    with _silent(server, "127.0.0.2") as dropped, contextlib.suppress(ConnectionResetError):
        assert dropped.recv(65536) == b""
    for sock in [*held, *refused]:
        sock.close()


def test_connections_held_unused_make_room_for_a_newcomer(small: GitRepo, start_server: StartServer) -> None:
    # every slot held by connections that never sent a request: a probe and a client still get in, each in the
    # place of the oldest of them, while the clients that were answered keep theirs
    server = start_server(small.root, "--max-connections", "20")
    answered = [_answered(server, "127.0.0.3") for _ in range(2)]
    held = [_silent(server, f"127.0.0.{2 + n % 2 * 2}") for n in range(18)]  # from two addresses
    time.sleep(0.5)
    newcomers = [_answered(server) for _ in range(2)]  # kept open: each takes a slot for good
    with httpx.Client(base_url=server.url, timeout=10) as client:  # and a third, reading a key
        assert client.get("/v1/small/current/keys/data/a").status_code == 200
        time.sleep(0.5)
        closed = [sock for sock in select.select(held, [], [], 0)[0] if not sock.recv(1)]
    assert sorted(held.index(sock) for sock in closed) == [0, 1, 2]  # the oldest
    for sock in [*answered, *newcomers]:  # still open: they answer again
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        assert _answer(sock)[0] == 200
    for sock in held:
        sock.close()


def test_at_most_100_long_polls_wait_per_principal(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, "--cache-time", "0")
    request = b"GET /v1/small/changes?since=1&wait=30 HTTP/1.1\r\nhost: x\r\n\r\n"
    polls = [_connect(server) for _ in range(100)]
    for sock in polls:
        sock.sendall(request)
    deadline = time.monotonic() + 30
    while 'cfgtool_long_polls_waiting{store="small"} 100.0' not in httpx.get(f"{server.url}/metrics").text:
        assert time.monotonic() < deadline, "the 100 long polls never all waited"
        time.sleep(0.1)
    refused = httpx.get(f"{server.url}/v1/small/changes", params={"since": 1, "wait": 30})
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_long_polls"
    assert httpx.get(f"{server.url}/v1/small/changes", params={"since": 0, "wait": 30}).status_code == 200  # no wait
    for sock in polls:
        sock.close()
    deadline = time.monotonic() + 30
    while 'cfgtool_long_polls_waiting{store="small"} 0.0' not in httpx.get(f"{server.url}/metrics").text:
        assert time.monotonic() < deadline, "closed long polls were never released"
        time.sleep(0.1)
    assert httpx.get(f"{server.url}/v1/small/changes", params={"since": 1, "wait": 0.1}).status_code == 200


def test_with_tokens_the_long_polls_are_counted_per_principal(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    alice, bob = _token(tokens, "alice"), _token(tokens, "bob")  # both from 127.0.0.1
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")
    request = f"GET /v1/small/changes?since=1&wait=30 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {alice}\r\n\r\n"
    polls = [_connect(server) for _ in range(100)]
    for sock in polls:
        sock.sendall(request.encode())
    metrics = {"authorization": f"Bearer {alice}"}
    deadline = time.monotonic() + 30
    while (
        'cfgtool_long_polls_waiting{store="small"} 100.0'
        not in httpx.get(f"{server.url}/metrics", headers=metrics).text
    ):
        assert time.monotonic() < deadline, "the 100 long polls never all waited"
        time.sleep(0.1)
    params = {"since": 1, "wait": 0.1}
    refused = httpx.get(f"{server.url}/v1/small/changes", params=params, headers={"authorization": f"Bearer {alice}"})
    assert refused.status_code == 429 and refused.json()["error"] == "too_many_long_polls"
    other = httpx.get(f"{server.url}/v1/small/changes", params=params, headers={"authorization": f"Bearer {bob}"})
    assert other.status_code == 200, other.text  # the same address, another principal: its own 100
    for sock in polls:
        sock.close()


HOST_ACL = """\
acls:
  - {principal: User:alice, operation: read, key: /data/, pattern: prefixed, permission: allow, host: 10.1.2.3}
"""


def test_x_forwarded_for_counts_only_from_the_allowed_proxies(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": HOST_ACL, "store/data/c/main.conf": "size = 3\n"}, "an ACL by host")
    tokens = tmp_path / "tokens.json"
    alice = _token(tokens, "alice")
    headers = {"authorization": f"Bearer {alice}", "x-forwarded-for": "10.1.2.3"}
    plain = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")
    assert httpx.get(f"{plain.url}/v1/small/current/keys/data/a", headers=headers).status_code == 404
    proxied = start_server(small.root, "--tokens", str(tokens), "--forwarded-allow-ips", "127.0.0.1")
    assert httpx.get(f"{proxied.url}/v1/small/current/keys/data/a", headers=headers).status_code == 200


DENY_HOST_ACL = """\
acls:
  - {principal: User:alice, operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:alice, operation: read, key: /data/a, permission: deny, host: 127.0.0.1}
"""


def test_an_x_forwarded_for_without_an_address_leaves_the_peer(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": DENY_HOST_ACL}, "a deny by host")
    tokens = tmp_path / "tokens.json"
    alice = _token(tokens, "alice")
    for proxies in ("127.0.0.1", "*"):
        server = start_server(small.root, "--tokens", str(tokens), "--forwarded-allow-ips", proxies)
        url = f"{server.url}/v1/small/current/keys/data/a"
        nearest = ("10.1.2.3, garbage",) if proxies != "*" else ()  # `*` trusts every hop: the first one counts
        for forwarded in ("garbage", "", ",", "10.1.2.3:x", "[::1", *nearest):
            headers = {"authorization": f"Bearer {alice}", "x-forwarded-for": forwarded}
            refused = httpx.get(url, headers=headers)  # the peer, 127.0.0.1, is denied: never "no host"
            assert refused.status_code == 403, (proxies, forwarded, refused.text)
        headers = {"authorization": f"Bearer {alice}", "x-forwarded-for": "10.1.2.3"}
        assert httpx.get(url, headers=headers).status_code == 200


def test_forwarded_allow_ips_must_be_addresses(small: GitRepo, tmp_path: Path) -> None:
    proc = subprocess.run(
        [*cfgtool_command(), "serve", "--repo", str(small.root), "--forwarded-allow-ips", "proxy.example.com"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2 and "'proxy.example.com' is not an IP address" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_keys_past_1024_characters_are_414(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    server = start_server(small.root)
    longest = "data/b/" + "/".join(["k"] * 508) + "x"  # "/" and 1,023 characters: 1,024
    assert len("/" + longest) == 1024
    with httpx.Client(base_url=server.url, timeout=30) as http:
        found = http.get(f"/v1/small/versions/1/keys/{longest}")
        assert found.status_code == 200 and found.json()["config"]["size"] == 2
        for path in ("versions/1/keys", "current/keys", "versions/1/tags"):
            refused = http.get(f"/v1/small/{path}/{longest}y")
            assert refused.status_code == 414 and refused.json()["error"] == "key_too_long"
    client = HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    assert client.get_value(longest, "size", nearest=True) == 2  # a key without a node: /data/b's, on purpose
    with pytest.raises(KeyTooLongError, match="more than 1,024"):  # refused before asking, as the server would
        client.get(longest + "y")


def test_hostile_version_numbers_are_404_never_500(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root)
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for version in ("%C2%B2", "5" * 5000, "1234567890", "-1", "+1", "1_0", "%EF%BC%91", "000000001", "0"):
            for query in ("keys", "tags", "imports"):
                got = http.get(f"/v1/small/versions/{version}/{query}/data/a")
                assert got.status_code == 404, (version, query, got.text[:200])
                assert got.json()["error"] == "not_found"
        assert http.get("/v1/small/versions/1/keys/data/a").status_code == 200  # one URL per version
    assert "Traceback" not in server.log() and "internal error" not in server.log()


def test_an_unexpected_exception_is_one_log_line_and_a_500_with_its_id(
    small: GitRepo, tmp_path: Path, caplog: Any
) -> None:
    service = Service(Options(str(small.root), cache=tmp_path / "cache"))
    service.refresh()
    api = Api(service, starlette_app)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    async def ask(path: str) -> None:  # a scope without its query string: a bug's stand-in
        scope = {"type": "http", "method": "GET", "path": path, "headers": [], "client": ("127.0.0.1", 1)}
        await api(scope, receive, send)

    for path in ("/v1/small/current/keys/data/a", "/v1/small/versions/1/tags/data/a"):
        sent.clear()
        caplog.clear()
        asyncio.run(ask(path))
        assert sent[0]["status"] == 500
        body = json.loads(sent[1]["body"])
        assert body["error"] == "E_INTERNAL" and len(body["id"]) == 16
        lines = [r.getMessage() for r in caplog.records]
        assert len(lines) == 1 and body["id"] in lines[0] and "\n" not in lines[0]


def test_the_access_log_is_one_json_line_per_request_without_secrets(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    alice = _token(tokens, "alice")
    log = tmp_path / "access.jsonl"
    server = start_server(small.root, "--tokens", str(tokens), "--access-log", str(log), "--cache-time", "0")
    headers = {"authorization": f"Bearer {alice}", "cfgtool-instance": "job-7"}
    with httpx.Client(base_url=server.url, headers=headers) as http:
        current = http.get("/v1/small/current/keys/data/a")
        assert current.status_code == 200
        assert http.get("/v1/small/versions/1/tags/data/a").status_code == 200
        assert http.get("/v1/small/versions/1/keys/data/nothing/here/").status_code == 200
        assert http.get("/v1/small/versions", headers={"authorization": "Bearer wrong"}).status_code == 401
    deadline = time.monotonic() + 10
    while '"status":401' not in log.read_text():  # written within half a second
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    fields = ["time", "principal", "method", "path", "store", "key", "version", "status", "bytes", "duration",
              "instance"]  # fmt: skip
    assert all(list(line) == fields for line in lines)
    key, tags, phantom, refused = lines[-4:]
    assert key["principal"] == "User:alice" and key["method"] == "GET" and key["store"] == "small"
    assert key["key"] == "/data/a" and key["version"] == 1 and key["status"] == 200
    assert key["bytes"] == len(current.content) and key["instance"] == "job-7" and key["duration"] >= 0
    assert key["time"].endswith("Z") and key["path"] == "/v1/small/current/keys/data/a"
    assert tags["version"] == 1 and tags["key"] == "/data/a" and tags["instance"] == "job-7"
    assert phantom["key"] == "/data/nothing/here" and phantom["status"] == 200
    assert refused["status"] == 401 and refused["principal"] is None and refused["store"] == "small"
    text = log.read_text()
    assert alice not in text and "Bearer" not in text and "wrong" not in text
    assert "platform" not in text and "gold" not in text  # config values
    assert "/v1/small/versions" not in server.log()  # with --access-log, nothing of it on stderr
