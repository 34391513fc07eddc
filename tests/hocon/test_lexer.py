"""`cfgtool.hocon.lexer`: tokens, their positions, numbers, strings, escapes, comments and path expressions."""

from __future__ import annotations

import time
from typing import Any

import pytest

from cfgtool.hocon import HoconError, Origin, loads
from cfgtool.hocon.lexer import (
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
    parse_path_expression,
    tokenize,
)
from tests.machine import SLOW


def toks(text: str) -> list[tuple[int, Any, int, int]]:
    """(kind, value, line, col) of every token but the final EOF."""
    tokens = tokenize(text, "f.conf")
    assert tokens[-1][0] == EOF
    return [(t[0], t[1], t[3], t[4]) for t in tokens[:-1]]


def values(text: str) -> list[Any]:
    return [t[1] for t in toks(text) if t[0] != NL]


def lex_error(text: str) -> HoconError:
    with pytest.raises(HoconError) as info:
        tokenize(text, "f.conf")
    return info.value


# -- token kinds and positions ------------------------------------------------------------------------


def test_tokenize_kinds_values_lines_and_columns() -> None:
    text = 'a = 1 # c\n// d\n\nb : "x" ${?y}\nc { d += [e] }'
    assert toks(text) == [
        (UNQUOTED, "a", 1, 1),
        (EQUALS, "=", 1, 3),
        (NUMBER, 1, 1, 5),
        (NL, "# c\n// d\n\n", 1, 7),  # a newline swallows the comments and blank lines after it
        (UNQUOTED, "b", 4, 1),
        (COLON, ":", 4, 3),
        (STRING, "x", 4, 5),
        (SUBST, (("y",), True), 4, 9),
        (NL, "\n", 4, 14),
        (UNQUOTED, "c", 5, 1),
        (LBRACE, "{", 5, 3),
        (UNQUOTED, "d", 5, 5),
        (PLUSEQ, "+=", 5, 7),
        (LBRACK, "[", 5, 10),
        (UNQUOTED, "e", 5, 11),
        (RBRACK, "]", 5, 12),
        (RBRACE, "}", 5, 14),
    ]


def test_tokenize_eof_position_is_after_the_last_token() -> None:
    tokens = tokenize("a = 1\nb = 22", "f.conf")
    assert tokens[-1][0] == EOF
    assert (tokens[-1][3], tokens[-1][4]) == (2, 7)


def test_tokenize_keeps_whitespace_before_each_token() -> None:
    tokens = tokenize("a =  foo \t bar", "f.conf")
    assert [(t[1], t[5]) for t in tokens[:-1]] == [("a", ""), ("=", " "), ("foo", "  "), ("bar", " \t ")]


def test_tokenize_crlf_line_endings_do_not_leak_into_values() -> None:
    assert toks("a = x\r\nb = 2\r\n") == [
        (UNQUOTED, "a", 1, 1),
        (EQUALS, "=", 1, 3),
        (UNQUOTED, "x", 1, 5),
        (NL, "\n", 1, 7),
        (UNQUOTED, "b", 2, 1),
        (EQUALS, "=", 2, 3),
        (NUMBER, 2, 2, 5),
        (NL, "\n", 2, 7),
    ]


def test_tokenize_keywords_are_unquoted_text_with_their_spelling() -> None:
    assert toks("true false null") == [(UNQUOTED, "true", 1, 1), (UNQUOTED, "false", 1, 6), (UNQUOTED, "null", 1, 12)]


# -- comments -----------------------------------------------------------------------------------------


def test_tokenize_hash_comment_is_dropped() -> None:
    assert values("a = x # the comment\n") == ["a", "=", "x"]


def test_tokenize_double_slash_comment_is_dropped_even_without_space() -> None:
    assert values("a = x//comment") == ["a", "=", "x"]


def test_tokenize_comment_at_end_of_file_without_newline() -> None:
    assert values("a = 1 // last") == ["a", "=", 1]


def test_tokenize_comment_markers_inside_quotes_are_text() -> None:
    assert values('a = "x # y // z"') == ["a", "=", "x # y // z"]


def test_tokenize_single_slash_is_unquoted_text() -> None:
    assert values("a = /usr/local/bin") == ["a", "=", "/usr/local/bin"]


def test_tokenize_lines_after_comment_block_are_counted() -> None:
    tokens = toks("# one\n# two\n\n// three\nk = v")
    assert tokens[1:] == [(UNQUOTED, "k", 5, 1), (EQUALS, "=", 5, 3), (UNQUOTED, "v", 5, 5)]


