"""The parser's fast path: a HOCON document read straight from the pieces of one `findall`, without tokens.

`pieces.split` gives the text's pieces, their kinds and start offsets, computed in C. The parser here walks those
lists by index and tracks line and column itself. The common cases are inline: a one-line field, a literal value, the
newline after it.

It builds the very nodes `parser._Parser` builds. It gives up (`None`) on anything it does not handle. That is an
error of any kind, an include, a document nested deeper than `FAST_DEPTH`, or a root array. The caller then parses
again with the general tokenizer and parser. They raise the precise errors, so every message and position stays
theirs.
"""

from __future__ import annotations

from cfgtool.hocon.assemble import append_in_place, concat, merge_owned
from cfgtool.hocon.errors import HoconError
from cfgtool.hocon.lexer import (
    COLON,
    COMMA,
    EOF,
    EQUALS,
    LBRACE,
    LBRACK,
    MAX_TEXT,
    NL,
    NUMBER,
    PLUSEQ,
    RBRACE,
    RBRACK,
    SIMPLE_PATH,
    STRING,
    SUBST,
    UNQUOTED,
    number_value,
    parse_path_expression,
    unescape,
)
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.pieces import WS, split
from cfgtool.hocon.values import Concat, Lst, Node, Num, Obj, Scalar, Subst, Ws

FAST_DEPTH = 64  # nesting this fast path handles (the general parser allows more, with a larger stack)

_LITERAL = frozenset((STRING, NUMBER, UNQUOTED))
_VALUE_START = frozenset((STRING, NUMBER, UNQUOTED, SUBST, LBRACE, LBRACK))
_KEYWORDS: dict[str, bool | None] = {"true": True, "false": False, "null": None}
_PATHS: dict[str, tuple[str, ...]] = {}  # simple substitution paths already split (files share most of them)
_PATHS_KEPT = 4096  # (of at most 80 characters each: hostile input cannot grow it past about 1 MB)
_new_origin = tuple.__new__  # Origin(...) without NamedTuple's Python-level __new__


class _GiveUp(Exception):
    """The document needs the general parser."""


_GIVE_UP = _GiveUp()


def parse_fast(text: str, file: str) -> Obj | None:
    """The root object of HOCON `text`. None where the general parser must read it (see the module doc)."""
    if len(text) > MAX_TEXT:
        return None
    split_text = split(text)
    if split_text is None:
        return None
    pieces, kinds, starts = split_text
    parser = _Fast(pieces, kinds, starts, file, 1 if text.startswith("\ufeff") else 0)
    try:
        return parser.document()
    except (_GiveUp, HoconError, RecursionError):  # (a deep stack at the call: the caller allows a deeper one)
        return None


