from __future__ import annotations

from cfgtool.store.includes import (
    IncludeLine,
    VariableUse,
    expand,
    parse_includes,
    undeclared,
    variables_used,
)

FILE = "store/data/x/includes"
TEXT = """\
# tags of x
/tags/retention/LONG   # keep a year
  tags/priority/HIGH

/tags/cluster/${local_cluster.name}
${?team}/tags/team   # only when team is set
/tags/${a}/${?b}
"""


def test_parse_includes_keeps_line_col_and_template() -> None:
    lines, diags = parse_includes(TEXT, FILE, "/data/x")
    assert diags == []
    assert [(ln.line, ln.col, ln.template) for ln in lines] == [
        (2, 1, "/tags/retention/LONG"),
        (3, 3, "tags/priority/HIGH"),
        (5, 1, "/tags/cluster/${local_cluster.name}"),
        (6, 1, "${?team}/tags/team"),
        (7, 1, "/tags/${a}/${?b}"),
    ]
    assert lines[0].text == "/tags/retention/LONG   # keep a year"
    assert lines[2].variables == (VariableUse("local_cluster.name", False, 15),)
    assert lines[4].variables == (VariableUse("a", False, 7), VariableUse("b", True, 12))
    assert variables_used(lines) == {"local_cluster.name", "team", "a", "b"}


def test_parse_includes_handles_bom_crlf_and_blank_files() -> None:
    lines, _ = parse_includes("\ufeff/tags/a\r\n\r\n/tags/b\r\n", FILE)
    assert [(ln.line, ln.template) for ln in lines] == [(1, "/tags/a"), (3, "/tags/b")]
    assert parse_includes("", FILE) == ([], [])
    assert parse_includes("   # nothing\n\n", FILE) == ([], [])


def test_parse_includes_malformed_variable_reports_E_SYNTAX() -> None:
    lines, diags = parse_includes("/tags/a\n  /tags/${x\n/tags/${x}/${\n", FILE, "/data/x")
    assert [ln.template for ln in lines] == ["/tags/a"]
    assert [(d.code, d.file, d.line, d.col, d.key) for d in diags] == [
        ("E_SYNTAX", FILE, 2, 9, "/data/x"),
        ("E_SYNTAX", FILE, 3, 12, "/data/x"),
    ]
    assert diags[0].message == "malformed variable in '/tags/${x': write ${name} or ${?name}"


def test_undeclared_reports_E_UNDECLARED_VARIABLE_at_each_use() -> None:
    lines, _ = parse_includes(TEXT, FILE)
    diags = undeclared(lines, {"local_cluster.name", "a", "b"}, FILE, "/data/x")
    assert [(d.code, d.file, d.line, d.col, d.message) for d in diags] == [
        ("E_UNDECLARED_VARIABLE", FILE, 6, 1, "variable 'team' is not declared in _CONFIG_STORE")
    ]


def test_expand_applies_variables_and_drops_undefined_optional_lines() -> None:
    lines, _ = parse_includes(TEXT, FILE)
    imports, diags = expand(lines, {"local_cluster.name": "ltx1", "a": "x"}, file=FILE, key="/data/x")
    assert diags == []
    assert [(i.key, i.line.line) for i in imports] == [
        ("/tags/retention/LONG", 2),
        ("/tags/priority/HIGH", 3),
        ("/tags/cluster/ltx1", 5),
    ]
    imports, _ = expand(lines, {"local_cluster.name": "lva1", "a": "x", "b": "y", "team": "t1"}, file=FILE, key="/x")
    assert [i.key for i in imports][2:] == ["/tags/cluster/lva1", "/t1/tags/team", "/tags/x/y"]


def test_expand_required_variable_without_value_reports_E_UNRESOLVED_VARIABLE() -> None:
    lines, _ = parse_includes(TEXT, FILE)
    imports, diags = expand(lines, {"a": "x"}, file=FILE, key="/data/x")
    assert [i.key for i in imports] == ["/tags/retention/LONG", "/tags/priority/HIGH"]
    assert [(d.code, d.file, d.line, d.col, d.key, d.message) for d in diags] == [
        (
            "E_UNRESOLVED_VARIABLE",
            FILE,
            5,
            15,
            "/data/x",
            "variable 'local_cluster.name' has no value and no default",
        )
    ]


def test_expand_skips_lines_with_undeclared_variables() -> None:
    lines, _ = parse_includes("/tags/${nope}\n/tags/a\n", FILE)
    imports, diags = expand(lines, {}, file=FILE, key="/x", declared={"other"})
    assert [i.key for i in imports] == ["/tags/a"] and diags == []


def test_expand_bad_import_path_reports_E_BAD_KEY_with_values_used() -> None:
    lines, _ = parse_includes("/tags/a\n/tags/bad name\n/tags/${v}\ndemo:/tags/b\n", FILE)
    imports, diags = expand(lines, {"v": "_x"}, file=FILE, key="/data/x", store_name="demo")
    assert [i.key for i in imports] == ["/tags/a", "/tags/b"]
    assert [(d.code, d.line, d.col, d.message, d.notes) for d in diags] == [
        ("E_BAD_KEY", 2, 1, "cannot import '/tags/bad name': has an invalid segment 'bad name'", ()),
        ("E_BAD_KEY", 3, 1, "cannot import '/tags/_x': has an invalid segment '_x'", ("with v=_x",)),
    ]


def test_include_line_is_a_value() -> None:
    assert IncludeLine("/a", 1, 1, "/a") == IncludeLine("/a", 1, 1, "/a")
