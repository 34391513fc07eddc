"""Refresh the console's vendored htmx from the npm registry.

Downloads the ``htmx.org`` package tarball of one version, checks it against the registry's ``dist.integrity``
(a Subresource Integrity sha512), takes ``dist/htmx.min.js`` and ``LICENSE`` out of it and writes them beside the
console's stylesheet with ``VENDORED.json``: version, licence, the tarball's address and integrity, and the sha256 of
each file (tests/console/test_vendored.py checks those against the files). Standard library only.

    python scripts/refresh_htmx.py              # the version VENDORED.json names (re-fetch, re-check)
    python scripts/refresh_htmx.py --version 2.0.11
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

REGISTRY = "https://registry.npmjs.org"
PACKAGE = "htmx.org"
STATIC = Path(__file__).resolve().parent.parent / "cfgtool" / "console" / "static"
RECORD = STATIC / "VENDORED.json"
# Member of the tarball -> file name in STATIC.
FILES = {"package/dist/htmx.min.js": "htmx.min.js", "package/LICENSE": "htmx.LICENSE"}
EXPECTED_LICENCE = "0BSD"  # a different licence needs a person to look before it ships in the package


def _get(url: str) -> bytes:
    """Fetch one URL of the registry (https only)."""
    if urllib.parse.urlsplit(url).scheme != "https":
        raise SystemExit(f"refresh_htmx: refusing a non-https address: {url}")
    with urllib.request.urlopen(url, timeout=60) as answer:
        data: bytes = answer.read()
        return data


def _check_integrity(data: bytes, integrity: str) -> None:
    """Check ``data`` against an SRI string such as ``sha512-<base64>``; exit on a mismatch."""
    algorithm, _, expected = integrity.partition("-")
    if algorithm not in ("sha512", "sha384", "sha256"):
        raise SystemExit(f"refresh_htmx: unsupported integrity algorithm {algorithm!r}")
    actual = base64.b64encode(hashlib.new(algorithm, data).digest()).decode()
    if actual != expected:
        raise SystemExit(
            f"refresh_htmx: tarball integrity mismatch: registry says {integrity}, got {algorithm}-{actual}"
        )


def _write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same directory and a rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make the packaged file unreadable to others
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def refresh(version: str) -> dict[str, Any]:
    """Download, check and write htmx ``version``; return the record written to VENDORED.json."""
    meta = json.loads(_get(f"{REGISTRY}/{PACKAGE}/{urllib.parse.quote(version, safe='')}"))
    licence = meta.get("license")
    if licence != EXPECTED_LICENCE:
        raise SystemExit(f"refresh_htmx: {PACKAGE} {version} is licensed {licence!r}, not {EXPECTED_LICENCE}")
    dist = meta["dist"]
    tarball = _get(dist["tarball"])
    _check_integrity(tarball, dist["integrity"])
    contents: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        for member, name in FILES.items():
            extracted = archive.extractfile(member)
            if extracted is None:
                raise SystemExit(f"refresh_htmx: {member} is not a file in {dist['tarball']}")
            contents[name] = extracted.read()
    record: dict[str, Any] = {
        "name": PACKAGE,
        "version": meta["version"],
        "licence": licence,
        "tarball": dist["tarball"],
        "integrity": dist["integrity"],
        "files": {name: {"sha256": hashlib.sha256(data).hexdigest()} for name, data in contents.items()},
    }
    STATIC.mkdir(parents=True, exist_ok=True)
    for name, data in contents.items():
        _write_atomic(STATIC / name, data)
    _write_atomic(RECORD, (json.dumps(record, indent=2) + "\n").encode())
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", help="htmx version to vendor (default: the one VENDORED.json names)")
    args = parser.parse_args(argv)
    version = args.version
    if version is None:
        if not RECORD.exists():
            parser.error("no VENDORED.json yet: pass --version")
        version = json.loads(RECORD.read_text())["version"]
    record = refresh(version)
    print(f"vendored {record['name']} {record['version']} ({record['licence']}) into {STATIC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
