"""`cfgtool serve --public-cache` behind a real nginx running the configuration of docs/serving.md ("Shared
caches"): with it a second read is a hit the server never sees, without it nothing is cached, `current` answers
are served stale while the server is down; and the flag is refused where a shared cache could leak an answer.

nginx runs as this user in one process (`master_process off`) with its prefix, pid, logs and cache in the test's
temporary directory, on a loopback port. Where nginx is missing (`apt-get install nginx-light`; `.ci/run`
installs it) the nginx tests skip and say so."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import GitRepo
from tests.serve.conftest import Server, StartServer, cfgtool_command, cli_command, publish_change
from tests.serve.test_http_client import wait_for_version

ROOT = Path(__file__).resolve().parents[2]
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
needs_nginx = pytest.mark.skipif(
    NGINX is None, reason="nginx is not installed (apt-get install nginx-light; .ci/run installs it as root)"
)
WRAPPER = """\
daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log notice;
events {{ worker_connections 256; }}
http {{
    access_log {d}/access.log;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
{config}
}}
"""


def documented_config() -> str:
    """The nginx configuration of docs/serving.md (its one `nginx` block), as written there."""
    found = re.findall(r"```nginx\n(.*?)```", (ROOT / "docs" / "serving.md").read_text(encoding="utf-8"), re.S)
    assert len(found) == 1, "docs/serving.md has one nginx configuration"
    return str(found[0])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def nginx(tmp_path: Path) -> Iterator[object]:
    """`start(upstream_port) -> url`: nginx with the documented configuration in front of that port."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(upstream: int) -> str:
        d = tmp_path / "nginx"
        d.mkdir()
        port = free_port()
        config = documented_config()
        for old, new in (
            ("127.0.0.1:8750", f"127.0.0.1:{upstream}"),
            ("listen 127.0.0.1:8080", f"listen 127.0.0.1:{port}"),
            ("/var/cache/nginx/cfgtool", str(d / "cache")),
        ):
            assert old in config, old
            config = config.replace(old, new)
        (d / "nginx.conf").write_text(WRAPPER.format(d=d, config=config), encoding="utf-8")
        command = [str(NGINX), "-p", str(d), "-c", str(d / "nginx.conf"), "-e", str(d / "error.log")]
        with open(d / "stderr.log", "wb") as err:
            proc = subprocess.Popen(command, stdout=err, stderr=subprocess.STDOUT)
        procs.append(proc)
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return f"http://127.0.0.1:{port}"
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log = (d / "stderr.log").read_text() + (d / "error.log").read_text()
                    raise AssertionError(f"nginx did not start:\n{log}") from None
                time.sleep(0.05)

    yield start
    for proc in procs:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def served(server: Server, log: Path, path: str) -> int:
    """How many requests for `path` the server has answered so far, by its access log. The log is written in
    batches (every half second), in the order the answers ended: a request of its own, made now, straight to the
    server, marks the point by which every earlier answer is in the log, however late a loaded machine writes it."""
    marker = f"/served-{secrets.token_hex(8)}"
    httpx.get(server.url + marker, timeout=30)
    deadline = time.monotonic() + 30
    while True:
        paths = (
            [json.loads(line)["path"] for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
        )
        if marker in paths:
            return paths.count(path)
        assert time.monotonic() < deadline, f"the access log never showed {marker}"
        time.sleep(0.1)


PATHS = ("/v1/small/versions/1/keys/data/a", "/v1/small/current/keys/data/a")


@needs_nginx
def test_with_public_cache_a_second_read_is_a_hit_the_server_never_sees(
    small: GitRepo, start_server: StartServer, nginx: object, tmp_path: Path
) -> None:
    log = tmp_path / "access.jsonl"
    server = start_server(small.root, "--public-cache", "--cache-time", "600", "--access-log", str(log))
    proxy = nginx(server.port)  # type: ignore[operator]
    for path in PATHS:
        first = httpx.get(proxy + path, timeout=10)
        second = httpx.get(proxy + path, timeout=10)
        assert first.status_code == second.status_code == 200
        assert first.headers["x-cache-status"] == "MISS" and second.headers["x-cache-status"] == "HIT"
        assert second.content == first.content and second.headers["etag"] == first.headers["etag"]
        assert first.headers["cache-control"].startswith("public, ")
        assert served(server, log, path) == 1
    assert "stale-if-error=86400" in httpx.get(proxy + PATHS[1], timeout=10).headers["cache-control"]
    assert httpx.get(proxy + "/v1/small/changes?wait=0", timeout=10).headers["x-cache-status"] == "MISS"


@needs_nginx
def test_without_public_cache_nothing_is_cached(
    small: GitRepo, start_server: StartServer, nginx: object, tmp_path: Path
) -> None:
    log = tmp_path / "access.jsonl"
    server = start_server(small.root, "--cache-time", "600", "--access-log", str(log))
    proxy = nginx(server.port)  # type: ignore[operator]
    for path in PATHS:
        answers = [httpx.get(proxy + path, timeout=10) for _ in range(2)]
        assert [a.headers["x-cache-status"] for a in answers] == ["MISS", "MISS"]
        assert answers[0].headers["cache-control"].startswith("private, ")
        assert served(server, log, path) == 2


@needs_nginx
def test_current_is_served_stale_while_the_server_is_down(
    small: GitRepo, start_server: StartServer, nginx: object
) -> None:
    server = start_server(small.root, "--public-cache", "--cache-time", "2")
    proxy = nginx(server.port)  # type: ignore[operator]
    fresh = httpx.get(proxy + PATHS[1], timeout=10)
    assert fresh.status_code == 200 and fresh.headers["x-cache-status"] == "MISS"
    assert "stale-if-error=86400" in fresh.headers["cache-control"]
    max_age = int(re.search(r"max-age=(\d+)", fresh.headers["cache-control"]).group(1))  # type: ignore[union-attr]
    server.stop()
    time.sleep(max_age + 1.0)  # the cached answer is stale now, and the server is gone
    stale = httpx.get(proxy + PATHS[1], timeout=10)
    assert stale.status_code == 200 and stale.headers["x-cache-status"] == "STALE"
    assert stale.content == fresh.content
    never = httpx.get(proxy + "/v1/small/current/keys/data/b", timeout=10)  # never cached: nothing to stand in
    assert never.status_code == 502


ACL_OPEN = """\
acls:
  - {principal: "User:*", operation: read, key: "*", permission: allow}
"""
ACL_CLOSED = """\
acls:
  - {principal: "User:*", operation: read, key: "*", permission: allow}
  - {principal: "User:*", operation: read, key: /data/b, permission: deny}
"""


def test_public_cache_is_refused_with_tokens_or_a_restrictive_acl(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*cfgtool_command(), "serve", "--repo", str(small.root), "--port", "0", "--public-cache", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)

    tokens = tmp_path / "tokens.json"
    subprocess.run([*cli_command(), "token", "add", "User:a", "--tokens", str(tokens)], check=True,
                   capture_output=True)  # fmt: skip
    refused = serve("--tokens", str(tokens))
    assert refused.returncode == 2 and "--public-cache with --tokens" in refused.stderr
    publish_change(small, {"store/_ACL.yaml": ACL_CLOSED}, "close /data/b")
    refused = serve()
    assert refused.returncode == 2 and "not readable by everyone" in refused.stderr
    assert "deny User:* read /data/b" in refused.stderr
    publish_change(small, {"store/_ACL.yaml": ACL_OPEN}, "open again")
    server: Server = start_server(small.root, "--public-cache", "--fetch-interval", "0.2")
    answer = httpx.get(f"{server.url}/v1/small/versions/3/keys/data/b", timeout=10)
    assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
    # a later version's ACL closes a key: the store's answers turn private, and the log says why
    publish_change(small, {"store/_ACL.yaml": ACL_CLOSED}, "close /data/b again")
    wait_for_version(server, "small", 4)
    answer = httpx.get(f"{server.url}/v1/small/versions/3/keys/data/b", timeout=10)
    assert answer.headers["cache-control"] == "private, max-age=31536000, immutable"
    assert "answers are private (not for shared caches)" in server.log()
