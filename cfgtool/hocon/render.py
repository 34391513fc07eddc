"""Render plain JSON-like Python values as readable HOCON that parses back to exactly the same value.

`to_hocon` is the inverse of `loads` for dict roots: `loads(to_hocon(v)) == v`. Types are kept: bools stay bools,
ints stay ints, floats keep every bit. Keys and strings are quoted whenever a bare word could be read differently.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

# A bare word that HOCON reads back as the same string, as a key (one path element) or as a value.
# Deliberately narrower than the spec allows: no dots in keys (path separators), no leading digit or '-'
# (numbers), no '/' ('//' starts a comment).
_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_BARE_VALUE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
# Words with a meaning of their own: keywords (read as a prefix by Lightbend's tokenizer) and `include`.
_RESERVED_PREFIXES = ("true", "false", "null", "include")
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r", "\b": "\\b", "\f": "\\f"}
# Inline a list of scalars when it fits on one line of this many characters.
_INLINE_WIDTH = 80


def to_hocon(value: Any, indent: int = 2) -> str:
    """Render `value` as HOCON text.

    A mapping renders as a document (root braces omitted, nested objects as `key { ... }`); anything
    else renders as a single value. Supported: Mapping with str keys, list/tuple, str, int, float, bool and
    None. Raises TypeError for other types, and ValueError for nan and infinity, which HOCON cannot express.
    """
    if isinstance(value, Mapping):
        lines = _object_body(value, 0, indent)
        return "".join(line + "\n" for line in lines)
    return _value(value, 0, indent) + "\n"


def quote(text: str) -> str:
    """A JSON-style quoted string: control characters and other invisible characters are escaped."""
    return '"' + "".join(_escape_char(ch) for ch in text) + '"'


def render_key(key: str) -> str:
    """One path element as HOCON: bare when that cannot be misread, quoted otherwise."""
    if _BARE_KEY.match(key) and not key.startswith(_RESERVED_PREFIXES):
        return key
    return quote(key)


def _escape_char(ch: str) -> str:
    short = _SHORT_ESCAPES.get(ch)
    if short is not None:
        return short
    code = ord(ch)
    # C0/C1 controls, line/paragraph separators, BOM, and lone surrogates (which UTF-8 cannot carry).
    if code < 0x20 or 0x7F <= code <= 0x9F or code in (0x2028, 0x2029, 0xFEFF) or 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return ch


def _string(text: str) -> str:
    if _BARE_VALUE.match(text) and not text.startswith(_RESERVED_PREFIXES):
        return text
    return quote(text)


def _scalar(value: Any) -> str | None:
    """The HOCON text of a scalar, or None when `value` is a container."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"HOCON has no literal for the float {value}")
        return repr(value)  # the shortest text that reads back as the same float: 1.5, 1e+16, 5e-324
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping) or (isinstance(value, Sequence) and not isinstance(value, bytes | bytearray)):
        return None
    raise TypeError(
        f"cannot render {type(value).__name__} as HOCON: expected dict, list, str, int, float, bool or None"
    )


def _value(value: Any, depth: int, indent: int) -> str:
    """`value` as text that starts on the current line and ends on its last line, indented for `depth`."""
    scalar = _scalar(value)
    if scalar is not None:
        return scalar
    pad = " " * (indent * depth)
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        body = _object_body(value, depth + 1, indent)
        return "{\n" + "".join(line + "\n" for line in body) + pad + "}"
    items = list(value)
    if not items:
        return "[]"
    scalars = [_scalar(item) for item in items]
    if all(s is not None for s in scalars):
        inline = "[" + ", ".join(s for s in scalars if s is not None) + "]"
        if len(pad) + len(inline) <= _INLINE_WIDTH:
            return inline
    inner = " " * (indent * (depth + 1))
    rendered = [inner + _value(item, depth + 1, indent) for item in items]
    return "[\n" + ",\n".join(rendered) + "\n" + pad + "]"


def _object_body(obj: Mapping[Any, Any], depth: int, indent: int) -> list[str]:
    pad = " " * (indent * depth)
    lines = []
    for key, item in obj.items():
        if not isinstance(key, str):
            raise TypeError(f"cannot render a {type(key).__name__} key as HOCON: keys must be str")
        sep = " " if isinstance(item, Mapping) else " = "
        lines.append(pad + render_key(key) + sep + _value(item, depth, indent))
    return lines
