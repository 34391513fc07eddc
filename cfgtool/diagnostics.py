"""Diagnostics: the one record for a problem in user config, the registry of codes, and pure renderers.

A `Diagnostic` is a value collected per node, never raised. So one run reports every problem (ARCHITECTURE.md,
docs/compile.md). Renderers are pure functions from diagnostics (and a line reader for source excerpts) to a string:

- `render_text`: `file:line:col: CODE message`, the source line with a caret, then notes; many nodes failing
  the same way are grouped into one entry.
- `render_json`: docs/compile.md diagnostic objects inside the compile report envelope.
- `render_github`: GitHub workflow commands (`::error file=..,line=..,col=..,title=CODE::message`), grouped.
- `render_markdown`: a pull-request summary with counts and a table, grouped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

Severity = Literal["error", "warning"]
LineReader = Callable[[str, int], "str | None"]

#: Every diagnostic code with a one-line description. Codes are stable: scripts and the README rely on them.
#: The severity is the prefix: E_ is an error, W_ a warning.
CODES: dict[str, str] = {
    "E_SYNTAX": "A file cannot be parsed (HOCON, includes or UTF-8 syntax).",
    "E_BAD_KEY": "A directory name or import path is not a valid key segment ([A-Za-z0-9][A-Za-z0-9._~-]*).",
    "E_SETTINGS": "_CONFIG_STORE has an unknown setting, a wrong type or a bad value.",
    "E_DUPLICATE_INCLUDES": "A node has both an includes and an includes.conf file.",
    "E_MISSING_IMPORT": "An includes line names a key that has no node.",
    "E_CYCLE": "Imports and parents form a cycle (this includes importing oneself or a descendant).",
    "E_UNDECLARED_VARIABLE": "An includes line uses a variable that _CONFIG_STORE does not declare.",
    "E_UNRESOLVED_VARIABLE": "A required includes variable has no value and no default.",
    "E_UNRESOLVED_REF": "A ${...} substitution names a path that is not set.",
    "E_REF_CYCLE": "Substitutions refer to each other in a cycle.",
    "E_TYPE": "A value has the wrong type for an operation (e.g. += on an object).",
    "E_UNSUPPORTED_INCLUDE": "A HOCON include uses url(), classpath() or leaves the store.",
    "E_INCLUDE": "A HOCON include names a file that cannot be read.",
    "E_LIMIT": "Input exceeds a safety limit (nesting depth, size, substitution expansion).",
    "E_SCHEMA": "A resolved config violates a JSON Schema that applies to it.",
    "E_POLICY": "A policy rejected a node.",
    "E_POLICY_ERROR": "A policy failed with an unexpected exception (a bug in the policy, not the config).",
    "W_POLICY_SKIPPED_REVERT": "Policies skip paths a change reverts to their value before a rolled-back version.",
    "W_DUPLICATE_IMPORT": "An includes file names the same key twice; the repeated line has no effect.",
    "W_REDUNDANT_IMPORT": "A node imports its own ancestor, which it inherits anyway: no effect.",
    "W_IMPORT_ORDER": "An earlier import pulls in a later one, so the later one loses its priority.",
    "E_UNSAFE_PATH": "A path in the store is a symbolic link, or leads outside the repository; it is never read.",
    "E_ACL": "The ACL file does not parse or validate; until it is fixed only super users are allowed.",
    "E_ACCESS_DENIED": "The principal may not make this change (create, alter or delete a node, or change the rules).",
    "E_SECRET_IN_CLEAR": "A secret path (writeOnly in a schema) holds something other than a sealed envelope.",
    "E_SECRET_BINDING": "A sealed secret was made for another store, node or path (copied from elsewhere).",
    "E_SECRET_CONCAT": "A secret is concatenated into a string, which would put it in clear.",
    "W_SECRET_UNKNOWN": "A schema reaches a $ref that cannot be resolved: whether values there are secret is unknown.",
    "W_RULES_CHANGED": "A change edits rule files (settings, schemas, policies, ACL); they apply once merged.",
    "W_GATE_CHANGED": "A change edits a file that decides how CI runs (workflows, requirements, hooks, code owners).",
    "W_ACL_PREFIX": "A prefixed ACL key does not end with '/', so it also matches keys that merely start alike.",
}

# Errors that leave every resolved config as it is (validation, secrets, access): reads still answer.
VALIDATION_CODES = frozenset(
    {"E_SCHEMA", "E_POLICY", "E_POLICY_ERROR", "E_SECRET_IN_CLEAR", "E_SECRET_BINDING", "E_SECRET_CONCAT",
     "E_ACL", "E_ACCESS_DENIED"}
)  # fmt: skip

GROUP_MIN = 5  # this many nodes failing the same way are shown as one entry
GROUP_SHOWN = 3  # keys named in a grouped entry before "... and N more"
TEXT_CAUSES = 50  # causes a text report shows before "... and N more" (`--all` lists every one)
ALL_HINT = "run with --all to list them all"


def severity_of(code: str) -> Severity:
    """The severity a code implies: `W_` codes are warnings, everything else an error."""
    return "warning" if code.startswith("W_") else "error"


@dataclass(frozen=True)
class Diagnostic:
    """One problem: `key` is the node it concerns; `file` (repo-relative), `line`, `col` (1-based) where."""

    code: str
    severity: Severity
    key: str | None
    file: str | None
    line: int | None
    col: int | None
    message: str
    notes: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        code: str,
        message: str,
        *,
        key: str | None = None,
        file: str | None = None,
        line: int | None = None,
        col: int | None = None,
        notes: Iterable[str] = (),
    ) -> Diagnostic:
        """A diagnostic whose severity is derived from its code."""
        return cls(code, severity_of(code), key, file, line, col, message, tuple(notes))

    @property
    def location(self) -> str:
        """`file:line:col` with the parts that are known (empty when there is no file)."""
        if self.file is None:
            return ""
        if self.line is None:
            return self.file
        return f"{self.file}:{self.line}" if self.col is None else f"{self.file}:{self.line}:{self.col}"

    def to_json(self) -> dict[str, Any]:
        """The docs/compile.md diagnostic object (plus `notes`)."""
        return {
            "code": self.code,
            "severity": self.severity,
            "key": self.key,
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "message": self.message,
            "notes": list(self.notes),
        }


def sort_key(d: Diagnostic) -> tuple[str, int, int, str, str, str]:
    """Order of reports: by file, position, code, key, message (diagnostics without a file first)."""
    return (d.file or "", d.line or 0, d.col or 0, d.code, d.key or "", d.message)


@dataclass(frozen=True)
class Group:
    """Diagnostics that differ only in the node they concern (and possibly notes): rendered as one entry."""

    first: Diagnostic
    keys: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def grouped(self) -> bool:
        return len(self.keys) >= GROUP_MIN


def group(diags: Iterable[Diagnostic]) -> list[Group]:
    """Sorted entries; the same code, place and message in >= GROUP_MIN nodes becomes one entry."""
    buckets: dict[tuple[object, ...], list[Diagnostic]] = {}
    for d in sorted(set(diags), key=sort_key):
        pattern = (d.code, d.severity, d.file, d.line, d.col, d.message)
        buckets.setdefault(pattern, []).append(d)
    out: list[Group] = []
    for members in buckets.values():
        keys = tuple(dict.fromkeys(d.key for d in members if d.key is not None))
        if len(keys) >= GROUP_MIN:
            notes = tuple(dict.fromkeys(n for d in members for n in d.notes))
            out.append(Group(members[0], keys, notes))
        else:
            out.extend(Group(d, (d.key,) if d.key else (), d.notes) for d in members)
    out.sort(key=lambda g: sort_key(g.first))
    return out


def causes(entries: Iterable[Group]) -> list[list[Group]]:
    """`entries` by cause, in the order of each cause's first entry. A cause is the same code and message, the
    message's own node written as any node. So 2,000 topics that fail one schema rule, or that one principal may not
    alter, are one cause. A cause of fewer than GROUP_MIN entries stays entry by entry, as `group` leaves few
    nodes."""
    buckets: dict[tuple[str, Severity, str], list[Group]] = {}
    order: list[tuple[tuple[str, Severity, str], Group]] = []
    for g in entries:
        d = g.first
        message = d.message
        if len(g.keys) == 1:
            message = re.sub(rf"(?<![\w/.~-]){re.escape(g.keys[0])}(?![\w/.~-])", "\0", message)
        cause = (d.code, d.severity, message)
        buckets.setdefault(cause, []).append(g)
        order.append((cause, g))
    out: list[list[Group]] = []
    for cause, g in order:
        members = buckets[cause]
        if len(members) < GROUP_MIN:
            out.append([g])
        elif members[0] is g:
            out.append(members)
    return out


def _elsewhere(more: list[Group]) -> str:
    """`the same at 1,999 more places: a.conf:1:13 (/data/a), ... and 1,996 more: run with --all ...` for a
    cause's other entries."""
    places = []
    for g in more[:GROUP_SHOWN]:
        where = (_nodes_phrase(g) or ", ".join(g.keys)).removeprefix("in ")  # its message may name the node
        places.append(f"{g.first.location} ({where})" if g.first.location and where else g.first.location or where)
    rest = len(more) - GROUP_SHOWN
    tail = f", ... and {rest:,} more: {ALL_HINT}" if rest > 0 else ""
    return f"the same at {plural(len(more), 'more place')}: {', '.join(places)}{tail}"


