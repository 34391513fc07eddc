"""HOCON tokenizer: one compiled regular expression, one pass, a line and column on every token.

Tokens are plain tuples `(kind, value, raw, line, col)` for speed. The parser reads tens of thousands of files per
run. `raw` is the source text of the token (numbers and keywords keep it for concatenation). Problems are raised as
`HoconError(E_SYNTAX)` naming the position and what to do.
"""

from __future__ import annotations

import re
from typing import Any

from cfgtool.hocon.errors import E_LIMIT, E_SYNTAX, HoconError
from cfgtool.hocon.origin import Origin

# Token kinds. Inline whitespace is not a token: each token carries the whitespace before it.
NL, LBRACE, RBRACE, LBRACK, RBRACK, COMMA, COLON, EQUALS, PLUSEQ = range(9)
STRING, NUMBER, UNQUOTED, SUBST, EOF = range(9, 14)

Token = tuple[int, Any, str, int, int, str]
"""(kind, value, raw source text, line, col, whitespace before it)"""

KIND_NAMES = {
    NL: "newline",
    LBRACE: "'{'",
    RBRACE: "'}'",
    LBRACK: "'['",
    RBRACK: "']'",
    COMMA: "','",
    COLON: "':'",
    EQUALS: "'='",
    PLUSEQ: "'+='",
    STRING: "a quoted string",
    NUMBER: "a number",
    UNQUOTED: "unquoted text",
    SUBST: "a substitution",
    EOF: "end of file",
}

MAX_TEXT = 64 * 1024 * 1024  # bytes of HOCON text one parse accepts

# Characters that may not appear in unquoted text (Lightbend's `notInUnquotedText`), plus whitespace.
_FORBIDDEN = '$"{}[]:=,+#`^?!@*&\\'
# Whitespace other than newline: Unicode whitespace (as Lightbend) and the BOM, as one character class.
_WS_CHARS = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c != "\n") + "\ufeff"
_WS_CLASS = "[" + re.escape(_WS_CHARS) + "]"
_NOT_UNQUOTED = r"\s\ufeff$\"{}\[\]:=,+#`^?!@*&\\"
_UNQUOTED = r"[^" + _NOT_UNQUOTED + r"/]*(?:/(?!/)[^" + _NOT_UNQUOTED + r"/]*)*"  # '//' starts a comment
_COMMENT = r"(?:\#|//)[^\n]*"
# Unquoted text may not start like a number (a digit, or '-' before a digit): numbers are tried separately.
_UNQUOTED_START = r"(?:[^" + _NOT_UNQUOTED + r"/0-9-]|-(?![0-9]|\.[0-9])|/(?!/))"
_NUMBER = r"-?[0-9][0-9eE+\-.]*|-\.[0-9][0-9eE+\-.]*"  # a number, or unquoted text that starts like one
# One match per token: (whitespace before it)(the token). `findall` runs it over a whole file in C.
# Groups: 1 whitespace, then one of the alternatives below.
_TOKENS = re.compile(
    r"(" + _WS_CLASS + r"*)(?:"
    r"(" + _UNQUOTED_START + _UNQUOTED + ")"  # 2 unquoted text
    r"|([{}\[\]:,=]|\+=)"  # 3 punctuation
    # 4 newlines, with the comments and blank lines that follow them, as one token
    r"|((?:" + _COMMENT + r")?\n(?:(?:" + _WS_CLASS + r")*(?:" + _COMMENT + r")?\n)*)"
    r'|("""(.*?)"""("*))'  # 5 triple-quoted string, 6 body, 7 extra closing quotes
    r'|("([^"\\\n]*(?:\\.[^"\\\n]*)*)")'  # 8 quoted string, 9 its body
    r"|(" + _NUMBER + ")"  # 10 number (or unquoted text that starts like one)
    r"|(\$\{\??)([^}\n]*)\}"  # 11 "${" or "${?", 12 the path expression
    r"|(" + _COMMENT + r")?\Z"  # 13 a comment at the very end
    r"|(.+))",  # 14 where no token starts, the rest of the text: `findall` stops (no quadratic rescans)
    re.DOTALL,
)
_PUNCT = {"{": LBRACE, "}": RBRACE, "[": LBRACK, "]": RBRACK, ",": COMMA, ":": COLON, "=": EQUALS, "+=": PLUSEQ}
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_ESCAPE_RE = re.compile(r"\\(u[0-9A-Fa-f]{4}|.)", re.DOTALL)
SIMPLE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z_][A-Za-z0-9_-]*)*\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT_RE = re.compile(r"-?[0-9]+\Z")  # leading zeros are allowed, as in Lightbend (`023` is 23)
_FLOAT_RE = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")  # `-.5` as Java reads it
_INT64 = range(-(2**63), 2**63)


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

    text = _ESCAPE_RE.sub(one, body) if "\\" in body else body
    if _SURROGATE.search(text):  # `\ud83d\ude00` is one character, as in JSON
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def number_value(raw: str) -> int | float | None:
    """Parse a number as Lightbend does; None when `raw` is not one (it is then unquoted text).

    An integer outside 64 bits is text, as in Lightbend, where Java's `Long.parseLong` fails on it. Consumers in
    other languages could not hold it either. And a 5,000-digit literal never reaches Python's slow and limited int
    conversion.
    """
    if _INT_RE.match(raw):
        if len(raw.lstrip("-").lstrip("0")) > 19:
            return None
        number = int(raw)
        return number if number in _INT64 else None
    if _FLOAT_RE.match(raw):
        return float(raw)
    return None


