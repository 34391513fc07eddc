"""`GET /v1/openapi.json` (docs/serving.md): a valid OpenAPI 3.1 document of every route the server answers, and
a schemathesis run against live servers, with tokens and without, that finds no 5xx and no answer the document
does not describe (status, content type, headers, body)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openapi_spec_validator import validate
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from cfgtool.serve.app import Api
from cfgtool.serve.openapi import document
from cfgtool.serve.options import Options
from cfgtool.serve.routes import starlette_app
from cfgtool.serve.service import Service
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, cli_command, publish_change

ACL = """\
super_users: [User:admin]
acls:
  - {principal: "User:*", operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:intern, operation: read, key: /data/b, permission: deny}
"""
# the paths the fast path answers before Starlette routes anything (`Api.__call__`)
FAST_PATHS = {"/v1/{store}/changes", "/v1/{store}/current/keys/{key}", "/v1/{store}/versions/{version}/keys/{key}"}
KEYS = ["", "data", "data/a", "data/b", "data/a/phantom", "tags/t", "nothing/here"]
VERSIONS = st.sampled_from(["1", "2", "current", "previous"])
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def test_the_document_is_valid_openapi_3_1_and_served_as_built(small: GitRepo, start_server: StartServer) -> None:
    doc = document()
    validate(doc)  # OpenAPI 3.1's meta-schema, and every $ref resolves
    assert doc["openapi"] == "3.1.0"
    server = start_server(small.root)
    served = httpx.get(f"{server.url}/v1/openapi.json")
    assert served.status_code == 200 and served.headers["content-type"] == "application/json"
    assert served.json() == json.loads(json.dumps(doc))
    again = httpx.get(f"{server.url}/v1/openapi.json", headers={"if-none-match": served.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    components = doc["components"]
    assert "hidden_layers" in components["schemas"]["Explanation"]["properties"]
    assert "too_many_requests" in components["responses"]["TooMany"]["description"]
    redirect = components["responses"]["Redirect"]
    assert redirect["headers"]["Cfgtool-Version"]["required"] and "content" in redirect
    for path, item in doc["paths"].items():  # a request the HTTP parser rejects is 400, whatever its path
        assert all("400" in op["responses"] for op in item.values()), path


def _template(route: str) -> set[str]:
    """A Starlette route's path in the document's spelling ({query} expanded, converters dropped)."""
    from cfgtool.serve.routes import QUERIES

    path = re.sub(r"\{(\w+):\w+\}", r"{\1}", route).replace("{n}", "{version}")
    return {path.replace("{query}", q) for q in QUERIES} if "{query}" in path else {path}


def test_every_route_the_server_answers_is_documented(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    documented = set(document()["paths"])
    api = Api(Service(Options(str(small.root), cache=tmp_path / "cache")), starlette_app)
    routes = {p for r in api.starlette.routes for p in _template(getattr(r, "path", ""))} - {"/{rest}"}
    assert routes | FAST_PATHS == documented

    # and each documented path is answered by its route, never by the catch-all "no such endpoint"
    server = start_server(small.root)
    for path, item in document()["paths"].items():
        key = "tags/t" if "/datasets/" in path else "data/a"
        url = path.replace("{store}", "small").replace("{version}", "1").replace("{key}", key)
        url = url.replace("{instance}", "web-1")
        if "post" in item:
            found = httpx.post(f"{server.url}{url}", json={"applied": 1})
            assert found.status_code == 200, (url, found.text)
            continue
        found = httpx.get(f"{server.url}{url}", params={"path": "size", "wait": "0"})
        assert found.status_code == 200, (url, found.text)
    # a newline in the path (`%0A`) reaches its route or the catch-all, which answer JSON like any other
    for url, status in (("/v1/small/versions/1/tags/data%0Aa", 400), ("/v1%0A/x", 404), ("/%0A", 404)):
        found = httpx.get(f"{server.url}{url}")
        assert (found.status_code, found.headers["content-type"]) == (status, "application/json"), url
        assert found.json()["error"] in ("bad_key", "not_found")
    # another method is a JSON error too, with the methods there are
    for url in ("/v1/stores", "/v1/small/current/keys/data/a", "/nowhere"):
        refused = httpx.post(f"{server.url}{url}", content=b"{}")
        assert (refused.status_code, refused.headers["content-type"]) == (405, "application/json"), url
        assert refused.json()["error"] == "method_not_allowed" and "GET" in refused.headers["allow"]


def _token(tokens: Path, principal: str) -> str:
    proc = subprocess.run(
        [*cli_command(), "token", "add", principal, "--tokens", str(tokens)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def _fuzz(url: str, headers: list[dict[str, str]], examples: int) -> None:
    """Every operation of the served document, each sent with every header set of `headers`."""
    schema = schemathesis.openapi.from_url(f"{url}/v1/openapi.json")
    for result in schema.get_all_operations():
        _fuzz_operation(result.ok(), url, headers, examples)


def _fuzz_operation(operation: Any, url: str, headers: list[dict[str, str]], examples: int) -> None:
    """`examples` cases of one operation (about half of them on the real store, its keys and versions); a failed
    check raises, after Hypothesis has shrunk it."""
    names = {p.name for p in operation.path_parameters}
    query = {"wait": 0.05} if operation.path.endswith("/changes") else None  # never hold a long poll

    def real(pick: tuple[str, str]) -> Any:
        chosen = dict(zip(("store", "key", "version"), ("small", *pick), strict=True))
        fixed = {name: value for name, value in chosen.items() if name in names}
        return operation.as_strategy(path_parameters=fixed or None, query=query)

    cases = st.one_of(operation.as_strategy(query=query), st.tuples(st.sampled_from(KEYS), VERSIONS).flatmap(real))

    @settings(
        max_examples=examples, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(case=cases)
    def run(case: Any) -> None:
        for sent in headers:
            response = case.call(base_url=url, headers=sent, timeout=30)
            case.validate_response(response, checks=CHECKS, headers=sent)

    run()


@pytest.mark.long
@pytest.mark.xdist_group("schemathesis")
def test_schemathesis_finds_no_5xx_and_nothing_outside_the_document(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    publish_change(small, {"store/_ACL.yaml": ACL, "store/data/c/main.conf": "size = 3\n"}, "an ACL")
    open_server = start_server(small.root, "--cache-time", "0")
    _fuzz(open_server.url, [{}], examples=30)

    tokens = tmp_path / "tokens.json"
    alice, intern, admin = (_token(tokens, who) for who in ("alice", "intern", "admin"))
    guarded = start_server(small.root, "--tokens", str(tokens))
    sets: list[dict[str, str]] = [{}, {"authorization": "Bearer cfgtool_0000_nope"}]
    sets += [{"authorization": f"Bearer {t}"} for t in (alice, intern, admin)]
    _fuzz(guarded.url, sets, examples=10)
