"""The server's mirror of a real git HTTP server (git's "dumb" HTTP protocol, behind Basic authentication): the
URL's credentials reach git but no file of the cache; a remote that stops answering is a fetch failure that
`/healthz` reports, and it delays no token's revocation."""

from __future__ import annotations

import base64
import functools
import hashlib
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from cfgtool import ConfigClient
from cfgtool.client.local import StoreNotFound
from cfgtool.store.urls import fetch_env, split_credentials
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, cli_command, publish_change

TOKEN = "s3cr3t-T0ken-4711"


class GitHttp:
    """A bare repository served read-only over HTTP on loopback; every request needs `alice:TOKEN`."""

    def __init__(self, repo: GitRepo, web: Path) -> None:
        self.repo, self.bare = repo, web / "cfg.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(repo.root), str(self.bare)], check=True)
        self.update()
        self.authorized: list[str] = []
        self.refused = 0
        self.stalled, self.released = threading.Event(), threading.Event()  # answer nothing until released
        outer = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                if outer.stalled.is_set():
                    outer.released.wait(300)
                expected = "Basic " + base64.b64encode(f"alice:{TOKEN}".encode()).decode()
                if self.headers.get("Authorization") != expected:
                    outer.refused += 1
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="cfg"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                outer.authorized.append(self.path)
                super().do_GET()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(web)))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        host = f"127.0.0.1:{self.server.server_address[1]}"
        self.url = f"http://alice:{TOKEN}@{host}/cfg.git"
        self.clean = f"http://{host}/cfg.git"

    def update(self) -> None:
        """Bring the served repository up to the work repository's branch and tags."""
        self.repo.git("push", "-q", str(self.bare), "HEAD:refs/heads/main", "refs/tags/*:refs/tags/*")
        subprocess.run(["git", "--git-dir", str(self.bare), "update-server-info"], check=True)


ACL = """\
super_users: [User:admin]
acls:
  - {principal: User:alice, operation: read, key: /data/, pattern: prefixed, permission: allow}
"""


@pytest.fixture
def git_http(small: GitRepo, tmp_path: Path) -> Iterator[GitHttp]:
    served = GitHttp(small, tmp_path / "web")
    yield served
    served.released.set()
    served.server.shutdown()


def _files_holding_the_secret(cache: Path) -> list[str]:
    return [
        str(path.relative_to(cache))
        for path in sorted(cache.rglob("*"))
        if path.is_file() and (TOKEN.encode() in path.read_bytes() or b"alice:" in path.read_bytes())
    ]


def _mirror_url(mirror: Path) -> str:
    out = subprocess.run(["git", "--git-dir", str(mirror), "config", "remote.origin.url"], capture_output=True)
    return out.stdout.decode().strip()


def test_a_mirrored_url_s_credentials_reach_git_but_no_file_of_the_cache(
    git_http: GitHttp, small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    server = start_server(git_http.url, "--fetch-interval", "0.2", "--cache-time", "0", cache=cache)
    assert httpx.get(f"{server.url}/v1/small/current/keys/data/b").json()["config"]["size"] == 2
    assert git_http.refused and git_http.authorized  # the remote asked for the credentials and got them
    publish_change(small, {"store/data/b/main.conf": "size = 3\n"}, "v2")  # a fetch needs them again
    git_http.update()
    deadline = time.monotonic() + 60
    while httpx.get(f"{server.url}/v1/small/current/keys/data/b").json()["config"]["size"] != 3:
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.2)
    [mirror] = (cache / "serve").iterdir()
    assert _mirror_url(mirror) == git_http.clean
    assert _files_holding_the_secret(cache) == []
    assert TOKEN not in server.log()


