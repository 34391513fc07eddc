"""`cfgtool secret set` and `cfgtool secret reseal` (docs/access.md#secrets): sealed values written into a working tree.

`set_secret` seals a value for (store, key, path) to the store's `_RECIPIENTS`. It writes the assignment into the
key's `main.conf`. It replaces every value the file assigns to that path, whatever its form, or else adds a line. So
the rest of the file stays exactly as it was, and no clear text is left in it. `reseal` opens every envelope of the
store with an identity and seals it again to the current recipients. That follows adding or removing a recipient.
Files are written atomically.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool._util.atomic import write_atomic
from cfgtool.access.secrets import SecretError, open_envelope, parse_recipients, seal, store_label
from cfgtool.errors import UsageError
from cfgtool.hocon import HoconError, parse, split_path
from cfgtool.hocon.lexer import COMMA, EOF, LBRACE, LBRACK, NL, RBRACE, RBRACK, tokenize
from cfgtool.hocon.resolver import render_path
from cfgtool.hocon.values import Concat, Merge, Node, Obj, Scalar, Subst
from cfgtool.snapshot.hidden import ENVELOPE
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
    node_dir = (
        source.repo_root / source.path("/".join(segments(key)))
        if key != "/"
        else source.repo_root / (source.store or ".")
    )
    if not node_dir.is_dir():
        raise UsageError(f"{key} has no node (no directory {node_dir})", hint=f"create it first: mkdir -p {node_dir}")
    _require_secret(source, key, parts)
    file = node_dir / MAIN_FILE
    text = file.read_text(encoding="utf-8") if file.exists() else ""
    envelope = seal(value, recipients, label, key, name)
    rel = file.relative_to(source.repo_root).as_posix()
    new_text, replaced, line = _assign(text, rel, parts, f'"{envelope}"')
    write_atomic(file, new_text)
    return SetResult(key, name, rel, replaced, line)


def _require_secret(source: WorkTreeSource, key: str, parts: tuple[str, ...]) -> None:
    """UsageError unless a schema that selects `key` marks `parts` writeOnly. A value sealed at a path no schema
    calls secret would be shown sealed, then never checked. And the next reader would not know."""
    from cfgtool.compile.query import query_key
    from cfgtool.validate.rules import rules_of

    snapshot = query_key(source.repo_root, source.store or ".", None, key).result.snapshot
    rules = rules_of(source, *read_settings(source))
    specs = [spec for spec in rules.schemas[0] if spec.selector.selects(snapshot, key)]
    node = snapshot.nodes.get(key)
    probe: dict[str, Any] = dict(node.config) if node is not None and node.config is not None else {}
    here = probe
    for part in parts[:-1]:
        child = here.get(part)
        here[part] = here = dict(child) if isinstance(child, dict) else {}
    here[parts[-1]] = "probe"
    if any(parts in spec.writeonly.secrets(probe) for spec in specs):
        return
    name = render_path(parts)
    names = ", ".join(spec.file for spec in specs)
    raise UsageError(
        f"no schema marks {name} of {key} secret, so a sealed value there would never be checked",
        hint=f"add `writeOnly: true` at {name} in one of the schemas that select {key} ({names})"
        if specs
        else f"no schema selects {key}: add one that marks {name} `writeOnly: true` to the store's schemas",
    )


_REWRITE = "edit the file so that it assigns the path once, as `path = value`, and run this again"
_PROBE = "cfgtool-secret-set-"  # `${?"cfgtool-secret-set-N"}`: an assignment already replaced


def _assign(text: str, file: str, parts: tuple[str, ...], literal: str) -> tuple[str, bool, int]:
    """`text` with `path = literal`. The value of every existing assignment of the path is replaced in place,
    overridden ones too. A value may be quoted, unquoted, triple-quoted over several lines, concatenated, an object
    or a list. Without one, a line is appended. Returns the new text, whether it replaced, and the line of the
    assignment that counts (the last). A text in which the path would still hold anything but `literal` is refused.

    A later scalar hides an earlier one from the parsed document. But an optional substitution keeps it as its
    fallback. So each value found is replaced by a probe `${?"cfgtool-secret-set-N"}` and the text parsed again. That
    goes on until only probes are left. Then the probes become `literal`."""
    if _PROBE in text:
        raise UsageError(f"{file} already holds {_PROBE!r}", hint="remove it, then run this again")
    work, probes = text, 0
    while (doc := _parsed(work, file)) is not None:
        found = [n for n in _assignments(doc, parts) if not (isinstance(n, Subst) and n.path[0].startswith(_PROBE))]
        if not found:
            break
        if any(isinstance(n, Concat) and n.append for n in found):
            raise UsageError(
                f"{file} appends to {render_path(parts)} with +=, which a sealed value cannot replace",
                hint="assign the path with `=` instead, and run this again",
            )
        for start, end in sorted({_value_span(work, file, node) for node in found}, reverse=True):
            work = f'{work[:start]}${{?"{_PROBE}{probes}"}}{work[end:]}'
            probes += 1
    if probes:
        first = work.index(f'${{?"{_PROBE}0"}}')  # the effective assignment: the first one found
        line, replaced = work.count("\n", 0, first) + 1, True
        new = re.sub(r'\$\{\?"' + _PROBE + r'[0-9]+"\}', lambda _: literal, work)
    else:
        prefix = "" if not text or text.endswith("\n") else "\n"
        new = text + prefix + f"{render_path(parts)} = {literal}\n"
        line, replaced = new.count("\n"), False
    after = _parsed(new, file)
    values = list(_assignments(after, parts)) if after is not None else []
    if not values or any(not isinstance(n, Scalar) or f'"{n.value}"' != literal for n in values):
        raise UsageError(
            f"cannot replace {render_path(parts)} in {file} safely: the secret was not written", hint=_REWRITE
        )
    return new, replaced, line


def _parsed(text: str, file: str) -> Node | None:
    try:
        return parse(text, file) if text.strip() else None
    except HoconError as err:
        raise UsageError(f"{file} does not parse: {err}", hint="fix its syntax first (cfgtool compile)") from err


def _assignments(node: Node, parts: tuple[str, ...]) -> Iterator[Node]:
    """Every value written at `parts` in an unresolved document, overridden ones included."""
    if isinstance(node, Merge):
        for member in node.stack:
            yield from _assignments(member, parts)
    elif not parts:
        yield node
    elif isinstance(node, Obj) and parts[0] in node.fields:
        yield from _assignments(node.fields[parts[0]], parts[1:])


def _value_span(text: str, file: str, node: Node) -> tuple[int, int]:
    """(start, end) offsets in `text` of the value that starts at `node`'s origin. It spans every token up to the end
    of the field, brackets balanced. The field ends at a newline, `,`, or the `}` / `]` that closes what holds it."""
    starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
    bom = 1 if text.startswith("\ufeff") else 0

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col - 1 + (bom if line == 1 else 0)

    tokens = tokenize(text, file)
    where = (node.origin.line, node.origin.col)
    first = next((i for i, tok in enumerate(tokens) if (tok[3], tok[4]) == where), None)
    if first is None:  # not where a value starts: never guess which text to replace
        raise UsageError(f"{file}:{where[0]}:{where[1]}: cannot tell where this value ends", hint=_REWRITE)
    depth, last = 0, first
    for i in range(first, len(tokens)):
        kind = tokens[i][0]
        if kind in (LBRACE, LBRACK):
            depth += 1
        elif kind in (RBRACE, RBRACK):
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and kind in (NL, COMMA, EOF):
            break
        last = i
    return offset(tokens[first][3], tokens[first][4]), offset(tokens[last][3], tokens[last][4]) + len(tokens[last][2])


def reseal(repo: Path | None, store: str | Path, identities: Sequence[Any]) -> list[str]:
    """Open every envelope in the store's main.conf files with `identities` and seal it again to the current
    recipients. Returns the files rewritten."""
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
