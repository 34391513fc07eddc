"""Tokens and the store's ACL on a real server (docs/serving.md, docs/access.md#the-acl): 401, 403 and 404 exactly;
queries drop what the principal may not describe; secrets are `[hidden]` or sealed, never clear."""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, cli_command, publish_change

ACL = """\
super_users: [User:admin]
acls:
  - {principal: "User:*", operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:intern, operation: read, key: /data/b, permission: deny}
"""


def _token(tokens: Path, principal: str) -> str:
    proc = subprocess.run(
        [*cli_command(), "token", "add", principal, "--tokens", str(tokens)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "shown only this once" in proc.stderr
    return proc.stdout.strip()


def test_token_add_stores_only_a_hash(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    first, second = _token(tokens, "alice"), _token(tokens, "User:alice")
    assert first != second and first.startswith("cfgtool_")
    text = tokens.read_text()
    secret = first.split("_", 2)[2]  # cfgtool_<id>_<secret>: the secret may hold "_" itself
    assert len(secret) == 43 and first not in text and secret not in text
    entries = json.loads(text)["tokens"]
    assert [e["principal"] for e in entries] == ["User:alice", "User:alice"]
    assert entries[0]["hash"] != entries[1]["hash"]
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600


def test_requests_need_a_token_and_the_acl_decides_401_403_404(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": ACL, "store/data/c/main.conf": "size = 3\n"}, "an ACL")
    tokens = tmp_path / "tokens.json"
    alice, intern, admin = (_token(tokens, who) for who in ("alice", "intern", "admin"))
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")

    def get(path: str, token: str | None) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}"} if token else {}
        return httpx.get(f"{server.url}{path}", headers=headers)

    for path in ("/v1/small/current/keys/data/a", "/v1/small/versions", "/v1/stores", "/v1/small/changes?wait=0"):
        wrong = alice[:-1] + ("B" if alice.endswith("A") else "A")
        for token in (None, "cfgtool_0000000000000000_" + "x" * 43, wrong, "garbage"):
            refused = get(path, token)
            assert refused.status_code == 401, (path, token)
            assert refused.json()["error"] == "unauthorized"
            said = "needs a token" if token is None else "unknown or revoked token"  # one was sent: say so
            assert said in refused.json()["message"], (path, token, refused.text)
            assert refused.headers["www-authenticate"].startswith("Bearer")
    assert get("/healthz", None).status_code == 200  # readiness and metrics are for the operators' probes

    assert get("/v1/small/current/keys/data/a", alice).json()["config"]["size"] == 1
    assert get("/v1/small/current/keys/data/b", alice).status_code == 200
    forbidden = get("/v1/small/current/keys/data/b", intern)  # may describe (read of /data/ implies it), not read
    assert forbidden.status_code == 403 and forbidden.json()["error"] == "forbidden"
    assert get("/v1/small/versions/2/keys/data/b", intern).status_code == 403
    assert get("/v1/small/current/keys/data/a", intern).status_code == 200

    # no ACL entry names /tags/t or /: not even describe, so 404 exactly as a key without a node
    hidden = get("/v1/small/versions/2/keys/tags/t", alice)
    absent = get("/v1/small/versions/2/imported-by/data/nothing", alice)
    assert hidden.status_code == absent.status_code == 404
    assert hidden.json()["error"] == absent.json()["error"] == "not_found"
    assert get("/v1/small/versions/2/tags/tags/t", alice).status_code == 404
    assert get("/v1/small/versions/2/keys/tags/t", admin).status_code == 200  # a super user

    # queries drop the keys the principal may not describe
    assert get("/v1/small/versions/2/tags/data/a", alice).json()["tags"] == []
    assert get("/v1/small/versions/2/tags/data/a", admin).json()["tags"] == ["/tags/t"]
    assert get("/v1/small/versions/2/explain/data/b?path=size", intern).status_code == 403
    assert get("/v1/small/versions/2/explain/data/b?path=size", alice).json()["value"] == 2


def test_secrets_are_hidden_or_sealed_never_clear(published: GitRepo, start_server: StartServer) -> None:
    server = start_server(published.root, "--cache-time", "0")
    url = f"{server.url}/v1/demo/versions/1/keys/data/databases/identity"
    plain = httpx.get(url)
    assert plain.json()["config"]["database"]["credentials"]["password"] == "[hidden]"
    sealed = httpx.get(url, params={"secrets": "sealed"})
    password = sealed.json()["config"]["database"]["credentials"]["password"]
    assert password.startswith("ENC[cfgtool:v1,age,for=")
    assert sealed.headers["etag"] != plain.headers["etag"]
    path = httpx.get(url, params={"path": "database.credentials.password"}).json()
    assert path["value"] == "[hidden]"
    sealed_path = httpx.get(url, params={"path": "database.credentials.password", "secrets": "sealed"}).json()
    assert sealed_path["value"] == password  # ?path= honours ?secrets=sealed too
    tree = (published.root / "store/data/databases/identity/main.conf").read_text()
    assert password in tree  # the envelope as committed: the server holds no key that opens it


def test_counts_of_keys_only_for_who_may_describe_every_key(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    # alice may describe /data/ only: how many keys an event changed, and how many nodes a version has, count
    # /tags/t and / too, which she may not describe; a count of them tells her of keys she may not know of
    publish_change(small, {"store/_ACL.yaml": ACL, "store/tags/u/main.conf": "hidden = yes\n"}, "an ACL")
    tokens = tmp_path / "tokens.json"
    alice, admin = _token(tokens, "alice"), _token(tokens, "admin")
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")

    def get(path: str, token: str) -> Any:
        found = httpx.get(f"{server.url}{path}", headers={"authorization": f"Bearer {token}"}, timeout=10)
        assert found.status_code == 200, found.text
        return found.json()

    assert [e["nodes"] for e in get("/v1/small/versions", admin)] == [7, 6]
    assert [e["nodes"] for e in get("/v1/small/versions", alice)] == [None, None]
    assert [e["changed_keys"] for e in get("/v1/small/changes?wait=0", admin)["events"]] == [6, 1]
    assert [e["changed_keys"] for e in get("/v1/small/changes?wait=0", alice)["events"]] == [None, None]
    assert [e["version"] for e in get("/v1/small/changes?wait=0", alice)["events"]] == [1, 2]


def test_a_did_you_mean_names_only_a_node_the_principal_may_describe(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    acl = ACL + "  - {principal: User:intern, operation: describe, key: /data/a/secretive, permission: deny}\n"
    publish_change(small, {"store/_ACL.yaml": acl, "store/data/a/secretive/main.conf": "size = 3\n"}, "an ACL")
    tokens = tmp_path / "tokens.json"
    alice, intern = _token(tokens, "alice"), _token(tokens, "intern")
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")

    def get(token: str, **params: str) -> httpx.Response:
        headers = {"authorization": f"Bearer {token}"}
        return httpx.get(f"{server.url}/v1/small/versions/2/keys/data/a/secretiv", headers=headers, params=params)

    assert get(alice).json()["did_you_mean"] == "/data/a/secretive"
    assert get(alice, path="size").json()["did_you_mean"] == "/data/a/secretive"
    for answer in (get(intern), get(intern, path="tier")):  # it reads /data/a's config, and learns of no other node
        assert answer.status_code == 200 and answer.json()["exists"] is False, answer.text
        assert "did_you_mean" not in answer.json() and "secretive" not in answer.text
        assert answer.headers["cfgtool-node"] == "none"
