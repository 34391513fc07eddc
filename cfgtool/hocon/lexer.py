"""HOCON tokenizer: one compiled regular expression, one pass, a line and column on every token.

Tokens are plain tuples `(kind, value, raw, line, col)` for speed: the parser reads tens of thousands of
files per run. `raw` is the source text of the token (numbers and keywords keep it for concatenation).
Problems are raised as `HoconError(E_SYNTAX)` naming the position and what to do.
"""

from __future__ import annotations

import re
from typing import Any

from cfgtool.hocon.errors import E_LIMIT, E_SYNTAX, HoconError
from cfgtool.hocon.origin import Origin

# Token kinds.
WS, NL, LBRACE, RBRACE, LBRACK, RBRACK, COMMA, COLON, EQUALS, PLUSEQ = range(10)
STRING, NUMBER, UNQUOTED, SUBST, EOF = range(10, 15)

Token = tuple[int, Any, str, int, int]

KIND_NAMES = {
    WS: "whitespace", NL: "newline", LBRACE: "'{'", RBRACE: "'}'", LBRACK: "'['", RBRACK: "']'",
    COMMA: "','", COLON: "':'", EQUALS: "'='", PLUSEQ: "'+='", STRING: "a quoted string",
    NUMBER: "a number", UNQUOTED: "unquoted text", SUBST: "a substitution", EOF: "end of file",
}

MAX_TEXT = 64 * 1024 * 1024  # bytes of HOCON text one parse accepts

# Characters that may not appear in unquoted text (Lightbend's `notInUnquotedText`), plus whitespace.
_FORBIDDEN = "$\"{}[]:=,+#`^?!@*&\\"
_WS_CLASS = r"[^\S\n]|\ufeff"
_UNQUOTED = r"(?:[^\s\ufeff$\"{}\[\]:=,+#`^?!@*&\\/]|/(?!/))+"
_MASTER = re.compile(
    r"(?P<ws>(?:" + _WS_CLASS + r")+)"
    r"|(?P<nl>\n)"
    r"|(?P<comment>(?:\#|//)[^\n]*)"
    r'|(?P<tq>"""(?P<tqbody>.*?)"""(?P<tqextra>"*))'
    r'|(?P<q>"(?P<qbody>(?:[^"\\\n]|\\.)*)")'
    r"|(?P<num>-?[0-9][0-9eE+\-.]*)"
    r"|(?P<subst>\$\{(?P<opt>\??))"
    r"|(?P<punct>[{}\[\]:,=]|\+=)"
    r"|(?P<unq>" + _UNQUOTED + ")",
    re.DOTALL,
)
_PUNCT = {"{": LBRACE, "}": RBRACE, "[": LBRACK, "]": RBRACK, ",": COMMA, ":": COLON, "=": EQUALS, "+=": PLUSEQ}
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ESCAPE_RE = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)", re.DOTALL)
_INT_RE = re.compile(r"-?[0-9]+\Z")  # leading zeros are allowed, as in Lightbend (`023` is 23)
_FLOAT_RE = re.compile(r"-?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?\Z")
_SUBST_BODY = re.compile(r"[^}\n]*")


def unescape(body: str, origin: Origin) -> str:
    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] == "u" and len(esc) == 5:
            return chr(int(esc[1:], 16))
        try:
            return _ESCAPES[esc]
        except KeyError:
            raise HoconError(
                E_SYNTAX,
                f"invalid escape '\\{esc}' in quoted string; write '\\\\' for a backslash",
                origin,
            ) from None

    return _ESCAPE_RE.sub(one, body) if "\\" in body else body


def _number(raw: str) -> int | float | None:
    """Parse a JSON-style number; None when `raw` is not one (it is then unquoted text)."""
    if _INT_RE.match(raw):
        return int(raw)
    if _FLOAT_RE.match(raw):
        value = float(raw)
        return value
    return None


