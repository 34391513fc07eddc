"""The console on a real `cfgtool serve` process: mounted under /ui/ beside the JSON API, the timeline's live
updates, woken by the change feed when a version is published, and sessions that outlive a restart."""

from __future__ import annotations

import stat
import threading
import time
from pathlib import Path

import httpx

from cfgtool.serve.tokens import add_token, revoke_token
from tests.conftest import GitRepo
from tests.console.conftest import Page
from tests.serve.conftest import SharedSmall, StartServer, publish_change


def test_cfgtool_serve_mounts_the_console_and_its_timeline_follows_the_change_feed(
    small: GitRepo,
    start_server: StartServer,
) -> None:
    server = start_server(small.root, "--cache-time", "0", "--fetch-interval", "0.2")
    page = httpx.get(f"{server.url}/ui/small/")
    assert page.status_code == 200 and page.headers["content-security-policy"].startswith("default-src 'self'")
    section = Page(page.text).all("section")[0]
    assert section["hx-get"] == "/ui/small/live?since=1" and "load" in str(section["hx-trigger"])
    assert httpx.get(f"{server.url}/ui/static/htmx.min.js").status_code == 200
    found: dict[str, object] = {}

    def wait() -> None:
        started = time.monotonic()
        found["answer"] = httpx.get(f"{server.url}/ui/small/live?since=1", headers={"hx-request": "true"}, timeout=60)
        found["took"] = time.monotonic() - started

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(1.0)
    assert "answer" not in found  # held until the feed has an event after 1
    publish_change(small, {"store/data/a/main.conf": "size = 10\n"}, "bigger a")
    waiter.join(60)
    answer = found["answer"]
    assert isinstance(answer, httpx.Response) and answer.status_code == 200
    assert float(str(found["took"])) < 20  # woken by the publish, not by the wait's end (25 s)
    live = Page(answer.text)
    assert live.all("section")[0]["hx-get"] == "/ui/small/live?since=2" and "bigger a" in live.text


def test_a_session_survives_a_server_restart_and_ends_when_its_token_is_revoked_or_signed_out(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "User:alice")[1]
    cache = tmp_path / "serve-cache"
    args = ("--tokens", str(tokens), "--cache-time", "0", "--fetch-interval", "0.2")
    first = start_server(small.root, *args, cache=cache)
    signed = httpx.post(f"{first.url}/ui/login", data={"token": token, "next": "/ui/small/"})
    assert signed.status_code == 303
    cookie = {"cfgtool_session": signed.cookies["cfgtool_session"]}
    assert token not in signed.headers["set-cookie"] and token.split("_")[2] not in signed.headers["set-cookie"]
    assert httpx.get(f"{first.url}/ui/small/", cookies=cookie).status_code == 200
    first.stop()

    second = start_server(small.root, *args, cache=cache)  # the same cache: the same session key
    page = httpx.get(f"{second.url}/ui/small/", cookies=cookie)
    assert page.status_code == 200 and "User:alice" in page.text
    assert stat.S_IMODE((cache / "console" / "session.key").stat().st_mode) == 0o600
    forged = {"cfgtool_session": cookie["cfgtool_session"][:-2] + "AA"}
    assert httpx.get(f"{second.url}/ui/small/", cookies=forged).status_code == 303

    other = httpx.post(f"{second.url}/ui/login", data={"token": token, "next": "/ui/small/"})
    copied = {"cfgtool_session": other.cookies["cfgtool_session"]}
    assert httpx.post(f"{second.url}/ui/logout", cookies=copied).status_code == 303
    second.stop()
    third = start_server(small.root, *args, cache=cache)
    assert httpx.get(f"{third.url}/ui/small/", cookies=copied).status_code == 303  # signed out stays signed out
    assert httpx.get(f"{third.url}/ui/small/", cookies=cookie).status_code == 200

    revoke_token(tokens, token.split("_")[1])
    deadline = time.monotonic() + 30
    while httpx.get(f"{third.url}/ui/small/", cookies=cookie).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.2)  # the loader reads the tokens file every round
    assert httpx.get(f"{third.url}/ui/small/", cookies=cookie).status_code == 303


def test_the_cookie_is_secure_only_when_an_allowed_proxy_says_https(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    """`X-Forwarded-Proto` counts only from a proxy that `--forwarded-allow-ips` names (as `X-Forwarded-For`):
    a client connecting directly cannot choose the cookie's flags. The proxy here is 127.0.0.2 (loopback too)."""
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "User:alice")[1]
    server = start_server(small.root, "--tokens", str(tokens), "--forwarded-allow-ips", "127.0.0.2")
    https = {"x-forwarded-proto": "https"}
    direct = httpx.post(f"{server.url}/ui/login", data={"token": token}, headers=https)
    assert direct.status_code == 303 and "secure" not in direct.headers["set-cookie"].lower()
    proxy = httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"))
    with proxy:
        forwarded = proxy.post(f"{server.url}/ui/login", data={"token": token}, headers=https)
        assert forwarded.status_code == 303 and "Secure" in forwarded.headers["set-cookie"]
        plain = proxy.post(f"{server.url}/ui/login", data={"token": token})
        assert plain.status_code == 303 and "secure" not in plain.headers["set-cookie"].lower()