class _Fast:
    __slots__ = ("depth", "file", "i", "kinds", "line", "line_start", "pieces", "starts")

    def __init__(self, pieces: list[str], kinds: list[int], starts: list[int], file: str, line_start: int) -> None:
        self.pieces = pieces
        self.kinds = kinds
        self.starts = starts
        self.file = file
        self.line = 1
        self.line_start = line_start  # a BOM takes no column
        self.depth = 0
        self.i = 0 if kinds[0] != WS else 1

    def _origin(self, i: int) -> Origin:
        return _new_origin(Origin, (self.file, self.line, self.starts[i] - self.line_start + 1))

    def _newline(self, i: int) -> int:
        """Step over the newline run at `i` (and the indentation after it)."""
        piece = self.pieces[i]
        self.line += piece.count("\n")
        self.line_start = self.starts[i] + piece.rindex("\n") + 1
        return i + 1

    def document(self) -> Obj:
        kinds = self.kinds
        i = self.i
        if kinds[i] == NL:
            self.i = i = self._newline(i)
        if kinds[i] == LBRACK:
            raise _GIVE_UP
        root = self._object(kinds[i] == LBRACE, ())
        i = self.i
        if kinds[i] == NL:
            i = self._newline(i)
        if kinds[i] != EOF:
            raise _GIVE_UP
        return root

    def _object(self, braced: bool, path: tuple[str, ...]) -> Obj:
        kinds = self.kinds
        pieces = self.pieces
        starts = self.starts
        file = self.file
        obj_origin, i = self._open(braced)
        fields: dict[str, Node] = {}
        while True:
            kind = kinds[i]
            if kind == NL:
                piece = pieces[i]
                self.line += piece.count("\n")
                self.line_start = starts[i] + piece.rindex("\n") + 1
                i += 1
                kind = kinds[i]
            if kind == UNQUOTED:
                key = pieces[i]
                if key == "include":
                    raise _GIVE_UP
            elif kind == RBRACE and braced:
                i += 1
                self.i = i + 1 if kinds[i] == WS else i
                self.depth -= 1
                return Obj(fields, obj_origin)
            elif kind == EOF and not braced:
                self.i = i
                return Obj(fields, obj_origin)
            elif kind == STRING and pieces[i][1:3] != '""':  # a quoted key (not a triple-quoted one)
                key = pieces[i][1:-1]
                if "\\" in key:
                    key = unescape(key, self._origin(i))
            else:
                raise _GIVE_UP
            # `key = literal`, `a.b: ${c}`, `key {`: most fields, read here; `_field` reads the others
            j = i + 1
            if kinds[j] == WS:
                j += 1
            sep = kinds[j]
            value: Node | None = None
            if sep in (EQUALS, COLON, LBRACE):
                keys: list[str] | None = None
                if kind == UNQUOTED and "." in key:
                    keys = key.split(".")
                    if not all(keys) or self.depth + len(keys) - 1 > FAST_DEPTH:
                        raise _GIVE_UP
                    key_origin = _new_origin(Origin, (file, self.line, starts[i] - self.line_start + 1))
                if sep != LBRACE:
                    j += 1
                    if kinds[j] == WS:
                        j += 1
                value_kind = kinds[j]
                after = j + 1 if kinds[j + 1] != WS else j + 2
                if value_kind in _LITERAL and kinds[after] not in _VALUE_START:
                    piece = pieces[j]
                    origin = _new_origin(Origin, (file, self.line, starts[j] - self.line_start + 1))
                    if value_kind == UNQUOTED:
                        value = Scalar(piece, origin) if piece not in _KEYWORDS else Scalar(_KEYWORDS[piece], origin)
                    elif value_kind == STRING and piece[1:3] != '""' and "\\" not in piece:
                        value = Scalar(piece[1:-1], origin, True)
                    elif value_kind == NUMBER and piece.isdigit() and len(piece) < 19:  # within 64 bits
                        value = Num(int(piece), origin, piece)
                    else:
                        value = self._literal(j)
                    i = after
                elif value_kind == SUBST and kinds[after] not in _VALUE_START:
                    value = self._subst(j)
                    i = after
                elif value_kind in _VALUE_START:  # an object, an array or a concatenation
                    self.i = j
                    nested = 0 if keys is None else len(keys) - 1
                    self.depth += nested
                    inner = (*path, key) if keys is None else (*path, *keys)
                    if value_kind in (LBRACE, LBRACK):
                        line, line_start = self.line, self.line_start
                        value = self._object(True, inner) if value_kind == LBRACE else self._array(inner)
                        if kinds[self.i] in _VALUE_START:  # `{...} {...}`: a concatenation, read again as one
                            if sep == LBRACE:  # `key {...} {...}`: an error, which the full parser words
                                raise _GIVE_UP
                            self.i = j
                            self.line, self.line_start = line, line_start
                            value = self._value(inner)
                    else:
                        value = self._value(inner)
                    self.depth -= nested
                    i = self.i
                if value is not None:
                    if keys is not None:
                        for name in reversed(keys[1:]):
                            value = Obj({name: value}, key_origin)
                        key = keys[0]
                    old = fields.get(key)
                    fields[key] = value if old is None else merge_owned(value, old)
            if value is None:
                self.i = i
                self._field(fields, path, key, kind == UNQUOTED)
                i = self.i
            kind = kinds[i]
            if kind == NL:
                i = self._newline(i)
                if kinds[i] == COMMA:
                    kind = COMMA
            if kind == COMMA:
                i += 1
                if kinds[i] == WS:
                    i += 1
                if kinds[i] == NL:
                    i = self._newline(i)
                if kinds[i] == COMMA:
                    raise _GIVE_UP
            elif kind != NL and kind != RBRACE and kind != EOF:
                raise _GIVE_UP

    def _open(self, braced: bool) -> tuple[Origin, int]:
        """An object's origin and the index of its first token: past `{` (one level deeper) when `braced`, else
        the file's top, at line 1 column 1."""
        i = self.i
        if not braced:
            return _new_origin(Origin, (self.file, 1, 1)), i
        origin = self._origin(i)
        self.depth += 1
        if self.depth > FAST_DEPTH:
            raise _GIVE_UP
        i += 1
        return origin, i + 1 if self.kinds[i] == WS else i

    def _field(self, fields: dict[str, Node], path: tuple[str, ...], key: str, unquoted: bool) -> None:
        """The field whose key (one token) is at `self.i`: `key = value`, `key: value`, `key {...}`, `key += value`."""
        kinds = self.kinds
        i = self.i
        keys: tuple[str, ...] = (key,)
        at = i
        i += 1
        if kinds[i] == WS:
            i += 1
        kind = kinds[i]
        if kind in _LITERAL:  # a key of several tokens (`a."b.c"`): a path expression
            while kind in _LITERAL:
                if self.pieces[i].startswith('"""'):
                    raise _GIVE_UP
                i += 1
                if kinds[i] == WS:
                    i += 1
                kind = kinds[i]
            end = i if kinds[i - 1] != WS else i - 1
            keys = parse_path_expression("".join(self.pieces[at:end]), self._origin(at))
        elif unquoted and "." in key:
            keys = tuple(key.split("."))
            if not all(keys):
                raise _GIVE_UP
        key_origin = None
        if len(keys) > 1:
            key_origin = self._origin(at)  # of the objects a dotted key implies
            self.depth += len(keys) - 1
            if self.depth > FAST_DEPTH:
                raise _GIVE_UP
        if kind == NL:
            i = self._newline(i)
            kind = kinds[i]
        value: Node
        if kind in (EQUALS, COLON):
            i += 1
            if kinds[i] == WS:
                i += 1
            kind = kinds[i]
            if kind == NL:
                i = self._newline(i)
                kind = kinds[i]
            after = i + 1 if kinds[i + 1] != WS else i + 2
            if kind in _LITERAL and kinds[after] not in _VALUE_START:  # one literal on its own: most values
                value = self._literal(i)
                self.i = after
            else:
                self.i = i
                value = self._value(path + keys)
        elif kind == LBRACE:  # one object: `key {...} {...}` is an error, which the full parser words
            self.i = i
            value = self._object(True, path + keys)
            if kinds[self.i] in _VALUE_START:
                raise _GIVE_UP
        elif kind == PLUSEQ:
            origin = self._origin(i)
            i += 1
            if kinds[i] == WS:
                i += 1
            if kinds[i] == NL:
                i = self._newline(i)
            self.i = i
            full = path + keys
            item = self._value(full)
            if len(keys) == 1 and append_in_place(fields.get(key), item, origin):
                return
            value = Concat([Subst(full, True, origin), Lst([item], item.origin)], origin, append=True)
        else:
            raise _GIVE_UP
        if key_origin is not None:
            self.depth -= len(keys) - 1
            for inner in reversed(keys[1:]):
                value = Obj({inner: value}, key_origin)
        head = keys[0]
        old = fields.get(head)
        fields[head] = value if old is None else merge_owned(value, old)

    def _literal(self, i: int) -> Node:
        """The scalar of the literal token at `i`."""
        piece = self.pieces[i]
        kind = self.kinds[i]
        origin = _new_origin(Origin, (self.file, self.line, self.starts[i] - self.line_start + 1))
        if kind == STRING:
            return Scalar(self._string(i, origin), origin, True)
        if kind == NUMBER:
            number = number_value(piece)
            if number is not None:
                return Num(number, origin, piece)
            if "+" in piece:  # not a number, and '+' is reserved outside quotes
                raise _GIVE_UP
            return Scalar(piece, origin)
        if piece in _KEYWORDS:
            return Scalar(_KEYWORDS[piece], origin)
        return Scalar(piece, origin)

    def _string(self, i: int, origin: Origin) -> str:
        """The text of the quoted string at `i`. After a triple-quoted one with newlines, the line moves on."""
        piece = self.pieces[i]
        if piece[1:3] == '""' and len(piece) > 2:
            if "\n" in piece:
                self.line += piece.count("\n")
                self.line_start = self.starts[i] + piece.rindex("\n") + 1
            return piece[3:-3]
        body = piece[1:-1]
        return unescape(body, origin) if "\\" in body else body

    def _value(self, path: tuple[str, ...]) -> Node:
        """A value: one piece, or a concatenation of pieces on one line (whitespace between them kept)."""
        kinds = self.kinds
        pieces = self.pieces
        i = self.i
        parts: list[Node] = []
        run: list[str] = []  # text of adjacent literals (and the whitespace between them) not yet a node
        run_at = -1  # the first of them
        run_origin = None
        first = True
        containers = False  # objects or arrays among the parts (`concat` checks those)
        while True:
            kind = kinds[i]
            if kind not in _VALUE_START:
                break
            ws = "" if first or kinds[i - 1] != WS else pieces[i - 1]
            first = False
            if kind in _LITERAL:
                if run_origin is None:
                    run_at = i
                    run_origin = self._origin(i)
                    if ws:
                        parts.append(Ws(ws, run_origin))
                else:
                    run.append(ws)
                if kind == STRING:
                    run.append(self._string(i, run_origin))  # (an origin for errors only: they give up)
                else:
                    if kind == NUMBER and "+" in pieces[i] and number_value(pieces[i]) is None:
                        raise _GIVE_UP
                    run.append(pieces[i])
                i += 1
                if kinds[i] == WS:
                    i += 1
                continue
            if run_origin is not None:
                parts.append(self._run(run, run_at, run_origin))
                run = []
                run_origin = None
            if ws:
                parts.append(Ws(ws, self._origin(i)))
            if kind == SUBST:
                parts.append(self._subst(i))
                i += 1
                if kinds[i] == WS:
                    i += 1
                continue
            self.i = i
            parts.append(self._object(True, path) if kind == LBRACE else self._array(path))
            i = self.i
            containers = True
        if run_origin is not None:
            parts.append(self._run(run, run_at, run_origin))
        if not parts:
            raise _GIVE_UP
        self.i = i
        if len(parts) == 1:
            return parts[0]
        return concat(parts) if containers else Concat(parts, parts[0].origin)

    def _run(self, run: list[str], at: int, origin: Origin) -> Node:
        """Adjacent literals: one typed scalar alone, else the string of their text."""
        if len(run) > 1:
            return Scalar("".join(run), origin, True)
        kind = self.kinds[at]
        if kind == STRING:
            return Scalar(run[0], origin, True)
        piece = self.pieces[at]
        if kind == NUMBER:
            number = number_value(piece)
            if number is not None:
                return Num(number, origin, piece)
        elif piece in _KEYWORDS:
            return Scalar(_KEYWORDS[piece], origin)
        return Scalar(piece, origin)

    def _subst(self, i: int) -> Subst:
        piece = self.pieces[i]
        opener = 3 if piece[2:3] == "?" else 2
        body = piece[opener:-1]
        origin = _new_origin(Origin, (self.file, self.line, self.starts[i] - self.line_start + 1))
        path = _PATHS.get(body)
        if path is None:
            if SIMPLE_PATH.match(body):  # `${a.b.c}`: the common case needs no path parser
                path = tuple(body.split("."))
                if len(_PATHS) < _PATHS_KEPT and len(body) <= 80:
                    _PATHS[body] = path
            else:
                path = parse_path_expression(body, Origin(self.file, origin.line, origin.col + opener))
        return Subst(path, opener == 3, origin)

    def _array(self, path: tuple[str, ...]) -> Lst:
        kinds = self.kinds
        pieces = self.pieces
        starts = self.starts
        file = self.file
        i = self.i
        origin = self._origin(i)
        self.depth += 1
        if self.depth > FAST_DEPTH:
            raise _GIVE_UP
        i += 1
        if kinds[i] == WS:
            i += 1
        items: list[Node] = []
        while True:
            kind = kinds[i]
            if kind == NL:
                i = self._newline(i)
                kind = kinds[i]
            if kind == RBRACK:
                i += 1
                self.i = i + 1 if kinds[i] == WS else i
                self.depth -= 1
                return Lst(items, origin)
            if kind not in _VALUE_START:
                raise _GIVE_UP
            after = i + 1 if kinds[i + 1] != WS else i + 2
            if kind in _LITERAL and kinds[after] not in _VALUE_START:
                piece = pieces[i]
                if kind == UNQUOTED and piece not in _KEYWORDS:
                    items.append(Scalar(piece, _new_origin(Origin, (file, self.line, starts[i] - self.line_start + 1))))
                elif kind == STRING and piece[1:3] != '""' and "\\" not in piece:
                    line_col = (file, self.line, starts[i] - self.line_start + 1)
                    items.append(Scalar(piece[1:-1], _new_origin(Origin, line_col), True))
                else:
                    items.append(self._literal(i))
                i = after
            else:
                self.i = i
                items.append(self._value(path))
                i = self.i
            kind = kinds[i]
            if kind == NL:
                i = self._newline(i)
                if kinds[i] == COMMA:
                    kind = COMMA
            if kind == COMMA:
                i += 1
                if kinds[i] == WS:
                    i += 1
                if kinds[i] == NL:
                    i = self._newline(i)
                if kinds[i] == COMMA:
                    raise _GIVE_UP
            elif kind != NL and kind != RBRACK:
                raise _GIVE_UP
