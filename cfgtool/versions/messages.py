"""Tag messages: human text, then machine-readable metadata on the last line.

    release 12: raise retention of tracking topics

    cfgtool-metadata: {"commit":"1a2b...","digest":"sha256:...","kind":"version","version":12,...}

The metadata is one line of compact JSON, ASCII only, keys sorted. So `git tag -n` still shows the human subject. A
tag made by hand simply has no metadata. And thousands of lines decode with one `json.loads`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from cfgtool.errors import UsageError

METADATA_KEY = "cfgtool-metadata"
_PREFIX = METADATA_KEY + ": "
_SIGNATURE = re.compile(r"^-----BEGIN (?:PGP|SSH) SIGNATURE-----$", re.MULTILINE)


def format_message(text: str, metadata: Mapping[str, Any]) -> str:
    """A tag message: `text` for people, a blank line, then `cfgtool-metadata: {json}` on ONE line.

    No text can strip or alter the metadata (docs/security.md). git may take a line of `text` for the start of a
    signature (`-----BEGIN ...`) and drop the rest. Such a line is indented by one space. The metadata line is always
    the last, so a `cfgtool-metadata:` line inside the text is never read.
    """
    line = json.dumps(dict(metadata), sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    safe = "\n".join(" " + t if t.startswith("-----BEGIN ") else t for t in text.strip().splitlines())
    return f"{safe}\n\n{_PREFIX}{line}\n"


def check_text(text: str | None, what: str) -> None:
    """UsageError for a message or reason git cannot store as given (NUL and other control characters)."""
    if text is not None and any((c < " " and c not in "\n\t") or c == "\x7f" for c in text):
        raise UsageError(f"the {what} holds control characters", hint="write plain text (newlines are fine)")


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
    except (ValueError, RecursionError):
        return [loads(line) for line in lines]
    return decoded if len(decoded) == len(lines) else [loads(line) for line in lines]


def loads(line: str) -> Any:
    """JSON, or None when the text is not valid JSON or nests deeper than the parser recurses."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def strip_signature(contents: str) -> str:
    """A tag message without the signature git appends to signed tags (a `-----BEGIN ... SIGNATURE-----`
    line; the same words inside a line, as in the metadata's JSON, are text)."""
    found = _SIGNATURE.search(contents)
    return contents[: found.start()] if found else contents