def test_errors_answered_before_the_console_runs_are_its_pages_under_ui_and_json_elsewhere(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    """A request line over 16 KB (431, answered by the connection) and a form sent to a page (405, by the router)
    are the console's error pages under /ui/, its header naming who is signed in; the API's answers stay JSON."""
    tokens = tmp_path / "tokens.json"
    token = add_token(tokens, "User:alice")[1]
    server = start_server(small.root, "--tokens", str(tokens))
    cookie = {"cfgtool_session": httpx.post(f"{server.url}/ui/login", data={"token": token}).cookies["cfgtool_session"]}
    long = "a" * (17 * 1024)

    too_long = httpx.get(f"{server.url}/ui/small/v/1/search?q={long}", cookies=cookie)
    assert (too_long.status_code, too_long.headers["content-type"]) == (431, "text/html; charset=utf-8")
    assert "<h1>431: this address is too long</h1>" in too_long.text and "Open the page from" in too_long.text
    assert too_long.headers["content-security-policy"].startswith("default-src 'self'")
    api = httpx.get(f"{server.url}/v1/small/current/keys/{long}")
    assert (api.status_code, api.headers["content-type"]) == (431, "application/json")
    assert (
        api.content
        == b'{"error":"headers_too_large","message":"the request line and headers exceed 16384 bytes together"}'
    )

    posted = httpx.post(f"{server.url}/ui/small/", cookies=cookie, data={"x": "1"})
    assert (posted.status_code, posted.headers["content-type"]) == (405, "text/html; charset=utf-8")
    assert (
        set(posted.headers["allow"].split(", ")) == {"GET", "HEAD"}
        and "<h1>405: this page cannot be sent a form</h1>" in posted.text
    )
    assert "signed in as User:alice" in Page(posted.text).text
    api = httpx.post(f"{server.url}/v1/stores", content=b"{}")
    assert (api.status_code, api.headers["content-type"]) == (405, "application/json")
    assert set(api.headers["allow"].split(", ")) == {"GET", "HEAD"}
    assert api.json() == {
        "error": "method_not_allowed",
        "message": "POST is not answered here: the API is read-only (GET and HEAD), but for an instance's report"
        " (POST /v1/{store}/consumers/{instance})",
    }


def test_the_access_page_says_what_a_principal_looks_like_instead_of_answering_for_one_that_cannot_exist(
    shared_small: SharedSmall,
) -> None:
    """A principal the ACL could never name (a space in it) is judged by the ACL file's own pattern: the form
    again with the mistake and an example (400), and no rights shown."""
    server = shared_small.server()
    url = f"{server.url}/ui/small/v/1/access/data/a"
    good = httpx.get(url, params={"principal": "alice"})
    assert good.status_code == 200 and {"access-table"} <= {t.get("class") for t in Page(good.text).all("table")}
    for bad in ("bad principal", "Group:*", "User:", "Robot:x"):
        found = httpx.get(url, params={"principal": bad})
        page = Page(found.text)
        assert (found.status_code, found.headers["content-type"]) == (400, "text/html; charset=utf-8"), bad
        assert "a principal is User:NAME, Group:NAME or User:*" in page.text and "for example User:alice" in page.text
        assert "access-table" not in {t.get("class") for t in page.all("table")} and "Rights of" not in page.text
        field = next(i for i in page.all("input") if i.get("name") == "principal")
        assert field["value"] == bad and field["aria-invalid"] == "true"
    assert (
        "'bad principal' cannot be a principal" in Page(httpx.get(url, params={"principal": "bad principal"}).text).text
    )


def test_every_redirect_of_the_console_carries_its_security_headers(shared_small: SharedSmall) -> None:
    """docs/console.md: every answer carries the Content-Security-Policy, the redirects of its forms and short
    addresses too (the diff form's had none)."""
    server = shared_small.server()
    for url in ("/ui", "/ui/small", "/ui/small/diff?a=1&b=1", "/ui/small/switch?v=1&page=tree/",
                "/ui/small/v/current/tree/", "/ui/small/v/1"):  # fmt: skip
        found = httpx.get(f"{server.url}{url}")
        assert found.status_code in (303, 308), url
        assert found.headers["content-security-policy"].startswith("default-src 'self'"), url
        assert found.headers["x-content-type-options"] == "nosniff", url


def test_a_host_of_another_site_is_refused_with_the_consoles_page_under_ui_and_json_elsewhere(
    shared_small: SharedSmall,
) -> None:
    """A server without tokens answers only its machine's own names (421 otherwise, answered before any route): a
    person who opened the console by another name gets the console's page saying how to open it."""
    server = shared_small.server()
    other = {"host": f"laptop.example:{server.port}"}
    page = httpx.get(f"{server.url}/ui/small/v/1/key/data/a", headers=other)
    assert (page.status_code, page.headers["content-type"]) == (421, "text/html; charset=utf-8")
    assert "<h1>421: this server answers its own machine only</h1>" in page.text and "size" not in page.text
    assert "Open it as http://127.0.0.1 or http://localhost" in Page(page.text).text
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    api = httpx.get(f"{server.url}/v1/small/current/keys/data/a", headers=other)
    assert (api.status_code, api.headers["content-type"]) == (421, "application/json")
    assert api.json() == {
        "error": "misdirected_request",
        "message": "this server answers its own machine's clients only: address it as 127.0.0.1 or localhost",
    }
