"""`cfgtool hocon FILE...` and the root command, run as real subprocesses of the installed script."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import yaml

import cfgtool

Run = Callable[..., subprocess.CompletedProcess[str]]  # the run_cfgtool fixture (conftest.py)


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return path.name


def assert_clean_failure(proc: subprocess.CompletedProcess[str], code: int) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_version_prints_package_version(run_cfgtool: Run) -> None:
    proc = run_cfgtool("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"cfgtool {cfgtool.__version__}\n"


def test_python_dash_m_cfgtool_runs_the_cli(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cfgtool", "--version"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"cfgtool {cfgtool.__version__}\n"


def test_help_lists_commands_and_global_options(run_cfgtool: Run) -> None:
    proc = run_cfgtool("--help")
    assert proc.returncode == 0, proc.stderr
    for word in ("hocon", "--repo", "--store", "--version", "--help"):
        assert word in proc.stdout


def test_hocon_help_describes_files_and_format(run_cfgtool: Run) -> None:
    proc = run_cfgtool("hocon", "--help")
    assert proc.returncode == 0, proc.stderr
    for word in ("FILE", "--format", "json", "properties", "first file"):
        assert word in proc.stdout


def test_hocon_json_first_file_has_priority(run_cfgtool: Run, tmp_path: Path) -> None:
    high = write(tmp_path / "high.conf", "x = 1\nobj { a = 1 }\n")
    low = write(tmp_path / "low.conf", "x = 2\ny = [1, 2]\nobj { a = 0, b = two }\n")
    proc = run_cfgtool("hocon", high, low)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"x": 1, "y": [1, 2], "obj": {"a": 1, "b": "two"}}
    assert '\n  "x": 1' in proc.stdout  # pretty-printed


def test_hocon_json_keeps_key_order_as_parsed(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(tmp_path / "a.conf", "zeta = 1\nalpha = 2\nmid { z = 1, a = 2 }\n")
    proc = run_cfgtool("hocon", name)
    assert proc.returncode == 0, proc.stderr
    assert list(json.loads(proc.stdout)) == ["zeta", "alpha", "mid"]
    assert list(json.loads(proc.stdout)["mid"]) == ["z", "a"]


def test_hocon_resolves_references_across_files_after_merging(run_cfgtool: Run, tmp_path: Path) -> None:
    high = write(tmp_path / "high.conf", 'name = events\npath = ${root}"/"${name}\n')
    low = write(tmp_path / "low.conf", 'root = "/data"\nname = default\n')
    proc = run_cfgtool("hocon", high, low)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"name": "events", "path": "/data/events", "root": "/data"}


def test_hocon_yaml_output(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(tmp_path / "a.conf", 'b = 1\na { list = [x, "y z"], flag = true, none = null }\n')
    proc = run_cfgtool("hocon", "--format", "yaml", name)
    assert proc.returncode == 0, proc.stderr
    assert yaml.safe_load(proc.stdout) == {"b": 1, "a": {"list": ["x", "y z"], "flag": True, "none": None}}
    assert proc.stdout.startswith("b: 1\n")  # keys as parsed, not sorted


def test_hocon_properties_output(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(tmp_path / "a.conf", 'a.b.c = 1\ns = "x y=z"\nhosts = [h1, h2]\n')
    proc = run_cfgtool("hocon", "-f", "properties", name)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "a.b.c=1\ns=x y\\=z\nhosts.0=h1\nhosts.1=h2\n"


def test_hocon_hocon_output_reads_back_the_same(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(
        tmp_path / "a.conf",
        'a { "b.c" = 1.5, d = "" }\nlist = [1, {x = null}, "true"]\nref = ${a.d}"!"\nemoji = "\U0001f600"\n',
    )
    as_json = run_cfgtool("hocon", name)
    as_hocon = run_cfgtool("hocon", "--format", "hocon", name)
    assert as_hocon.returncode == 0, as_hocon.stderr
    again = run_cfgtool("hocon", write(tmp_path / "again.conf", as_hocon.stdout))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads(as_json.stdout)


def test_hocon_syntax_error_reports_file_line_col_exit_1(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(tmp_path / "bad.conf", "ok = 1\nobj {\n  a = 1\n")
    proc = run_cfgtool("hocon", name)
    assert_clean_failure(proc, 1)
    assert re.search(r"^bad\.conf:\d+:\d+: E_SYNTAX ", proc.stderr, re.MULTILINE), proc.stderr


def test_hocon_unresolved_reference_never_reads_environment(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(tmp_path / "a.conf", "x = 1\nhome = ${HOME}\n")
    proc = run_cfgtool("hocon", name, env={"HOME": "/home/someone"})
    assert_clean_failure(proc, 1)
    assert re.search(r"^a\.conf:2:\d+: E_UNRESOLVED_REF .*HOME", proc.stderr, re.MULTILINE), proc.stderr


def test_hocon_missing_file_exits_2_without_traceback(run_cfgtool: Run, tmp_path: Path) -> None:
    present = write(tmp_path / "a.conf", "x = 1\n")
    proc = run_cfgtool("hocon", present, "missing.conf")
    assert_clean_failure(proc, 2)
    assert "missing.conf" in proc.stderr


def test_hocon_directory_argument_exits_2(run_cfgtool: Run, tmp_path: Path) -> None:
    (tmp_path / "dir.conf").mkdir()
    proc = run_cfgtool("hocon", "dir.conf")
    assert_clean_failure(proc, 2)
    assert "dir.conf" in proc.stderr


def test_hocon_unknown_format_is_a_usage_error(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(tmp_path / "a.conf", "x = 1\n")
    proc = run_cfgtool("hocon", "--format", "xml", name)
    assert_clean_failure(proc, 2)


def test_hocon_without_files_is_a_usage_error(run_cfgtool: Run) -> None:
    assert_clean_failure(run_cfgtool("hocon"), 2)


def test_global_options_are_accepted_before_the_command(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(tmp_path / "a.conf", "x = 1\n")
    proc = run_cfgtool("--repo", str(tmp_path), "--store", "elsewhere", "hocon", name)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"x": 1}


def test_format_env_refuses_a_variable_read_as_code_unless_prefixed(run_cfgtool: Run, tmp_path: Path) -> None:
    name = write(tmp_path / "app.conf", 'ld_preload = "/tmp/evil.so"\nname = x\n')
    proc = run_cfgtool("hocon", name, "--format", "env", cwd=tmp_path)
    assert_clean_failure(proc, 1)
    assert "environment variable LD_PRELOAD, which the dynamic linker reads as code" in proc.stderr
    assert "--env-prefix APP_ (then APP_LD_PRELOAD)" in proc.stderr
    proc = run_cfgtool("hocon", name, "--format", "env", "--env-prefix", "APP_", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "APP_LD_PRELOAD='/tmp/evil.so'\nAPP_NAME='x'\n"
    assert_clean_failure(run_cfgtool("hocon", name, "-f", "env", "--env-prefix", "9", cwd=tmp_path), 2)
