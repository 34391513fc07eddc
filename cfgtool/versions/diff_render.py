"""Renderers of a `Diff` (pure functions from a Diff to a string): text, json and markdown for a PR comment.

- text: the grouped summary first, then every key with its changed values and the new values' origins; rule
  files that changed (and the ACL's statements added and removed) before them.
- json: docs/versions.md's `diff` contract (`Diff.to_json`).
- markdown: a summary table first, then the keys of each change and the per-key details folded in
  `<details>`; long lists are capped with totals, and the whole comment stays under `max_chars`
  (GitHub refuses comments over 65,536 characters).
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any

from cfgtool.diagnostics import plural
from cfgtool.hocon import Origin
from cfgtool.snapshot.formats import to_json
from cfgtool.versions.diff import ABSENT, VIA_OWN, Diff, Group, KeyChange, RuleChange, ValueChange

MARKDOWN_MAX_CHARS = 60_000  # leaves room for whatever a workflow adds around the comment
_MARKS = {"added": "+", "removed": "-", "changed": "~"}


def render_json(diff: Diff) -> str:
    return to_json(diff.to_json())


# ------------------------------------------------------------------------------------------ text


def render_text(diff: Diff) -> str:
    lines = [f"diff {diff.a.label()} -> {diff.b.label()}", _totals(diff)]
    lines += _warnings(diff)
    if diff.rules:
        lines += ["", f"Rules: {plural(len(diff.rules), 'file')} changed"]
        for rule in diff.rules:
            lines += [f"  {_MARKS[rule.kind]} {rule.path}", *(f"      {line}" for line in rule_lines(rule))]
    if diff.groups:
        lines += ["", "Summary:"]
        lines += [f"  {describe_group(g)}" for g in diff.groups]
    for change in diff.changes:
        lines += ["", f"{_MARKS[change.kind]} {change.key}"]
        lines += [f"    {_describe_value(v)}" for v in change.values]
    return "\n".join(lines) + "\n"


def rule_lines(rule: RuleChange) -> list[str]:
    """The ACL statements a rule change adds (`+ ...`) and removes (`- ...`); none for other files."""
    return [f"+ {line}" for line in rule.acl_added or ()] + [f"- {line}" for line in rule.acl_removed or ()]


def describe_group(group: Group) -> str:
    """`retention.ms 604800000 -> 2592000000 in 1,243 keys, via /tags/retention/LONG`."""
    where = f"in {plural(group.count, 'key')}"
    return f"{group.path} {value_text(group.old)} -> {value_text(group.new)} {where}{_via_text(group.via, group.file)}"


def value_text(value: Any) -> str:
    """A value as JSON (strings quoted, so `"10"` and `10` differ); `(unset)` when absent."""
    if value is ABSENT:
        return "(unset)"
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _describe_value(v: ValueChange) -> str:
    if v.old is ABSENT:
        text = f"{v.path}: {value_text(v.new)}" if v.new is not ABSENT else v.path
    elif v.new is ABSENT:
        text = f"{v.path}: {value_text(v.old)} (removed)"
    else:
        text = f"{v.path}: {value_text(v.old)} -> {value_text(v.new)}"
    return f"{text}   {_origin_text(v.origin)}" if v.origin is not None else text


def _totals(diff: Diff) -> str:
    if diff.empty:
        return "no differences in resolved configs"
    parts = [
        f"{_count(diff.count('changed'))} changed",
        f"{_count(diff.count('added'))} added",
        f"{_count(diff.count('removed'))} removed",
    ]
    return f"keys: {', '.join(parts)} ({plural(diff.values, 'value')})"


def _warnings(diff: Diff) -> list[str]:
    out = []
    for side in (diff.a, diff.b):
        if side.errors:
            out.append(f"warning: {side.label()} has {plural(side.errors, 'compile error')}; run `cfgtool compile`")
    if diff.unresolved:
        shown = ", ".join(diff.unresolved[:5]) + (", ..." if len(diff.unresolved) > 5 else "")
        count = plural(len(diff.unresolved), "key")
        out.append(f"warning: {count} did not resolve on one side and were not compared: {shown}")
    return out


def _via_text(via: str | None, file: str | None) -> str:
    """`, via /tags/t`, `, via its own main.conf`, or naming the included file that set the value."""
    if via is None:
        return ""
    if via == VIA_OWN:
        return f", via its own {file}" if file else ", via its own main.conf"
    return f", via {via} ({file})" if file else f", via {via}"


def _origin_text(origin: Origin) -> str:
    return f"{origin.file}:{origin.line}:{origin.col}" if origin.line else origin.file


def _count(n: int) -> str:
    return f"{n:,}"


# ------------------------------------------------------------------------------------------ markdown


def render_markdown(
    diff: Diff,
    *,
    max_chars: int = MARKDOWN_MAX_CHARS,
    max_groups: int = 50,
    max_group_keys: int = 30,
    max_rows: int = 500,
    max_cell: int = 80,
) -> str:
    """A PR comment: heading and totals, then the summary table (at most `max_groups` rows). Then the keys of each
    change (at most `max_group_keys` each) and the per-key values (at most `max_rows` rows), both folded. Every cap
    says how much it left out; the text never exceeds `max_chars` characters."""
    out = _Writer(max_chars)
    out.add(f"### Resolved config diff: {_code(diff.a.label())} → {_code(diff.b.label())}", "")
    out.add(_md_totals(diff), "")
    for warning in _warnings(diff):
        out.add(f"> :warning: {_escape(warning.removeprefix('warning: '))}", "")
    if diff.rules:
        _md_rules(out, diff, max_group_keys)
    if diff.empty:
        return out.text()

    cell = max_cell
    out.add("| Change | Keys | Via |", "| --- | ---: | --- |")
    rows = (f"| {_md_change(g, cell)} | {_count(g.count)} | {_md_via(g.via, g.file)} |" for g in diff.groups)
    left = out.rows(rows, len(diff.groups), max_groups, reserve=2_000)
    if left:
        values = sum(g.count for g in diff.groups[-left:])
        out.force(f"| … {plural(left, 'more change')} ({plural(values, 'value')}) | | |")
    out.force("")

    out.force("<details>", f"<summary>Keys of each change ({plural(len(diff.groups), 'change')})</summary>", "")
    shown = 0
    for group in diff.groups:
        keys = ", ".join(_code(k) for k in group.keys[:max_group_keys])
        more = f" … and {_count(group.count - max_group_keys)} more" if group.count > max_group_keys else ""
        item = f"- {_md_change(group, cell)} ({plural(group.count, 'key')}): {keys}{more}"
        if not out.fits(item, reserve=1_200):
            break
        out.force(item)
        shown += 1
    if shown < len(diff.groups):
        out.force(f"- … {plural(len(diff.groups) - shown, 'more change')} not listed")
    out.force("", "</details>", "")

    rerun = f"Run `cfgtool diff {diff.a.spec} {diff.b.spec}` for the full list."
    summary = f"Per-key details ({plural(len(diff.changes), 'key')}, {plural(diff.values, 'value')})"
    if not out.fits(summary, reserve=1_000):
        out.force(f"Per-key details left out to keep this comment short. {rerun}")
        return out.text()
    out.force("<details>", f"<summary>{summary}</summary>", "")
    out.force("| Key | Path | Old | New | Set at |", "| --- | --- | --- | --- | --- |")
    left = out.rows(_detail_rows(diff.changes, cell), diff.values, max_rows, reserve=400)
    if left:
        out.force(f"| … {plural(left, 'more value')} not shown | | | | |", "", rerun)
    out.force("", "</details>")
    return out.text()


def _md_rules(out: _Writer, diff: Diff, limit: int) -> None:
    """The rule files that changed, each ACL's statements (at most `limit`) in a diff block, as room allows."""
    out.add(f"**Rules**: {plural(len(diff.rules), 'file')} changed (they decide what later changes may do):", "")
    for rule in diff.rules:
        out.add(f"- {rule.kind} {_code(rule.path)}")
        lines = [f"  {line}" for line in rule_lines(rule)[:limit]]
        left = len(rule_lines(rule)) - limit
        block = ["", "  ```diff", *lines, *([f"  … {plural(left, 'more statement')}"] if left > 0 else []), "  ```"]
        if lines and out.fits("\n".join(block), reserve=4_000):
            out.force(*block)
    out.add("")


