from __future__ import annotations

from collections.abc import Callable, Mapping

import pytest

from cfgtool.diagnostics import Diagnostic
from cfgtool.store.graph import Graph
from cfgtool.store.keys import is_strictly_under
from cfgtool.store.nodes import Store
from cfgtool.store.queries import StoreQueries, UnresolvableKeyError

MakeStore = Callable[..., Store]


def graph_of(
    make_store: MakeStore,
    includes: Mapping[str, str],
    *,
    extra: Mapping[str, str] | None = None,
    variables: Mapping[str, str] | None = None,
) -> Graph:
    """A graph of a store whose nodes are the keys of `includes` (value: the includes text, '' for none)."""
    files: dict[str, str] = dict(extra or {})
    for key, text in includes.items():
        rel = key.strip("/")
        files[f"{rel}/includes" if rel else "includes"] = text
    return Graph(make_store(files), variables)


def codes(graph: Graph) -> list[tuple[str, str | None, str | None, int | None, int | None]]:
    return [(d.code, d.key, d.file, d.line, d.col) for d in graph.diagnostics]


def only(graph: Graph, code: str) -> Diagnostic:
    [diag] = [d for d in graph.diagnostics if d.code == code]
    return diag


def test_linearize_design_example_1_importer_ancestors_outrank_tag_ancestors(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data/x": "/tags/t\n"}, extra={"tags/t/main.conf": ""})
    assert g.diagnostics == []
    assert g.linearization("/data/x") == ("/data/x", "/tags/t", "/tags", "/data", "/")
    layers = g.layers("/data/x")
    assert layers is not None
    assert [layer.reach.describe(layer.key) for layer in layers] == [
        "/data/x itself",
        "/data/x includes /tags/t (store/data/x/includes:1)",
        "parent of /tags/t",
        "parent of /data/x",
        "parent of /data",
    ]
    assert layers[1].reach.col == 1


def test_linearize_design_example_2(make_store: MakeStore) -> None:
    g = graph_of(
        make_store,
        {
            "/data/databases/identity": "/tag/espressoTag\n/tag/highPriorityTag\n",
            "/tag/espressoTag": "/tag2/nertzTag2\n",
            "/tag/highPriorityTag": "",
            "/tag2/nertzTag2": "",
        },
    )
    assert g.diagnostics == []
    assert g.linearization("/data/databases/identity") == (
        "/data/databases/identity",
        "/tag/highPriorityTag",
        "/tag/espressoTag",
        "/tag2/nertzTag2",
        "/tag2",
        "/tag",
        "/data/databases",
        "/data",
        "/",
    )
    layers = g.layers("/data/databases/identity")
    assert layers is not None
    reach = {layer.key: layer.reach.describe(layer.key) for layer in layers}
    assert reach["/tag/highPriorityTag"] == (
        "/data/databases/identity includes /tag/highPriorityTag (store/data/databases/identity/includes:2)"
    )
    assert reach["/tag2/nertzTag2"] == "/tag/espressoTag includes /tag2/nertzTag2 (store/tag/espressoTag/includes:1)"
    assert reach["/tag"] == "parent of /tag/espressoTag"


def test_linearize_diamonds_and_deep_chains_are_computed_bottom_up(make_store: MakeStore) -> None:
    depth = 1500  # deeper than Python's recursion limit
    includes = {f"/tags/t{i}": f"/tags/t{i + 1}\n/tags/shared\n" for i in range(depth)}
    includes[f"/tags/t{depth}"] = "/tags/shared\n"
    includes["/tags/shared"] = ""
    g = graph_of(make_store, includes)
    lin = g.linearization("/tags/t0")
    assert lin is not None
    assert lin[: depth + 1] == tuple(f"/tags/t{i}" for i in range(depth + 1))
    assert lin[depth + 1 :] == ("/tags/shared", "/tags", "/")
    assert {d.code for d in g.diagnostics} == {"W_IMPORT_ORDER"}


def test_cycle_reports_E_CYCLE_once_and_blocks_only_nodes_on_or_behind_it(make_store: MakeStore) -> None:
    g = graph_of(
        make_store,
        {
            "/tags/a": "/tags/b\n",
            "/tags/b": "/tags/ok\n/tags/a\n",
            "/tags/ok": "",
            "/data/x": "/tags/a\n",
            "/data/y": "/tags/ok\n",
        },
    )
    diag = only(g, "E_CYCLE")
    assert (diag.key, diag.file, diag.line, diag.col) == ("/tags/b", "store/tags/b/includes", 2, 1)
    assert diag.message == "import cycle /tags/b -> /tags/a -> /tags/b"
    assert diag.notes == (
        "/tags/b includes /tags/a (store/tags/b/includes:2)",
        "/tags/a includes /tags/b (store/tags/a/includes:1)",
    )
    assert g.failed == {"/tags/a", "/tags/b", "/data/x"}
    assert g.linearization("/data/x") is None
    assert g.linearization("/data/y") == ("/data/y", "/tags/ok", "/tags", "/data", "/")
    assert g.linearization("/data") == ("/data", "/")
    with pytest.raises(UnresolvableKeyError, match="on or behind an import cycle"):
        g.tags("/data/x")


def test_cycle_two_cycles_through_one_node_are_reported_each(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/t/a": "/t/b\n/t/c\n", "/t/b": "/t/a\n", "/t/c": "/t/a\n"})
    assert sorted(d.message for d in g.diagnostics if d.code == "E_CYCLE") == [
        "import cycle /t/b -> /t/a -> /t/b",
        "import cycle /t/c -> /t/a -> /t/c",
    ]


def test_cycle_self_import_reports_E_CYCLE(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/tags/a": "/tags/x\n/tags/a\n", "/tags/x": ""})
    diag = only(g, "E_CYCLE")
    assert (diag.key, diag.file, diag.line, diag.col) == ("/tags/a", "store/tags/a/includes", 2, 1)
    assert diag.message == "/tags/a imports itself (import cycle /tags/a -> /tags/a)"
    assert g.failed == {"/tags/a"}


def test_cycle_descendant_import_reports_E_CYCLE(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data": "  /data/x/y\n", "/data/x/y": ""})
    diag = only(g, "E_CYCLE")
    assert (diag.key, diag.file, diag.line, diag.col) == ("/data", "store/data/includes", 1, 3)
    assert diag.message == (
        "/data imports its own descendant /data/x/y, which inherits from /data"
        " (import cycle /data -> /data/x/y -> /data/x -> /data)"
    )
    assert diag.notes[1:] == ("/data/x/y inherits from its parent /data/x", "/data/x inherits from its parent /data")
    assert g.failed == {"/data", "/data/x", "/data/x/y"}
    assert g.linearization("/") == ("/",)


def test_cycle_root_cannot_import(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/": "/tags/t\n", "/tags/t": ""})
    diag = only(g, "E_CYCLE")
    assert (diag.key, diag.file, diag.line) == ("/", "store/includes", 1)
    assert diag.message.startswith("/ imports its own descendant /tags/t")
    assert g.failed == set(g.nodes)


def test_missing_import_reports_E_MISSING_IMPORT_and_resolves_the_rest(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data/x": "/tags/t\n/tags/missing\n", "/tags/t": "", "/tags/missin": ""})
    diag = only(g, "E_MISSING_IMPORT")
    assert (diag.key, diag.file, diag.line, diag.col) == ("/data/x", "store/data/x/includes", 2, 1)
    assert diag.message == "/data/x imports /tags/missing, which has no node"
    assert diag.notes == ("did you mean /tags/missin?",)
    assert g.linearization("/data/x") == ("/data/x", "/tags/t", "/tags", "/data", "/")


def test_duplicate_import_reports_W_DUPLICATE_IMPORT_and_first_line_decides(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data/x": "/tags/a\n/tags/b\ntags/a/\n", "/tags/a": "", "/tags/b": ""})
    diag = only(g, "W_DUPLICATE_IMPORT")
    assert (diag.severity, diag.key, diag.file, diag.line) == ("warning", "/data/x", "store/data/x/includes", 3)
    assert diag.message == "/tags/a is already imported on line 1; this line has no effect"
    assert g.imports("/data/x") == ["/tags/b", "/tags/a"]
    assert g.linearization("/data/x") == ("/data/x", "/tags/b", "/tags/a", "/tags", "/data", "/")


def test_redundant_import_of_an_ancestor_reports_W_REDUNDANT_IMPORT(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data/x": "/tags/a\n/data\n", "/tags/a": ""})
    assert codes(g) == [("W_REDUNDANT_IMPORT", "/data/x", "store/data/x/includes", 2, 1)]
    assert (
        g.diagnostics[0].message == "/data is an ancestor of /data/x, which inherits it anyway; this line has no effect"
    )
    assert g.linearization("/data/x") == ("/data/x", "/tags/a", "/tags", "/data", "/")


def test_import_order_contradiction_reports_W_IMPORT_ORDER(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data/x": "/tags/a\n/tags/b\n", "/tags/a": "/tags/b\n", "/tags/b": ""})
    assert codes(g) == [("W_IMPORT_ORDER", "/data/x", "store/data/x/includes", 2, 1)]
    assert g.diagnostics[0].message == (
        "/tags/b is listed after /tags/a (line 1) but ranks below it: it is also reached as"
        " /tags/a includes /tags/b (store/tags/a/includes:1), and a key reached several ways takes its lowest position"
    )
    assert g.linearization("/data/x") == ("/data/x", "/tags/a", "/tags/b", "/tags", "/data", "/")


def test_import_order_tag_also_imported_by_parent_reports_W_IMPORT_ORDER(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data": "/tags/t\n", "/data/x": "/tags/u\n/tags/t\n", "/tags/t": "", "/tags/u": ""})
    diag = only(g, "W_IMPORT_ORDER")
    assert (diag.key, diag.line) == ("/data/x", 2)
    assert "it is also reached as /data includes /tags/t (store/data/includes:1)" in diag.message
    assert g.linearization("/data/x") == ("/data/x", "/tags/u", "/data", "/tags/t", "/tags", "/")


def test_variables_choose_dynamic_tags_and_defaults_apply(make_store: MakeStore) -> None:
    settings = "variables:\n  cluster: {values: [ltx1, lva1], default: ltx1}\n  team: {values: [a, b]}\n"
    includes = {"/data/x": "/tags/c/${cluster}\n${?team}\n", "/tags/c/ltx1": "", "/tags/c/lva1": "", "/a": ""}
    store = make_store({"_CONFIG_STORE": settings, **{k.strip("/") + "/includes": v for k, v in includes.items()}})
    default = Graph(store)
    assert default.imports("/data/x") == ["/tags/c/ltx1"]
    assert default.variables_of("/data/x") == {"cluster", "team"}
    assert default.variables_of("/tags/c/ltx1") == frozenset()
    other = Graph(store, {"cluster": "lva1", "team": "a"})
    assert other.imports("/data/x") == ["/a", "/tags/c/lva1"]
    assert other.diagnostics == []


def test_required_variable_without_value_reports_E_UNRESOLVED_VARIABLE(make_store: MakeStore) -> None:
    store = make_store(
        {"_CONFIG_STORE": "variables:\n  cluster: {values: [a]}\n", "data/x/includes": "/t/${cluster}\n"}
    )
    g = Graph(store)
    assert codes(g) == [("E_UNRESOLVED_VARIABLE", "/data/x", "store/data/x/includes", 1, 4)]
    assert g.diagnostics[0].message == "variable 'cluster' has no value and no default"


def test_value_dependent_diagnostics_note_the_values(make_store: MakeStore) -> None:
    store = make_store(
        {"_CONFIG_STORE": "variables:\n  c: {values: [a, b]}\n", "data/x/includes": "/t/${c}\n", "t/a/.keep": ""}
    )
    assert Graph(store, {"c": "a"}).diagnostics == []
    diag = only(Graph(store, {"c": "b"}), "E_MISSING_IMPORT")
    assert diag.message == "/data/x imports /t/b, which has no node"
    assert diag.notes == ("with c=b",)


def test_queries_imports_tags_imported_by_datasets(make_store: MakeStore) -> None:
    g = graph_of(
        make_store,
        {
            "/data": "/tags/acl/restricted\n",
            "/data/x": "/tags/retention/LONG\n/tags/priority/HIGH\n",
            "/data/y": "/tags/retention/LONG/strict\n",
            "/data/z": "",
            "/tags/retention/LONG": "",
            "/tags/retention/LONG/strict": "",
            "/tags/priority/HIGH": "/tags/retention/LONG\n",
            "/tags/acl/restricted": "",
        },
    )
    assert g.diagnostics == []
    assert g.imports("/data/x") == ["/tags/priority/HIGH", "/tags/retention/LONG"]
    # HIGH's parent /tags/priority outranks LONG: LONG's last occurrence is x's own (lower) import of it
    assert g.imports("/data/x", recursive=True) == [
        "/tags/priority/HIGH",
        "/tags/priority",
        "/tags/retention/LONG",
        "/tags/retention",
        "/data",
        "/tags/acl/restricted",
        "/tags/acl",
        "/tags",
        "/",
    ]
    assert g.tags("/data/x") == [
        "/tags/priority/HIGH",
        "/tags/priority",
        "/tags/retention/LONG",
        "/tags/retention",
        "/tags/acl/restricted",
        "/tags/acl",
    ]
    assert g.tags("/data/z") == ["/tags/acl/restricted", "/tags/acl"]
    assert g.imported_by("/tags/retention/LONG") == ["/data/x", "/tags/priority/HIGH"]
    assert g.imported_by("/tags/retention/LONG", recursive=True) == [
        "/data/x",
        "/data/y",
        "/tags/priority/HIGH",
        "/tags/retention/LONG/strict",
    ]
    assert g.datasets("/tags/retention/LONG") == ["/data/x"]  # /data/y imports only a child tag
    assert g.datasets("/tags/retention/LONG/strict") == ["/data/y"]
    assert g.datasets("/tags/acl/restricted") == ["/data", "/data/x", "/data/y", "/data/z"]
    assert g.children("/data") == ["/data/x", "/data/y", "/data/z"]
    assert g.children("/nope") == []
    assert g.keys("/tags/retention") == ["/tags/retention", "/tags/retention/LONG", "/tags/retention/LONG/strict"]
    assert g.keys()[0] == "/" and len(g.keys()) == len(g.nodes)
    assert g.is_tag("/tags/acl") and not g.is_tag("/tags") and not g.is_tag("/data")


def test_keys_without_a_node_resolve_over_their_nearest_ancestor(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data/tracking": "/tags/t\n", "/tags/t": ""})
    assert g.nearest_node("/data/tracking/PageViewEvent/deep") == "/data/tracking"
    assert g.nearest_node("/elsewhere") == "/"
    assert g.linearization("/data/tracking/PageViewEvent") == (
        "/data/tracking/PageViewEvent",
        "/data/tracking",
        "/tags/t",
        "/tags",
        "/data",
        "/",
    )
    layers = g.layers("/data/tracking/PageViewEvent")
    assert layers is not None
    assert layers[1].reach.describe(layers[1].key) == (
        "nearest ancestor of /data/tracking/PageViewEvent (which has no node)"
    )
    assert g.imports("/data/tracking/PageViewEvent") == []
    assert g.tags("/data/tracking/PageViewEvent") == ["/tags/t"]


def test_bad_import_path_reports_E_BAD_KEY_at_the_line(make_store: MakeStore) -> None:
    g = graph_of(make_store, {"/data/x": "/tags/t\n/tags/no good\n", "/tags/t": ""})
    assert codes(g) == [("E_BAD_KEY", "/data/x", "store/data/x/includes", 2, 1)]
    assert g.diagnostics[0].message == "cannot import '/tags/no good': has an invalid segment 'no good'"
    assert g.imports("/data/x") == ["/tags/t"]


def test_import_with_store_scheme_is_accepted(make_store: MakeStore) -> None:
    store = make_store({"_CONFIG_STORE": "name: demo\n", "data/x/includes": "demo:/tags/t\n", "tags/t/main.conf": ""})
    assert Graph(store).imports("/data/x") == ["/tags/t"]


def test_a_cycle_under_another_variable_value_is_found_over_an_acyclic_base(make_store: MakeStore) -> None:
    """Over a base graph without cycles, only nodes whose includes use variables are searched for a new cycle;
    what that finds must equal a full search."""
    store = make_store(
        {
            "_CONFIG_STORE": "variables:\n  side: {values: [left, right], default: left}\n",
            "tags/left/includes": "",
            "tags/right/includes": "/tags/loop\n",
            "tags/loop/includes": "/tags/${side}\n",
            "data/x/includes": "/tags/loop\n",
        }
    )
    base = Graph(store, {"side": "left"})
    assert not base.failed
    over_base, alone = Graph(store, {"side": "right"}, base=base), Graph(store, {"side": "right"})
    assert over_base.failed == alone.failed == {"/tags/loop", "/tags/right", "/data/x"}
    assert [d.message for d in over_base.diagnostics if d.code == "E_CYCLE"] == [
        d.message for d in alone.diagnostics if d.code == "E_CYCLE"
    ]
    assert not Graph(store, {"side": "left"}, base=base).failed


class _Roots(StoreQueries):
    """Only tag roots: what `is_tag` reads."""

    def __init__(self, roots: tuple[str, ...]) -> None:
        self.nodes: dict[str, object] = {}
        self.tag_roots = roots

    def _lin_of(self, key: str) -> tuple[str, ...] | None:
        return None

    def _imports_of(self, key: str) -> tuple[str, ...]:
        return ()


@pytest.mark.parametrize("roots", [("/tags",), ("/tags", "/tags/x", "/more"), ("/",), ("/", "/tags"), ()])
def test_is_tag_means_strictly_under_a_tag_root(roots: tuple[str, ...]) -> None:
    queries = _Roots(roots)
    for key in ("/", "/tags", "/tags/x", "/tags/x/y", "/tagsmore", "/more", "/more/a", "/data/x"):
        assert queries.is_tag(key) == any(is_strictly_under(key, root) for root in roots), key
