"""Which ACL judges a request, and what an answer reveals, on a real server with tokens made by the CLI: no
current version means 503 `E_NO_ACL` (never open); an answer from version N needs N's ACL and the current one;
a key without a node needs the right on its nearest node too; explain hides the layers the principal may not
describe; the store's versions and feed need `describe` on the store; `/healthz` tells details to super users
only and never a URL's credentials (docs/serving.md, docs/access.md)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, cfgtool_command, publish_change

ACL = """\
super_users: [User:admin]
acls:
  - {principal: "User:*", operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:intern, operation: read, key: /data/b, permission: deny}
"""

WITH_ACL = {"store/_ACL.yaml": ACL, "store/data/c/main.conf": "size = 3\n"}  # a change of config with it
Get = Callable[[str, str | None], httpx.Response]


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cfgtool_command(), *args], capture_output=True, text=True, timeout=120, cwd=cwd)


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
