from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

from cfgtool.store.nodes import Store, discover, relaid
from cfgtool.store.sources import GitSource, WorkTreeSource, blob_id

if TYPE_CHECKING:
    from tests.conftest import GitRepo

MakeStore = Callable[..., Store]


@pytest.mark.parametrize("commit", [False, True], ids=["worktree", "git"])
def test_discover_every_directory_is_a_node(make_store: MakeStore, commit: bool) -> None:
    store = make_store(
        {
            "_CONFIG_STORE": "name: demo\n",
            "main.conf": "root = 1\n",
            "data/tracking/PageViewEvent/main.conf": "a = 1\n",
            "data/tracking/PageViewEvent/notes.txt": "ignored\n",
            "data/databases/identity/includes": "/tags/t\n",
            "tags/t/.keep": "",
            "_private/x/main.conf": "not a node\n",
            ".hidden/main.conf": "not a node\n",
            "data/_drafts/y/main.conf": "not a node\n",
        },
        commit=commit,
    )
    assert store.diagnostics == ()
    assert store.settings.name == "demo"
    assert store.settings_file == "store/_CONFIG_STORE"
    assert list(store.nodes) == [
        "/",
        "/data",
        "/data/databases",
        "/data/databases/identity",
        "/data/tracking",
        "/data/tracking/PageViewEvent",
        "/tags",
        "/tags/t",
    ]
    root = store.nodes["/"]
    assert root.dir == "store"
    assert root.main is not None and root.main.path == "store/main.conf"
    assert root.main.oid == blob_id(b"root = 1\n")  # the text itself is read only when it must be parsed
    event = store.nodes["/data/tracking/PageViewEvent"]
    assert event.main is not None and event.main.oid and event.includes is None
    assert event.dir == "store/data/tracking/PageViewEvent"
    identity = store.nodes["/data/databases/identity"]
    assert identity.main is None
    assert identity.includes is not None
    assert identity.includes.path == "store/data/databases/identity/includes"
    assert [ln.template for ln in identity.includes.lines] == ["/tags/t"]
    assert store.nodes["/data"].main is None and store.nodes["/data"].includes is None


def test_discover_includes_conf_is_accepted(make_store: MakeStore) -> None:
    store = make_store({"data/x/includes.conf": "/tags/a\n", "tags/a/main.conf": ""})
    includes = store.nodes["/data/x"].includes
    assert includes is not None and includes.path == "store/data/x/includes.conf"
    assert [ln.template for ln in includes.lines] == ["/tags/a"]


def test_discover_both_includes_files_reports_E_DUPLICATE_INCLUDES(make_store: MakeStore) -> None:
    store = make_store({"data/x/includes": "/tags/a\n", "data/x/includes.conf": "/tags/b\n"})
    [diag] = store.diagnostics
    assert (diag.code, diag.severity, diag.key, diag.file, diag.line) == (
        "E_DUPLICATE_INCLUDES",
        "error",
        "/data/x",
        "store/data/x/includes.conf",
        None,
    )
    assert diag.message == "/data/x has both includes and includes.conf; includes.conf is ignored"
    includes = store.nodes["/data/x"].includes
    assert includes is not None and [ln.template for ln in includes.lines] == ["/tags/a"]


def test_discover_bad_directory_name_reports_E_BAD_KEY_once(make_store: MakeStore) -> None:
    store = make_store(
        {
            "data/bad name/main.conf": "a = 1\n",
            "data/bad name/child/main.conf": "a = 1\n",
            "data/-dash/main.conf": "a = 1\n",
            "data/ok/main.conf": "a = 1\n",
        }
    )
    assert [(d.code, d.key, d.file, d.line) for d in store.diagnostics] == [
        ("E_BAD_KEY", "/data", "store/data/-dash", None),
        ("E_BAD_KEY", "/data", "store/data/bad name", None),
    ]
    assert store.diagnostics[1].message == (
        "directory name 'bad name' is not a valid key segment; it and everything under it are ignored"
    )
    assert list(store.nodes) == ["/", "/data", "/data/ok"]


