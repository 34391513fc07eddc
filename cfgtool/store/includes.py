"""`includes` files (docs/store-format.md#includes): one import per line, `#` comments, `${name}` / `${?name}`
variables.

Parsing is independent of variable values, so a file is parsed once. `expand` then applies one assignment of variable
values. Compile tries every declared value (docs/resolution.md#variables-dynamic-tags). An optional variable that is
undefined drops the whole line, never leaving a truncated path.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from cfgtool.diagnostics import Diagnostic
from cfgtool.store.keys import BadKeyError, normalize_key

INCLUDES_FILES = ("includes", "includes.conf")

_VAR_RE = re.compile(r"\$\{(\?)?\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}")


@dataclass(frozen=True)
class VariableUse:
    """One `${name}` or `${?name}` in a line; `col` is the column of its `$`."""

    name: str
    optional: bool
    col: int


class IncludeLine(NamedTuple):
    """One import line: the raw text (without newline), its 1-based line and the column where the import starts. Also
    the template: comment and surrounding blanks removed, variables not yet applied. A named tuple. A large store has
    hundreds of thousands, made again from the structure cache by each compile."""

    text: str
    line: int
    col: int
    template: str
    variables: tuple[VariableUse, ...] = ()


class Import(NamedTuple):
    """An include line after variables were applied: the normalized key it imports (a named tuple, as
    `IncludeLine`)."""

    key: str
    line: IncludeLine
    file: str


def parse_includes(text: str, file: str, key: str | None = None) -> tuple[list[IncludeLine], list[Diagnostic]]:
    """The import lines of an includes file; E_SYNTAX for a malformed `${` (that line is skipped)."""
    lines: list[IncludeLine] = []
    diags: list[Diagnostic] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if number == 1:
            raw = raw.removeprefix("\ufeff")
        body = raw.split("#", 1)[0]
        template = body.strip()
        if not template:
            continue
        col = len(body) - len(body.lstrip()) + 1
        if "$" not in template:  # the common case: a plain key
            lines.append(IncludeLine(raw, number, col, template))
            continue
        matches = list(_VAR_RE.finditer(template))
        bad = template.find("${", 0)
        for m in matches:  # the first "${" that is not the start of a well-formed variable
            if bad != m.start():
                break
            bad = template.find("${", m.end())
        if bad >= 0:
            message = f"malformed variable in {template!r}: write ${{name}} or ${{?name}}"
            diags.append(Diagnostic.of("E_SYNTAX", message, key=key, file=file, line=number, col=col + bad))
            continue
        uses = tuple(VariableUse(m.group(2), m.group(1) == "?", col + m.start()) for m in matches)
        lines.append(IncludeLine(raw, number, col, template, uses))
    return lines, diags


def variables_used(lines: Iterable[IncludeLine]) -> frozenset[str]:
    """Names of every variable the lines use (compile checks each declared value of these)."""
    return frozenset(u.name for line in lines for u in line.variables)


def undeclared(lines: Iterable[IncludeLine], declared: Collection[str], file: str, key: str) -> list[Diagnostic]:
    """E_UNDECLARED_VARIABLE for each use of a variable `_CONFIG_STORE` does not declare."""
    lines = [line for line in lines if line.variables]
    return [
        Diagnostic.of(
            "E_UNDECLARED_VARIABLE",
            f"variable '{u.name}' is not declared in _CONFIG_STORE",
            key=key,
            file=file,
            line=line.line,
            col=u.col,
            notes=(f"declare it under 'variables:' with its values, e.g. {u.name}: {{values: [...]}}",),
        )
        for line in lines
        for u in line.variables
        if u.name not in declared
    ]


def expand(
    lines: Iterable[IncludeLine],
    values: Mapping[str, str],
    *,
    file: str,
    key: str,
    declared: Collection[str] | None = None,
    store_name: str | None = None,
) -> tuple[list[Import], list[Diagnostic]]:
    """Apply variable `values` to each line and normalize the result into an import key, in file order.

    A line with an undefined `${?x}` is dropped; an undefined `${x}` is E_UNRESOLVED_VARIABLE. Lines that use a
    variable not in `declared` are skipped silently. `undeclared` reports them once, whatever the values. A result
    that is not a key is E_BAD_KEY. Diagnostics that depend on values note the values used.
    """
    imports: list[Import] = []
    diags: list[Diagnostic] = []
    for line in lines:
        if not line.variables:
            try:
                imports.append(Import(_normalize(line.template, store_name), line, file))
                continue
            except BadKeyError:
                pass  # reported below, like any other bad path
        names = [u.name for u in line.variables]
        if declared is not None and any(n not in declared for n in names):
            continue
        missing = [u for u in line.variables if u.name not in values]
        if any(u.optional for u in missing):
            continue
        if missing:
            u = missing[0]
            message = f"variable '{u.name}' has no value and no default"
            hint = f"pass --var {u.name}=VALUE, or give it a default in _CONFIG_STORE"
            diags.append(
                Diagnostic.of(
                    "E_UNRESOLVED_VARIABLE",
                    message,
                    key=key,
                    file=file,
                    line=line.line,
                    col=u.col,
                    notes=(hint,),
                )
            )
            continue
        path = _VAR_RE.sub(lambda m: values[m.group(2)], line.template)
        notes = (_with(values, names),) if names else ()
        try:
            imports.append(Import(normalize_key(path, store_name), line, file))
        except BadKeyError as err:
            message = f"cannot import {path!r}: {err.message.removeprefix(f'key {path!r} ')}"
            diags.append(
                Diagnostic.of("E_BAD_KEY", message, key=key, file=file, line=line.line, col=line.col, notes=notes)
            )
    return imports, diags


@lru_cache(maxsize=4096)
def _normalize(path: str, store_name: str | None) -> str:
    """`normalize_key`, cached: the same tags are imported by thousands of nodes."""
    return normalize_key(path, store_name)


def _with(values: Mapping[str, str], names: Iterable[str]) -> str:
    """`with local_cluster.name=ltx1`: the values a value-dependent diagnostic was found with."""
    return "with " + ", ".join(f"{n}={values[n]}" for n in dict.fromkeys(names))
