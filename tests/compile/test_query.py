"""`cfgtool.compile.query`: answers about one key from the files it needs are the full compile's answers.

The property test generates stores (tags, imports, dynamic and optional includes, undeclared variables, cycles,
syntax, reference and type errors, bad directory names, keys with and without nodes, variable values) in a real
git repository, and compares for every key what `get`, `explain`, `imports` and `tags` print and whether they
refuse (the errors that affect the key, hence the exit code and its message) between `query_key` and the
full compile. The other tests show what the query reads: never an unrelated node's files.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cfgtool.compile.compiler import CompileResult, compile_source
from cfgtool.compile.query import KeyAnswer, QueryRefused, query_graph, query_key
from cfgtool.errors import CfgtoolError
from cfgtool.snapshot.explain import explain
from cfgtool.snapshot.formats import Format, render
from cfgtool.store import git
from cfgtool.store.sources import GitSource, WorkTreeSource, open_source
from tests.conftest import GitRepo

SETTINGS = (
    "name: s\ntag_roots: [/t]\nvariables:\n  dc:\n    values: [x, y]\n    default: x\n  opt:\n    values: [x, y]\n"
)
KEYS = ["/a", "/a/b", "/a/b/c", "/a/d", "/t", "/t/x", "/t/y", "/t/x/z", "/u"]
QUERIED = [*KEYS, "/", "/a/b/zz", "/zz", "/t/x/q", "/a/d/e/f", "/A/b/C"]  # the last: /a/b/c, case aside
MAINS = [
    "v = 1\n",
    "v = ${w}\n",
    "w = two\n",
    "x = {\n",
    "n = ${cfgtool.name}\nk = ${cfgtool.key}\n",
    "o { p = 1 }\no.q = ${?v}\n",
    "v += [1]\n",
    's = ${w}"-x"\n',
    "r = ${r}\n",
    "v = null\nw = {a = 1}\n",
]
LINES = ["/t/x", "/t/y", "/t/x/z", "/t", "/u", "/a/b", "/a", "/nope", "/t/${dc}", "/t/${?opt}", "/t/${opt}",
         "/t/${und}", "bad key!", "/a/d"]  # fmt: skip
PATHS = ["v", "w", "n", "o.p", "o.q", "s", "k"]

node_files = st.fixed_dictionaries(
    {},
    optional={
        "main.conf": st.sampled_from(MAINS),
        "includes": st.lists(st.sampled_from(LINES), max_size=3).map(lambda ls: "".join(f"{x}\n" for x in ls)),
    },
)
stores = st.tuples(
    st.dictionaries(st.sampled_from(KEYS), node_files, max_size=len(KEYS)),
    st.sampled_from(["", "v = 0\nw = root\n", "v = ${w}\nw = root\n"]),
    st.booleans(),  # a directory whose name is no key segment, under /a
    st.sampled_from([{}, {"dc": "y"}, {"opt": "x"}]),
    st.booleans(),  # query a commit (--ref) instead of the working tree
)


@contextmanager
def _repo() -> Iterator[GitRepo]:
    """One repository for a whole property run (hypothesis reuses a test's fixtures across examples)."""
    root = Path(tempfile.mkdtemp(prefix="cfgtool-query-"))
    try:
        yield GitRepo(root / "repo")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _write(repo: GitRepo, nodes: Mapping[str, Mapping[str, str]], root_main: str, bad_dir: bool) -> None:
    shutil.rmtree(repo.root / "store", ignore_errors=True)
    files: dict[str, str] = {"_CONFIG_STORE": SETTINGS, "main.conf": root_main}
    for key, own in nodes.items():
        for name, text in own.items():
            files[f"{key.strip('/')}/{name}"] = text
        if not own:
            files[f"{key.strip('/')}/README"] = "a node without files of its own\n"
    if bad_dir:
        files["a/bad name/main.conf"] = "v = 9\n"
        files["a/_private/notes.txt"] = "not a node\n"
    repo.write(files, under="store/")


def outcome(result: CompileResult, key: str) -> dict[str, Any]:
    """What the query commands print about `key` from `result`, or the errors that refuse it."""
    errors = result.errors_affecting(key)
    if errors:
        return {"refused": sorted((d.code, d.key, d.file, d.line, d.col, d.message) for d in errors)}
    snap = result.snapshot
    out: dict[str, Any] = {}
    try:
        read = snap.lookup(key)
        out["get"] = (read.node, read.exists, render(read.config, Format.JSON), render(read.config, Format.HOCON))
        out["imports"] = snap.imports(key) if key in snap.nodes else None
        out["imports -r"], out["tags"] = snap.imports(key, recursive=True), snap.tags(key)
        for path in PATHS:
            found = explain(snap, key, path)
            out[f"explain {path}"] = (json.dumps(found.to_json(), default=str), found.render_text())
    except CfgtoolError as exc:
        out["error"] = str(exc)
    return out


def _full(repo: GitRepo, ref: str | None, variables: Mapping[str, str]) -> CompileResult:
    return compile_source(open_source(repo.root, "store", ref), variables, check_variables=False, validate=False)


@pytest.mark.long
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores)
def test_query_key_answers_as_the_full_compile(case: tuple[Any, ...]) -> None:
    nodes, root_main, bad_dir, variables, committed = case
    with _repo() as repo:
        _write(repo, nodes, root_main, bad_dir)
        ref = repo.commit() if committed else None
        full = _full(repo, ref, variables)
        for key in QUERIED:
            answer = query_key(repo.root, "store", ref, key, variables)
            assert outcome(answer.result, key) == outcome(full, key), key
            if key not in full.snapshot.nodes:  # the did-you-mean of a key without a node: the full compile's
                assert answer.near_node() == full.snapshot.near_node(key), key


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stores)
def test_query_graph_answers_as_the_full_compile(case: tuple[Any, ...]) -> None:
    nodes, root_main, bad_dir, variables, committed = case
    with _repo() as repo:
        _write(repo, nodes, root_main, bad_dir)
        ref = repo.commit() if committed else None
        full = _full(repo, ref, variables)
        graph = query_graph(repo.root, "store", ref, variables)
        graph_codes = {"E_MISSING_IMPORT", "E_CYCLE", "E_BAD_KEY", "E_UNDECLARED_VARIABLE", "E_UNRESOLVED_VARIABLE",
                       "E_SETTINGS", "E_DUPLICATE_INCLUDES", "E_UNSAFE_PATH"}  # fmt: skip
        expected = [d for d in full.errors_affecting(None) if d.code in graph_codes]
        assert sorted(map(str, graph.errors())) == sorted(map(str, expected))
        assert sorted(graph.store.nodes) == sorted(full.snapshot.nodes)
        for key in graph.store.nodes:
            for recursive in (False, True):
                assert graph.graph.imported_by(key, recursive) == full.snapshot.imported_by(key, recursive)
            assert graph.graph.datasets(key) == full.snapshot.datasets(key)


