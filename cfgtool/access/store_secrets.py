"""`cfgtool secret set` and `cfgtool secret reseal` (DESIGN 14): sealed values written into a working tree.

`set_secret` seals a value for (store, key, path) to the store's `_RECIPIENTS` and writes the assignment into
the key's `main.conf`, replacing that path's value where the file already assigns it and otherwise adding a
line, so the rest of the file stays exactly as it was. `reseal` opens every envelope of the store with an
identity and seals it again to the current recipients (after a recipient was added or removed). Files are
written atomically.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool.access.secrets import SecretError, open_envelope, parse_recipients, seal, store_label
from cfgtool.errors import UsageError
from cfgtool.hidden import ENVELOPE
from cfgtool.hocon import HoconError, parse, split_path
from cfgtool.hocon.resolver import render_path
from cfgtool.hocon.values import Node, Scalar
from cfgtool.provenance import own_leaves
from cfgtool.snapshot import write_atomic
from cfgtool.store.keys import BadKeyError, normalize_key, segments
from cfgtool.store.nodes import MAIN_FILE, read_settings
from cfgtool.store.settings import RECIPIENTS_FILE
from cfgtool.store.sources import WorkTreeSource


@dataclass(frozen=True)
class SetResult:
    key: str
    path: str
    file: str  # repo-relative
    replaced: bool  # an existing assignment was replaced (else a line was added)
    line: int


def _store(repo: Path | None, store: str | Path) -> tuple[WorkTreeSource, str, list[Any]]:
    source = WorkTreeSource(repo if repo is not None else Path.cwd(), store)
    settings, _ = read_settings(source)
    blob = source.read(source.path(RECIPIENTS_FILE))
    if blob is None:
        raise UsageError(
            f"the store has no {source.path(RECIPIENTS_FILE)}: there is no one to seal secrets to",
            hint="list the age public keys (age1...) of who may read secrets there, one per line",
        )
    recipients = parse_recipients(blob.data.decode("utf-8-sig", "replace"), blob.path)
    return source, store_label(settings.name, source.store), recipients


def set_secret(repo: Path | None, store: str | Path, key: str, path: str, value: str) -> SetResult:
    """Seal `value` for `path` of `key` and write it into the key's main.conf."""
    source, label, recipients = _store(repo, store)
    settings, _ = read_settings(source)
    try:
        key = normalize_key(key, settings.name)
        parts = split_path(path)
    except BadKeyError as err:
        raise UsageError(err.message, hint=err.hint) from err
    except HoconError as err:
        raise UsageError(f"{path!r} is not a HOCON path: {err}", hint="write it like db.password") from err
    name = render_path(parts)
    node_dir = source.repo_root / source.path("/".join(segments(key))) if key != "/" else source.repo_root / (
        source.store or "."
    )
    if not node_dir.is_dir():
        raise UsageError(f"{key} has no node (no directory {node_dir})", hint=f"create it first: mkdir -p {node_dir}")
    file = node_dir / MAIN_FILE
    text = file.read_text(encoding="utf-8") if file.exists() else ""
    envelope = seal(value, recipients, label, key, name)
    rel = file.relative_to(source.repo_root).as_posix()
    new_text, replaced, line = _assign(text, rel, parts, f'"{envelope}"')
    write_atomic(file, new_text)
    return SetResult(key, name, rel, replaced, line)


def _assign(text: str, file: str, parts: tuple[str, ...], literal: str) -> tuple[str, bool, int]:
    """`text` with `path = literal`: the value of an existing single-line assignment replaced in place,
    else a line appended. Returns the new text, whether it replaced, and the line."""
    try:
        doc = parse(text, file) if text.strip() else None
    except HoconError as err:
        raise UsageError(f"{file} does not parse: {err}", hint="fix its syntax first (cfgtool compile)") from err
    target = next((leaf for path, leaf in own_leaves(doc) if path == parts), None) if doc is not None else None
    lines = text.splitlines(keepends=True)
    if target is not None:
        span = _span(lines, target)
        if span is not None:
            number, start, end = span
            row = lines[number - 1]
            lines[number - 1] = row[:start] + literal + row[end:]
            return "".join(lines), True, number
    prefix = "" if not text or text.endswith("\n") else "\n"
    return text + prefix + f"{render_path(parts)} = {literal}\n", False, len(lines) + 1


def _span(lines: Sequence[str], node: Node) -> tuple[int, int, int] | None:
    """(line, start col, end col) of a value written on one line: a quoted or unquoted scalar."""
    if not isinstance(node, Scalar) or not 1 <= node.origin.line <= len(lines):
        return None
    row = lines[node.origin.line - 1]
    start = node.origin.col - 1
    if row.startswith('"""', start):
        return None
    if row.startswith('"', start):
        i = start + 1
        while i < len(row):
            if row[i] == "\\":
                i += 2
                continue
            if row[i] == '"':
                return node.origin.line, start, i + 1
            i += 1
        return None
    end = start
    while end < len(row) and row[end] not in "\n\r,}]#" and not row.startswith("//", end):
        end += 1
    while end > start and row[end - 1] in " \t":
        end -= 1
    return node.origin.line, start, end


def reseal(repo: Path | None, store: str | Path, identities: Sequence[Any]) -> list[str]:
    """Open every envelope in the store's main.conf files with `identities` and seal it again to the current
    recipients; returns the files rewritten."""
    source, label, recipients = _store(repo, store)
    changed: list[str] = []
    paths = [p for p in source.files() if p.endswith("/" + MAIN_FILE) or p == MAIN_FILE]
    for rel, blob in source.load(paths).items():
        text = blob.data.decode("utf-8-sig", "replace")
        if "ENC[cfgtool:" not in text:
            continue
        new = text
        for match in ENVELOPE.finditer(text):
            old = match.group(0)
            try:
                opened = open_envelope(old, identities, label)
            except SecretError as err:
                line = text.count("\n", 0, match.start()) + 1
                raise SecretError(f"{rel}:{line}: {err.message}", hint=err.hint) from err
            new = new.replace(old, seal(opened.value, recipients, label, opened.key, opened.path), 1)
        if new != text:
            write_atomic(source.repo_root / rel, new)
            changed.append(rel)
    return sorted(changed)