def bounded(items: list[str], total: int, limit: int | None, noun: str) -> list[str]:
    """`items` (the first `limit` of `total` things, already cut). When some were left out, also the line that says
    how many and how to list them all. This is the one bound for every long text report."""
    if limit is None or total <= limit:
        return items
    return [*items, f"... and {plural(total - limit, 'more ' + noun)}: {ALL_HINT}"]


def _nodes_phrase(g: Group) -> str:
    """`in 1,243 nodes: /a, /b, /c, ... and 1,240 more` for a group, `in /a` for one node, '' for none."""
    if not g.keys:
        return ""
    if not g.grouped:
        if len(g.keys) == 1 and _mentions(g.first.message, g.keys[0]):
            return ""  # "/data/x imports /tags/t, ..." already says where
        return "in " + ", ".join(g.keys)
    shown = ", ".join(g.keys[:GROUP_SHOWN])
    rest = len(g.keys) - GROUP_SHOWN
    return f"in {len(g.keys):,} nodes: {shown}, ... and {rest:,} more"


def _mentions(message: str, key: str) -> bool:
    """Whether `message` names `key` as a whole word."""
    return re.search(rf"(?<![\w/.~-]){re.escape(key)}(?![\w/.~-])", message) is not None


def count(diags: Iterable[Diagnostic]) -> tuple[int, int]:
    """(errors, warnings), counting each distinct diagnostic once."""
    unique = set(diags)
    errors = sum(1 for d in unique if d.severity == "error")
    return errors, len(unique) - errors