# ------------------------------------------------------------------------------------------ what is read

SHOP = {
    "_CONFIG_STORE": "name: shop\n",
    "main.conf": "retention = 30d\n",
    "data/main.conf": "retention = 7d\n",
    "data/orders/main.conf": "owner = sales\n",
    "data/orders/includes": "/tags/gold\n",
    "data/invoices/main.conf": "owner = billing\n",
    "data/invoices/includes": "/tags/silver\n",
    "tags/gold/main.conf": "tier = 1\n",
    "tags/silver/main.conf": "tier = 2\n",
}
NEEDED = {f"store/{p}" for p in ("_CONFIG_STORE", "main.conf", "data/main.conf", "data/orders/main.conf",
                                  "data/orders/includes", "tags/gold/main.conf")}  # fmt: skip


@pytest.fixture
def shop(store_repo: GitRepo) -> GitRepo:
    store_repo.write(SHOP, under="store/")
    store_repo.commit()
    return store_repo


def test_query_key_reads_only_the_files_of_the_key_s_layers(shop: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    plain = WorkTreeSource._read

    def counted(self: WorkTreeSource, paths: list[str]) -> Any:
        found = plain(self, paths)
        read.extend(found)
        return found

    monkeypatch.setattr(WorkTreeSource, "_read", counted)
    answer = query_key(shop.root, "store", None, "/data/orders")
    assert answer.snapshot.lookup("/data/orders").config == {"retention": "7d", "owner": "sales", "tier": 1}
    assert answer.scope is not None  # answered from its own nodes, not by a full compile
    assert set(read) == NEEDED  # neither /data/invoices nor /tags/silver


def test_query_key_at_a_ref_reads_only_the_blobs_of_the_key_s_layers(
    shop: GitRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    wanted: list[str] = []
    plain = git.cat_blobs

    def counted(root: Path, oids: Any) -> dict[str, bytes]:
        oids = list(oids)
        wanted.extend(oids)
        return plain(root, oids)

    monkeypatch.setattr(git, "cat_blobs", counted)
    source = GitSource(shop.root, "HEAD", "store")
    answer = query_key(shop.root, "store", "HEAD", "/data/orders")
    assert answer.snapshot.lookup("/data/orders").config["tier"] == 1
    assert set(wanted) == {source.oid(p) for p in NEEDED}


def test_query_key_never_reads_an_unrelated_broken_node(shop: GitRepo) -> None:
    """A main.conf that is not even a file one can read (a directory where the file should be is skipped;
    a file of invalid UTF-8 and HOCON) in another node changes nothing and is not parsed."""
    shop.write({"store/data/invoices/main.conf": b"\xff{{{\n"})
    answer = query_key(shop.root, "store", None, "/data/orders")
    assert answer.errors() == []
    assert answer.result.stats["parsed"] == 4  # /, /data, /data/orders, /tags/gold
    assert "/data/invoices" not in answer.snapshot.nodes


def test_query_key_falls_back_to_the_full_listing_when_git_ignores_a_file(shop: GitRepo) -> None:
    """An ignored main.conf is no file of the store for git: the query must not read it either."""
    shop.write({".gitignore": "store/tags/gold/main.conf\n"})
    shop.git("rm", "-q", "--cached", "store/tags/gold/main.conf")
    answer = query_key(shop.root, "store", None, "/data/orders")
    assert answer.scope is None  # the lazy view disagreed with git: answered from the full listing
    assert "tier" not in answer.snapshot.lookup("/data/orders").config


def test_query_key_falls_back_to_the_full_compile_on_a_cycle_among_its_nodes(shop: GitRepo) -> None:
    shop.write({"store/tags/gold/includes": "/data/orders\n"})
    answer: KeyAnswer = query_key(shop.root, "store", None, "/data/orders")
    assert answer.scope is None
    assert [d.code for d in answer.errors()] == ["E_CYCLE"]


def test_query_key_checks_settings_the_cache_has_not_seen_pass(shop: GitRepo) -> None:
    """A `_CONFIG_STORE` text that passed once is read again without the schema check; any other text is
    checked, so a broken one is reported by every query, and its problems are never remembered as a pass."""
    assert query_key(shop.root, "store", None, "/data/orders").errors() == []
    shop.write({"store/_CONFIG_STORE": "name: shop\ntag_roots: 7\n"})
    for _ in range(2):
        errors = query_key(shop.root, "store", None, "/data/orders").errors()
        assert [(d.code, d.file) for d in errors] == [("E_SETTINGS", "store/_CONFIG_STORE")]
    shop.write({"store/_CONFIG_STORE": "name: shop\n"})
    assert query_key(shop.root, "store", None, "/data/orders").errors() == []


# ------------------------------------------------------------------------------------------ refusals


def test_query_answers_refuse_errors_that_affect_them_for_every_caller(shop: GitRepo) -> None:
    """The library refuses, not a command: the server or a script gets the CLI's message and hint."""
    shop.write({"store/tags/gold/main.conf": "tier = {\n", "store/data/invoices/main.conf": "owner = ${nobody}\n"})
    with pytest.raises(QueryRefused) as refused:
        query_key(shop.root, "store", None, "/data/orders").check()
    assert refused.value.message == (
        "/data/orders cannot be queried: 1 error affects it, the first: "
        "store/tags/gold/main.conf:2:1: E_SYNTAX unclosed object: add '}'"
    )
    assert refused.value.exit_code == 1
    assert (refused.value.hint or "").startswith("`cfgtool compile` lists every error of the store")
    # a read of the whole store counts its errors, so the numbers agree with `cfgtool compile`
    whole = KeyAnswer("/data/orders", compile_source(open_source(shop.root, "store", None), validate=False), None)
    with pytest.raises(QueryRefused, match=r"^/data/orders cannot be queried: 1 of the store's 2 errors affects it"):
        whole.check()
    answer = query_key(shop.root, "store", None, "/tags/silver")
    assert answer.check() is answer  # the errors elsewhere do not affect it


def test_query_graph_refuses_any_error_of_the_import_graph(shop: GitRepo) -> None:
    shop.write({"store/data/invoices/main.conf": "owner = ${nobody}\n"})
    graph = query_graph(shop.root, "store", None)
    assert graph.check() is graph  # a main.conf cannot change who imports what
    shop.write({"store/data/invoices/includes": "/tags/nothing\n"})
    with pytest.raises(QueryRefused) as refused:
        query_graph(shop.root, "store", None).check()
    assert refused.value.key is None
    assert refused.value.message.startswith(
        "the store cannot be queried: its import graph has 1 error, the first: store/data/invoices/includes:1:1:"
        " E_MISSING_IMPORT"
    )
