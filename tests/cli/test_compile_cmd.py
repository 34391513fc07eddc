"""`cfgtool compile`, run as a real subprocess of the installed script against real git repositories: the
embedded example store (a committed copy) and small purpose-built stores."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]  # the run_cfgtool fixture (conftest.py)

SHOP = {
    "_CONFIG_STORE": "name: shop\n",
    "main.conf": "owner = nobody\n",
    "tags/t/main.conf": "tier = 1\n",
    "data/orders/main.conf": "owner = sales\nlink = ${dashboard}\n",
    "data/orders/includes": "/tags/t\n/tags/t\n",
}

SHOP_TEXT = """\
store/data/orders/includes:2:1: W_DUPLICATE_IMPORT /tags/t is already imported on line 1; this line has no effect \
(in /data/orders)
   2 | /tags/t
     | ^
store/data/orders/main.conf:2:8: E_UNRESOLVED_REF could not resolve substitution ${dashboard}: no value is defined \
at 'dashboard'; define it, or write ${?dashboard} to make it optional (in /data/orders)
   2 | link = ${dashboard}
     |        ^

store      shop (store/)
source     working tree at HEAD COMMIT (clean)
nodes      5 (1 dataset, 2 tags, 2 groups), 1 not resolved
variables  none declared
digest     none: the compile has errors
1 error, 1 warning
"""


@pytest.fixture
def make_repo(store_repo: GitRepo) -> Callable[..., GitRepo]:
    """`make_repo(files, commit=True)`: write files under store/ (and commit them) in a fresh repository."""

    def make(files: Mapping[str, str | None], commit: bool = True) -> GitRepo:
        store_repo.write(files, under="store/")
        if commit:
            store_repo.commit()
        return store_repo

    return make


def masked(text: str) -> str:
    """Output with the commit and the digest replaced by placeholders, for golden comparisons."""
    text = re.sub(r"sha256:[0-9a-f]{64}", "sha256:DIGEST", text)
    return re.sub(r"\b(HEAD|commit) [0-9a-f]{7}\b", r"\1 COMMIT", text)


def compile_json(run: Run, repo: GitRepo, *args: str) -> tuple[int, dict[str, Any]]:
    proc = run("compile", "--format", "json", *args, cwd=repo.root)
    assert "Traceback" not in proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# ------------------------------------------------------------------------------------------ embedded store


def test_compile_embedded_store_prints_a_clean_summary(run_cfgtool: Run, embedded_repo: GitRepo) -> None:
    proc = run_cfgtool("compile", cwd=embedded_repo.root)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = masked(proc.stdout).splitlines()
    assert lines[0] == "store      demo (store/)"
    assert lines[1] == "source     working tree at HEAD COMMIT (clean)"
    assert re.fullmatch(r"nodes      (\d+) \((\d+) datasets, (\d+) tags, (\d+) groups\)", lines[2]), lines[2]
    assert lines[3] == "variables  local_cluster.name=ltx1 (checked: ltx1, lva1)"
    assert lines[4] == "digest     sha256:DIGEST"
    assert lines[5:] == ["0 errors, 0 warnings"]
    assert proc.stderr == ""


def test_compile_embedded_store_json(run_cfgtool: Run, embedded_repo: GitRepo) -> None:
    code, doc = compile_json(run_cfgtool, embedded_repo)
    assert code == 0
    head = embedded_repo.git("rev-parse", "HEAD")
    assert list(doc)[:5] == ["store", "name", "source", "variables", "nodes"]
    assert doc["store"] == "store" and doc["name"] == "demo"
    assert doc["source"] == {"ref": None, "commit": head, "dirty": False}
    assert doc["variables"] == {"local_cluster.name": "ltx1"}
    assert doc["nodes"] >= 40 and doc["resolved"] == doc["nodes"]
    assert doc["checked"] == [{"local_cluster.name": "ltx1"}, {"local_cluster.name": "lva1"}]
    assert (doc["errors"], doc["warnings"], doc["diagnostics"]) == (0, 0, [])
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", doc["digest"])


def test_compile_embedded_store_github_and_markdown(run_cfgtool: Run, embedded_repo: GitRepo) -> None:
    github = run_cfgtool("compile", "--format", "github", cwd=embedded_repo.root)
    assert (github.returncode, github.stdout) == (0, "")
    markdown = run_cfgtool("compile", "--format", "markdown", cwd=embedded_repo.root)
    assert markdown.returncode == 0
    assert markdown.stdout.startswith("### :white_check_mark: cfgtool compile: no problems\n")


def test_compile_var_fixes_the_value_checked(run_cfgtool: Run, embedded_repo: GitRepo) -> None:
    code, doc = compile_json(run_cfgtool, embedded_repo, "--var", "local_cluster.name=lva1")
    assert code == 0
    assert doc["variables"] == {"local_cluster.name": "lva1"}
    assert doc["checked"] == [{"local_cluster.name": "lva1"}]


def test_compile_output_writes_the_snapshot(run_cfgtool: Run, embedded_repo: GitRepo, tmp_path: Path) -> None:
    target = tmp_path / "out" / "snapshot.json"
    target.parent.mkdir()
    proc = run_cfgtool("compile", "--output", str(target), "--format", "json", cwd=embedded_repo.root)
    assert proc.returncode == 0, proc.stderr
    snapshot = json.loads(target.read_text(encoding="utf-8"))
    assert snapshot["digest"] == json.loads(proc.stdout)["digest"]
    assert snapshot["schema_version"] == 2
    assert snapshot["nodes"]["/data/tracking/PageViewEvent"]["config"]["kafka"]["partitions"] == 128
    assert not [p.name for p in target.parent.iterdir() if p != target]  # no temporary file left behind


def test_compile_output_is_named_in_the_text_summary(run_cfgtool: Run, embedded_repo: GitRepo, tmp_path: Path) -> None:
    target = tmp_path / "snap.json"
    proc = run_cfgtool("compile", "-o", str(target), cwd=embedded_repo.root)
    assert proc.returncode == 0, proc.stderr
    assert f"snapshot   {target}\n" in proc.stdout
    assert target.is_file()


def test_compile_output_that_cannot_be_written_exits_2(
    run_cfgtool: Run, embedded_repo: GitRepo, tmp_path: Path
) -> None:
    proc = run_cfgtool("compile", "--output", str(tmp_path), cwd=embedded_repo.root)  # a directory
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"cfgtool: error: cannot write {tmp_path}: ")
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [(), ("--color", "auto"), ("--color", "never")])
def test_compile_without_a_terminal_has_no_colour(
    run_cfgtool: Run, make_repo: Callable[..., GitRepo], args: Any
) -> None:
    proc = run_cfgtool("compile", *args, cwd=make_repo(SHOP).root)
    assert proc.returncode == 1
    assert "\x1b[" not in proc.stdout


def test_compile_color_always_paints_the_report(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    proc = run_cfgtool("compile", "--color", "always", cwd=make_repo(SHOP).root)
    assert proc.returncode == 1
    assert "\x1b[1m\x1b[31mE_UNRESOLVED_REF\x1b[0m" in proc.stdout
    assert "\x1b[1m\x1b[33mW_DUPLICATE_IMPORT\x1b[0m" in proc.stdout


# ------------------------------------------------------------------------------------------ problems


def test_compile_text_report_golden(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    proc = run_cfgtool("compile", cwd=make_repo(SHOP).root)
    assert proc.returncode == 1
    assert masked(proc.stdout) == SHOP_TEXT
    assert proc.stderr == ""


def test_compile_json_report_lists_every_diagnostic(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo(SHOP)
    code, doc = compile_json(run_cfgtool, repo)
    assert code == 1
    assert (doc["store"], doc["name"], doc["nodes"], doc["resolved"]) == ("store", "shop", 5, 4)
    assert (doc["errors"], doc["warnings"]) == (1, 1)
    assert doc["diagnostics"] == [
        {
            "code": "W_DUPLICATE_IMPORT",
            "severity": "warning",
            "key": "/data/orders",
            "file": "store/data/orders/includes",
            "line": 2,
            "col": 1,
            "message": "/tags/t is already imported on line 1; this line has no effect",
            "notes": [],
        },
        {
            "code": "E_UNRESOLVED_REF",
            "severity": "error",
            "key": "/data/orders",
            "file": "store/data/orders/main.conf",
            "line": 2,
            "col": 8,
            "message": "could not resolve substitution ${dashboard}: no value is defined at 'dashboard'; define it, "
            "or write ${?dashboard} to make it optional",
            "notes": [],
        },
    ]


def test_compile_github_report_golden(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    proc = run_cfgtool("compile", "--format", "github", cwd=make_repo(SHOP).root)
    assert proc.returncode == 1
    assert proc.stdout == (
        "::warning file=store/data/orders/includes,line=2,col=1,title=W_DUPLICATE_IMPORT::/tags/t is already "
        "imported on line 1; this line has no effect (in /data/orders)\n"
        "::error file=store/data/orders/main.conf,line=2,col=8,title=E_UNRESOLVED_REF::could not resolve "
        "substitution ${dashboard}: no value is defined at 'dashboard'; define it, or write ${?dashboard} to make "
        "it optional (in /data/orders)\n"
    )


def test_compile_markdown_report(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    proc = run_cfgtool("compile", "--format", "markdown", cwd=make_repo(SHOP).root)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "### :x: cfgtool compile: 1 error, 1 warning"
    assert "| `E_UNRESOLVED_REF` | 1 | A \\${...} substitution names a path that is not set. |" in lines
    assert (
        "| :x: | `E_UNRESOLVED_REF` | `store/data/orders/main.conf:2:8` | could not resolve substitution "
        "\\${dashboard}: no value is defined at 'dashboard'; define it, or write \\${?dashboard} to make it "
        "optional (in /data/orders) |"
    ) in lines
    errors_first = [line.split("|")[1].strip() for line in lines if line.startswith("| :")]
    assert errors_first == [":x:", ":warning:"]


def test_compile_output_is_not_written_when_the_compile_fails(
    run_cfgtool: Run, make_repo: Callable[..., GitRepo], tmp_path: Path
) -> None:
    target = tmp_path / "snapshot.json"
    proc = run_cfgtool("compile", "--output", str(target), cwd=make_repo(SHOP).root)
    assert proc.returncode == 1
    assert not target.exists()
    assert "the snapshot was not written" in proc.stderr


def test_compile_warning_passes_but_fails_with_strict(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo({**SHOP, "data/orders/main.conf": "owner = sales\n"})
    relaxed = run_cfgtool("compile", cwd=repo.root)
    strict = run_cfgtool("compile", "--strict", cwd=repo.root)
    assert relaxed.returncode == 0, relaxed.stdout
    assert strict.returncode == 1
    assert strict.stdout == relaxed.stdout
    assert "W_DUPLICATE_IMPORT" in strict.stdout and strict.stdout.endswith("0 errors, 1 warning\n")


def test_compile_ref_reads_the_committed_store(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo({**SHOP, "data/orders/main.conf": "owner = sales\n", "data/orders/includes": "/tags/t\n"})
    repo.write({"store/data/orders/main.conf": "owner = {\n"})  # the working tree is broken
    worktree = run_cfgtool("compile", cwd=repo.root)
    at_ref = run_cfgtool("compile", "--ref", "main", cwd=repo.root)
    assert worktree.returncode == 1
    assert "store/data/orders/main.conf:2:1: E_SYNTAX" in worktree.stdout
    assert "(uncommitted changes)" in worktree.stdout
    assert at_ref.returncode == 0, at_ref.stdout
    assert "source     ref main (commit COMMIT)\n" in masked(at_ref.stdout)


def test_compile_groups_many_nodes_failing_the_same_way(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    files = {"main.conf": "a = 1\nb = ${missing}\n"} | {f"data/d{i}/main.conf": f"x = {i}\n" for i in range(10)}
    repo = make_repo(files)
    proc = run_cfgtool("compile", cwd=repo.root)
    assert proc.returncode == 1
    entries = [line for line in proc.stdout.splitlines() if "E_UNRESOLVED_REF" in line]
    assert entries == [
        "store/main.conf:2:5: E_UNRESOLVED_REF could not resolve substitution ${missing}: no value is defined at "
        "'missing'; define it, or write ${?missing} to make it optional "
        "(in 12 nodes: /, /data, /data/d0, ... and 9 more)"
    ]
    assert "   2 | b = ${missing}\n     |     ^\n" in proc.stdout
    assert proc.stdout.endswith("12 errors, 0 warnings\n")
    github = run_cfgtool("compile", "--format", "github", cwd=repo.root)
    assert len(github.stdout.splitlines()) == 1
    _, doc = compile_json(run_cfgtool, repo)
    assert len(doc["diagnostics"]) == 12  # JSON is for machines: never grouped


@pytest.mark.parametrize(
    ("files", "entry", "excerpt"),
    [
        pytest.param(
            {"data/x/main.conf": "a = 1\nb = {\n"},
            "store/data/x/main.conf:3:1: E_SYNTAX unclosed object: add '}'",
            None,
            id="E_SYNTAX-main.conf",
        ),
        pytest.param(
            {"tags/t/main.conf": "a = 1\n", "data/x/includes": "/tags/t\n/tags/${oops\n"},
            "store/data/x/includes:2:7: E_SYNTAX malformed variable in '/tags/${oops': write ${name} or ${?name}",
            "   2 | /tags/${oops\n     |       ^\n",
            id="E_SYNTAX-includes",
        ),
        pytest.param(
            {"_CONFIG_STORE": "name: shop\ntag_root: [/tags]\n"},
            "store/_CONFIG_STORE:2:1: E_SETTINGS unknown setting 'tag_root'",
            "   2 | tag_root: [/tags]\n     | ^\n",
            id="E_SETTINGS",
        ),
        pytest.param(
            {"data/bad key/main.conf": "a = 1\n"},
            "store/data/bad key: E_BAD_KEY directory name 'bad key' is not a valid key segment",
            None,
            id="E_BAD_KEY",
        ),
        pytest.param(
            {"tags/t/main.conf": "a = 1\n", "data/x/includes": "/tags/t\n", "data/x/includes.conf": "/tags/t\n"},
            "store/data/x/includes.conf: E_DUPLICATE_INCLUDES /data/x has both includes and includes.conf",
            None,
            id="E_DUPLICATE_INCLUDES",
        ),
        pytest.param(
            {"data/x/includes": "\n/tags/nope  # typo\n"},
            "store/data/x/includes:2:1: E_MISSING_IMPORT /data/x imports /tags/nope, which has no node",
            "   2 | /tags/nope  # typo\n     | ^\n",
            id="E_MISSING_IMPORT",
        ),
        pytest.param(
            {"data/x/includes": "/data/x\n"},
            "store/data/x/includes:1:1: E_CYCLE /data/x imports itself (import cycle /data/x -> /data/x)",
            None,
            id="E_CYCLE",
        ),
        pytest.param(
            {"data/x/includes": "/tags/${dc}\n"},
            "store/data/x/includes:1:7: E_UNDECLARED_VARIABLE variable 'dc' is not declared in _CONFIG_STORE",
            "   1 | /tags/${dc}\n     |       ^\n",
            id="E_UNDECLARED_VARIABLE",
        ),
        pytest.param(
            {"data/x/main.conf": "p = ${q}\nq = ${p}\n"},
            "store/data/x/main.conf:2:5: E_REF_CYCLE substitution ${p} is part of a cycle",
            "   2 | q = ${p}\n     |     ^\n  = note: cycle:\n",
            id="E_REF_CYCLE",
        ),
        pytest.param(
            {"data/x/main.conf": "list = [1]\nlist = ${list} {a = 1}\n"},
            "store/data/x/main.conf:2:8: E_TYPE cannot concatenate array (store/data/x/main.conf:1:8), object",
            "   2 | list = ${list} {a = 1}\n     |        ^\n",
            id="E_TYPE",
        ),
        pytest.param(
            {"data/x/main.conf": "a = 1\nb = ${nope}\n"},
            "store/data/x/main.conf:2:5: E_UNRESOLVED_REF could not resolve substitution ${nope}",
            "   2 | b = ${nope}\n     |     ^\n",
            id="E_UNRESOLVED_REF",
        ),
        pytest.param(
            {"tags/t/main.conf": "a = 1\n", "data/x/includes": "/tags/t\n/tags/t\n"},
            "store/data/x/includes:2:1: W_DUPLICATE_IMPORT /tags/t is already imported on line 1",
            "   2 | /tags/t\n     | ^\n",
            id="W_DUPLICATE_IMPORT",
        ),
        pytest.param(
            {"data/x/main.conf": 'include classpath("x.conf")\n'},
            "store/data/x/main.conf:1:1: E_UNSUPPORTED_INCLUDE include classpath(...) is not supported",
            None,
            id="E_UNSUPPORTED_INCLUDE",
        ),
        pytest.param(
            {"data/main.conf": "a = 1\n", "data/x/includes": "/data\n"},
            "store/data/x/includes:1:1: W_REDUNDANT_IMPORT /data is an ancestor of /data/x",
            None,
            id="W_REDUNDANT_IMPORT",
        ),
        pytest.param(
            {"tags/a/includes": "/tags/b\n", "tags/b/main.conf": "x = 1\n", "data/x/includes": "/tags/a\n/tags/b\n"},
            "store/data/x/includes:2:1: W_IMPORT_ORDER /tags/b is listed after /tags/a (line 1) but ranks below it",
            None,
            id="W_IMPORT_ORDER",
        ),
    ],
)
def test_compile_reports_each_code_with_location_and_source_line(
    run_cfgtool: Run, make_repo: Callable[..., GitRepo], files: dict[str, str], entry: str, excerpt: str | None
) -> None:
    repo = make_repo({"_CONFIG_STORE": "name: shop\n", **files})
    proc = run_cfgtool("compile", cwd=repo.root)
    code = entry.split(": ")[1].split()[0]  # "file:line:col: CODE message"
    assert proc.returncode == (0 if code.startswith("W_") else 1), proc.stdout
    assert any(line.startswith(entry) for line in proc.stdout.splitlines()), proc.stdout
    if excerpt is not None:
        assert excerpt in proc.stdout
    _, doc = compile_json(run_cfgtool, repo)
    assert [d["code"] for d in doc["diagnostics"]] == [code]
    file, _, rest = entry.partition(": ")[0].partition(":")
    assert doc["diagnostics"][0]["file"] == file
    if rest:
        line, col = (int(n) for n in rest.split(":"))
        assert (doc["diagnostics"][0]["line"], doc["diagnostics"][0]["col"]) == (line, col)


# ------------------------------------------------------------------------------------------ usage errors


@pytest.mark.parametrize("bad", ["local_cluster.name", "=lva1", "local_cluster.name:lva1"])
def test_compile_malformed_var_is_a_usage_error(run_cfgtool: Run, embedded_repo: GitRepo, bad: str) -> None:
    proc = run_cfgtool("compile", "--var", bad, cwd=embedded_repo.root)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith(f"cfgtool: error: --var {bad!r} is not NAME=VALUE\n  hint: ")


def test_compile_unknown_variable_or_value_is_a_usage_error(run_cfgtool: Run, embedded_repo: GitRepo) -> None:
    unknown = run_cfgtool("compile", "--var", "dc=lva1", cwd=embedded_repo.root)
    assert unknown.returncode == 2
    assert "variable 'dc' is not declared in store/_CONFIG_STORE" in unknown.stderr
    assert "(E_UNDECLARED_VARIABLE; declared: local_cluster.name)" in unknown.stderr
    value = run_cfgtool("compile", "--var", "local_cluster.name=mars", cwd=embedded_repo.root)
    assert value.returncode == 2
    assert "allowed values are ltx1, lva1" in value.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("compile", "--ref", "no-such-ref"), "unknown ref 'no-such-ref'"),
        (("--store", "elsewhere", "compile"), "no store directory 'elsewhere'"),
        (("compile", "--format", "xml"), "xml"),
        (("compile", "--color", "sometimes"), "sometimes"),
    ],
)
def test_compile_usage_and_source_errors_exit_2(
    run_cfgtool: Run, embedded_repo: GitRepo, args: tuple[str, ...], message: str
) -> None:
    proc = run_cfgtool(*args, cwd=embedded_repo.root)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_compile_outside_a_git_repository_exits_2(run_cfgtool: Run, tmp_path: Path) -> None:
    proc = run_cfgtool("compile", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("cfgtool: error: ")


def test_compile_help_documents_options_and_an_example(run_cfgtool: Run) -> None:
    proc = run_cfgtool("compile", "--help", env={"COLUMNS": "200"})
    assert proc.returncode == 0
    for word in ("--ref", "--var", "--format", "--output", "--strict", "--color", "Example", "Exit status"):
        assert word in proc.stdout


def test_output_goes_only_into_an_existing_directory(run_cfgtool: Run, embedded_repo: GitRepo, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "dir" / "snapshot.json"
    proc = run_cfgtool("compile", "-o", str(target), cwd=embedded_repo.root)
    assert proc.returncode == 2, proc.stdout
    assert f"the directory {target.parent} does not exist" in proc.stderr
    assert not (tmp_path / "missing").exists()
    (tmp_path / "out").mkdir()
    assert run_cfgtool("compile", "-o", str(tmp_path / "out" / "s.json"), cwd=embedded_repo.root).returncode == 0


def test_a_failed_compile_has_no_digest(run_cfgtool: Run, work: GitRepo) -> None:
    digests = set()
    for broken in ("a = ${nowhere}\n", "b = [1, \n"):
        (work.root / "store" / "main.conf").write_text(broken, encoding="utf-8")
        proc = run_cfgtool("compile", cwd=work.root)
        assert proc.returncode == 1
        assert "digest     none: the compile has errors" in proc.stdout
        doc = json.loads(run_cfgtool("compile", "--format", "json", cwd=work.root).stdout)
        digests.add(doc["digest"])
    assert digests == {None}


# -- long reports are bounded ---------------------------------------------------------------------

TOPICS = 2000
SCHEMA = "type: object\nproperties:\n  retention: {type: integer}\n  owner: {type: string}\n"


def _many_errors(repo: GitRepo) -> GitRepo:
    """2,000 topics: each breaks the schema its own way (a different retention), and every one the same way (an
    owner that is a number): 2,001 causes, 4,000 errors."""
    files = {f"store/data/t{i:04}/main.conf": f'retention = "r{i}"\nowner = 5\n' for i in range(TOPICS)}
    repo.write({"store/_CONFIG_STORE": "name: big\nschemas: ../schemas\n", "schemas/topic.yaml": SCHEMA, **files})
    repo.commit("many topics")
    return repo


@pytest.mark.long
def test_compile_text_shows_the_first_50_causes_then_how_many_more_and_all_lists_each(
    run_cfgtool: Run, store_repo: GitRepo
) -> None:
    repo = _many_errors(store_repo)
    text = run_cfgtool("compile", cwd=repo.root)
    assert text.returncode == 1
    lines = text.stdout.splitlines()
    assert len(lines) < 260, len(lines)  # 50 causes of at most 4 lines, and the summary
    assert "... and 1,951 more causes: run with --all to list them all" in lines
    owner = lines.index("store/data/t0000/main.conf:2:9: E_SCHEMA owner: expected a string, got an integer 5"
                        " (schema schemas/topic.yaml) (in /data/t0000)")  # fmt: skip
    assert lines[owner + 3] == (
        "  = the same at 1,999 more places: store/data/t0001/main.conf:2:9 (/data/t0001), store/data/t0002/main.conf"
        ":2:9 (/data/t0002), store/data/t0003/main.conf:2:9 (/data/t0003), ... and 1,996 more: run with --all to"
        " list them all"
    )
    assert lines[-1] == "4,000 errors, 0 warnings"
    every = run_cfgtool("compile", "--all", cwd=repo.root)
    assert sum(": E_SCHEMA " in line for line in every.stdout.splitlines()) == 4000
    assert "more causes" not in every.stdout and "the same at" not in every.stdout
    doc = json.loads(run_cfgtool("compile", "--format", "json", cwd=repo.root).stdout)
    assert len(doc["diagnostics"]) == 4000  # JSON is never cut
