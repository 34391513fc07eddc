"""Tag messages: human text, then machine-readable metadata on the last line.

    release 12: raise retention of tracking topics

    cfgtool-metadata: {"commit":"1a2b...","digest":"sha256:...","kind":"version","version":12,...}

The metadata is one line of compact JSON (ASCII only, keys sorted), so `git tag -n` still shows the human
subject, a tag made by hand simply has no metadata, and thousands of lines decode with one `json.loads`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

METADATA_KEY = "cfgtool-metadata"
_PREFIX = METADATA_KEY + ": "
_SIGNATURES = ("-----BEGIN PGP SIGNATURE-----", "-----BEGIN SSH SIGNATURE-----")


def format_message(text: str, metadata: Mapping[str, Any]) -> str:
    """A tag message: `text` for people, a blank line, then `cfgtool-metadata: {json}` on ONE line."""
    line = json.dumps(dict(metadata), sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return f"{text.strip()}\n\n{_PREFIX}{line}\n"


def parse_message(contents: str) -> tuple[str, dict[str, Any]]:
    """The human text and the metadata of a tag message (`{}` and the whole text when it has none)."""
    text, line = split_message(contents)
    data = loads(line) if line is not None else None
    return (text, data) if isinstance(data, dict) else (strip_signature(contents).strip(), {})


def split_message(contents: str) -> tuple[str, str | None]:
    """The human text and the JSON text of the metadata line (None: there is no such line)."""
    if "-----BEGIN " in contents:
        contents = strip_signature(contents)
    body = contents.rstrip("\n")
    head, _, last = body.rpartition("\n")
    if last.startswith(_PREFIX):
        return head.strip(), last[len(_PREFIX) :]
    return body.strip(), None


def decode_all(lines: list[str]) -> list[Any]:
    """Decode many metadata lines with one `json.loads` (one by one when some line is damaged)."""
    if not lines:
        return []
    try:
        decoded: list[Any] = json.loads("[" + ",".join(lines) + "]")
    except ValueError:
        return [loads(line) for line in lines]
    return decoded if len(decoded) == len(lines) else [loads(line) for line in lines]


def loads(line: str) -> Any:
    """JSON, or None when the text is not valid JSON."""
    try:
        return json.loads(line)
    except ValueError:
        return None


def strip_signature(contents: str) -> str:
    """A tag message without the signature git appends to signed tags."""
    cuts = [i for i in (contents.find(s) for s in _SIGNATURES) if i >= 0]
    return contents[: min(cuts)] if cuts else contents
