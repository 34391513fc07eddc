"""The console's vendored htmx: the files match the sha256 and licence that VENDORED.json records.

scripts/refresh_htmx.py writes both from the npm registry's tarball; an edit by hand to either side fails here.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import cfgtool

STATIC = Path(cfgtool.__file__).parent / "console" / "static"


def test_vendored_files_match_their_sha256() -> None:
    record = json.loads((STATIC / "VENDORED.json").read_text(encoding="utf-8"))
    assert record["name"] == "htmx.org"
    assert set(record["files"]) == {"htmx.min.js", "htmx.LICENSE"}
    for name, entry in record["files"].items():
        assert hashlib.sha256((STATIC / name).read_bytes()).hexdigest() == entry["sha256"], name


def test_vendored_licence_is_the_zero_clause_bsd() -> None:
    record = json.loads((STATIC / "VENDORED.json").read_text(encoding="utf-8"))
    assert record["licence"] == "0BSD"
    assert (STATIC / "htmx.LICENSE").read_text(encoding="utf-8").startswith("Zero-Clause BSD")


def test_vendored_version_is_the_one_the_script_names() -> None:
    """The file carries its own version string: the record cannot name another release than the one shipped."""
    record = json.loads((STATIC / "VENDORED.json").read_text(encoding="utf-8"))
    assert f'version:"{record["version"]}"' in (STATIC / "htmx.min.js").read_text(encoding="utf-8")
