"""Golden-text tests of the diagnostic renderers, and the code registry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cfgtool.diagnostics import (
    CODES,
    Diagnostic,
    group,
    render_github,
    render_json,
    render_markdown,
    render_text,
    severity_of,
    summary_line,
)

DOCS = Path(__file__).resolve().parents[1] / "docs" / "compile.md"
SOURCES = {
    "store/data/x/includes": "/tags/t\n/tags/missing   # typo\n",
    "store/main.conf": 'path = "/data/"${nam}\n\tx = ${y}\n',
}


def read_line(file: str, line: int) -> str | None:
    lines = SOURCES.get(file, "").splitlines()
    return lines[line - 1] if 1 <= line <= len(lines) else None


MISSING = Diagnostic.of(
    "E_MISSING_IMPORT",
    "/data/x imports /tags/missing, which has no node",
    key="/data/x",
    file="store/data/x/includes",
    line=2,
    col=1,
    notes=("did you mean /tags/missin?",),
)
ORDER = Diagnostic.of("W_IMPORT_ORDER", "x ranks below y", key="/a", file="store/main.conf", line=2, col=6)
SETTINGS = Diagnostic.of("E_SETTINGS", "unknown setting 'nmae'", file="store/_CONFIG_STORE", line=1, col=1)


def unresolved(n: int) -> list[Diagnostic]:
    return [
        Diagnostic.of(
            "E_UNRESOLVED_REF",
            "${nam} is not set",
            key=f"/data/d{i:04}",
            file="store/main.conf",
            line=1,
            col=16,
            notes=("defined at /, reached as parent of /data",),
        )
        for i in range(n)
    ]


def test_every_documented_code_is_registered_with_a_description() -> None:
    """docs/compile.md lists the stable codes scripts rely on: each is registered, and the registry documents
    nothing it does not list."""
    documented = re.findall(r"^\| `([EW]_[A-Z_]+)` \|", DOCS.read_text(encoding="utf-8"), flags=re.M)
    assert len(documented) == len(set(documented)) and len(documented) >= 27
    assert set(documented) <= set(CODES), sorted(set(documented) - set(CODES))
    assert set(CODES) <= set(documented), f"document {sorted(set(CODES) - set(documented))} in docs/compile.md"
    assert all(description.endswith(".") and "\n" not in description for description in CODES.values())
    assert all(re.fullmatch(r"[EW]_[A-Z_]+", code) for code in CODES)


def test_severity_follows_the_code_prefix() -> None:
    assert severity_of("E_CYCLE") == "error"
    assert severity_of("W_IMPORT_ORDER") == "warning"
    assert Diagnostic.of("W_DUPLICATE_IMPORT", "m").severity == "warning"
    assert Diagnostic.of("E_SCHEMA", "m").location == ""
    assert Diagnostic.of("E_SCHEMA", "m", file="f").location == "f"
    assert Diagnostic.of("E_SCHEMA", "m", file="f", line=3).location == "f:3"


def test_render_text_shows_location_source_line_caret_and_notes() -> None:
    assert render_text([ORDER, MISSING, SETTINGS], read_line) == (
        "store/_CONFIG_STORE:1:1: E_SETTINGS unknown setting 'nmae'\n"
        "store/data/x/includes:2:1: E_MISSING_IMPORT /data/x imports /tags/missing, which has no node\n"
        "   2 | /tags/missing   # typo\n"
        "     | ^\n"
        "  = note: did you mean /tags/missin?\n"
        "store/main.conf:2:6: W_IMPORT_ORDER x ranks below y (in /a)\n"
        "   2 | \tx = ${y}\n"
        "     | \t    ^\n"
        "\n"
        "Found 2 errors, 1 warning.\n"
    )


def test_render_text_groups_many_nodes_failing_the_same_way() -> None:
    assert render_text(unresolved(1243), read_line, summary=False) == (
        "store/main.conf:1:16: E_UNRESOLVED_REF ${nam} is not set"
        " (in 1,243 nodes: /data/d0000, /data/d0001, /data/d0002, ... and 1,240 more)\n"
        '   1 | path = "/data/"${nam}\n'
        "     |                ^\n"
        "  = note: defined at /, reached as parent of /data\n"
    )


def test_render_text_fewer_than_five_nodes_are_listed_one_by_one() -> None:
    text = render_text(unresolved(4), read_line, summary=False)
    assert [line for line in text.splitlines() if "E_UNRESOLVED_REF" in line] == [
        f"store/main.conf:1:16: E_UNRESOLVED_REF ${{nam}} is not set (in /data/d000{i})" for i in range(4)
    ]
    assert len(group(unresolved(5))) == 1


def test_render_text_without_file_or_source_and_with_color() -> None:
    no_file = Diagnostic.of("E_POLICY_ERROR", "policy crashed: KeyError 'x'", key="/data/x")
    no_source = Diagnostic.of("E_BAD_KEY", "directory name 'a b' is not valid", key="/d", file="store/d/a b")
    assert render_text([no_file, no_source], read_line) == (
        "E_POLICY_ERROR policy crashed: KeyError 'x' (in /data/x)\n"
        "store/d/a b: E_BAD_KEY directory name 'a b' is not valid (in /d)\n"
        "\n"
        "Found 2 errors, 0 warnings.\n"
    )
    assert render_text([SETTINGS], read_line, color=True, summary=False) == (
        "\x1b[1mstore/_CONFIG_STORE:1:1\x1b[0m: \x1b[1m\x1b[31mE_SETTINGS\x1b[0m unknown setting 'nmae'\n"
    )
    assert render_text([], read_line) == "Found no problems.\n"
    assert render_text([], read_line, summary=False) == ""


def test_render_text_counts_duplicates_once() -> None:
    assert summary_line([MISSING, MISSING, ORDER]) == "1 error, 1 warning"
    assert render_text([MISSING, MISSING], read_line).count("E_MISSING_IMPORT") == 1


def test_render_json_lists_every_diagnostic_in_the_design_7_envelope() -> None:
    text = render_json(
        [ORDER, MISSING],
        store="store",
        source={"ref": None, "commit": "abc123", "dirty": False},
        variables={"local_cluster.name": ["ltx1", "lva1"]},
        nodes=42,
    )
    doc = json.loads(text)
    assert list(doc) == ["store", "source", "variables", "nodes", "errors", "warnings", "diagnostics"]
    assert (doc["errors"], doc["warnings"], doc["nodes"]) == (1, 1, 42)
    assert doc["diagnostics"][0] == {
        "code": "E_MISSING_IMPORT",
        "severity": "error",
        "key": "/data/x",
        "file": "store/data/x/includes",
        "line": 2,
        "col": 1,
        "message": "/data/x imports /tags/missing, which has no node",
        "notes": ["did you mean /tags/missin?"],
    }
    assert len(json.loads(render_json(unresolved(7)))["diagnostics"]) == 7  # machines get no grouping


def test_render_github_emits_escaped_workflow_commands() -> None:
    tricky = Diagnostic.of(
        "E_SCHEMA",
        "100% wrong:\r\nline two",
        key="/k",
        file="store/a,b:c/main.conf",
        line=3,
        col=7,
    )
    assert render_github([SETTINGS, ORDER, tricky, *unresolved(6)]) == (
        "::error file=store/_CONFIG_STORE,line=1,col=1,title=E_SETTINGS::unknown setting 'nmae'\n"
        "::error file=store/a%2Cb%3Ac/main.conf,line=3,col=7,title=E_SCHEMA::100%25 wrong:%0D%0Aline two (in /k)\n"
        "::error file=store/main.conf,line=1,col=16,title=E_UNRESOLVED_REF::${nam} is not set"
        " (in 6 nodes: /data/d0000, /data/d0001, /data/d0002, ... and 3 more)%0A"
        "defined at /, reached as parent of /data\n"
        "::warning file=store/main.conf,line=2,col=6,title=W_IMPORT_ORDER::x ranks below y (in /a)\n"
    )
    assert render_github([Diagnostic.of("E_POLICY", "no place")]) == "::error title=E_POLICY::no place\n"
    assert render_github([]) == ""


def test_render_markdown_pr_summary_with_counts_and_grouped_table() -> None:
    assert render_markdown([ORDER, MISSING, *unresolved(6)]) == (
        "### :x: cfgtool compile: 7 errors, 1 warning\n"
        "\n"
        "| Code | Count | Meaning |\n"
        "| --- | ---: | --- |\n"
        "| `E_MISSING_IMPORT` | 1 | An includes line names a key that has no node. |\n"
        "| `E_UNRESOLVED_REF` | 6 | A \\${...} substitution names a path that is not set. |\n"
        "| `W_IMPORT_ORDER` | 1 | An earlier import pulls in a later one, so the later one loses its priority. |\n"
        "\n"
        "| | Code | Location | Message |\n"
        "| --- | --- | --- | --- |\n"
        "| :x: | `E_MISSING_IMPORT` | `store/data/x/includes:2:1` |"
        " /data/x imports /tags/missing, which has no node<br>did you mean /tags/missin? |\n"
        "| :x: | `E_UNRESOLVED_REF` | `store/main.conf:1:16` | \\${nam} is not set"
        " (in 6 nodes: /data/d0000, /data/d0001, /data/d0002, ... and 3 more)<br>"
        "defined at /, reached as parent of /data |\n"
        "| :warning: | `W_IMPORT_ORDER` | `store/main.conf:2:6` | x ranks below y (in /a) |\n"
    )


@pytest.mark.parametrize(
    ("diags", "head"),
    [([], "### :white_check_mark: cfgtool compile: no problems"), ([ORDER], "### :warning: cfgtool compile:")],
)
def test_render_markdown_status_line(diags: list[Diagnostic], head: str) -> None:
    assert render_markdown(diags).startswith(head)


def test_render_markdown_escapes_table_breakers() -> None:
    diag = Diagnostic.of("E_SCHEMA", "a | b <script> *x*", file="store/m.conf", line=1, col=1)
    assert "| a \\| b \\<script\\> \\*x\\* |" in render_markdown([diag])


def test_render_text_shows_one_cause_once_with_where_else_and_bounds_the_causes() -> None:
    denied = [
        Diagnostic.of(
            "E_ACCESS_DENIED",
            f"User:bob may not alter /data/t{i:02}: no entry allows it",
            key=f"/data/t{i:02}",
            file=f"store/data/t{i:02}/main.conf",
        )
        for i in range(60)
    ]
    text = render_text(denied, read_line, summary=False).splitlines()
    assert text == [
        "store/data/t00/main.conf: E_ACCESS_DENIED User:bob may not alter /data/t00: no entry allows it",
        "  = the same at 59 more places: store/data/t01/main.conf (/data/t01), store/data/t02/main.conf (/data/t02),"
        " store/data/t03/main.conf (/data/t03), ... and 56 more: run with --all to list them all",
    ]
    assert len(render_text(denied, read_line, summary=False, limit=None).splitlines()) == 60
    each_its_own = [
        Diagnostic.of("E_SCHEMA", f"x: got {i}", key=f"/d{i:02}", file="store/main.conf") for i in range(60)
    ]
    bounded = render_text(each_its_own, read_line, summary=False).splitlines()
    assert len(bounded) == 51 and bounded[-1] == "... and 10 more causes: run with --all to list them all"