# -- numbers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("0", 0),
        ("42", 42),
        ("-7", -7),
        ("023", 23),  # leading zeros are allowed, as Lightbend
        ("00", 0),
        ("1.5", 1.5),
        ("-1.5e-3", -0.0015),
        ("1e3", 1000.0),
        ("1E2", 100.0),
        ("1e+5", 100000.0),
        ("023.5", 23.5),
    ],
)
def test_tokenize_number_value(raw: str, value: int | float) -> None:
    (token,) = [t for t in tokenize(raw, "f.conf") if t[0] != EOF]
    assert token[0] == NUMBER
    assert token[1] == value
    assert type(token[1]) is type(value)
    assert token[2] == raw  # the source text is kept for concatenation


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("9223372036854775807", NUMBER),  # the largest 64-bit integer
        ("-9223372036854775808", NUMBER),
        ("0000000000000000000000000000012", NUMBER),  # leading zeros do not count
        ("9223372036854775808", UNQUOTED),  # one more: text, as Lightbend (Long.parseLong fails)
        ("123456789012345678901234567890", UNQUOTED),
        ("9" * 5000, UNQUOTED),  # past Python's int-to-string limit: no ValueError
    ],
)
def test_tokenize_integers_beyond_64_bits_are_text_as_in_lightbend(raw: str, kind: int) -> None:
    (token,) = [t for t in tokenize(raw, "f.conf") if t[0] != EOF]
    assert token[0] == kind
    assert token[1] == (int(raw) if kind == NUMBER else raw)


@pytest.mark.parametrize("raw", ["1.2.3", "1-2", "5-", "0.1e", "1e"])
def test_tokenize_number_like_text_is_unquoted(raw: str) -> None:
    assert toks(raw) == [(UNQUOTED, raw, 1, 1)]


def test_tokenize_number_followed_by_letters_splits_in_two() -> None:
    assert toks("10.0foo") == [(NUMBER, 10.0, 1, 1), (UNQUOTED, "foo", 1, 5)]


def test_tokenize_leading_dot_is_not_a_number() -> None:
    assert toks(".5") == [(UNQUOTED, ".5", 1, 1)]


def test_tokenize_minus_before_letter_is_unquoted() -> None:
    assert toks("-x") == [(UNQUOTED, "-x", 1, 1)]


# -- quoted strings and escapes -----------------------------------------------------------------------


def test_tokenize_simple_escapes() -> None:
    assert values(r'"\" \\ \/ \b \f \n \r \t"') == ['" \\ / \b \f \n \r \t']


def test_tokenize_unicode_escape() -> None:
    assert values(r'"\u0041\u00e9\u20AC"') == ["A\u00e9\u20ac"]


def test_tokenize_unicode_escape_surrogate_pair_is_one_character() -> None:
    assert values(r'"\ud83d\ude00"') == ["\U0001f600"]


@pytest.mark.parametrize(
    ("body", "shown"), [(r"\q", r"'\q'"), (r"\x41", r"'\x'"), (r"\u12", r"'\u'"), (r"\'", "'\\''")]
)
def test_tokenize_invalid_escape_is_E_SYNTAX(body: str, shown: str) -> None:
    err = lex_error(f'a = "{body}"')
    assert err.code == "E_SYNTAX"
    assert (err.file, err.line) == ("f.conf", 1)
    assert err.col == 5  # the string that holds it
    assert "invalid escape" in err.message
    assert shown in err.message


def test_tokenize_quoted_string_keeps_inner_whitespace() -> None:
    assert values('"  two  spaces  "') == ["  two  spaces  "]


def test_tokenize_unclosed_quoted_string_points_at_its_start() -> None:
    err = lex_error('a = 1\nb = "abc\nc = 2')
    assert (err.code, err.origin) == ("E_SYNTAX", Origin("f.conf", 2, 5))
    assert "unclosed quoted string" in err.message


def test_tokenize_quoted_string_may_not_span_lines() -> None:
    err = lex_error('a = "x\ny"')
    assert (err.code, err.line, err.col) == ("E_SYNTAX", 1, 5)


# -- triple-quoted strings ----------------------------------------------------------------------------


def test_tokenize_triple_quoted_string_keeps_newlines_and_quotes() -> None:
    assert values('a = """line 1\n  "line" 2\n"""') == ["a", "=", 'line 1\n  "line" 2\n']


def test_tokenize_triple_quoted_string_does_not_process_escapes() -> None:
    assert values(r'"""a\nb\u0041"""') == [r"a\nb\u0041"]


def test_tokenize_triple_quoted_string_extra_closing_quotes_belong_to_the_string() -> None:
    assert values('"""x""""') == ['x"']
    assert values('"""x"""""') == ['x""']
    assert values('"""x""""""') == ['x"""']


def test_tokenize_empty_triple_quoted_string() -> None:
    assert values('""""""') == [""]