def test_a_mirror_an_older_version_left_with_the_credentials_in_its_config_is_rewritten_on_start(
    git_http: GitHttp, start_server: StartServer, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    legacy = cache / "serve" / hashlib.sha256(git_http.url.encode()).hexdigest()[:16]  # named by the whole URL
    subprocess.run(["git", "clone", "-q", "--bare", git_http.url, str(legacy)], check=True)
    (legacy.with_name(legacy.name + ".tmp") / "config").parent.mkdir()  # and a clone cut short
    (legacy.with_name(legacy.name + ".tmp") / "config").write_text(f"[remote]\n\turl = {git_http.url}\n")
    assert _files_holding_the_secret(cache)
    server = start_server(git_http.url, "--cache-time", "0", cache=cache)
    assert httpx.get(f"{server.url}/v1/small/current/keys/data/b").json()["config"]["size"] == 2
    assert _files_holding_the_secret(cache) == []
    [mirror] = (cache / "serve").iterdir()
    assert _mirror_url(mirror) == git_http.clean


def test_only_the_urls_host_is_handed_the_credential_and_nothing_but_a_url_reaches_the_config() -> None:
    clean, credential = split_credentials("https://bot:p%40ss@git.example.com:8443/team/cfg.git")
    assert clean == "https://git.example.com:8443/team/cfg.git"
    assert credential == "username=bot\npassword=p@ss\n"
    env = fetch_env(clean, credential)
    assert env["CFGTOOL_GIT_CREDENTIAL"] == credential and env["GIT_TERMINAL_PROMPT"] == "0"
    config = {env[k]: env[k.replace("KEY", "VALUE")] for k in env if k.startswith("GIT_CONFIG_KEY_")}
    assert config["credential.helper"] == ""  # configured helpers (which could store it) are emptied first
    assert "credential.https://git.example.com:8443.helper" in config
    assert "CFGTOOL_GIT_CREDENTIAL" not in fetch_env("https://host/cfg.git", None)
    assert split_credentials("ssh://git:pw@host/cfg.git") == ("ssh://git@host/cfg.git", None)  # a login stays
    assert split_credentials("https://host/cfg.git") == ("https://host/cfg.git", None)
    assert split_credentials("git@host:team/cfg.git") == ("git@host:team/cfg.git", None)


def _cli(*args: str) -> str:
    proc = subprocess.run([*cli_command(), *args], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_a_remote_that_stops_answering_is_a_fetch_failure_and_delays_no_revocation(
    git_http: GitHttp, small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": ACL}, "an ACL")
    git_http.update()
    tokens = tmp_path / "tokens.json"
    alice, admin = (_cli("token", "add", who, "--tokens", str(tokens)) for who in ("alice", "admin"))
    server = start_server(git_http.url, "--tokens", str(tokens), "--fetch-interval", "0.2", "--cache-time", "0")

    def get(path: str, token: str) -> httpx.Response:
        return httpx.get(f"{server.url}{path}", headers={"authorization": f"Bearer {token}"}, timeout=30)

    def until(what: str, check: Callable[[], bool], timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not check():
            assert time.monotonic() < deadline, f"never: {what}\n{server.log()}"
            time.sleep(0.2)

    assert get("/v1/small/current/keys/data/b", alice).status_code == 200
    git_http.stalled.set()  # every request to the remote now hangs
    time.sleep(1)  # a fetch is waiting on it
    _cli("token", "revoke", alice.split("_")[1], "--tokens", str(tokens))
    until("the revocation applies", lambda: get("/v1/small/current/keys/data/b", alice).status_code == 401, 20)
    until("healthz says the fetch fails", lambda: get("/healthz", admin).json()["fetch"]["ok"] is False)
    assert get("/healthz", admin).json()["status"] == "failing"
    assert get("/v1/small/current/keys/data/b", admin).status_code == 200  # the versions it has are served
    git_http.stalled.clear()
    git_http.released.set()
    until("the fetch works again", lambda: get("/healthz", admin).json()["status"] == "ok")


def test_the_git_client_of_a_credentialed_url_keeps_the_credential_out_of_its_cache_and_messages(
    git_http: GitHttp, tmp_path: Path
) -> None:
    cache = tmp_path / "client-cache"
    legacy = cache / "repos" / hashlib.sha256(git_http.url.encode()).hexdigest()[:16]  # an older cfgtool's clone
    subprocess.run(["git", "clone", "-q", "--bare", git_http.url, str(legacy)], check=True)
    client = ConfigClient(git_http.url, store="store", cache_dir=cache)
    assert client.get("/data/b")["size"] == 2 and git_http.authorized
    assert _files_holding_the_secret(cache) == [] and TOKEN not in repr(client)
    with pytest.raises(StoreNotFound) as refused:
        ConfigClient(git_http.url.replace("cfg.git", "none.git"), store="store", cache_dir=cache)
    assert TOKEN not in str(refused.value) and "127.0.0.1" in str(refused.value)


def test_a_tag_moved_upstream_is_a_fetch_failure_whose_message_names_the_tag(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    bare = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(small.root), str(bare)], check=True)
    server = start_server(f"file://{bare}", "--fetch-interval", "0.2", "--cache-time", "0")
    [tag] = subprocess.run(["git", "--git-dir", str(bare), "tag"], capture_output=True, text=True).stdout.split()
    subprocess.run(["git", "--git-dir", str(bare), "update-ref", f"refs/tags/{tag}", "HEAD"], check=True)  # moved
    deadline = time.monotonic() + 60
    while (fetch := httpx.get(f"{server.url}/healthz", timeout=10).json()["fetch"])["ok"]:
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.2)
    assert re.search(rf"\[rejected\] +{tag} +-> {tag} +\(would clobber existing tag\)", fetch["error"]), fetch
    assert "remote:" not in fetch["error"] and "objects" not in fetch["error"]  # git's progress reports are left out
    assert httpx.get(f"{server.url}/v1/small/current/keys/data/b", timeout=10).json()["config"]["size"] == 2
