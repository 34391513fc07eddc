"""A remote URL's credentials never reach the disk: the server mirrors a real git HTTP server that asks for them
(git's "dumb" HTTP protocol, behind Basic authentication), and no file of its cache holds them afterwards."""

from __future__ import annotations

import base64
import functools
import hashlib
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from cfgtool.serve.mirror import split_credentials
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change

TOKEN = "s3cr3t-T0ken-4711"


class GitHttp:
    """A bare repository served read-only over HTTP on loopback; every request needs `alice:TOKEN`."""

    def __init__(self, repo: GitRepo, web: Path) -> None:
        self.repo, self.bare = repo, web / "cfg.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(repo.root), str(self.bare)], check=True)
        self.update()
        self.authorized: list[str] = []
        self.refused = 0
        outer = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
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


@pytest.fixture
def git_http(small: GitRepo, tmp_path: Path) -> Iterator[GitHttp]:
    served = GitHttp(small, tmp_path / "web")
    yield served
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
    clean, env = split_credentials("https://bot:p%40ss@git.example.com:8443/team/cfg.git")
    assert clean == "https://git.example.com:8443/team/cfg.git"
    assert env["CFGTOOL_GIT_CREDENTIAL"] == "username=bot\npassword=p@ss\n"
    keys = {env[k]: env[k.replace("KEY", "VALUE")] for k in env if k.startswith("GIT_CONFIG_KEY_")}
    assert keys["credential.helper"] == ""  # configured helpers (which could store it) are emptied first
    assert "credential.https://git.example.com:8443.helper" in keys
    assert split_credentials("ssh://git:pw@host/cfg.git") == ("ssh://git@host/cfg.git", {})  # a login stays
    assert split_credentials("https://host/cfg.git") == ("https://host/cfg.git", {})
    assert split_credentials("git@host:team/cfg.git") == ("git@host:team/cfg.git", {})