def tokenize(text: str, file: str) -> list[Token]:
    """Split HOCON `text` into tokens; comments are dropped, whitespace and newlines kept."""
    if len(text) > MAX_TEXT:
        raise HoconError(E_LIMIT, f"input is larger than {MAX_TEXT} characters", Origin(file, 1, 1))
    tokens: list[Token] = []
    append = tokens.append
    match = _MASTER.match
    pos = 0
    line = 1
    line_start = 0
    end = len(text)
    while pos < end:
        m = match(text, pos)
        if m is None:
            col = pos - line_start + 1
            ch = text[pos]
            origin = Origin(file, line, col)
            if ch == '"':
                if text.startswith('"""', pos):
                    raise HoconError(E_SYNTAX, "unclosed triple-quoted string: add the closing '\"\"\"'", origin)
                raise HoconError(
                    E_SYNTAX,
                    "unclosed quoted string: add the closing '\"' before the end of the line "
                    "(use a triple-quoted string for text with newlines)",
                    origin,
                )
            if ch == "+":
                raise HoconError(E_SYNTAX, "'+' is only allowed as '+=' outside quotes; quote the value", origin)
            raise HoconError(
                E_SYNTAX, f"reserved character {ch!r} is not allowed outside quotes; quote the value", origin
            )
        kind = m.lastgroup
        col = pos - line_start + 1
        raw = m.group()
        if kind == "ws":
            append((WS, raw, raw, line, col))
        elif kind == "nl":
            append((NL, raw, raw, line, col))
            line += 1
            line_start = m.end()
        elif kind == "unq":
            append((UNQUOTED, raw, raw, line, col))
        elif kind == "q":
            append((STRING, unescape(m.group("qbody"), Origin(file, line, col)), raw, line, col))
        elif kind == "punct":
            append((_PUNCT[raw], raw, raw, line, col))
        elif kind == "num":
            value = _number(raw)
            if value is None:
                bad = next((c for c in raw if c in _FORBIDDEN), None)
                if bad is not None:
                    raise HoconError(
                        E_SYNTAX,
                        f"reserved character {bad!r} is not allowed outside quotes; quote the value",
                        Origin(file, line, col + raw.index(bad)),
                    )
                append((UNQUOTED, raw, raw, line, col))
            else:
                append((NUMBER, value, raw, line, col))
        elif kind == "subst":
            pos = _substitution(text, m, file, line, col, append)
            continue
        elif kind == "tq":
            append((STRING, m.group("tqbody") + m.group("tqextra"), raw, line, col))
            newlines = raw.count("\n")
            if newlines:
                line += newlines
                line_start = m.start() + raw.rindex("\n") + 1
        # comments produce no token
        pos = m.end()
    append((EOF, None, "", line, pos - line_start + 1))
    return tokens


def _substitution(text: str, m: re.Match[str], file: str, line: int, col: int, append: Any) -> int:
    """Read `${path}` / `${?path}` starting at match `m`; append one SUBST token; return the next position."""
    start = m.end()
    body_match = _SUBST_BODY.match(text, start)
    assert body_match is not None  # the pattern matches the empty string
    close = body_match.end()
    origin = Origin(file, line, col)
    if close >= len(text) or text[close] != "}":
        raise HoconError(E_SYNTAX, "unclosed substitution: add '}' to end '${' on the same line", origin)
    body = text[start:close]
    optional = m.group("opt") == "?"
    path = parse_path_expression(body, Origin(file, line, col + (start - m.start())))
    raw = text[m.start() : close + 1]
    append((SUBST, (path, optional), raw, line, col))
    return close + 1


_PATH_TOKEN = re.compile(
    r"(?P<ws>(?:" + _WS_CLASS + r")+)" r'|(?P<q>"(?P<qbody>(?:[^"\\\n]|\\.)*)")' r"|(?P<unq>" + _UNQUOTED + ")"
)


def parse_path_expression(expr: str, origin: Origin) -> tuple[str, ...]:
    """Split a path expression (`a.b`, `a."b.c"`, `"x" y.z`) into its keys.

    Dots split keys only outside quotes. Whitespace inside the expression is part of the keys (`a. b` is
    `("a", " b")`, as in Lightbend); whitespace around the whole expression is dropped.
    """
    keys: list[str] = []
    current: list[str] = []
    started = False  # the current key has content (possibly an empty quoted string)
    pos = 0
    stripped = expr.rstrip()
    while pos < len(stripped) and (stripped[pos].isspace() or stripped[pos] == "\ufeff"):
        pos += 1
    end = len(stripped)
    while pos < end:
        m = _PATH_TOKEN.match(stripped, pos)
        if m is None:
            bad = stripped[pos]
            raise HoconError(
                E_SYNTAX,
                f"{bad!r} is not allowed in a path expression {expr.strip()!r}; quote that key",
                Origin(origin.file, origin.line, origin.col + pos),
            )
        pos = m.end()
        kind = m.lastgroup
        if kind == "q":
            current.append(unescape(m.group("qbody"), origin))
            started = True
            continue
        if kind == "ws":
            current.append(m.group())
            continue
        pieces = m.group().split(".")
        for i, piece in enumerate(pieces):
            if i > 0:
                if not started and not "".join(current):
                    raise HoconError(
                        E_SYNTAX, f"empty key in path expression {expr.strip()!r}; quote keys that contain '.'",
                        origin,
                    )
                keys.append("".join(current))
                current = []
                started = False
            if piece:
                current.append(piece)
                started = True
    if not started and not "".join(current):
        what = "empty path expression" if not keys else f"path {expr.strip()!r} ends with '.'"
        raise HoconError(E_SYNTAX, f"{what}; a path needs at least one key", origin)
    keys.append("".join(current))
    return tuple(keys)
