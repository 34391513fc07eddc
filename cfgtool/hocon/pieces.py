"""HOCON text split for the parser's fast path. It gives pieces, their kinds and start offsets, all computed in C.

`findall` splits the text into pieces exactly where the lexer's tokens fall. Pieces are runs of inline whitespace,
tokens, and newline runs with the comments and blank lines after them. The whitespace after `=`, `:`, `,`, `{`, `[`
and `+=` stays in those pieces, and so does a newline run's indentation; they never count. The pattern has no groups,
since each group costs every match. So a piece's kind comes from its first character (`str` and `dict` work in C).
"""

from __future__ import annotations

import re
from itertools import accumulate, repeat
from operator import itemgetter

from cfgtool.hocon.lexer import (
    _COMMENT,
    _NUMBER,
    _UNQUOTED,
    _UNQUOTED_START,
    _WS_CHARS,
    _WS_CLASS,
    COLON,
    COMMA,
    EOF,
    EQUALS,
    LBRACE,
    LBRACK,
    NL,
    NUMBER,
    PLUSEQ,
    RBRACE,
    RBRACK,
    STRING,
    SUBST,
    UNQUOTED,
)

WS = EOF + 1  # a run of inline whitespace (the lexer attaches it to the next token instead)
_OPEN = -1  # the first character leaves the kind open: `//` comment or unquoted (`/x`), number or unquoted (`-x`)

# The lexer's token pattern, with whitespace in pieces of its own (or in the piece before it, above).
_PIECE = (
    _WS_CLASS + "+"
    "|"
    + _UNQUOTED_START
    + _UNQUOTED
    + r"|(?:[{\[:,=]|\+=)"
    + _WS_CLASS
    + "*"  # whitespace after these never counts: one piece
    + r"|[}\]]"
    + r"|(?:"
    + _COMMENT
    + r")?\n(?:(?:"
    + _WS_CLASS
    + r")*(?:"
    + _COMMENT
    + r")?\n)*"
    + _WS_CLASS
    + "*"
    + r'|""".*?""""*'
    + r'|"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
    + "|"
    + _NUMBER
    + r"|\$\{[^}\n]*\}"
    + "|"
    + _COMMENT
    + r"\Z"
)
_ONE_PIECE = re.compile(_PIECE, re.DOTALL)
# Where no token starts (a syntax error), the rest of the text is one last piece: `findall` stops there, as the
# lexer does, instead of searching on (which could take quadratic time on hostile text).
_PIECES = re.compile(_PIECE + r"|.+", re.DOTALL)
_KIND = {
    "{": LBRACE,
    "}": RBRACE,
    "[": LBRACK,
    "]": RBRACK,
    ",": COMMA,
    ":": COLON,
    "=": EQUALS,
    "+": PLUSEQ,
    "\n": NL,
    "#": NL,
    "/": _OPEN,
    '"': STRING,
    "$": SUBST,
    "-": _OPEN,
    **dict.fromkeys("0123456789", NUMBER),
    **dict.fromkeys(_WS_CHARS, WS),
}  # any other first character: unquoted text
_first = itemgetter(0)
_DIGITS = frozenset("0123456789")


def split(text: str) -> tuple[list[str], list[int], list[int]] | None:
    """The pieces of `text`, their kinds and start offsets. Each list ends with two EOF entries, room to look ahead.
    None where a character starts no token: a syntax error, for the general parser to report."""
    pieces: list[str] = _PIECES.findall(text)
    if pieces and not _ONE_PIECE.fullmatch(pieces[-1]):
        return None
    starts = [0, *accumulate(map(len, pieces))]
    kinds = list(map(_KIND.get, map(_first, pieces), repeat(UNQUOTED)))
    _settle(pieces, kinds)
    pieces += ("", "")
    kinds += (EOF, EOF)
    starts.append(starts[-1])
    return pieces, kinds, starts


def _settle(pieces: list[str], kinds: list[int]) -> None:
    """Decide the kinds the first character leaves open, and mark a comment that ends the text as EOF."""
    at = -1
    for _ in range(kinds.count(_OPEN)):
        at = kinds.index(_OPEN, at + 1)
        piece = pieces[at]
        second = piece[1:2]
        if piece[0] == "/":
            kinds[at] = NL if second == "/" else UNQUOTED
        else:
            number = second in _DIGITS or (second == "." and piece[2:3] in _DIGITS)
            kinds[at] = NUMBER if number else UNQUOTED
    if pieces and kinds[-1] == NL and "\n" not in pieces[-1]:
        kinds[-1] = EOF
