"""Which ACL judges a request, and what an answer reveals, on a real server with tokens made by the CLI: no
current version means 503 `E_NO_ACL` (never open); an answer from version N needs N's ACL and the current one;
a key without a node needs the right on its nearest node too; explain hides the layers the principal may not
describe; the store's versions and feed need `describe` on the store; `/healthz` tells details to super users
only and never a URL's credentials (docs/serving.md, docs/access.md)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from cfgtool.store.urls import redact
from tests.conftest import GitRepo
from tests.serve.conftest import SIZE_SCHEMA, SMALL, StartServer, cfgtool_command, cli_command, publish_change

ACL = """\
super_users: [User:admin]
acls:
  - {principal: "User:*", operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:intern, operation: read, key: /data/b, permission: deny}
"""

WITH_ACL = {"store/_ACL.yaml": ACL, "store/data/c/main.conf": "size = 3\n"}  # a change of config with it
Get = Callable[[str, str | None], httpx.Response]


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli_command(), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def _tokens(tmp_path: Path, *principals: str) -> tuple[Path, dict[str, str]]:
    tokens = tmp_path / "tokens.json"
    found = {}
    for who in principals:
        proc = _cli("token", "add", who, "--tokens", str(tokens))
        assert proc.returncode == 0, proc.stderr
        found[who] = proc.stdout.strip()
    return tokens, found


def _getter(url: str, tokens: dict[str, str]) -> Get:
    def get(path: str, who: str | None) -> httpx.Response:
        headers = {"authorization": f"Bearer {tokens[who]}"} if who else {}
        return httpx.get(f"{url}{path}", headers=headers, timeout=30)

    return get


def test_without_a_current_version_only_healthz_answers(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, WITH_ACL, "an ACL")
    assert _cli("rollback", "2", "-m", "bad", cwd=small.root).returncode == 0
    small.git("tag", "-a", "config/rolledback/v1", "-m", "by hand", "config/v1^{commit}")  # no good version left
    tokens, token = _tokens(tmp_path, "intern", "admin")
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")
    get = _getter(server.url, token)
    for path in ("/v1/small/versions/2/keys/data/b", "/v1/small/versions/1/keys/data/b", "/v1/small/versions",
                 "/v1/small/changes?wait=0", "/v1/small/versions/2/explain/data/b?path=size",
                 "/v1/small/current/keys/data/a", "/v1/small/versions/2/tags/data/a"):  # fmt: skip
        for who in ("intern", "admin"):
            refused = get(path, who)
            assert refused.status_code == 503, (path, who, refused.text)
            assert refused.json()["error"] == "E_NO_ACL"
    assert get("/v1/stores", "admin").json() == []
    health = get("/healthz", None)
    assert health.status_code == 200 and health.json() == {"status": "failing"}


def test_without_a_current_version_only_healthz_answers_without_tokens_too(
    tmp_path: Path, start_server: StartServer
) -> None:
    repo = GitRepo(tmp_path / "unpublished")
    repo.write(dict(SMALL))
    repo.commit("nothing published yet")
    server = start_server(repo.root, "--cache-time", "0", ready=False)
    get = _getter(server.url, {})
    for path in ("/v1/small/versions", "/v1/small/changes?wait=0", "/v1/small/current/keys/data/a",
                 "/v1/small/versions/1/keys/data/a", "/v1/small/versions/current/keys/data/a"):  # fmt: skip
        refused = get(path, None)
        assert refused.status_code == 503 and refused.json()["error"] == "E_NO_ACL", (path, refused.text)
    assert get("/v1/stores", None).json() == []
    assert get("/healthz", None).json()["status"] == "failing"


def test_a_key_without_a_node_needs_the_right_on_its_nearest_node(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    acl = ACL + "  - {principal: User:intern, operation: describe, key: /data/a, permission: deny}\n"
    publish_change(small, {**WITH_ACL, "store/_ACL.yaml": acl}, "an ACL")
    tokens, token = _tokens(tmp_path, "intern", "alice")
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")
    get = _getter(server.url, token)
    assert get("/v1/small/current/keys/data/b", "intern").status_code == 403
    for path in ("/v1/small/current/keys/data/b/anything", "/v1/small/versions/2/keys/data/b/x/y",
                 "/v1/small/versions/2/keys/data/b/anything?path=size",
                 "/v1/small/versions/2/explain/data/b/anything?path=size"):  # fmt: skip
        forbidden = get(path, "intern")
        assert forbidden.status_code == 403, (path, forbidden.text)
        assert "size" not in forbidden.text
    hidden = get("/v1/small/current/keys/data/a/anything", "intern")  # may not even describe /data/a
    absent = get("/v1/small/current/keys/nothing/here", "intern")
    assert hidden.status_code == absent.status_code == 404
    assert get("/v1/small/versions/2/tags/data/a/x", "intern").status_code == 404
    answer = get("/v1/small/current/keys/data/b/anything", "alice").json()  # alice may read /data/b
    assert answer["exists"] is False and answer["config"]["size"] == 2


def test_an_answer_from_a_version_needs_its_own_acl_and_the_current_one(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, WITH_ACL, "v2: an ACL")
    closed = ACL + "  - {principal: User:intern, operation: read, key: /data/secret, permission: deny}\n"
    publish_change(small, {"store/_ACL.yaml": closed, "store/data/secret/main.conf": "pin = 1234\n"}, "v3: secret")
    assert _cli("rollback", "3", "-m", "back to v2", cwd=small.root).returncode == 0  # v2's ACL names no secret
    tokens, token = _tokens(tmp_path, "intern", "alice")
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")
    get = _getter(server.url, token)
    assert get("/v1/small/current/keys/data/a", "intern").json()["version"] == 2
    for path in ("/v1/small/versions/3/keys/data/secret", "/v1/small/versions/3/keys/data/secret?path=pin",
                 "/v1/small/versions/3/keys/data/secret/x",
                 "/v1/small/versions/3/explain/data/secret?path=pin"):  # fmt: skip
        refused = get(path, "intern")
        assert refused.status_code == 403 and "1234" not in refused.text, (path, refused.text)
    assert get("/v1/small/versions/3/keys/data/secret", "alice").json()["config"]["pin"] == 1234
    # and the current ACL closes what an old version's left open: v1 has no ACL at all
    assert get("/v1/small/versions/1/keys/data/b", "intern").status_code == 403
    assert get("/v1/small/versions/1/keys/data/b", "alice").status_code == 200


KEYS_ACL = """\
super_users: [User:admin]
acls:
  - {principal: User:alice, operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:mallory, operation: read, key: /data/, pattern: prefixed, permission: allow}