def test_tokenize_positions_after_multiline_triple_quoted_string() -> None:
    tokens = toks('s = """x\ny\nz""" , t = 5\nu = 6')
    assert tokens == [
        (UNQUOTED, "s", 1, 1),
        (EQUALS, "=", 1, 3),
        (STRING, "x\ny\nz", 1, 5),
        (COMMA, ",", 3, 6),
        (UNQUOTED, "t", 3, 8),
        (EQUALS, "=", 3, 10),
        (NUMBER, 5, 3, 12),
        (NL, "\n", 3, 13),
        (UNQUOTED, "u", 4, 1),
        (EQUALS, "=", 4, 3),
        (NUMBER, 6, 4, 5),
    ]


def test_tokenize_unclosed_triple_quoted_string_points_at_its_start() -> None:
    err = lex_error('a = 1\nb = """abc\nmore')
    assert (err.code, err.origin) == ("E_SYNTAX", Origin("f.conf", 2, 5))
    assert "unclosed triple-quoted string" in err.message


# -- substitutions ------------------------------------------------------------------------------------


def test_tokenize_substitution_paths() -> None:
    assert values('${a.b} ${?c} ${"x.y"} ${ a."b.c".d }') == [
        (("a", "b"), False),
        (("c",), True),
        (("x.y",), False),
        (("a", "b.c", "d"), False),
    ]


def test_tokenize_unclosed_substitution_is_E_SYNTAX() -> None:
    err = lex_error("a = ${x\nb = 1")
    assert (err.code, err.origin) == ("E_SYNTAX", Origin("f.conf", 1, 5))
    assert "unclosed substitution" in err.message


def test_tokenize_empty_substitution_is_E_SYNTAX() -> None:
    err = lex_error("a = ${}")
    assert err.code == "E_SYNTAX"
    assert "empty path expression" in err.message


# -- reserved characters and the BOM ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "col", "char"),
    [
        ("a = `", 5, "`"),
        ("a = ^", 5, "^"),
        ("a = x?", 6, "?"),
        ("a = 1 ! 2", 7, "!"),
        ("a = x\\y", 6, "\\"),
        ("a = @", 5, "@"),
        ("a = *", 5, "*"),
        ("a = &", 5, "&"),
    ],
)
def test_tokenize_reserved_character_is_E_SYNTAX_at_its_column(text: str, col: int, char: str) -> None:
    err = lex_error(text)
    assert (err.code, err.line, err.col) == ("E_SYNTAX", 1, col)
    assert repr(char) in err.message


def test_tokenize_lone_plus_asks_for_plus_equals() -> None:
    err = lex_error("a = x+y")
    assert (err.code, err.col) == ("E_SYNTAX", 6)
    assert "'+='" in err.message


def test_tokenize_bom_is_skipped() -> None:
    assert values("\ufeffa = 1") == ["a", "=", 1]


def test_tokenize_bom_does_not_shift_columns() -> None:
    assert toks("\ufeffa = 1") == [(UNQUOTED, "a", 1, 1), (EQUALS, "=", 1, 3), (NUMBER, 1, 1, 5)]


def test_tokenize_unicode_whitespace_separates_tokens() -> None:
    assert values("a\u00a0=\u2003x") == ["a", "=", "x"]


def test_tokenize_input_over_the_size_limit_is_E_LIMIT() -> None:
    text = "a = " + "x" * (65 * 1024 * 1024)
    start = time.thread_time()
    err = lex_error(text)
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert (err.code, err.origin) == ("E_LIMIT", Origin("f.conf", 1, 1))


# -- path expressions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "keys"),
    [
        ("a", ("a",)),
        ("a.b.c", ("a", "b", "c")),
        ('a."b.c"', ("a", "b.c")),
        ('a."b.c".d', ("a", "b.c", "d")),
        ('"a.b"', ("a.b",)),
        ('""', ("",)),
        ('a.""', ("a", "")),
        ("foo bar", ("foo bar",)),
        ("  a.b  ", ("a", "b")),
        ("1.2", ("1", "2")),
        ('"x" y', ("x y",)),
        (r'"q\"t"', ('q"t',)),
    ],
)
def test_parse_path_expression_keys(expr: str, keys: tuple[str, ...]) -> None:
    assert parse_path_expression(expr, Origin("f.conf", 1, 1)) == keys


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("a..b", "empty key"),
        ("a.", "ends with '.'"),
        (".a", "empty key"),
        ("", "empty path expression"),
        ("a.$b", "not allowed"),
    ],
)
def test_parse_path_expression_bad_path_is_E_SYNTAX(expr: str, fragment: str) -> None:
    with pytest.raises(HoconError) as info:
        parse_path_expression(expr, Origin("f.conf", 3, 7))
    assert info.value.code == "E_SYNTAX"
    assert info.value.file == "f.conf"
    assert info.value.line == 3
    assert fragment in info.value.message


def test_tokenize_number_raw_text_survives_concatenation() -> None:
    assert loads("a = 1.50 x\nb = 023 y") == {"a": "1.50 x", "b": "023 y"}