def test_discover_undeclared_variable_reports_E_UNDECLARED_VARIABLE(make_store: MakeStore) -> None:
    store = make_store(
        {
            "_CONFIG_STORE": "variables:\n  cluster: {values: [a, b]}\n",
            "data/x/includes": "/tags/${cluster}\n/tags/${region}\n",
        }
    )
    [diag] = store.diagnostics
    assert (diag.code, diag.key, diag.file, diag.line, diag.col) == (
        "E_UNDECLARED_VARIABLE",
        "/data/x",
        "store/data/x/includes",
        2,
        7,
    )
    assert diag.message == "variable 'region' is not declared in _CONFIG_STORE"


def test_discover_includes_syntax_error_reports_E_SYNTAX(make_store: MakeStore) -> None:
    store = make_store({"data/x/includes": "/tags/a\n/tags/${oops\n"})
    [diag] = store.diagnostics
    assert (diag.code, diag.file, diag.line, diag.col) == ("E_SYNTAX", "store/data/x/includes", 2, 7)
    assert diag.message == "malformed variable in '/tags/${oops': write ${name} or ${?name}"


def test_discover_non_utf8_includes_file_reports_E_SYNTAX_at_the_byte(make_store: MakeStore) -> None:
    store = make_store({"data/x/includes": b"/tags/caf\xe9\n"})
    [diag] = store.diagnostics
    assert (diag.code, diag.key, diag.file, diag.line, diag.col) == (
        "E_SYNTAX",
        "/data/x",
        "store/data/x/includes",
        1,
        10,
    )
    assert diag.message == "not valid UTF-8 (byte 0xe9); save the file as UTF-8"


def test_discover_bad_settings_report_E_SETTINGS_and_use_defaults(make_store: MakeStore) -> None:
    store = make_store({"_CONFIG_STORE": "tag_root: [/labels]\n"})
    [diag] = store.diagnostics
    assert (diag.code, diag.file, diag.line, diag.col) == ("E_SETTINGS", "store/_CONFIG_STORE", 1, 1)
    assert diag.message == "unknown setting 'tag_root' (did you mean 'tag_roots'?)"
    assert store.settings.tag_roots == ("/tags",)


def test_discover_reads_a_ref_not_the_worktree(make_store: MakeStore, store_repo: GitRepo) -> None:
    make_store({"data/x/main.conf": "a = 1\n"}, commit=True)
    store_repo.write({"data/y/main.conf": "uncommitted\n"}, under="store/")
    assert "/data/y" not in discover(GitSource(store_repo.root, "HEAD")).nodes
    assert "/data/y" in discover(WorkTreeSource(store_repo.root)).nodes


@pytest.mark.parametrize("commit", [False, True], ids=["worktree", "git"])
def test_relaid_is_what_discover_finds_in_a_store_of_the_same_shape(
    make_store: MakeStore, store_repo: GitRepo, commit: bool
) -> None:
    first = make_store(
        {"_CONFIG_STORE": "", "a/includes": "/b\n", "b/includes": "/c\n${x}\n", "b/includes.conf": "/a\n",
         "c/main.conf": "c = 1\n", "Bad Dir/main.conf": "x = 1\n"},
        commit=commit,
    )  # fmt: skip
    assert {d.code for d in first.diagnostics} == {"E_UNDECLARED_VARIABLE", "E_DUPLICATE_INCLUDES", "E_BAD_KEY"}
    store_repo.write({"c/main.conf": "c = 2\n"}, under="store/")  # a main.conf changed: the same shape
    if commit:
        store_repo.commit()
    source = GitSource(store_repo.root, "HEAD") if commit else WorkTreeSource(store_repo.root)
    mains = [k for k, node in first.nodes.items() if node.main is not None]
    again = relaid(source, list(first.nodes), mains, first.includes_read, first.diagnostics)
    assert not {p.rpartition("/")[2] for p in source._cache} & {"includes", "includes.conf"}  # none read
    assert again.includes_read["/b"] is first.includes_read["/b"]
    assert again.nodes["/c"].main != first.nodes["/c"].main  # the new blob id
    found = discover(source)
    assert (again.nodes, again.diagnostics, again.includes_read, again.settings, again.settings_file) == (
        found.nodes,
        found.diagnostics,
        found.includes_read,
        found.settings,
        found.settings_file,
    )