"""
STORE_ACL = KEYS_ACL + "  - {principal: User:mallory, operation: describe, resource: store, permission: deny}\n"


def test_versions_and_the_feed_need_describe_on_the_store(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": STORE_ACL}, "an ACL")
    tokens, token = _tokens(tmp_path, "alice", "mallory", "nobody")
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")
    get = _getter(server.url, token)
    for path in ("/v1/small/versions", "/v1/small/changes?wait=0"):
        assert get(path, "alice").status_code == 200, path  # implied: alice may describe keys of the store
        for who in ("nobody", "mallory"):  # no right on any key; an explicit deny on the store
            refused = get(path, who)
            assert refused.status_code == 404 and refused.json()["error"] == "not_found", (path, who)
    assert [s["name"] for s in get("/v1/stores", "alice").json()] == ["small"]
    assert get("/v1/stores", "nobody").json() == get("/v1/stores", "mallory").json() == []
    assert get("/v1/small/current/keys/data/a", "mallory").status_code == 200  # keys are judged by their own rights

    def check(who: str) -> subprocess.CompletedProcess[str]:
        return _cli("acl", "check", who, "describe", "--ref", "config/v2", cwd=small.root)

    allowed, denied, nobody = check("alice"), check("mallory"), check("nobody")
    assert allowed.returncode == 0 and "ALLOWED" in allowed.stdout and "a key of the store" in allowed.stdout
    assert denied.returncode == 1 and "deny User:mallory describe store" in denied.stdout
    assert nobody.returncode == 1 and "DENIED" in nobody.stdout


def test_explain_hides_the_layers_the_principal_may_not_describe(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": KEYS_ACL}, "an ACL")
    tokens, token = _tokens(tmp_path, "alice", "admin")
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")
    get = _getter(server.url, token)
    full = get("/v1/small/versions/2/explain/data/a?path=tagged", "admin").json()
    assert "/tags/t" in [layer["layer"] for layer in full["layers"]] and full["hidden_layers"] == 0
    seen = get("/v1/small/versions/2/explain/data/a?path=tagged", "alice")
    doc = seen.json()
    assert doc["value"] is True and "/tags/t" not in seen.text and "store/tags" not in seen.text
    layers = [layer["layer"] for layer in doc["layers"]]
    assert layers == ["/data/a"] + ["[hidden layer]"] * 4 and doc["hidden_layers"] == 4  # /data/ is not /data
    assert doc["origin"] is None  # in /tags/t's file


def test_a_tag_with_schema_errors_is_never_served_and_healthz_names_it_to_super_users(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    files = {"store/_CONFIG_STORE": "name: small\nschemas: ../schemas\n", "schemas/size.yaml": SIZE_SCHEMA,
             "store/_ACL.yaml": KEYS_ACL}  # fmt: skip
    publish_change(small, files, "a schema")
    small.write({"store/data/b/main.conf": "size = 99\n"})
    small.commit("too big")
    small.git("tag", "-a", "config/v3", "-m", "made by hand")
    tokens, token = _tokens(tmp_path, "alice", "admin")
    server = start_server(small.root, "--tokens", str(tokens), "--cache-time", "0")
    get = _getter(server.url, token)
    assert get("/v1/small/current/keys/data/b", "alice").json()["config"]["size"] == 2
    for who in ("alice", "admin"):  # the compile's errors may name values: only /healthz tells them
        refused = get("/v1/small/versions/3/keys/data/b", who)
        assert refused.status_code == 404, refused.text
        assert refused.json()["message"] == "version 3 cannot be served: its compile reports errors"
        assert "99" not in refused.text and "E_SCHEMA" not in refused.text
    [unservable] = get("/healthz", "admin").json()["stores"][0]["unservable"]
    assert unservable["version"] == 3 and "E_SCHEMA" in unservable["error"]
    assert get("/healthz", None).json() == get("/healthz", "alice").json() == {"status": "ok"}


def test_healthz_details_go_to_super_users_only_and_a_urls_credentials_never_show(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": KEYS_ACL}, "an ACL")
    origin = tmp_path / "origin.git"
    small.git("clone", "-q", "--bare", str(small.root), str(origin))
    url = "https://alice:s3cr3t-token@git.example.invalid/cfg.git"  # read from a local bare repository instead
    plain = "https://git.example.invalid/cfg.git"  # git sees the URL without its credentials
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.file://{origin}.insteadOf", "GIT_CONFIG_VALUE_0": plain}
    tokens, token = _tokens(tmp_path, "alice", "admin")
    server = start_server(url, "--tokens", str(tokens), "--fetch-interval", "0.2", "--cache-time", "0", env=env)
    get = _getter(server.url, token)
    assert get("/healthz", None).json() == get("/healthz", "alice").json() == {"status": "ok"}
    assert get("/healthz", "admin").json()["fetch"]["remote"] == "https://git.example.invalid/cfg.git"
    origin.rename(tmp_path / "away.git")  # the remote fails: healthz, the log and the metrics say so
    deadline = time.monotonic() + 60
    while get("/healthz", None).json()["status"] != "failing":
        assert time.monotonic() < deadline, server.log()
        time.sleep(0.2)
    details = get("/healthz", "admin")
    assert details.json()["fetch"]["ok"] is False and details.json()["fetch"]["error"]
    assert get("/healthz", "alice").json() == {"status": "failing"}
    time.sleep(0.5)
    for text in (server.log(), details.text, get("/metrics", "admin").text):
        assert "s3cr3t-token" not in text and "alice:" not in text
    assert "https://git.example.invalid/cfg.git" in server.log()  # the fetch failure is logged, without them

    missing = "https://bob:other-secret@git.example.invalid/none.git"
    env = {**os.environ, "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": f"url.file://{tmp_path}/none.git.insteadOf",
           "GIT_CONFIG_VALUE_0": redact(missing), "CFGTOOL_CACHE_DIR": str(tmp_path / "other-cache")}  # fmt: skip
    proc = subprocess.run([*cfgtool_command(), "serve", "--repo", missing, "--port", "0"], capture_output=True,
                          text=True, timeout=120, env=env)  # fmt: skip
    assert proc.returncode != 0 and "cannot read https://git.example.invalid/none.git" in proc.stderr
    assert "other-secret" not in proc.stdout + proc.stderr
