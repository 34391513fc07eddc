"""The endpoints of docs/serving.md on a real server: JSON shapes, ETags and 304s, caching headers, errors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx

from cfgtool.serve import worker
from cfgtool.snapshot import model as snapshot_module
from cfgtool.snapshot.model import canonical_json
from cfgtool.versions import publish
from tests.conftest import GitRepo
from tests.serve.conftest import SharedSmall, StartServer, publish_change


def _etag(body: bytes) -> str:
    return f'"sha256:{hashlib.sha256(body).hexdigest()}"'


def test_key_answers_have_the_design_shape_and_the_etag_of_their_canonical_body(shared_small: SharedSmall) -> None:
    server = shared_small.server("--cache-time", "0")
    commit = shared_small.repo.git("rev-parse", "HEAD")
    with httpx.Client(base_url=server.url) as http:
        got = http.get("/v1/small/versions/1/keys/data/a")
        assert got.status_code == 200
        assert got.json() == {
            "store": "small",
            "key": "/data/a",
            "version": 1,
            "commit": commit,
            "exists": True,
            "config": {"owner": "platform", "retention": {"days": 7}, "tier": "gold", "tagged": True, "size": 1},
        }
        assert got.content == canonical_json(got.json()).encode()
        assert got.headers["etag"] == _etag(got.content)
        assert got.headers["cache-control"] == "private, max-age=31536000, immutable"
        assert got.headers["content-type"] == "application/json"

        phantom = http.get("/v1/small/versions/1/keys/data/b/never/made").json()
        assert phantom["exists"] is False and phantom["key"] == "/data/b/never/made"
        assert phantom["config"] == http.get("/v1/small/versions/1/keys/data/b").json()["config"]
        root = http.get("/v1/small/versions/1/keys/").json()
        assert root["key"] == "/" and root["exists"] is True

        value = http.get("/v1/small/versions/1/keys/data/a", params={"path": "retention.days"})
        assert value.json() == {
            "store": "small", "key": "/data/a", "version": 1, "path": "retention.days", "value": 7, "exists": True
        }  # fmt: skip
        unset = http.get("/v1/small/versions/1/keys/data/a", params={"path": "no.such"})
        assert unset.status_code == 404 and unset.json()["error"] == "not_found"

        current = http.get("/v1/small/current/keys/data/a")
        assert current.content == got.content and current.headers["etag"] == got.headers["etag"]
        assert current.headers["cfgtool-version"] == "1"
        assert current.headers["content-location"] == "/v1/small/versions/1/keys/data/a"
        assert current.headers["cache-control"] == "private, must-revalidate, max-age=0, stale-if-error=86400"

        head = http.head("/v1/small/current/keys/data/a")
        assert head.status_code == 200 and head.content == b"" and head.headers["etag"] == got.headers["etag"]


def test_if_none_match_gives_304_with_the_same_headers_on_both_kinds_of_url(shared_small: SharedSmall) -> None:
    server = shared_small.server("--cache-time", "0")
    with httpx.Client(base_url=server.url) as http:
        for url in ("/v1/small/versions/1/keys/data/a", "/v1/small/current/keys/data/a", "/v1/small/versions"):
            first = http.get(url)
            again = http.get(url, headers={"if-none-match": first.headers["etag"]})
            assert again.status_code == 304, url
            assert again.content == b""
            for header in ("etag", "cache-control", "cfgtool-version", "content-location"):
                assert again.headers.get(header) == first.headers.get(header), (url, header)
            listed = http.get(url, headers={"if-none-match": f'"sha256:{"0" * 64}", {first.headers["etag"]}'})
            assert listed.status_code == 304
            stale = http.get(url, headers={"if-none-match": f'"sha256:{"0" * 64}"'})
            assert stale.status_code == 200 and stale.content == first.content


def test_stores_versions_and_queries_answer_as_the_cli(small: GitRepo, start_server: StartServer) -> None:
    version = publish_change(small, {"store/data/c/main.conf": "size = 3\n", "store/data/c/includes": "/tags/t\n"}, "c")
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url) as http:
        assert http.get("/v1/stores").json() == [{"name": "small", "path": "store", "current": version, "seq": 2}]
        versions = http.get("/v1/small/versions").json()
        assert [v["version"] for v in versions] == [2, 1]
        assert {"version", "tag", "commit", "date", "status", "publisher", "message", "digest", "rolled_back"} <= set(
            versions[0]
        )
        assert versions[0]["status"] == "current" and versions[1]["status"] == "good"

        def query(path: str) -> object:
            answer = http.get(f"/v1/small/versions/2/{path}")
            assert answer.status_code == 200, answer.text
            assert answer.headers["cache-control"] == "private, max-age=31536000, immutable"
            return answer.json()

        assert query("tags/data/a") == {"key": "/data/a", "exists": True, "tags": ["/tags/t"]}
        assert query("datasets/tags/t") == {"tag": "/tags/t", "datasets": ["/data/a", "/data/c"]}
        assert query("imports/data/a") == {"key": "/data/a", "exists": True, "recursive": False, "imports": ["/tags/t"]}
        recursive = query("imports/data/a?recursive=1")
        assert recursive["recursive"] is True and recursive["imports"] == ["/tags/t", "/tags", "/data", "/"]
        importers = query("imported-by/tags/t")
        assert importers == {"key": "/tags/t", "recursive": False, "imported_by": ["/data/a", "/data/c"]}
        explained = query("explain/data/a?path=size")
        assert explained["found"] is True and explained["value"] == 1
        assert explained["origin"] == {"file": "store/data/a/main.conf", "line": 1, "col": 8}
        v1 = http.get("/v1/small/versions/1/datasets/tags/t").json()
        assert v1["datasets"] == ["/data/a"]


def test_errors_are_json_with_a_fitting_status(shared_small: SharedSmall) -> None:
    server = shared_small.server("--cache-time", "0")
    with httpx.Client(base_url=server.url) as http:
        cases = {
            "/v1/nope/current/keys/data/a": 404,
            "/v1/nope/versions": 404,
            "/v1/small/versions/9/keys/data/a": 404,
            "/v1/small/versions/1/keys/data/bad%20key": 400,
            "/v1/small/versions/1/keys/data//a": 400,
            "/v1/small/versions/1/nosuch/data/a": 404,
            "/v1/small/versions/1/datasets/data/a": 400,  # not a tag
            "/v1/small/versions/1/imported-by/data/zzz": 404,  # no node
            "/v1/small/versions/1/explain/data/a": 400,  # no ?path=
            "/v1/small/changes?since=x": 400,
            "/elsewhere": 404,
        }
        for url, status in cases.items():
            got = http.get(url)
            assert got.status_code == status, (url, got.text)
            body = got.json()
            assert set(body) == {"error", "message"} and body["message"], url
            assert got.headers["cache-control"] == "no-store"


def test_healthz_and_metrics(small: GitRepo, start_server: StartServer) -> None:
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url) as http:
        http.get("/v1/small/current/keys/data/a")
        health = http.get("/healthz").json()
        assert health["ready"] is True
        assert health["stores"][0] | {"name": "small", "current": 1, "seq": 1, "unservable": []} == health["stores"][0]
        assert health["fetch"]["ok"] is True
        metrics = http.get("/metrics").text
        assert 'cfgtool_requests_total{route="current",status="200"} 1.0' in metrics
        assert "cfgtool_fetch_lag_seconds" in metrics
        assert 'cfgtool_current_version{store="small"} 1.0' in metrics


def test_the_server_serves_published_versions_only(small: GitRepo, start_server: StartServer) -> None:
    small.write({"store/data/a/main.conf": "size = 100\n"})  # in the working tree only
    small.commit("unpublished")
    server = start_server(small.root, "--cache-time", "0")
    answer = httpx.get(f"{server.url}/v1/small/current/keys/data/a").json()
    assert answer["config"]["size"] == 1
    assert json.loads(httpx.get(f"{server.url}/v1/small/versions").content)[0]["version"] == 1


def test_a_key_without_a_node_under_the_intrinsics_reads_its_own_name(
    small: GitRepo, start_server: StartServer
) -> None:
    publish_change(small, {"store/data/b/main.conf": "size = 2\ntopic = ${cfgtool.name}\n"}, "intrinsics")
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url) as http:
        own = http.get("/v1/small/versions/2/keys/data/b").json()
        assert own["config"]["topic"] == "b"
        for name in ("x", "y", "x"):
            answer = http.get(f"/v1/small/versions/2/keys/data/b/{name}").json()
            assert answer["exists"] is False and answer["config"]["topic"] == name


def test_the_phantom_reads_of_a_whole_snapshot_are_bounded(small: GitRepo, tmp_path: Path, monkeypatch: Any) -> None:
    """Each key without a node under the intrinsics is resolved again (in the resolver process): the Snapshot
    keeps only the newest PHANTOMS_KEPT of them, so no sequence of names grows its memory without bound."""
    publish_change(small, {"store/data/b/main.conf": "topic = ${cfgtool.name}\n"}, "intrinsics")
    monkeypatch.setattr(snapshot_module, "PHANTOMS_KEPT", 3)
    monkeypatch.setattr(worker, "_resolving", {})
    args = (str(small.root), "store", 2, str(tmp_path / "cache"))
    assert worker.resolve(*args, "/data/b/k0") is None  # the version is not loaded yet
    worker.keep(*args)
    for i in range(7):
        assert json.loads(worker.resolve(*args, f"/data/b/k{i}"))["topic"] == f"k{i}"
    [client] = worker._resolving.values()
    assert list(client.snapshot._phantoms) == ["/data/b/k4", "/data/b/k5", "/data/b/k6"]
    assert json.loads(worker.resolve(*args, "/data/b/k0"))["topic"] == "k0"  # dropped, resolved again


def test_every_store_of_the_repository_is_served_by_its_name(small: GitRepo, start_server: StartServer) -> None:
    settings = "name: other\nversion_tag_prefix: other/v\nrollback_tag_prefix: other/rolledback/v\n"
    small.write({"stores/second/_CONFIG_STORE": settings, "stores/second/main.conf": "who = second\n"})
    small.commit("a second store")
    assert publish(small.root, store="stores/second", message="first of other").version == 1
    both = start_server(small.root, "--cache-time", "0")
    listed = httpx.get(f"{both.url}/v1/stores").json()
    assert [(s["name"], s["path"], s["current"]) for s in listed] == [
        ("small", "store", 1),
        ("other", "stores/second", 1),
    ]
    assert httpx.get(f"{both.url}/v1/other/current/keys/").json()["config"] == {"who": "second"}
    assert httpx.get(f"{both.url}/v1/small/current/keys/").json()["config"]["owner"] == "platform"
    one = start_server(small.root, "--store", "stores/second")
    assert [s["name"] for s in httpx.get(f"{one.url}/v1/stores").json()] == ["other"]
    assert httpx.get(f"{one.url}/v1/small/current/keys/").status_code == 404


KAFKA = {
    "store/_CONFIG_STORE": "name: demo\n",
    "store/data/kafka/main.conf": 'partitions = 12\nkafka.config { "retention.ms" = 86400000 }\n',
    "store/data/kafka/order-created/main.conf": "partitions = 64\n",
}


def test_a_key_without_a_node_says_so_in_every_form_and_names_a_close_node(
    tmp_path: Path, start_server: StartServer
) -> None:
    repo = GitRepo(tmp_path / "kafka")
    publish_change(repo, KAFKA, "v1")
    server = start_server(repo.root, "--cache-time", "0")
    typo, near = "data/kafka/order-creatd", "/data/kafka/order-created"
    with httpx.Client(base_url=server.url) as http:
        for prefix in ("/v1/demo/current/keys/", "/v1/demo/versions/1/keys/"):
            whole = http.get(prefix + typo)
            assert whole.json()["exists"] is False and whole.json()["did_you_mean"] == near
            assert whole.headers["cfgtool-node"] == "none"
            again = http.get(prefix + typo, headers={"if-none-match": whole.headers["etag"]})
            assert again.status_code == 304 and again.headers["cfgtool-node"] == "none"
            value = http.get(prefix + typo, params={"path": "partitions"})
            assert value.json() == {
                "store": "demo", "key": "/" + typo, "version": 1, "path": "partitions", "value": 12,
                "exists": False, "did_you_mean": near,
            }  # fmt: skip
            assert value.headers["cfgtool-node"] == "none"
            real = http.get(prefix + near[1:], params={"path": "partitions"})
            assert real.json()["exists"] is True and "did_you_mean" not in real.json()
            assert "cfgtool-node" not in real.headers
        inherits = http.get("/v1/demo/versions/1/keys/data/kafka/payments")  # no node, and none close to it
        assert inherits.json()["exists"] is False and "did_you_mean" not in inherits.json()
        assert inherits.headers["cfgtool-node"] == "none"
        explained = http.get("/v1/demo/versions/1/explain/" + typo, params={"path": "partitions"})
        assert explained.json()["exists"] is False and explained.headers["cfgtool-node"] == "none"


def test_an_unset_dotted_path_names_the_quoted_path_that_is_set(tmp_path: Path, start_server: StartServer) -> None:
    repo = GitRepo(tmp_path / "kafka")
    publish_change(repo, KAFKA, "v1")
    server = start_server(repo.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url) as http:
        unset = http.get("/v1/demo/versions/1/keys/data/kafka", params={"path": "kafka.config.retention.ms"})
        assert unset.status_code == 404 and unset.json()["did_you_mean"] == 'kafka.config."retention.ms"'
        assert "cfgtool-node" not in unset.headers
        phantom = http.get("/v1/demo/versions/1/keys/data/kafka/new", params={"path": "kafka.config.retention.ms"})
        assert phantom.status_code == 404 and phantom.json()["did_you_mean"] == 'kafka.config."retention.ms"'
        assert phantom.headers["cfgtool-node"] == "none" and "/data/kafka/new has no node" in phantom.json()["message"]
        explained = http.get("/v1/demo/versions/1/explain/data/kafka", params={"path": "kafka.config.retention.ms"})
        assert explained.json()["found"] is False
        assert explained.json()["did_you_mean"] == 'kafka.config."retention.ms"'
        quoted = http.get("/v1/demo/versions/1/explain/data/kafka", params={"path": 'kafka.config."retention.ms"'})
        assert quoted.json()["found"] is True and "did_you_mean" not in quoted.json()
