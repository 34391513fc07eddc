"""The README must not drift from the tool: its diagnostic-code table is the registry's."""

from __future__ import annotations

import re
from pathlib import Path

from cfgtool.diagnostics import CODES

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_lists_exactly_the_registered_diagnostic_codes() -> None:
    listed = re.findall(r"^\| ([EW]_[A-Z_]+) \|", README.read_text(encoding="utf-8"), re.MULTILINE)
    assert listed == list(CODES)


def test_readme_has_the_two_setup_commands_that_ci_runs() -> None:
    text = README.read_text(encoding="utf-8")
    assert "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/cfgtool compile" in text
    assert "python3 -m venv .venv && .venv/bin/pip install -e '.[dev,spark]' && .venv/bin/python -m pytest" in text
