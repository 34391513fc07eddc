"""`cfgtool.compile.compiler.compile_store` on real git repositories: every diagnostic code compile can emit, with its
file, line, column and message; variables checked per declared value; refs versus the working tree."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cfgtool.compile.compiler import CompileResult, compile_store
from cfgtool.diagnostics import Diagnostic

if TYPE_CHECKING:
    from tests.conftest import GitRepo

Compile = Callable[..., CompileResult]


@pytest.fixture
def compile_files(store_repo: GitRepo) -> Compile:
    """`compile_files(files, commit=False, **kwargs)`: write files under store/ and compile the store (at HEAD
    when `commit`, else the working tree)."""

    def run(files: Mapping[str, str | bytes | None], commit: bool = False, **kwargs: object) -> CompileResult:
        store_repo.write(files, under="store/")
        if commit:
            store_repo.commit()
            kwargs.setdefault("ref", "HEAD")
        return compile_store(store_repo.root, **kwargs)  # type: ignore[arg-type]

    return run


def only(result: CompileResult, code: str) -> Diagnostic:
    """The single diagnostic with `code` (failing with every diagnostic when there is not exactly one)."""
    found = [d for d in result.diagnostics if d.code == code]
    assert len(found) == 1, result.diagnostics
    return found[0]


def where(d: Diagnostic) -> tuple[str | None, str | None, int | None, int | None]:
    return d.key, d.file, d.line, d.col


# ------------------------------------------------------------------------------------------ clean stores


def test_compile_embedded_store_is_clean(embedded_repo: GitRepo) -> None:
    result = compile_store(embedded_repo.root)
    assert result.diagnostics == ()
    assert result.ok(strict=True)
    assert len(result.snapshot.nodes) == len(result.store.nodes) >= 40
    assert result.snapshot.name == "demo"
    assert [dict(a) for a in result.checked] == [{"local_cluster.name": "ltx1"}, {"local_cluster.name": "lva1"}]


def test_compile_reads_the_ref_not_the_working_tree(compile_files: Compile, store_repo: GitRepo) -> None:
    committed = compile_files({"main.conf": "a = 1\n"}, commit=True)
    store_repo.write({"store/main.conf": "a = {\n"})
    at_ref = compile_store(store_repo.root, ref="HEAD")
    worktree = compile_store(store_repo.root)
    assert at_ref.ok() and at_ref.snapshot.nodes["/"].config == {"a": 1}
    assert at_ref.snapshot.digest == committed.snapshot.digest
    assert only(worktree, "E_SYNTAX").file == "store/main.conf"
    assert worktree.snapshot.source.dirty and not at_ref.snapshot.source.dirty


# ------------------------------------------------------------------------------------------ parse and discovery


@pytest.mark.parametrize("commit", [False, True], ids=["worktree", "git"])
def test_compile_syntax_error_in_main_conf_reports_E_SYNTAX(compile_files: Compile, commit: bool) -> None:
    result = compile_files({"main.conf": "ok = 1\n", "data/x/main.conf": "a = 1\nb = {\n  c = 2\n"}, commit=commit)
    d = only(result, "E_SYNTAX")
    assert where(d) == ("/data/x", "store/data/x/main.conf", 4, 1)
    assert "unclosed object" in d.message
    assert "/data/x" in result.snapshot.failed and "/" not in result.snapshot.failed  # the others still resolve


def test_compile_syntax_error_in_includes_reports_E_SYNTAX(compile_files: Compile) -> None:
    result = compile_files({"tags/t/main.conf": "a = 1\n", "data/x/includes": "/tags/t\n/tags/${oops\n"})
    d = only(result, "E_SYNTAX")
    assert where(d) == ("/data/x", "store/data/x/includes", 2, 7)
    assert "malformed variable in '/tags/${oops'" in d.message


def test_compile_syntax_error_in_included_hocon_file_points_at_that_file(compile_files: Compile) -> None:
    result = compile_files({"data/main.conf": 'a = 1\ninclude "common.conf"\n', "data/common.conf": "b = [\n"})
    d = only(result, "E_SYNTAX")
    assert where(d) == ("/data", "store/data/common.conf", 2, 1)
    assert "unclosed array" in d.message


def test_compile_layer_syntax_error_is_reported_once_not_per_importer(compile_files: Compile) -> None:
    files = {"tags/t/main.conf": "a = [\n"} | {f"data/d{i}/includes": "/tags/t\n" for i in range(6)}
    result = compile_files(files)
    assert [d.code for d in result.diagnostics] == ["E_SYNTAX"]
    assert {k for k in result.snapshot.failed if k.startswith("/data/d")} == {f"/data/d{i}" for i in range(6)}


def test_compile_bad_directory_name_reports_E_BAD_KEY(compile_files: Compile) -> None:
    result = compile_files({"data/bad name/main.conf": "a = 1\n", "data/good/main.conf": "a = 2\n"})
    d = only(result, "E_BAD_KEY")
    assert (d.file, d.line) == ("store/data/bad name", None)
    assert "directory name 'bad name' is not a valid key segment" in d.message
    assert "/data/good" in result.snapshot.nodes


def test_compile_bad_import_path_reports_E_BAD_KEY(compile_files: Compile) -> None:
    result = compile_files({"data/x/includes": "# comment\n/tags/bad name\n"})
    d = only(result, "E_BAD_KEY")
    assert where(d) == ("/data/x", "store/data/x/includes", 2, 1)
    assert d.message == "cannot import '/tags/bad name': has an invalid segment 'bad name'"


def test_compile_unknown_setting_reports_E_SETTINGS(compile_files: Compile) -> None:
    result = compile_files({"_CONFIG_STORE": "name: demo\ntag_rots: [/tags]\n"})
    d = only(result, "E_SETTINGS")
    assert where(d) == (None, "store/_CONFIG_STORE", 2, 1)
    assert "unknown setting 'tag_rots'" in d.message


def test_compile_wrong_setting_type_reports_E_SETTINGS(compile_files: Compile) -> None:
    result = compile_files({"_CONFIG_STORE": "variables:\n  cl:\n    values: []\n"})
    d = only(result, "E_SETTINGS")
    assert (d.file, d.line) == ("store/_CONFIG_STORE", 3)
    assert "variables.cl.values" in d.message


def test_compile_includes_and_includes_conf_report_E_DUPLICATE_INCLUDES(compile_files: Compile) -> None:
    result = compile_files({"tags/t/main.conf": "a = 1\n", "data/x/includes": "/tags/t\n", "data/x/includes.conf": ""})
    d = only(result, "E_DUPLICATE_INCLUDES")
    assert where(d) == ("/data/x", "store/data/x/includes.conf", None, None)
    assert d.message == "/data/x has both includes and includes.conf; includes.conf is ignored"


def test_compile_includes_conf_alone_is_accepted(compile_files: Compile) -> None:
    result = compile_files({"tags/t/main.conf": "a = 1\n", "data/x/includes.conf": "/tags/t\n"})
    assert result.diagnostics == ()
    assert result.snapshot.nodes["/data/x"].config == {"a": 1}


def test_compile_hocon_url_include_reports_E_UNSUPPORTED_INCLUDE(compile_files: Compile) -> None:
    result = compile_files({"data/main.conf": 'a = 1\ninclude url("http://example.com/x.conf")\n'})
    d = only(result, "E_UNSUPPORTED_INCLUDE")
    assert where(d) == ("/data", "store/data/main.conf", 2, 1)
    assert d.message.startswith("include url(...) is not supported")


def test_compile_hocon_include_outside_the_store_reports_E_UNSUPPORTED_INCLUDE(compile_files: Compile) -> None:
    result = compile_files({"data/main.conf": 'include "../../../etc/passwd"\n'})
    d = only(result, "E_UNSUPPORTED_INCLUDE")
    assert (d.file, d.line) == ("store/data/main.conf", 1)
    assert "outside the store" in d.message


def test_compile_missing_required_include_reports_E_INCLUDE(compile_files: Compile) -> None:
    result = compile_files({"data/main.conf": 'a = 1\ninclude required("nope.conf")\n'})
    d = only(result, "E_INCLUDE")
    assert where(d) == ("/data", "store/data/main.conf", 2, 1)
    assert "required include 'nope.conf' not found" in d.message


def test_compile_deep_nesting_reports_E_LIMIT(compile_files: Compile) -> None:
    result = compile_files({"data/main.conf": "a = " + "[" * 2000 + "]" * 2000 + "\n"})
    d = only(result, "E_LIMIT")
    assert (d.file, d.line) == ("store/data/main.conf", 1)
    assert "nested deeper than" in d.message


# ------------------------------------------------------------------------------------------ imports


def test_compile_import_without_node_reports_E_MISSING_IMPORT(compile_files: Compile) -> None:
    result = compile_files({"tags/long/main.conf": "a = 1\n", "data/x/includes": "/tags/long\n/tags/lnog\n"})
    d = only(result, "E_MISSING_IMPORT")
    assert where(d) == ("/data/x", "store/data/x/includes", 2, 1)
    assert d.message == "/data/x imports /tags/lnog, which has no node"


def test_compile_import_cycle_reports_E_CYCLE_once_with_the_path(compile_files: Compile) -> None:
    result = compile_files({"a/includes": "/b\n", "b/includes": "/a\n", "c/includes": "/a\n", "d/main.conf": "x=1\n"})
    d = only(result, "E_CYCLE")
    assert (d.file, d.line, d.col) in {("store/a/includes", 1, 1), ("store/b/includes", 1, 1)}
    assert "import cycle /a -> /b -> /a" in d.message or "import cycle /b -> /a -> /b" in d.message
    assert set(result.snapshot.nodes) - result.snapshot.failed == {"/", "/d"}  # /c is behind the cycle


def test_compile_self_import_reports_E_CYCLE(compile_files: Compile) -> None:
    d = only(compile_files({"data/x/includes": "/data/x\n"}), "E_CYCLE")
    assert where(d) == ("/data/x", "store/data/x/includes", 1, 1)
    assert d.message == "/data/x imports itself (import cycle /data/x -> /data/x)"


def test_compile_descendant_import_reports_E_CYCLE(compile_files: Compile) -> None:
    d = only(compile_files({"data/includes": "/data/x\n", "data/x/main.conf": "a = 1\n"}), "E_CYCLE")
    assert where(d) == ("/data", "store/data/includes", 1, 1)
    assert d.message.startswith("/data imports its own descendant /data/x")


def test_compile_undeclared_variable_reports_E_UNDECLARED_VARIABLE(compile_files: Compile) -> None:
    result = compile_files({"tags/c/a1/main.conf": "a = 1\n", "data/includes": "# cluster\n/tags/c/${?cluster}\n"})
    d = only(result, "E_UNDECLARED_VARIABLE")
    assert where(d) == ("/data", "store/data/includes", 2, 9)
    assert d.message == "variable 'cluster' is not declared in _CONFIG_STORE"


def test_compile_never_reports_E_UNRESOLVED_VARIABLE_for_declared_variables(compile_files: Compile) -> None:
    # E_UNRESOLVED_VARIABLE needs a required variable without a value; compile gives every declared variable
    # one (its default, else its first value) and checks the others, so it cannot occur here.
    settings = "variables:\n  cl:\n    values: [a1, b1]\n"
    result = compile_files(
        {"_CONFIG_STORE": settings, "data/includes": "/tags/c/${cl}\n", "tags/c/a1/main.conf": "x = 1\n"}
    )
    assert {d.code for d in result.diagnostics} == {"E_MISSING_IMPORT"}  # b1 has no tag
    assert result.snapshot.variables == {"cl": "a1"}


def test_compile_checks_every_declared_variable_value(compile_files: Compile) -> None:
    settings = "variables:\n  cl:\n    values: [a1, b1]\n    default: a1\n"
    result = compile_files(
        {"_CONFIG_STORE": settings, "data/includes": "/tags/c/${cl}\n", "tags/c/a1/main.conf": "x = 1\n"}
    )
    d = only(result, "E_MISSING_IMPORT")
    assert where(d) == ("/data", "store/data/includes", 1, 1)
    assert d.message == "/data imports /tags/c/b1, which has no node"
    assert "with cl=b1" in d.notes
    assert [dict(a) for a in result.checked] == [{"cl": "a1"}, {"cl": "b1"}]


def test_compile_given_variable_is_the_only_value_checked(compile_files: Compile) -> None:
    settings = "variables:\n  cl:\n    values: [a1, b1]\n"
    files = {"_CONFIG_STORE": settings, "data/includes": "/tags/c/${cl}\n", "tags/c/a1/main.conf": "x = 1\n"}
    result = compile_files(files, variables={"cl": "a1"})
    assert result.diagnostics == ()
    assert [dict(a) for a in result.checked] == [{"cl": "a1"}]
    assert result.snapshot.nodes["/data"].config == {"x": 1}


def test_compile_repeated_import_reports_W_DUPLICATE_IMPORT(compile_files: Compile) -> None:
    result = compile_files({"tags/t/main.conf": "a = 1\n", "data/x/includes": "/tags/t\n\n/tags/t  # again\n"})
    d = only(result, "W_DUPLICATE_IMPORT")
    assert where(d) == ("/data/x", "store/data/x/includes", 3, 1)
    assert d.severity == "warning"
    assert d.message == "/tags/t is already imported on line 1; this line has no effect"
    assert result.ok() and not result.ok(strict=True)


def test_compile_ancestor_import_reports_W_REDUNDANT_IMPORT(compile_files: Compile) -> None:
    d = only(compile_files({"data/main.conf": "a = 1\n", "data/x/includes": "/data\n"}), "W_REDUNDANT_IMPORT")
    assert where(d) == ("/data/x", "store/data/x/includes", 1, 1)
    assert d.message == "/data is an ancestor of /data/x, which inherits it anyway; this line has no effect"


def test_compile_contradicted_include_order_reports_W_IMPORT_ORDER(compile_files: Compile) -> None:
    files = {"tags/a/includes": "/tags/b\n", "tags/b/main.conf": "x = 1\n", "data/x/includes": "/tags/a\n/tags/b\n"}
    result = compile_files(files)
    d = only(result, "W_IMPORT_ORDER")
    assert where(d) == ("/data/x", "store/data/x/includes", 2, 1)
    assert d.message.startswith("/tags/b is listed after /tags/a (line 1) but ranks below it")
    assert result.snapshot.linearization("/data/x") == ("/data/x", "/tags/a", "/tags/b", "/tags", "/data", "/")


# ------------------------------------------------------------------------------------------ resolution


def test_compile_missing_reference_reports_E_UNRESOLVED_REF(compile_files: Compile) -> None:
    d = only(compile_files({"data/x/main.conf": "a = 1\nb = ${nope}\n"}), "E_UNRESOLVED_REF")
    assert where(d) == ("/data/x", "store/data/x/main.conf", 2, 5)
    assert d.message.startswith("could not resolve substitution ${nope}")


def test_compile_missing_reference_suggests_a_close_path(compile_files: Compile) -> None:
    """`${owners}` where `owner` is set (in this layer or another), `${cfgtool.nam}` for the intrinsic."""
    files = {"main.conf": "owner = ops\n", "data/x/main.conf": "b = ${owners}\nc = ${cfgtool.nam}\n"}
    found = [d for d in compile_files(files).diagnostics if d.code == "E_UNRESOLVED_REF"]
    assert [d.notes for d in found] == [("did you mean ${owner}?",)]  # the first error stops the node
    files["data/x/main.conf"] = "c = ${cfgtool.nam}\n"
    (d,) = [d for d in compile_files(files).diagnostics if d.code == "E_UNRESOLVED_REF"]
    assert d.notes == ("did you mean ${cfgtool.name}?",)


def test_compile_reference_cycle_reports_E_REF_CYCLE(compile_files: Compile) -> None:
    d = only(compile_files({"data/x/main.conf": "p = ${q}\nq = ${p}\n"}), "E_REF_CYCLE")
    assert (d.key, d.file) == ("/data/x", "store/data/x/main.conf")
    assert d.line in {1, 2}
    assert "is part of a cycle" in d.message


def test_compile_append_to_object_reports_E_TYPE(compile_files: Compile) -> None:
    d = only(compile_files({"data/x/main.conf": "o { a = 1 }\no += 2\n"}), "E_TYPE")
    assert where(d) == ("/data/x", "store/data/x/main.conf", 2, 3)
    assert d.message.startswith("cannot append with '+=' at 'o': the value before it is an object")


def test_compile_concatenating_object_and_array_names_the_concatenation(compile_files: Compile) -> None:
    d = only(compile_files({"data/x/main.conf": "o { a = 1 }\np = ${o} [2]\n"}), "E_TYPE")
    assert d.message.startswith("cannot concatenate object")
    assert "+=" not in d.message


def test_compile_default_failing_in_many_nodes_is_one_diagnostic_per_node_at_one_place(compile_files: Compile) -> None:
    files = {"main.conf": "a = 1\nb = ${missing}\n"} | {f"data/d{i}/main.conf": f"x = {i}\n" for i in range(10)}
    result = compile_files(files)
    assert {(d.code, d.file, d.line, d.col) for d in result.diagnostics} == {
        ("E_UNRESOLVED_REF", "store/main.conf", 2, 5)
    }
    assert {d.key for d in result.diagnostics} >= {f"/data/d{i}" for i in range(10)}


def test_compile_late_reference_sees_each_nodes_own_values(compile_files: Compile) -> None:
    files = {
        "main.conf": 'path = "/data/"${name}\nname = root\nurn = "u:"${cfgtool.key}\n',
        "data/x/main.conf": "name = events\n",
    }
    result = compile_files(files)
    assert result.diagnostics == ()
    assert result.snapshot.nodes["/data/x"].config == {"path": "/data/events", "name": "events", "urn": "u:/data/x"}


def test_compile_non_utf8_main_conf_reports_E_SYNTAX_at_the_byte(compile_files: Compile) -> None:
    result = compile_files({"data/x/main.conf": b"a = 1\nb = caf\xe9\n"})
    d = only(result, "E_SYNTAX")
    assert (d.key, d.file, d.line, d.col) == ("/data/x", "store/data/x/main.conf", 2, 8)
    assert d.message == "not valid UTF-8 (byte 0xe9); save the file as UTF-8"
    assert "/data/x" in result.snapshot.failed


def test_compile_reuses_cached_nodes_and_resolves_only_what_a_change_reaches(
    compile_files: Compile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cache"))
    files = {"main.conf": "base = 1\n", "data/main.conf": "d = ${base}\n"}
    files |= {f"data/n{i}/main.conf": f"own = {i}\n" for i in range(5)}
    first = compile_files(files)
    assert first.stats == {"parsed": 7, "resolved": 7, "reused": 0, "graphs_reused": 0}
    second = compile_files({"data/n3/main.conf": "own = 33\n"})
    assert second.stats == {"parsed": 1, "resolved": 1, "reused": 6, "graphs_reused": 1}  # same shape
    assert second.snapshot.lookup("/data/n3").config == {"base": 1, "d": 1, "own": 33}
    assert second.snapshot.nodes["/data/n1"].origins["own"].line == 1  # provenance of a reused node
    fresh_cache = tmp_path / "fresh"
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(fresh_cache))
    third = compile_files({})
    assert third.stats["reused"] == 0 and third.snapshot.digest == second.snapshot.digest


def test_compile_required_variable_without_value_is_E_UNRESOLVED_VARIABLE_for_reads(compile_files: Compile) -> None:
    settings = "variables:\n  cl:\n    values: [a1, b1]\n"  # no default: readers must pass a value
    files = {"_CONFIG_STORE": settings, "data/includes": "/tags/c/${cl}\n"}
    files |= {"tags/c/a1/main.conf": "x = 1\n", "tags/c/b1/main.conf": "x = 2\n"}
    checked = compile_files(files)  # compile checks every value instead
    assert checked.errors == 0 and len(checked.checked) == 2
    read = compile_files({}, check_variables=False)
    d = only(read, "E_UNRESOLVED_VARIABLE")
    assert (d.key, d.file, d.line) == ("/data", "store/data/includes", 1)
    assert compile_files({}, check_variables=False, variables={"cl": "b1"}).snapshot.lookup("/data").config == {"x": 2}


def test_compile_error_under_every_variable_value_is_reported_once(compile_files: Compile) -> None:
    settings = "variables:\n  cl:\n    values: [a1, b1]\n    default: a1\n"
    files = {"_CONFIG_STORE": settings, "data/includes": "/tags/c/${cl}\n", "data/x/main.conf": "y = ${nope}\n"}
    files |= {"tags/c/a1/main.conf": "x = 1\n", "tags/c/b1/main.conf": "x = 2\n"}
    result = compile_files(files)
    d = only(result, "E_UNRESOLVED_REF")
    assert (d.key, d.file, d.line) == ("/data/x", "store/data/x/main.conf", 1)
    assert result.errors == 1


def test_compile_output_file_has_ordinary_permissions(compile_files: Compile, tmp_path: Path) -> None:
    from cfgtool.snapshot.model import save

    result = compile_files({"main.conf": "a = 1\n"})
    target = tmp_path / "snapshot.json"
    save(result.snapshot, target)
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask
