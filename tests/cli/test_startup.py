"""Start-up: every command pays what the CLI imports before it runs, so building the CLI, `--version` and
`--help` import none of the library's heavy parts (measured in benchmarks/, guarded here)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("jsonschema", "cfgtool.compile", "cfgtool.build", "cfgtool.client", "cfgtool.hocon.api", "cfgtool.store.git",
         "cfgtool.versions.tags", "cfgtool.access.acl", "yaml", "msgpack", "pyrage",
         "pydantic")  # fmt: skip  (typer 0.29 parses arguments through pydantic: ~70 ms in every command)

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
    probe = "import sys, cfgtool; a = 'cfgtool.client' in sys.modules; cfgtool.ConfigClient; print(a, 'cfgtool.client' in sys.modules)"  # noqa: E501
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
    import cfgtool.compile
    import cfgtool.versions.publish

    assert callable(cfgtool.compile) and cfgtool.compile.__name__ == "compile_store"  # the function, not the module
    assert cfgtool.versions.publish.__name__ == "publish"
