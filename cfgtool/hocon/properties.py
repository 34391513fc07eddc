"""Java `.properties` files as an `Obj` tree, following `java.util.Properties.load` and Lightbend config.

Syntax (`Properties.load`): a logical line may continue over several natural lines with an odd number of trailing
backslashes. Leading whitespace of the next line is dropped. Blank lines are skipped, and so are lines whose first
non-whitespace character is `#` or `!`. A comment never continues. The key ends at the first unescaped `=`, `:` or
whitespace. The value starts after the separator and any whitespace around it. Trailing whitespace in a value is
kept. Escapes: `\\t \\n \\r \\f \\uXXXX`; any other escaped character stands for itself. Whitespace is space, tab and
form feed; a leading byte order mark counts as whitespace.

Tree (Lightbend `PropertiesParser`): keys split on every `.` into paths, and empty keys are kept. Every value is a
quoted string. A repeated key keeps its last value. When a key is both a value and a parent of other keys, the object
wins, whatever the order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from cfgtool.hocon.errors import E_SYNTAX, HoconError
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.values import Node, Obj, Scalar

__all__ = ["parse_properties"]

_NEWLINE = re.compile(r"\r\n|\r|\n")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_WHITESPACE = " \t\f"
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

Pos = tuple[int, int]  # 1-based (line, col) of one character of a logical line


def parse_properties(text: str, origin: str) -> Obj:
    """Parse `.properties` text into an object of string `Scalar`s; `origin` names the file in origins.

    Raises `HoconError(E_SYNTAX)` for a malformed `\\uXXXX` escape.
    """
    values: dict[tuple[str, ...], tuple[Scalar, Origin]] = {}
    for chars, pos in _logical_lines(text):
        key_end, value_start = _split_key_value(chars)
        key = _unescape(chars, pos, 0, key_end, origin)
        value = _unescape(chars, pos, value_start, len(chars), origin)
        value_at = pos[value_start] if value_start < len(pos) else (pos[-1][0], pos[-1][1] + 1)
        scalar = Scalar(value, Origin(origin, *value_at), quoted=True)
        values[tuple(key.split("."))] = (scalar, Origin(origin, *pos[0]))
    return _build_tree(values, Origin(origin, 1, 1))


def _logical_lines(text: str) -> Iterator[tuple[str, list[Pos]]]:
    """Yield each non-blank, non-comment logical line with the source position of every character."""
    chars: list[str] = []
    pos: list[Pos] = []
    continuing = False
    for lineno, line in enumerate(_NEWLINE.split(text), start=1):
        col = 1 if lineno == 1 and line.startswith("\ufeff") else 0
        while col < len(line) and line[col] in _WHITESPACE:
            col += 1
        if not continuing:
            if col == len(line) or line[col] in "#!":
                continue
            chars, pos = [], []
        body = line[col:]
        trailing = len(body) - len(body.rstrip("\\"))
        continuing = trailing % 2 == 1
        if continuing:
            body = body[:-1]  # the continuation backslash (also dropped at end of input, as Java does)
        chars.extend(body)
        pos.extend((lineno, col + 1 + i) for i in range(len(body)))
        if not continuing and chars:
            yield "".join(chars), pos
            chars, pos = [], []
    if chars:
        yield "".join(chars), pos


def _split_key_value(line: str) -> tuple[int, int]:
    """Return (end of the escaped key, start of the escaped value) in a logical line (Java `load0`)."""
    key_end, value_start, has_sep, backslash = 0, len(line), False, False
    while key_end < len(line):
        c = line[key_end]
        if not backslash and c in "=:":
            value_start, has_sep = key_end + 1, True
            break
        if not backslash and c in _WHITESPACE:
            value_start = key_end + 1
            break
        backslash = c == "\\" and not backslash
        key_end += 1
    while value_start < len(line):
        c = line[value_start]
        if c not in _WHITESPACE:
            if has_sep or c not in "=:":
                break
            has_sep = True
        value_start += 1
    return key_end, value_start


def _unescape(line: str, pos: list[Pos], start: int, end: int, origin: str) -> str:
    """Decode the escapes of `line[start:end]` (Java `loadConvert`), joining UTF-16 surrogate pairs."""
    out: list[str] = []
    i = start
    while i < end:
        c = line[i]
        i += 1
        if c != "\\" or i >= end:
            out.append(c)
            continue
        c = line[i]
        i += 1
        if c == "u":
            digits = line[i : min(i + 4, end)]
            if not _HEX4.fullmatch(digits):
                raise HoconError(
                    E_SYNTAX,
                    f"malformed \\uXXXX escape '\\u{digits}' in .properties file "
                    "(write exactly four hex digits, or '\\\\u' for a literal backslash and u)",
                    Origin(origin, *pos[i - 2]),
                )
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_ESCAPES.get(c, c))
    text = "".join(out)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return text


def _build_tree(values: dict[tuple[str, ...], tuple[Scalar, Origin]], root_origin: Origin) -> Obj:
    """Nest dotted paths into objects. A value whose path is also a parent of other keys is dropped."""
    parents = {path[:i] for path in values for i in range(1, len(path))}
    root = Obj({}, root_origin)
    for path, (scalar, key_origin) in values.items():
        if path in parents:
            continue
        obj = root
        for key in path[:-1]:
            child: Node | None = obj.fields.get(key)
            if not isinstance(child, Obj):  # never a Scalar: parents hold no values
                child = Obj({}, key_origin)
                obj.fields[key] = child
            obj = child
        obj.fields[path[-1]] = scalar
    return root
