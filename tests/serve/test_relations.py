"""The server answers the queries (tags, imports, imported-by, datasets) from each version's import relations,
which the load worker ships with its answers: never from the version's snapshot, which it does not hold."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx

from cfgtool._util.codec import pack, unpack
from cfgtool.compile.compiler import compile_store
from cfgtool.errors import CfgtoolError
from cfgtool.store.queries import Relations, StoreQueries, pack_relations
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change

CHAIN = 40  # nodes of an import chain: each one's L is the next one's with one key more

STORE = {
    "store/_CONFIG_STORE": "",
    "store/main.conf": "owner = platform\n",
    "store/tags/t/main.conf": "tagged = true\n",
    "store/tags/t/inner/main.conf": "inner = true\n",
    "store/tags/t/inner/includes": "/tags/u\n",
    "store/tags/u/main.conf": "u = 1\n",
    "store/tags/a/main.conf": "p = 1\n",
    "store/tags/a/includes": "/tags/b\n",  # /tags/a and /tags/b import each other: a cycle
    "store/tags/b/main.conf": "q = 1\n",
    "store/tags/b/includes": "/tags/a\n",
    "store/data/x/main.conf": "r = 1\n",
    "store/data/x/includes": "/tags/a\n",  # behind the cycle
    "store/data/d/main.conf": "s = 1\n",
    "store/data/d/includes": "/tags/t\n/tags/t/inner\n",
    "store/data/d/e/main.conf": "s = 2\n",
    "store/data/broken/main.conf": "s = ${nowhere}\n",  # does not resolve
    "store/data/group/one/main.conf": "s = 3\n",
    "store/data/group/one/includes": "/tags/u\n",
    "store/chain/c0/main.conf": "c = 0\n",
    **{f"store/chain/c{i}/main.conf": f"c = {i}\n" for i in range(1, CHAIN)},
    **{f"store/chain/c{i}/includes": f"/chain/c{i - 1}\n" for i in range(1, CHAIN)},
}


def _answers(queries: StoreQueries, keys: list[str]) -> list[Any]:
    """Every query about every key: its answer, or the error it raises."""

    def run(query: str, key: str, *args: Any) -> Any:
        try:
            return getattr(queries, query)(key, *args)
        except CfgtoolError as exc:
            return type(exc).__name__, exc.message

    found = []
    for key in keys:
        found.append([key, queries.is_tag(key), key in queries.nodes, run("tags", key)])
        found.extend(run(query, key, recursive) for query in ("imports", "imported_by") for recursive in (False, True))
        if queries.is_tag(key) and key in queries.nodes:
            found.append(run("datasets", key))
    return found


def test_the_relations_answer_every_query_as_the_snapshot(repo: GitRepo) -> None:
    repo.write(STORE)
    repo.commit("a store with a cycle, a node that does not resolve and an import chain")
    snapshot = compile_store(repo.root, ref="HEAD", validate=False).snapshot
    assert "/data/broken" in snapshot.failed and snapshot._lin_of("/tags/a") is None  # the cases are there
    packed = pack_relations(snapshot)
    assert len(packed["lins"]) < CHAIN * CHAIN // 2 * 4  # a chain's L are pointers, not N * N / 2 key numbers
    relations = Relations(unpack(pack(packed)))  # as the server receives them from the load worker
    keys = [*sorted(snapshot.nodes), "/data/d/nowhere", "/tags/t/made/up", "/tags/a/below", "/nothing"]
    assert _answers(relations, keys) == _answers(snapshot, keys)


def test_the_queries_are_answered_without_the_repository_or_the_snapshot_cache(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    """With the repository and the snapshot cache moved away after the server loaded its versions, nothing could
    load a snapshot: the queries are still answered (as `test_api` checks them with both in place)."""
    version = publish_change(small, {"store/data/c/main.conf": "size = 3\n", "store/data/c/includes": "/tags/t\n"}, "c")
    server = start_server(small.root, "--cache-time", "0")
    shutil.move(small.root, tmp_path / "moved-repo")
    shutil.move(tmp_path / "serve-cache-0", tmp_path / "moved-cache")
    with httpx.Client(base_url=f"{server.url}/v1/small/versions/{version}", timeout=60) as http:

        def query(path: str) -> Any:
            answer = http.get(path)
            assert answer.status_code == 200, answer.text
            return answer.json()

        assert query("tags/data/a") == {"key": "/data/a", "exists": True, "tags": ["/tags/t"]}
        assert query("tags/data/a/made-up")["tags"] == ["/tags/t"]
        assert query("datasets/tags/t") == {"tag": "/tags/t", "datasets": ["/data/a", "/data/c"]}
        assert query("imports/data/a")["imports"] == ["/tags/t"]
        assert query("imports/data/a?recursive=1")["imports"] == ["/tags/t", "/tags", "/data", "/"]
        assert query("imported-by/tags/t")["imported_by"] == ["/data/a", "/data/c"]
        assert query("imported-by/data?recursive=1")["imported_by"] == ["/data/a", "/data/b", "/data/c"]
        assert http.get("datasets/data/a").status_code == 400  # not a tag
