"""ConfigClient over HTTP (cfgtool/client/http.py) against real `cfgtool serve` processes on loopback ports."""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import time
import warnings
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest

from cfgtool import ConfigClient, HttpConfigClient
from cfgtool._util.codec import pack, unpack
from cfgtool.client.feed import ChangeFeed
from cfgtool.client.http import (
    AccessDenied,
    AnswerTooLarge,
    Connection,
    OfflineWarning,
    ServerUnavailable,
    consumers,
    is_server_url,
    report_applied,
)
from cfgtool.client.local import StoreNotFound
from cfgtool.errors import CfgtoolError
from cfgtool.serve.tokens import add_token
from cfgtool.snapshot.model import KeyNotFound
from tests.conftest import GitRepo
from tests.serve.conftest import Server, SharedSmall, StartServer, publish_change

FAST = ("--cache-time", "0", "--fetch-interval", "0.2")


def wait_for_version(server: Server, store: str, version: int, timeout: float = 60.0) -> None:
    """Wait until the server has read the tag of `version` (it re-reads the tags every --fetch-interval)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stores = httpx.get(f"{server.url}/v1/stores", timeout=5).json()
        if any(s["name"] == store and s["current"] == version for s in stores):
            return
        time.sleep(0.1)
    raise AssertionError(f"the server did not serve version {version} in {timeout} s:\n{server.log()}")


def plain(value: object) -> str:
    """A config as JSON text; a secret (a Secret value in the git client) is its text form, [hidden]."""
    return json.dumps(value, default=str, sort_keys=True)


def test_is_server_url_only_for_an_http_url_without_a_path() -> None:
    assert is_server_url("http://host:8750")
    assert is_server_url("https://configs.example.com/")
    assert not is_server_url("https://git.example.com/configs.git")
    assert not is_server_url("http://host:8750/org/configs")
    assert not is_server_url("http://host:8750/?x=1")
    assert not is_server_url("git@github.com:org/configs.git")
    assert not is_server_url("ssh://git.example.com/configs")
    assert not is_server_url("/srv/configs")
    assert not is_server_url(Path("http:"))


def test_config_client_chooses_http_for_a_server_url_and_git_for_a_url_with_a_path(
    shared_small: SharedSmall, tmp_path: Path
) -> None:
    server = shared_small.server(*FAST)
    client = ConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    assert isinstance(client, HttpConfigClient) and isinstance(client, ConfigClient)
    assert client.get_value("/data/a", "size") == 1
    with pytest.raises(StoreNotFound, match="cannot read"):  # the git client tried to clone it
        ConfigClient(f"{server.url}/small.git", store="store", cache_dir=tmp_path / "c")
    git_client = ConfigClient(shared_small.repo.root, store="store", cache_dir=tmp_path / "c")
    assert not isinstance(git_client, HttpConfigClient)


def test_http_client_reads_as_the_git_client(published: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    server = start_server(published.root, *FAST)
    http = ConfigClient(server.url, store="demo", cache_dir=tmp_path / "http")
    git = ConfigClient(published.root, store="store", cache_dir=tmp_path / "git")
    assert (http.version, http.commit) == (git.version, git.commit)
    keys = git.keys()
    assert http.keys() == keys and http.keys("/data") == git.keys("/data")
    assert http.children("/data") == git.children("/data")
    for key in keys:
        assert plain(http.get(key)) == plain(git.get(key)), key
        assert http.imports(key, recursive=True) == git.imports(key, recursive=True)
        assert http.tags(key) == git.tags(key)
        assert http.imported_by(key, recursive=True) == git.imported_by(key, recursive=True)
    key = "/data/tracking/PageViewEvent"
    assert http.imports(key) == git.imports(key)
    assert http.explain(key, "kafka.partitions") == git.explain(key, "kafka.partitions")
    assert http.get_value(key, "kafka.partitions") == git.get_value(key, "kafka.partitions")
    assert http.datasets("/tags/priority/HIGH") == git.datasets("/tags/priority/HIGH")
    phantom = http.lookup("/data/tracking/NoSuchEvent")
    assert (phantom.exists, phantom.node) == (False, "/data/tracking")
    assert plain(phantom.config) == plain(git.get("/data/tracking/NoSuchEvent", nearest=True))
    assert http.exists(key) and not http.exists("/data/tracking/NoSuchEvent")
    typo = "/data/tracking/PageVeiwEvent"
    said = f"{typo} has no node .*did you mean {key}\\?"
    for client in (http, git):  # a misspelled key fails alike over both, naming the close node
        with pytest.raises(KeyNotFound, match=said):
            client.get(typo)
        with pytest.raises(KeyNotFound, match=said):
            client.get_value(typo, "kafka.partitions")
        assert client.get_value(typo, "kafka.partitions", nearest=True) == 8
        with pytest.raises(KeyNotFound, match=re.escape('did you mean kafka.config."retention.ms"?')):
            client.get_value(key, "kafka.config.retention.ms")
    assert http.explain(key, "kafka.config.retention.ms") == git.explain(key, "kafka.config.retention.ms")
    assert git.explain(key, "kafka.config.retention.ms").did_you_mean == 'kafka.config."retention.ms"'


def test_http_client_pins_and_never_mixes_versions_across_a_publish(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    pinned = ConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    assert pinned.get_value("/data/a", "tier") == "gold"
    publish_change(small, {"store/data/main.conf": "tier = silver\n"}, "v2")
    wait_for_version(server, "small", 2)
    # /data/b was never read before the publish: the pinned client still reads it at version 1
    assert (pinned.version, pinned.get_value("/data/b", "tier")) == (1, "gold")
    fresh = ConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    assert fresh.version == 2
    assert (fresh.get_value("/data/a", "tier"), fresh.get_value("/data/b", "tier")) == ("silver", "silver")
    older = ConfigClient(server.url, store="small", version=1, cache_dir=tmp_path / "c")
    assert older.get_value("/data/b", "tier") == "gold"


def test_http_client_revalidates_the_version_list_with_a_304_and_never_rereads_a_version(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    first = HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    first.get("/data/a")
    assert (first.requests, first.not_modified) == (2, 0)
    second = HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    assert (second.requests, second.not_modified) == (1, 1)  # the unchanged version list cost a 304
    assert second.get_value("/data/a", "size") == 1
    assert second.requests == 1  # a versions/1 answer never changes: read from the cache
    publish_change(small, {"store/data/b/main.conf": "size = 3\n"}, "v2")
    wait_for_version(server, "small", 2)
    third = HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    assert (third.version, third.not_modified) == (2, 0)  # a changed list is a 200 with the new version


def test_http_client_damaged_cache_entries_are_misses(shared_small: SharedSmall, tmp_path: Path) -> None:
    server = shared_small.server(*FAST)
    HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c").get("/data/a")
    damaged = 0
    for path in (tmp_path / "c" / "http").rglob("*.msgpack"):
        raw = path.read_bytes()
        if b'"size":1' in raw:  # still JSON and msgpack, but not what the server said
            path.write_bytes(raw.replace(b'"size":1', b'"size":7'))
            damaged += 1
    assert damaged == 1
    again = HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    assert again.get_value("/data/a", "size") == 1
    assert (again.requests, again.not_modified) == (2, 1)  # the list revalidated, the damaged answer refetched


def entry_of(data: bytes) -> dict[str, Any] | None:
    with contextlib.suppress(Exception):
        entry = unpack(data)
        if isinstance(entry, dict) and "body" in entry:
            return entry
    return None


def test_http_client_forged_cache_entries_are_misses(shared_small: SharedSmall, tmp_path: Path) -> None:
    """Whoever can write the cache rewrites a `versions/N` answer, with its checksum right (as a checksummed
    entry holds it, and as a tag made without the user's key): the client asks the server instead."""
    server = shared_small.server(*FAST)
    HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c").get("/data/a")
    (path,) = (p for p in (tmp_path / "c" / "http").rglob("*.msgpack") if b'"size":1' in p.read_bytes())
    raw = path.read_bytes()
    entry = next(e for e in map(entry_of, (raw[32:], raw)) if e is not None)  # the map, after a tag if there is one
    entry["body"] = entry["body"].replace(b'"size":1', b'"size":7')
    entry["sha256"] = hashlib.sha256(entry["body"]).hexdigest()
    forged = pack(entry)
    for planted in (forged, hashlib.sha256(forged).digest() + forged):
        path.write_bytes(planted)
        again = HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
        assert again.get_value("/data/a", "size") == 1
        assert again.requests == 2  # the list, and the forged answer asked for again


def test_http_client_reads_its_cache_under_the_key_it_started_with(
    shared_small: SharedSmall, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client finds the user's cache key once, as it finds its cache directory once, so a read from its cache does
    not look up where the key lives. Each entry is still checked under that key: a client started under another key
    believes none of them."""
    server = shared_small.server(*FAST)
    HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c").get("/data/a")
    client = HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    monkeypatch.setenv("CFGTOOL_CACHE_KEY_FILE", str(tmp_path / "another.key"))
    assert client.get_value("/data/a", "size") == 1
    assert client.requests == 1  # the version list only: the answer came from the cache
    other = HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "c")
    assert other.get_value("/data/a", "size") == 1
    assert (other.requests, other.not_modified) == (2, 0)  # neither the list nor the answer believed


def test_http_client_offline_pins_the_newest_cached_version_and_warns(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    cache = tmp_path / "c"
    server = start_server(small.root, *FAST)
    HttpConfigClient(server.url, store="small", cache_dir=cache).get("/data/a")
    publish_change(small, {"store/data/a/main.conf": "size = 10\n"}, "v2")
    wait_for_version(server, "small", 2)
    assert HttpConfigClient(server.url, store="small", cache_dir=cache).get_value("/data/a", "size") == 10
    server.stop()
    with pytest.warns(OfflineWarning, match="unreachable"):
        offline = HttpConfigClient(server.url, store="small", cache_dir=cache)
    assert (offline.version, offline.offline, offline.get_value("/data/a", "size")) == (2, True, 10)
    with pytest.raises(ServerUnavailable, match="cannot reach"):
        offline.get("/data/b")  # never fetched, and the server is down
    with pytest.raises(CfgtoolError) as refused:
        HttpConfigClient(server.url, store="small", cache_dir=cache, offline="error")
    assert isinstance(refused.value, ServerUnavailable) and "offline='cache'" in (refused.value.hint or "")
    with warnings.catch_warnings(), pytest.raises(ServerUnavailable, match="nothing of store 'small' is cached"):
        warnings.simplefilter("error")
        HttpConfigClient(server.url, store="small", cache_dir=tmp_path / "empty")


def test_http_client_warns_at_the_line_that_made_it_and_says_it_holds_no_snapshot(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    cache = tmp_path / "c"
    server = start_server(small.root, *FAST)
    client = ConfigClient(server.url, store="small", cache_dir=cache)
    assert client.get_value("/data/a", "size") == 1
    with pytest.raises(AttributeError, match="reads through a server: it holds no repository or snapshot"):
        client.snapshot  # noqa: B018 (the attribute read is the test)
    server.stop()
    for make in (ConfigClient, HttpConfigClient):
        with pytest.warns(OfflineWarning) as said:
            make(server.url, store="small", cache_dir=cache)
        assert [w.filename for w in said] == [__file__]  # the program's line, not the library's nor pytest's


def test_http_client_unknown_store_names_the_served_ones(shared_small: SharedSmall, tmp_path: Path) -> None:
    server = shared_small.server(*FAST)
    with pytest.raises(StoreNotFound) as missing:
        ConfigClient(server.url, store="nope", cache_dir=tmp_path / "c")
    assert "small" in (missing.value.hint or "")


def test_http_client_refuses_variables_it_cannot_apply(shared_small: SharedSmall) -> None:
    server = shared_small.server(*FAST)
    with pytest.raises(CfgtoolError, match="defaults"):
        ConfigClient(server.url, store="small", variables={"x": "y"})


# -- what a server can make the client do: real servers on loopback that misbehave on purpose -----------------


VERSIONS = json.dumps([{"version": 1, "status": "current", "commit": "c0ffee"}]).encode()


def raw(handler: BaseHTTPRequestHandler, head: str, body: bytes = b"") -> None:
    handler.wfile.write(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
    handler.wfile.flush()


def test_http_client_refuses_an_answer_over_max_bytes(misbehaving: Any, tmp_path: Path) -> None:
    def declared(handler: BaseHTTPRequestHandler) -> None:  # says 600 MB, sends 64 KB, then holds the connection
        raw(handler, "HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: 629145600\n", b"[" * 65536)
        time.sleep(15)  # longer than the client's timeout (10 s): a client reading the body waits all of that

    def endless(handler: BaseHTTPRequestHandler) -> None:  # no length: the body ends when the server closes
        handler.close_connection = True
        raw(handler, "HTTP/1.0 200 OK\nContent-Type: application/json\n")
        for _ in range(64):
            handler.wfile.write(b" " * 65536)  # 4 MB of JSON white space, then a valid answer
        handler.wfile.write(VERSIONS)

    server = misbehaving(declared)
    started = time.monotonic()
    with pytest.raises(ServerUnavailable, match="629,145,600 bytes, more than max_bytes=67,108,864"):
        HttpConfigClient(server.url, store="demo", cache_dir=tmp_path / "c", offline="error")
    assert time.monotonic() - started < 5  # refused at the headers; reading the body would take the timeout, 10 s

    server = misbehaving(endless)
    with pytest.raises(ServerUnavailable, match="more than max_bytes=1,048,576"):
        HttpConfigClient(server.url, store="demo", cache_dir=tmp_path / "c", offline="error", max_bytes=2**20)
    assert HttpConfigClient(server.url, store="demo", cache_dir=tmp_path / "c", max_bytes=2**23).version == 1
    with pytest.raises(AnswerTooLarge):  # the error's own type, where nothing wraps it
        Connection(server.url, 10, max_bytes=2**20).get("/v1/demo/versions", {})


DEEP = b"[" * 200_000 + b"]" * 200_000  # JSON nested past the parser's recursion


@pytest.mark.parametrize(
    ("length", "body"),
    [
        (None, VERSIONS.replace(b"1", '"\u00b2"'.encode(), 1)),  # "version": "²", which int() takes for 2
        (None, VERSIONS.replace(b"1", b'"1.5e3"', 1)),
        (None, DEEP),
        ("\u00b2", VERSIONS),  # a Content-Length that int() takes for 2 (http.client does not: read to the end)
    ],
    ids=["unicode digit", "float text", "deep", "unicode length"],
)
def test_http_client_hostile_answers_are_read_or_refused_never_a_crash(
    misbehaving: Any, tmp_path: Path, length: str | None, body: bytes
) -> None:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length or len(body)}\r\n"
        handler.wfile.write(head.encode("latin-1") + b"\r\n" + body)
        handler.wfile.flush()

    server = misbehaving(answer)
    if body == VERSIONS:
        assert HttpConfigClient(server.url, store="demo", cache_dir=tmp_path / "c", offline="error").version == 1
        return
    with pytest.raises(ServerUnavailable, match=r"is not JSON|is not a version or sequence number"):
        HttpConfigClient(server.url, store="demo", cache_dir=tmp_path / "c", offline="error")


def test_http_client_hostile_reads_are_server_errors_never_crashes(misbehaving: Any, tmp_path: Path) -> None:
    """A key answered with a list for its config, or with no node and no layers, and an explanation with a line
    that is no number: ServerUnavailable, as for any answer no cfgtool server sends."""
    answers = {
        "/v1/demo/versions": VERSIONS,
        "/v1/demo/versions/1/keys/data/x": b'{"key": "/data/x", "exists": true, "config": [1, 2]}',
        "/v1/demo/versions/1/keys/data/y": b'{"key": "/data/y", "exists": false, "config": {}}',
        "/v1/demo/versions/1/imports/data/y?recursive=1": b'{"imports": []}',
        "/v1/demo/versions/1/explain/data/x?path=a": b'{"key": "/data/x", "origin": {"file": "f", "line": "x"}}',
    }

    def answer(handler: BaseHTTPRequestHandler) -> None:
        body = answers[handler.path]
        handler.close_connection = True
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        handler.wfile.write(head.encode() + body)

    client = HttpConfigClient(misbehaving(answer).url, store="demo", cache_dir=tmp_path / "c", offline="error")
    with pytest.raises(ServerUnavailable, match="answer for /data/x names no node or no config object"):
        client.lookup("/data/x")
    with pytest.raises(ServerUnavailable, match="answer for /data/y names no node or no config object"):
        client.lookup("/data/y")
    with pytest.raises(ServerUnavailable, match="is not an explanation"):
        client.explain("/data/x", "a")


PAGE = b"<html><body><h1>denied</h1></body></html>"  # what a proxy in front of the server answers


@pytest.mark.parametrize(("status", "error"), [(401, AccessDenied), (403, AccessDenied), (502, ServerUnavailable)])
def test_every_reader_maps_a_proxys_refusal_the_same_way(
    misbehaving: Any, tmp_path: Path, status: int, error: type[CfgtoolError]
) -> None:
    """A refusal whose body is a proxy's HTML page, not the server's JSON, is the error its status says for every
    reader (the client, the change feed, the consumers list, a report), never "not JSON"."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        raw(handler, f"HTTP/1.1 {status} No\nContent-Type: text/html\nContent-Length: {len(PAGE)}\n", PAGE)

    url = misbehaving(answer).url
    feed = ChangeFeed(url, "demo", wait=1)
    reads = [
        lambda: HttpConfigClient(url, store="demo", cache_dir=tmp_path / "c", offline="error"),
        feed.next,
        lambda: consumers(url, "demo"),
        lambda: report_applied(url, "demo", 1),
    ]
    for read in reads:
        with pytest.raises(error, match=rf"HTTP {status}") as raised:
            read()
        assert "not JSON" not in str(raised.value)
        if status == 401:
            assert "token" in str(raised.value.hint)
    feed.close()


@pytest.mark.parametrize("where", ["headers", "body", "body without length"])
def test_http_client_timeout_is_a_total_deadline(misbehaving: Any, tmp_path: Path, where: str) -> None:
    def trickle(handler: BaseHTTPRequestHandler) -> None:  # one byte every 0.5 s for 20 s, each well within timeout
        if where == "headers":
            raw(handler, "HTTP/1.1 200 OK\nContent-Type: application/json")  # the headers never end
        elif where == "body":
            raw(handler, "HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: 100\n")
        else:  # the body ends when the server closes
            handler.close_connection = True
            raw(handler, "HTTP/1.0 200 OK\nContent-Type: application/json\n")
        for _ in range(40):  # bytes keep arriving steadily past the deadline
            handler.wfile.write(b"x" if where == "headers" else b" ")
            handler.wfile.flush()
            time.sleep(0.5)

    server = misbehaving(trickle)
    started = time.monotonic()
    with pytest.raises(ServerUnavailable, match="no complete answer within timeout=2 s"):
        HttpConfigClient(server.url, store="demo", cache_dir=tmp_path / "c", offline="error", timeout=2)
    assert time.monotonic() - started < 10  # the 2 s deadline, plus a loaded machine; before: the whole trickle, 20 s


def test_http_client_follows_redirects_only_to_the_same_origin(misbehaving: Any, tmp_path: Path) -> None:
    def elsewhere_answer(handler: BaseHTTPRequestHandler) -> None:
        raw(handler, f"HTTP/1.1 200 OK\nContent-Length: {len(VERSIONS)}\n", VERSIONS)

    elsewhere = misbehaving(elsewhere_answer)

    def moved(handler: BaseHTTPRequestHandler) -> None:
        if handler.path.startswith("/moved/v1/demo/versions/1/keys/"):
            body = json.dumps({"store": "demo", "key": "/data/a", "exists": True, "config": {"size": 1}}).encode()
        elif handler.path == "/moved/v1/demo/versions":
            body = VERSIONS
        elif handler.path.startswith("/v1/other/"):  # another origin: localhost is not 127.0.0.1
            return raw(handler, f"HTTP/1.1 302 Found\nLocation: http://localhost:{elsewhere.port}/v1/other/versions\n"
                       "Content-Length: 0\n")  # fmt: skip
        else:
            return raw(handler, f"HTTP/1.1 307 Temporary Redirect\nLocation: /moved{handler.path}\nContent-Length: 0\n")
        raw(handler, f"HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: {len(body)}\n", body)

    server = misbehaving(moved)
    client = HttpConfigClient(server.url, store="demo", cache_dir=tmp_path / "c", token="cfgtool_secret")
    assert client.version == 1 and client.get_value("/data/a", "size") == 1
    assert [p for p, _ in server.paths] == [
        "/v1/demo/versions", "/moved/v1/demo/versions", "/v1/demo/versions/1/keys/data/a",
        "/moved/v1/demo/versions/1/keys/data/a",
    ]  # fmt: skip
    with pytest.raises(ServerUnavailable, match="redirects to another server"):
        HttpConfigClient(server.url, store="other", cache_dir=tmp_path / "c", token="cfgtool_secret", offline="error")
    assert elsewhere.paths == []  # the token never left for another origin


def test_http_client_cache_is_kept_per_principal(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    acl = """\
acls:
  - {principal: "User:*", operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:intern, operation: read, key: /data/b, permission: deny}
"""
    publish_change(small, {"store/_ACL.yaml": acl, "store/data/c/main.conf": "size = 3\n"}, "an ACL")
    tokens = tmp_path / "tokens.json"
    alice, intern = add_token(tokens, "alice")[1], add_token(tokens, "intern")[1]
    server = start_server(small.root, "--tokens", str(tokens), *FAST)
    cache = tmp_path / "shared-cache"
    assert HttpConfigClient(server.url, store="small", cache_dir=cache, token=alice).get_value("/data/b", "size") == 2
    other = HttpConfigClient(server.url, store="small", cache_dir=cache, token=intern)
    assert other.get_value("/data/a", "size") == 1
    with pytest.raises(AccessDenied):  # before: alice's cached answer served the intern
        other.get("/data/b")
    again = HttpConfigClient(server.url, store="small", cache_dir=cache, token=alice)
    assert again.get_value("/data/b", "size") == 2  # her own cache: the list revalidated (304), the key cached
    assert (again.requests, again.not_modified) == (1, 1)
    assert not any(alice in p.read_bytes().decode("latin-1") for p in cache.rglob("*") if p.is_file())
