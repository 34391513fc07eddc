"""`/metrics` with access control: a token's principal sees the series of the stores it may describe, a request
without a known token is 401 and a principal that may describe no store is 403 (503 while a store still loads);
`--public-metrics` opens it to every scraper again. Without `--tokens` it answers everyone (tests/serve/test_api.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from cfgtool.versions import publish
from tests.conftest import CHECKOUT, GitRepo
from tests.serve.conftest import SMALL, StartServer, cli_command

SMALL_ACL = """\
super_users: [User:admin]
acls:
  - {principal: User:alice, operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:scraper, operation: describe, resource: store, permission: allow}
"""
OTHER_ACL = """\
super_users: [User:admin]
acls:
  - {principal: User:scraper, operation: describe, resource: store, permission: allow}
  - {principal: User:nobody, operation: describe, resource: store, permission: deny}
"""


def _two_stores(repo: GitRepo) -> None:
    repo.write(
        {
            **SMALL,
            "store/_ACL.yaml": SMALL_ACL,
            "other/_CONFIG_STORE": "name: other\n",
            "other/main.conf": "who = other\n",
            "other/_ACL.yaml": OTHER_ACL,
        }
    )
    repo.commit("two stores with ACLs")
    for store in ("store", "other"):
        assert publish(repo.root, store=store, message=f"{store} 1").version == 1


def _tokens(tmp_path: Path, *principals: str) -> tuple[Path, dict[str, str]]:
    tokens = tmp_path / "tokens.json"
    found = {}
    for who in principals:
        proc = subprocess.run([*cli_command(), "token", "add", who, "--tokens", str(tokens)],
                              capture_output=True, text=True, timeout=120)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        found[who] = proc.stdout.strip()
    return tokens, found


def test_metrics_need_a_token_and_show_the_stores_its_principal_may_describe(
    repo: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    _two_stores(repo)
    tokens, token = _tokens(tmp_path, "alice", "scraper", "nobody")
    server = start_server(repo.root, "--tokens", str(tokens), "--cache-time", "0")

    def scrape(who: str | None) -> httpx.Response:
        headers = {"authorization": f"Bearer {token[who]}"} if who else {}
        return httpx.get(f"{server.url}/metrics", headers=headers, timeout=30)

    refused = scrape(None)
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    assert refused.headers["www-authenticate"].startswith("Bearer") and "cfgtool_" not in refused.text
    wrong = httpx.get(f"{server.url}/metrics", headers={"authorization": "Bearer nope"}, timeout=30)
    assert wrong.status_code == 401
    nobody = scrape("nobody")  # describes neither store
    assert nobody.status_code == 403 and nobody.json()["error"] == "forbidden" and "cfgtool_" not in nobody.text

    alice = scrape("alice")  # reads keys of `small` only, so describes that store alone
    assert alice.status_code == 200 and alice.headers["content-type"].startswith("text/plain")
    assert 'cfgtool_current_version{store="small"} 1.0' in alice.text
    assert 'store="other"' not in alice.text
    assert "cfgtool_fetch_lag_seconds" in alice.text and 'cfgtool_requests_total{route="metrics",' in alice.text
    scraper = scrape("scraper")
    assert 'cfgtool_current_version{store="small"} 1.0' in scraper.text
    assert 'cfgtool_current_version{store="other"} 1.0' in scraper.text
    assert scraper.headers["cache-control"] == "no-store"


def test_public_metrics_answers_every_scraper_with_every_store(
    repo: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    _two_stores(repo)
    tokens, _ = _tokens(tmp_path, "alice")
    server = start_server(repo.root, "--tokens", str(tokens), "--cache-time", "0", "--public-metrics")
    open_ = httpx.get(f"{server.url}/metrics", timeout=30)
    assert open_.status_code == 200
    assert 'cfgtool_current_version{store="small"} 1.0' in open_.text
    assert 'cfgtool_current_version{store="other"} 1.0' in open_.text
    assert httpx.get(f"{server.url}/v1/stores", timeout=30).status_code == 401  # nothing else opens


def test_metrics_answer_503_not_403_while_a_store_still_loads(tmp_path: Path, start_server: StartServer) -> None:
    root = tmp_path / "generated"
    gen = [sys.executable, "-m", "benchmarks.gen_store", "--datasets", "1000", "--out", str(root), "--git"]
    subprocess.run(gen, check=True, capture_output=True, cwd=CHECKOUT)  # a store that takes seconds to load
    repo = GitRepo(root)
    repo.write({"store/_ACL.yaml": SMALL_ACL})
    repo.commit("an ACL")
    assert publish(root, message="v1").version == 1
    tokens, token = _tokens(tmp_path, "scraper")
    server = start_server(root, "--tokens", str(tokens), ready=False)
    auth = {"authorization": f"Bearer {token['scraper']}"}
    asked_while_loading = 0
    while True:
        metrics = httpx.get(f"{server.url}/metrics", headers=auth, timeout=30)
        if httpx.get(f"{server.url}/healthz", timeout=30).status_code == 200:
            break  # loaded by now: this answer may have come from either side of it
        assert metrics.status_code == 503 and metrics.json()["error"] == "not_ready", metrics.text  # not 403
        asked_while_loading += 1
    assert asked_while_loading > 0, "the store loaded before the first request: generate a larger one"
    metrics = httpx.get(f"{server.url}/metrics", headers=auth, timeout=30)
    assert metrics.status_code == 200 and 'store="bench"' in metrics.text, metrics.text