def _md_change(group: Group, cell: int) -> str:
    old, new = _code(value_text(group.old), cell), _code(value_text(group.new), cell)
    return f"{_code(group.path, cell)}: {old} → {new}"


def _detail_rows(changes: Iterable[KeyChange], cell: int) -> Iterable[str]:
    for change in changes:
        first = True
        for v in change.values:
            key = f"{_MARKS[change.kind]} {_code(change.key)}" if first else ""
            first = False
            origin = _code(_origin_text(v.origin), cell) if v.origin is not None else ""
            old = _code(value_text(v.old), cell) if v.old is not ABSENT else ""
            new = _code(value_text(v.new), cell) if v.new is not ABSENT else ""
            yield f"| {key} | {_code(v.path, cell)} | {old} | {new} | {origin} |"


def _md_totals(diff: Diff) -> str:
    if diff.empty:
        return "No differences in resolved configs."
    return (
        f"**{_count(diff.count('changed'))}** keys changed, **{_count(diff.count('added'))}** added, "
        f"**{_count(diff.count('removed'))}** removed ({plural(diff.values, 'value')})."
    )


def _md_via(via: str | None, file: str | None) -> str:
    if via is None:
        return ""
    if via == VIA_OWN:
        return f"own {_code(file)}" if file else "own main.conf"
    return f"{_code(via)} ({_code(file)})" if file else _code(via)


def _code(text: str, limit: int | None = None) -> str:
    """`text` as an inline code span that is safe in a GFM table cell, cut to `limit` characters."""
    text = text.replace("\r", "\\r").replace("\n", "\\n")
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("|", "\\|")
    run = longest = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _escape(text: str) -> str:
    return html.escape(text, quote=False).replace("|", "\\|").replace("`", "\\`")


class _Writer:
    """Lines of a markdown document under a character budget."""

    def __init__(self, max_chars: int) -> None:
        self.lines: list[str] = []
        self.size = 0
        self.max_chars = max_chars

    def fits(self, line: str, reserve: int = 0) -> bool:
        return self.size + len(line) + 1 + reserve <= self.max_chars

    def add(self, *lines: str) -> None:
        for line in lines:
            if self.fits(line):
                self.force(line)

    def force(self, *lines: str) -> None:
        """Lines that must appear (closing tags, truncation notes): the `reserve` of earlier calls pays."""
        for line in lines:
            self.lines.append(line)
            self.size += len(line) + 1

    def rows(self, rows: Iterable[str], total: int, limit: int, reserve: int) -> int:
        """Add rows while fewer than `limit` and `reserve` characters still fit; return how many were left."""
        added = 0
        for row in rows:
            if added >= limit or not self.fits(row, reserve):
                break
            self.force(row)
            added += 1
        return total - added

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"
