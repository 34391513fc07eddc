"""Start-up: every command pays what the CLI imports before it runs, so building the CLI, `--version` and
`--help` import none of the library's heavy parts (measured in benchmarks/, guarded here)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "jsonschema",
    "cfgtool.compile.compiler",
    "cfgtool.build.builder",
    "cfgtool.client.local",
    "cfgtool.hocon.api",
    "cfgtool.store.git",
    "cfgtool.versions.tags",
    "cfgtool.access.acl",
    "yaml",
    "msgpack",
    "pyrage",
    "pydantic",
)  # fmt: skip  (typer 0.29 parses arguments through pydantic: ~70 ms in every command)

_PROBE = """
import contextlib, io, json, sys
from cfgtool.cli.app import main
with contextlib.redirect_stdout(io.StringIO()):
    main(sys.argv[1:])
print(json.dumps(sorted(sys.modules)))
"""


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["get", "--help"], ["acl", "check", "--help"]])
def test_the_cli_starts_without_the_library(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, check=True)
    loaded = set(json.loads(proc.stdout.splitlines()[-1]))
    assert not [m for m in HEAVY if m in loaded], f"cfgtool {' '.join(args)} imported {sorted(set(HEAVY) & loaded)}"


def test_the_package_exports_load_when_used() -> None:
    probe = "import sys, cfgtool; a = 'cfgtool.client.local' in sys.modules; cfgtool.ConfigClient; print(a, 'cfgtool.client.local' in sys.modules)"  # noqa: E501
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
    import cfgtool.compile.compiler
    import cfgtool.versions.publish

    assert callable(cfgtool.compile) and cfgtool.compile.__name__ == "compile_store"  # the function, not the module
    assert cfgtool.versions.publish.__name__ == "publish"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["compile"], "compile"),
        (["--repo", "r", "--store=s", "get", "/a"], "get"),
        (["--repo=r", "--store", "compile", "acl"], "acl"),  # a store named `compile`: the option's value
        (["acl", "check"], "acl"),
        (["--version"], None),
        (["--help", "compile"], None),  # root help lists every command
        (["comple"], None),  # unknown: the error suggests `compile`, from every command
        (["--repo"], None),
        ([], None),
    ],
)
def test_the_command_is_told_before_parsing(args: list[str], named: str | None) -> None:
    from cfgtool.cli.app import named_command

    assert named_command(args) == named


def test_a_command_alone_imports_only_its_own_module() -> None:
    args = [sys.executable, "-c", _PROBE, "compile", "--help"]
    proc = subprocess.run(args, capture_output=True, text=True, check=True)
    loaded = set(json.loads(proc.stdout.splitlines()[-1]))
    assert "cfgtool.cli.compile_cmd" in loaded
    assert not {"cfgtool.cli.serve_cmd", "cfgtool.cli.versions_cmd", "cfgtool.cli.acl_cmd"} & loaded


def test_a_command_built_alone_is_the_command_built_with_every_other() -> None:
    import typer

    from cfgtool.cli.app import _COMMANDS, build_app

    whole = typer.main.get_command(build_app())
    assert isinstance(whole, typer.core.TyperGroup)
    assert list(whole.commands) == list(_COMMANDS)  # `cfgtool --help` lists them in this order
    for name in _COMMANDS:
        alone = typer.main.get_command(build_app(name))
        assert isinstance(alone, typer.core.TyperGroup) and list(alone.commands) == [name]
        mine, theirs = alone.commands[name], whole.commands[name]
        assert [p.opts for p in mine.params] == [p.opts for p in theirs.params], name
        assert mine.help == theirs.help
        assert sorted(getattr(mine, "commands", {})) == sorted(getattr(theirs, "commands", {}))


def test_the_program_skips_the_last_collection_of_what_it_leaves() -> None:
    probe = "import gc, sys, cfgtool.cli as cli; sys.argv = ['cfgtool', '--version']; cli.main(); print(gc.get_freeze_count() > 0)"  # noqa: E501
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert proc.stdout.split()[-1] == "True"  # after the version it printed