def summary_line(diags: Iterable[Diagnostic]) -> str:
    """`2 errors, 1 warning` or `no problems`."""
    errors, warnings = count(diags)
    if not errors and not warnings:
        return "no problems"
    return f"{plural(errors, 'error')}, {plural(warnings, 'warning')}"


def plural(n: int, word: str) -> str:
    """`1 error`, `1,243 errors`: a count with its noun (for every report)."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"


# ------------------------------------------------------------------------------------------ text

_RESET, _BOLD, _RED, _YELLOW, _BLUE = "\x1b[0m", "\x1b[1m", "\x1b[31m", "\x1b[33m", "\x1b[34m"


def render_text(
    diags: Iterable[Diagnostic],
    read_line: LineReader,
    color: bool = False,
    *,
    summary: bool = True,
    limit: int | None = TEXT_CAUSES,
) -> str:
    """Human-readable report; `read_line(file, line)` supplies source excerpts (None: not available).

    Entries of one cause (`causes`) show as the first one and where else it happens. Only the first `limit` causes
    are shown, then how many more and the flag that lists them. `limit` None lists every entry."""

    def paint(text: str, *styles: str) -> str:
        return "".join(styles) + text + _RESET if color else text

    diags = list(diags)
    shown = [[g] for g in group(diags)] if limit is None else causes(group(diags))
    out: list[str] = []
    for cause in shown[:limit]:
        g = cause[0]
        d = g.first
        code = paint(d.code, _BOLD, _RED if d.severity == "error" else _YELLOW)
        head = f"{paint(d.location, _BOLD)}: {code} {d.message}" if d.location else f"{code} {d.message}"
        where = _nodes_phrase(g)
        out.append(f"{head} ({where})" if where else head)
        out.extend(_excerpt(d, read_line, paint))
        out.extend(f"  = {n}" if n.startswith("note: ") else f"  = note: {n}" for n in g.notes)
        if len(cause) > 1:
            out.append(f"  = {_elsewhere(cause[1:])}")
    out = bounded(out, len(shown), limit, "cause")
    if summary:
        if out:
            out.append("")
        out.append(f"Found {summary_line(diags)}.")
    return "\n".join(out) + "\n" if out else ""


def _excerpt(d: Diagnostic, read_line: LineReader, paint: Callable[..., str]) -> list[str]:
    """The source line and a caret under the column, tabs kept so the caret lines up. Never for a secret's
    diagnostic: its line may hold the secret in clear (docs/access.md#secrets)."""
    if d.file is None or d.line is None or d.code.startswith("E_SECRET_"):
        return []
    text = read_line(d.file, d.line)
    if text is None:
        return []
    text = text.rstrip("\r\n")
    gutter = f"{d.line:>4} | "
    lines = [paint(gutter, _BLUE) + text]
    if d.col is not None and d.col >= 1:
        pad = "".join(c if c == "\t" else " " for c in text[: d.col - 1])
        lines.append(paint(" " * (len(gutter) - 2) + "| ", _BLUE) + pad + paint("^", _BOLD, _RED))
    return lines


# ------------------------------------------------------------------------------------------ json


def render_json(diags: Iterable[Diagnostic], **envelope: Any) -> str:
    """The compile report: `envelope` (store, source, variables, nodes), counts, every diagnostic.

    JSON lists each diagnostic on its own (no grouping): it is for machines.
    """
    ordered = sorted(set(diags), key=sort_key)
    errors, warnings = count(ordered)
    doc = {
        **envelope,
        "errors": errors,
        "warnings": warnings,
        "diagnostics": [d.to_json() for d in ordered],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


# ------------------------------------------------------------------------------------------ github


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_property(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(diags: Iterable[Diagnostic]) -> str:
    """GitHub Actions workflow commands, one per (grouped) entry, escaped per the runner's rules."""
    out: list[str] = []
    for g in group(diags):
        d = g.first
        props: list[str] = []
        if d.file is not None:
            props.append(f"file={_gh_property(d.file)}")
            if d.line is not None:
                props.append(f"line={d.line}")
                if d.col is not None:
                    props.append(f"col={d.col}")
        props.append(f"title={_gh_property(d.code)}")
        where = _nodes_phrase(g)
        message = "\n".join([f"{d.message} ({where})" if where else d.message, *g.notes])
        out.append(f"::{d.severity} {','.join(props)}::{_gh_data(message)}")
    return "\n".join(out) + "\n" if out else ""


# ------------------------------------------------------------------------------------------ markdown

MARKDOWN_ROWS = 100  # entries listed in the table before "... and N more"


def _md_cell(text: str) -> str:
    """Table-cell text: Markdown punctuation escaped (pipes, `$` for GitHub math), newlines as <br>."""
    for char in "\\|$*_`<>[]":
        text = text.replace(char, "\\" + char)
    return text.replace("\r", "").replace("\n", "<br>")


def render_markdown(diags: Iterable[Diagnostic], *, title: str = "cfgtool compile") -> str:
    """A pull-request summary: a status line, counts per code, then one table row per (grouped) entry."""
    diags = list(diags)
    errors, warnings = count(diags)
    icon = ":x:" if errors else (":warning:" if warnings else ":white_check_mark:")
    out = [f"### {icon} {title}: {summary_line(diags)}", ""]
    if not diags:
        return "\n".join(out)
    per_code: dict[str, int] = {}
    for d in set(diags):
        per_code[d.code] = per_code.get(d.code, 0) + 1
    out += ["| Code | Count | Meaning |", "| --- | ---: | --- |"]
    for code in sorted(per_code, key=lambda c: (severity_of(c) != "error", c)):
        out.append(f"| `{code}` | {per_code[code]:,} | {_md_cell(CODES.get(code, ''))} |")
    out += ["", "| | Code | Location | Message |", "| --- | --- | --- | --- |"]
    entries = group(diags)
    entries.sort(key=lambda g: (g.first.severity != "error", *sort_key(g.first)))
    for g in entries[:MARKDOWN_ROWS]:
        d = g.first
        mark = ":x:" if d.severity == "error" else ":warning:"
        where = _nodes_phrase(g)
        message = "\n".join([f"{d.message} ({where})" if where else d.message, *g.notes])
        loc = f"`{d.location.replace('|', chr(92) + '|')}`" if d.location else ""
        out.append(f"| {mark} | `{d.code}` | {loc} | {_md_cell(message)} |")
    if len(entries) > MARKDOWN_ROWS:
        out += ["", f"... and {len(entries) - MARKDOWN_ROWS:,} more entries (see the job log)."]
    out.append("")
    return "\n".join(out)
