"""Recursive-descent HOCON parser: tokens in, an unresolved `Node` tree with origins out.

Duplicate keys merge as HOCON says. Objects merge, anything else replaces, and unresolved values keep the lower
definitions in a `Merge`. `+=` becomes `${?path} [value]`. `include` pulls in relative files through a `Reader` the
caller hands over. So this module never looks files up by itself.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from cfgtool.hocon.assemble import append_in_place, concat, merge_owned
from cfgtool.hocon.errors import E_INCLUDE, E_LIMIT, E_SYNTAX, E_UNSUPPORTED_INCLUDE, HoconError
from cfgtool.hocon.fastparse import parse_fast
from cfgtool.hocon.lexer import (
    COLON,
    COMMA,
    EOF,
    EQUALS,
    KIND_NAMES,
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
    Token,
    parse_path_expression,
    tokenize,
    unescape,
)
from cfgtool.hocon.merge import merge_all
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.values import Concat, Lst, Merge, Node, Num, Obj, Scalar, Subst, Ws

Reader = Callable[[str], "str | None"]
"""Reads an include target by path (posix, joined onto the including file's directory); None if missing."""

MAX_DEPTH = 400  # nesting of objects and arrays
MAX_INCLUDE_DEPTH = 50  # as Lightbend: include chains deeper than this are a cycle

_new_origin = tuple.__new__  # Origin(...) without NamedTuple's Python-level __new__: parsing makes thousands
_KEYWORDS: dict[str, bool | None] = {"true": True, "false": False, "null": None}
_VALUE_START = frozenset((STRING, NUMBER, UNQUOTED, SUBST, LBRACE, LBRACK))
_INCLUDE_SPEC = re.compile(
    r"""\A(?P<req>required\(\s*)?(?:(?P<kind>file|url|classpath)\(\s*)?"(?P<name>(?:[^"\\\n]|\\.)*)"\s*(?P<close>\)?)\s*(?P<close2>\)?)\Z"""
)


class _Parser:
    __slots__ = ("depth", "file", "include_depth", "pos", "reader", "tokens")

    def __init__(self, text: str, file: str, reader: Reader | None, include_depth: int) -> None:
        self.tokens = tokenize(text, file)
        self.pos = 0
        self.file = file
        self.reader = reader
        self.include_depth = include_depth
        self.depth = 0

    # -- helpers -------------------------------------------------------------------------------------
    def _origin(self, tok: Token) -> Origin:
        return _new_origin(Origin, (self.file, tok[3], tok[4]))

    def _error(self, tok: Token, message: str, notes: tuple[str, ...] = ()) -> HoconError:
        return HoconError(E_SYNTAX, message, self._origin(tok), notes)

    def _skip_newlines(self) -> None:
        if self.tokens[self.pos][0] == NL:  # consecutive newlines are one token
            self.pos += 1

    def _describe(self, tok: Token) -> str:
        if tok[0] in (STRING, UNQUOTED, NUMBER):
            return f"{KIND_NAMES[tok[0]]} {tok[2]!r}"
        return KIND_NAMES[tok[0]]

    # -- document ------------------------------------------------------------------------------------
    def document(self, value_level: bool) -> Node:
        self._skip_newlines()
        tok = self.tokens[self.pos]
        root: Node
        if tok[0] == LBRACE:
            root = self._object(True, ())
        elif tok[0] == LBRACK:
            if not value_level:
                raise self._error(tok, "the root of a HOCON document must be an object, not an array")
            root = self._array(())
        else:
            root = self._object(False, ())
        self._skip_newlines()
        tok = self.tokens[self.pos]
        if tok[0] != EOF:
            raise self._error(
                tok, f"unexpected {self._describe(tok)} after the end of the document; a document holds one root object"
            )
        return root

    # -- objects -------------------------------------------------------------------------------------
    def _object(self, braced: bool, path: tuple[str, ...]) -> Obj:
        tokens = self.tokens
        open_tok = tokens[self.pos]
        if braced:
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise HoconError(E_LIMIT, f"objects and arrays nested deeper than {MAX_DEPTH}", self._origin(open_tok))
            self.pos += 1
        fields: dict[str, Node] = {}
        while True:
            self._skip_newlines()
            tok = tokens[self.pos]
            kind = tok[0]
            if kind == RBRACE:
                if not braced:
                    raise self._error(tok, "unbalanced '}': no '{' is open here")
                self.pos += 1
                self.depth -= 1
                return Obj(fields, self._origin(open_tok))
            if kind == EOF:
                if braced:
                    raise self._error(
                        tok, "unclosed object: add '}'", (f"note: the object opened at {self._origin(open_tok)}",)
                    )
                return Obj(fields, Origin(self.file, 1, 1))
            if kind == RBRACK:
                notes = (f"note: the object opened at {self._origin(open_tok)}",) if braced else ()
                raise self._error(
                    tok,
                    "unbalanced ']': close the object with '}'" if braced else "unbalanced ']': no '[' is open here",
                    notes,
                )
            if kind == UNQUOTED and tok[1] == "include":
                self._include(fields, path)
            else:
                self._field(fields, path)
            tok = tokens[self.pos]
            kind = tok[0]
            if kind == NL:
                self._skip_newlines()
                if tokens[self.pos][0] == COMMA:
                    tok = tokens[self.pos]
                    kind = COMMA
            if kind == COMMA:
                self.pos += 1
                self._skip_newlines()
                if tokens[self.pos][0] == COMMA:
                    raise self._error(tokens[self.pos], "two commas in a row; remove one")
            elif kind not in (NL, RBRACE, EOF):
                notes = (f"note: the object opened at {self._origin(open_tok)}",) if braced else ()
                raise self._error(tok, f"expected ',' or a newline after a field, found {self._describe(tok)}", notes)

    def _key(self) -> tuple[tuple[str, ...], Token]:
        tokens = self.tokens
        first = tokens[self.pos]
        kind = first[0]
        if kind not in (STRING, UNQUOTED, NUMBER):
            if kind == COMMA:
                raise self._error(first, "unexpected ','; a field (key and value) was expected")
            raise self._error(first, f"expected a key, found {self._describe(first)}")
        nxt = tokens[self.pos + 1][0]
        if nxt != STRING and nxt != UNQUOTED and nxt != NUMBER:
            # single-token key: the common case, no need to go through the path parser
            self.pos += 1
            if kind == STRING:
                return (first[1],), first
            raw: str = first[2]
            if "." not in raw:
                return (raw,), first
            keys = tuple(raw.split("."))
            if all(keys):  # `a.b.c`: an unquoted token has no whitespace; empty keys need the full parser's error
                return keys, first
            return parse_path_expression(raw, self._origin(first)), first
        pieces = [first[2]]
        pos = self.pos + 1
        while tokens[pos][0] in (STRING, UNQUOTED, NUMBER):
            pieces.append(tokens[pos][5])
            pieces.append(tokens[pos][2])
            pos += 1
        self.pos = pos
        return parse_path_expression("".join(pieces), self._origin(first)), first

    def _field(self, fields: dict[str, Node], path: tuple[str, ...]) -> None:
        keys, key_tok = self._key()
        self._skip_newlines()
        tok = self.tokens[self.pos]
        kind = tok[0]
        full = path + keys
        value: Node
        nested = len(keys) - 1  # `a.b.c = 1` nests as deep as `a { b { c = 1 } }`
        if nested:
            self.depth += nested
            if self.depth > MAX_DEPTH:
                raise HoconError(E_LIMIT, f"objects and arrays nested deeper than {MAX_DEPTH}", self._origin(key_tok))
        if kind in (COLON, EQUALS):
            self.pos += 1
            self._skip_newlines()
            value = self._value(full, tok)
        elif kind == LBRACE:  # `key {...}` takes one object: a concatenation needs ':' or '=' (as in Lightbend)
            value = self._object(True, full)
            nxt = self.tokens[self.pos]
            if nxt[0] in _VALUE_START:
                what = ".".join(keys)
                raise self._error(
                    nxt,
                    f"expected ',' or a newline after the object of key {what!r}, found {self._describe(nxt)}; a key "
                    f"directly followed by '{{' takes one object: write `{what} = {{...}} {{...}}` to concatenate",
                )
        elif kind == PLUSEQ:
            self.pos += 1
            self._skip_newlines()
            item = self._value(full, tok)
            origin = self._origin(tok)
            if len(keys) == 1 and append_in_place(fields.get(keys[0]), item, origin):
                return
            value = Concat([Subst(full, True, origin), Lst([item], item.origin)], origin, append=True)
        else:
            what = ".".join(keys)
            raise self._error(tok, f"expected ':', '=', '+=' or '{{' after key {what!r}, found {self._describe(tok)}")
        self.depth -= nested
        key_origin = self._origin(key_tok)
        for key in reversed(keys[1:]):
            value = Obj({key: value}, key_origin)
        head = keys[0]
        old = fields.get(head)
        fields[head] = value if old is None else merge_owned(value, old)

    # -- values --------------------------------------------------------------------------------------
    def _value(self, path: tuple[str, ...], after: Token) -> Node:
        """A value: one piece, or a concatenation of pieces on one line (whitespace between them kept)."""
        tokens = self.tokens
        tok = tokens[self.pos]
        kind = tok[0]
        if (kind in (STRING, NUMBER, UNQUOTED)) and tokens[self.pos + 1][0] not in _VALUE_START:
            self.pos += 1  # the common case: one literal on its own
            return self._literal(tok)
        parts: list[Node] = []
        run: list[str] = []  # text of adjacent literals (and the whitespace between them) not yet a node
        run_start: Token | None = None
        first = True
        while True:
            tok = tokens[self.pos]
            kind = tok[0]
            if kind not in _VALUE_START:
                break
            ws = "" if first else tok[5]
            first = False
            if kind in (STRING, NUMBER, UNQUOTED):
                if run_start is None:
                    run_start = tok
                    if ws:
                        parts.append(Ws(ws, self._origin(tok)))
                else:
                    run.append(ws)
                run.append(tok[1] if kind == STRING else tok[2])
                self.pos += 1
                continue
            if run_start is not None:
                parts.append(self._run(run, run_start))
                run = []
                run_start = None
            if ws:
                parts.append(Ws(ws, self._origin(tok)))
            if kind == SUBST:
                (spath, optional) = tok[1]
                parts.append(Subst(spath, optional, self._origin(tok)))
                self.pos += 1
            elif kind == LBRACE:
                parts.append(self._object(True, path))
            else:
                parts.append(self._array(path))
        if run_start is not None:
            parts.append(self._run(run, run_start))
        if not parts:
            tok = tokens[self.pos]
            raise self._error(tok, f"expected a value after {self._describe(after)}, found {self._describe(tok)}")
        if len(parts) == 1:
            return parts[0]
        return concat(parts)

    def _literal(self, tok: Token) -> Node:
        origin = _new_origin(Origin, (self.file, tok[3], tok[4]))
        kind = tok[0]
        if kind == STRING:
            return Scalar(tok[1], origin, True)
        if kind == NUMBER:
            return Num(tok[1], origin, tok[2])
        text: str = tok[1]
        if text in _KEYWORDS:
            return Scalar(_KEYWORDS[text], origin)
        return Scalar(text, origin)

    def _run(self, run: list[str], start: Token) -> Node:
        """Adjacent literals: one typed scalar alone, else the string of their text."""
        if len(run) == 1:
            return self._literal(start)
        return Scalar("".join(run), self._origin(start), True)

    def _array(self, path: tuple[str, ...]) -> Lst:
        tokens = self.tokens
        open_tok = tokens[self.pos]
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise HoconError(E_LIMIT, f"objects and arrays nested deeper than {MAX_DEPTH}", self._origin(open_tok))
        self.pos += 1
        items: list[Node] = []
        while True:
            self._skip_newlines()
            tok = tokens[self.pos]
            kind = tok[0]
            if kind == RBRACK:
                self.pos += 1
                self.depth -= 1
                return Lst(items, self._origin(open_tok))
            if kind == EOF:
                raise self._error(
                    tok, "unclosed array: add ']'", (f"note: the array opened at {self._origin(open_tok)}",)
                )
            if kind not in _VALUE_START:
                raise self._error(
                    tok,
                    f"expected an array element or ']', found {self._describe(tok)}",
                    (f"note: the array opened at {self._origin(open_tok)}",),
                )
            items.append(self._value(path, tokens[self.pos - 1]))
            tok = tokens[self.pos]
            kind = tok[0]
            if kind == NL:
                self._skip_newlines()
                if tokens[self.pos][0] == COMMA:
                    tok = tokens[self.pos]
                    kind = COMMA
            if kind == COMMA:
                self.pos += 1
                self._skip_newlines()
                if tokens[self.pos][0] == COMMA:
                    raise self._error(tokens[self.pos], "two commas in a row; remove one")
            elif kind not in (NL, RBRACK):
                raise self._error(
                    tok,
                    f"expected ',' or ']' after an array element, found {self._describe(tok)}",
                    (f"note: the array opened at {self._origin(open_tok)}",),
                )

    # -- include -------------------------------------------------------------------------------------
    def _include(self, fields: dict[str, Node], path: tuple[str, ...]) -> None:
        tokens = self.tokens
        inc_tok = tokens[self.pos]
        self.pos += 1
        self._skip_newlines()
        pieces = []
        while tokens[self.pos][0] in (STRING, UNQUOTED):
            pieces.append(tokens[self.pos][5] + tokens[self.pos][2])
            self.pos += 1
        spec = "".join(pieces).strip()
        m = _INCLUDE_SPEC.match(spec)
        origin = self._origin(inc_tok)
        wanted = (1 if m and m.group("req") else 0) + (1 if m and m.group("kind") else 0)
        closes = (1 if m and m.group("close") else 0) + (1 if m and m.group("close2") else 0)
        if m is None or wanted != closes:
            raise HoconError(
                E_SYNTAX,
                f'bad include {spec!r}: write include "file.conf", include file("...") or include required("...")',
                origin,
            )
        kind = m.group("kind")
        if kind in ("url", "classpath"):
            raise HoconError(
                E_UNSUPPORTED_INCLUDE,
                f"include {kind}(...) is not supported: configs are hermetic; include a relative file instead",
                origin,
            )
        target = unescape(m.group("name"), origin)
        included = self._load_include(target, bool(m.group("req")), kind == "file", origin)
        if included is None:
            return
        if path:
            included = relativize(included, path)
        for key, value in included.fields.items():
            old = fields.get(key)
            fields[key] = value if old is None else merge_owned(value, old)

    def _load_include(self, name: str, required: bool, from_cwd: bool, origin: Origin) -> Obj | None:
        """Read an include target relative to the including file. `file(...)` is relative to the reader's working
        directory, as Lightbend does. A missing target is skipped unless `required(...)`."""
        if self.include_depth >= MAX_INCLUDE_DEPTH:
            raise HoconError(
                E_INCLUDE, f"include statements nested more than {MAX_INCLUDE_DEPTH} times (an include cycle?)", origin
            )
        if not name:
            raise HoconError(E_SYNTAX, "include needs a file name", origin)
        reader = self.reader
        base = "" if from_cwd else posixpath.dirname(self.file)
        target = posixpath.normpath(posixpath.join(base, name))
        found: list[Obj] = []
        if reader is not None:
            candidates = [target]
            if posixpath.splitext(name)[1] == "":
                candidates = [target + ".conf", target + ".json", target + ".properties"]
            for candidate in candidates:
                try:
                    text = reader(candidate)
                except HoconError as exc:
                    if exc.origin is not None:
                        raise
                    raise HoconError(exc.code, exc.message, origin, exc.notes) from None
                if text is not None:
                    found.append(parse_source(text, candidate, reader, self.include_depth + 1))
        if not found:
            if required:
                raise HoconError(E_INCLUDE, f"required include {name!r} not found (looked for {target!r})", origin)
            return None
        result = merge_all(found)
        assert isinstance(result, Obj)
        return result


def relativize(node: Node, prefix: tuple[str, ...]) -> Obj:
    """Rewrite `${p}` in an included document to `${prefix.p}` (falling back to `${p}` at lookup)."""
    result = _relativize(node, prefix)
    assert isinstance(result, Obj)
    return result


def _relativize(node: Node, prefix: tuple[str, ...]) -> Node:
    if isinstance(node, Subst):
        return Subst(prefix + node.path, node.optional, node.origin, node.prefix + len(prefix))
    if isinstance(node, Obj):
        return Obj({k: _relativize(v, prefix) for k, v in node.fields.items()}, node.origin)
    if isinstance(node, Lst):
        return Lst([_relativize(v, prefix) for v in node.items], node.origin)
    if isinstance(node, Concat):
        return Concat([_relativize(v, prefix) for v in node.parts], node.origin, node.append)
    if isinstance(node, Merge):
        return Merge([_relativize(v, prefix) for v in node.stack], node.origin)
    return node


def parse_source(text: str, file: str, reader: Reader | None, include_depth: int = 0) -> Obj:
    """Parse one include target or file by its extension: `.properties` as Java properties, else HOCON."""
    if file.endswith(".properties"):
        from cfgtool.hocon.properties import parse_properties

        return parse_properties(text, file)
    root = parse_fast(text, file)
    if root is None:
        general = _Parser(text, file, reader, include_depth).document(False)
        assert isinstance(general, Obj)
        return general
    return root


def parse_text(
    text: str, file: str, reader: Reader | None = None, value_level: bool = False, fast: bool = True
) -> Node:
    """Parse HOCON `text` named `file`; the root is an object unless `value_level` allows an array.

    The fast path reads most documents, unless `fast` is off because the caller tried it. The general tokenizer and
    parser read the rest and raise every error."""
    root = parse_fast(text, file) if fast else None
    return root if root is not None else _Parser(text, file, reader, 0).document(value_level)