def tokenize(text: str, file: str) -> list[Token]:
    """Split HOCON `text` into tokens, ending with EOF; comments are dropped."""
    if len(text) > MAX_TEXT:
        raise HoconError(E_LIMIT, f"input is larger than {MAX_TEXT} characters", Origin(file, 1, 1))
    tokens: list[Token] = []
    append = tokens.append
    pos = 0
    line = 1
    line_start = 1 if text.startswith("\ufeff") else 0  # a BOM takes no column
    for ws, unq, punct, nl, tq, tqbody, tqextra, q, qbody, num, subst, sbody, tail, bad in _TOKENS.findall(text):
        start = pos + len(ws)
        col = start - line_start + 1
        if unq:
            append((UNQUOTED, unq, unq, line, col, ws))
            pos = start + len(unq)
        elif punct:
            append((_PUNCT[punct], punct, punct, line, col, ws))
            pos = start + len(punct)
        elif nl:
            append((NL, nl, nl, line, col, ws))
            pos = start + len(nl)
            line += nl.count("\n")
            line_start = pos
        elif q:
            value = unescape(qbody, Origin(file, line, col)) if "\\" in qbody else qbody
            append((STRING, value, q, line, col, ws))
            pos = start + len(q)
        elif num:
            append(_number_token(num, file, line, col, ws))
            pos = start + len(num)
        elif subst:
            if SIMPLE_PATH.match(sbody):  # `${a.b.c}`: the common case needs no path parser
                path = tuple(sbody.split("."))
            else:
                path = parse_path_expression(sbody, Origin(file, line, col + len(subst)))
            raw = subst + sbody + "}"
            append((SUBST, (path, len(subst) == 3), raw, line, col, ws))
            pos = start + len(raw)
        elif tq:
            append((STRING, tqbody + tqextra, tq, line, col, ws))
            pos = start + len(tq)
            if "\n" in tq:
                line += tq.count("\n")
                line_start = start + tq.rindex("\n") + 1
        elif bad:
            break
        else:  # the end
            pos = start + len(tail)
            if pos != len(text):
                break
            append((EOF, None, "", line, col, ws))
            return tokens
    _locate_error(text, file)
    raise AssertionError("unreachable: _locate_error raises")


def _number_token(raw: str, file: str, line: int, col: int, ws: str) -> Token:
    """A number token, or unquoted text for number-like text such as `1.2.3` (as Lightbend does)."""
    number = number_value(raw)
    if number is not None:  # `1e999` is infinite: fine as text in a concatenation, E_SYNTAX as a value
        return (NUMBER, number, raw, line, col, ws)
    bad = next((c for c in raw if c in _FORBIDDEN), None)
    if bad is not None:
        raise HoconError(
            E_SYNTAX,
            f"reserved character {bad!r} is not allowed outside quotes; quote the value",
            Origin(file, line, col + raw.index(bad)),
        )
    return (UNQUOTED, raw, raw, line, col, ws)


def _locate_error(text: str, file: str) -> None:
    """Find the first place no token starts and raise a precise error for it (the slow path)."""
    pos = 0
    line = 1
    line_start = 0
    while True:
        m = _TOKENS.match(text, pos)
        if m is None or m.group(14) is not None or (m.end() == pos and pos != len(text)):
            break
        if m.group(8) == '""' and text.startswith('"', m.end()):
            raise HoconError(
                E_SYNTAX,
                'unclosed triple-quoted string: add the closing \'"""\'',
                Origin(file, line, m.start(8) - line_start + 1),
            )
        token = m.group()
        if "\n" in token:
            line += token.count("\n")
            line_start = pos + token.rindex("\n") + 1
        pos = m.end()
    pos += len(_LEADING_WS.match(text, pos).group())  # type: ignore[union-attr]
    origin = Origin(file, line, pos - line_start + 1)
    if text.startswith("${", pos):
        raise HoconError(E_SYNTAX, "unclosed substitution: add '}' to end '${' on the same line", origin)
    ch = text[pos]
    if ch == '"':
        if text.startswith('"""', pos):
            raise HoconError(E_SYNTAX, 'unclosed triple-quoted string: add the closing \'"""\'', origin)
        raise HoconError(
            E_SYNTAX,
            "unclosed quoted string: add the closing '\"' before the end of the line "
            "(use a triple-quoted string for text with newlines)",
            origin,
        )
    if ch == "+":
        raise HoconError(E_SYNTAX, "'+' is only allowed as '+=' outside quotes; quote the value", origin)
    raise HoconError(E_SYNTAX, f"reserved character {ch!r} is not allowed outside quotes; quote the value", origin)


_LEADING_WS = re.compile(r"(?:" + _WS_CLASS + r")*")


_PATH_TOKEN = re.compile(
    r"(?P<ws>(?:" + _WS_CLASS + r")+)"
    r'|(?P<q>"(?P<qbody>(?:[^"\\\n]|\\.)*)")'
    r"|(?P<unq>(?:[^" + _NOT_UNQUOTED + r"/]|/(?!/))" + _UNQUOTED + ")"
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
                        E_SYNTAX,
                        f"empty key in path expression {expr.strip()!r}; quote keys that contain '.'",
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
