"""Unit tests for `cfgtool.hocon.properties` (Java `Properties.load` syntax, Lightbend tree rules)."""

from __future__ import annotations

from typing import Any

import pytest

from cfgtool.hocon.errors import E_SYNTAX, HoconError
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.properties import parse_properties
from cfgtool.hocon.values import Node, Obj, Scalar


def plain(node: Node) -> Any:
    """The node tree as plain Python, checking that every leaf is a quoted string."""
    if isinstance(node, Obj):
        return {key: plain(child) for key, child in node.fields.items()}
    assert isinstance(node, Scalar)
    assert isinstance(node.value, str)
    assert node.quoted
    return node.value


def props(text: str) -> Any:
    return plain(parse_properties(text, "t.properties"))


def leaf(root: Obj, *path: str) -> Scalar:
    node: Node = root
    for key in path:
        assert isinstance(node, Obj)
        node = node.fields[key]
    assert isinstance(node, Scalar)
    return node


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1", {"a": "1"}),
        ("a:1", {"a": "1"}),
        ("a 1", {"a": "1"}),
        ("a\t1", {"a": "1"}),
        ("a\f1", {"a": "1"}),
        ("a = 1", {"a": "1"}),
        ("a   :   1", {"a": "1"}),
        ("a = = 1", {"a": "= 1"}),
        ("a == 1", {"a": "= 1"}),
        ("a : = 1", {"a": "= 1"}),
        ("a 1 2", {"a": "1 2"}),
        ("a", {"a": ""}),
        ("a=", {"a": ""}),
        ("a =   ", {"a": ""}),
        ("=v", {"": "v"}),
        ("a=b=c:d", {"a": "b=c:d"}),
    ],
)
def test_parse_properties_separators(text: str, expected: dict[str, str]) -> None:
    assert props(text) == expected


def test_parse_properties_escaped_separators_belong_to_the_key() -> None:
    assert props("a\\=b\\:c\\ d = v") == {"a=b:c d": "v"}


def test_parse_properties_value_whitespace_is_kept_at_the_end_only() -> None:
    assert props("trailing = value   \nleading =    value\n") == {"trailing": "value   ", "leading": "value"}


def test_parse_properties_escaped_leading_space_is_kept() -> None:
    assert props("a = \\  v") == {"a": "  v"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = a\\tb", "a\tb"),
        ("a = a\\nb", "a\nb"),
        ("a = a\\rb", "a\rb"),
        ("a = a\\fb", "a\fb"),
        ("a = \\u00e9", "é"),
        ("a = \\u00E9\\u00e9", "éé"),
        ("a = q\\zr", "qzr"),
        ("a = a\\\\b", "a\\b"),
        ("a = \\#\\!\\=\\:", "#!=:"),
        ("a = \\ud83d\\ude00", "\U0001f600"),
        ("a = \U0001f600", "\U0001f600"),
        ("a = \\ud83d", "\ud83d"),
    ],
)
def test_parse_properties_escapes(text: str, expected: str) -> None:
    assert props(text) == {"a": expected}


@pytest.mark.parametrize("text", ["a = \\u12", "a = \\u12g4", "a = x\\u", "\\uzzzz = v"])
def test_parse_properties_malformed_unicode_escape_reports_E_SYNTAX(text: str) -> None:
    with pytest.raises(HoconError) as info:
        parse_properties(text, "bad.properties")
    assert info.value.code == E_SYNTAX
    assert info.value.origin is not None
    assert info.value.origin.file == "bad.properties"
    assert info.value.line == 1


def test_parse_properties_malformed_escape_origin_points_at_backslash() -> None:
    with pytest.raises(HoconError) as info:
        parse_properties("ok = 1\nbad = x\\u1\n", "f")
    assert info.value.origin == Origin("f", 2, 8)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = one\\\ntwo", "onetwo"),
        ("a = one\\\n      two", "onetwo"),
        ("a = one \\\n two", "one two"),
        ("a = one\\\r\ntwo", "onetwo"),
        ("a = one\\\rtwo", "onetwo"),
        ("a = one\\\n\\\ntwo", "onetwo"),
        ("a = one\\\n#two", "one#two"),
        ("a = one\\\\\nb = two", "one\\"),
        ("a = one\\\\\\\ntwo", "one\\two"),
        ("a = one\\", "one"),
    ],
)
def test_parse_properties_continuations(text: str, expected: str) -> None:
    assert props(text)["a"] == expected


def test_parse_properties_continued_key_and_separator() -> None:
    assert props("ke\\\n  y\\\n  = v") == {"key": "v"}


def test_parse_properties_whitespace_only_continuation_line_ends_the_value() -> None:
    assert props("a = one\\\n   \nb = two") == {"a": "one", "b": "two"}


@pytest.mark.parametrize(
    "text",
    [
        "# comment\na=1",
        "! comment\na=1",
        "   # indented comment\na=1",
        "# comment ending in backslash \\\na=1",
        "\n\n   \n\t\na=1\n\n",
        "\ufeffa=1",
        "\ufeff# comment\na=1",
    ],
)
def test_parse_properties_comments_blank_lines_and_bom(text: str) -> None:
    assert props(text) == {"a": "1"}


def test_parse_properties_hash_inside_value_is_not_a_comment() -> None:
    assert props("a = x # y") == {"a": "x # y"}


def test_parse_properties_line_endings() -> None:
    assert props("a=1\r\nb=2\rc=3\nd=4") == {"a": "1", "b": "2", "c": "3", "d": "4"}


def test_parse_properties_empty_text() -> None:
    root = parse_properties("", "empty.properties")
    assert root.fields == {}
    assert root.origin == Origin("empty.properties", 1, 1)


def test_parse_properties_dotted_keys_nest() -> None:
    assert props("a.b.c = 1\na.b.d = 2\na.e = 3\nf = 4") == {
        "a": {"b": {"c": "1", "d": "2"}, "e": "3"},
        "f": "4",
    }


def test_parse_properties_empty_path_elements_are_kept() -> None:
    assert props("a..b = 1\n.c = 2\nd. = 3") == {"a": {"": {"b": "1"}}, "": {"c": "2"}, "d": {"": "3"}}


def test_parse_properties_values_are_strings_never_typed() -> None:
    assert props("n = 1\nb = true\nz = null\nl = [1]") == {"n": "1", "b": "true", "z": "null", "l": "[1]"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = hello\na.b = world", {"a": {"b": "world"}}),
        ("a.b = world\na = hello", {"a": {"b": "world"}}),
        ("a.b.c = v1\na.b = v2", {"a": {"b": {"c": "v1"}}}),
        ("a.b = v2\na.b.c = v1", {"a": {"b": {"c": "v1"}}}),
        ("a = x\na.b.c = v1", {"a": {"b": {"c": "v1"}}}),
    ],
)
def test_parse_properties_object_wins_over_scalar_in_either_order(text: str, expected: Any) -> None:
    assert props(text) == expected


def test_parse_properties_repeated_key_keeps_last_value_and_first_position() -> None:
    root = parse_properties("a = 1\nb = 2\na = 3", "f")
    assert plain(root) == {"a": "3", "b": "2"}
    assert list(root.fields) == ["a", "b"]
    assert leaf(root, "a").origin == Origin("f", 3, 5)


def test_parse_properties_keys_keep_source_order() -> None:
    root = parse_properties("z = 1\na.y = 2\nm = 3\na.b = 4", "f")
    assert list(root.fields) == ["z", "a", "m"]
    a = root.fields["a"]
    assert isinstance(a, Obj)
    assert list(a.fields) == ["y", "b"]


def test_parse_properties_value_origins() -> None:
    text = "# header\nfirst = 1\n  second:two\nthird\\\n   = x\\\n  y\nempty =\nbare\n"
    root = parse_properties(text, "conf/app.properties")
    assert leaf(root, "first").origin == Origin("conf/app.properties", 2, 9)
    assert leaf(root, "second").origin == Origin("conf/app.properties", 3, 10)
    assert leaf(root, "third").origin == Origin("conf/app.properties", 5, 6)
    assert leaf(root, "empty").origin == Origin("conf/app.properties", 7, 8)
    assert leaf(root, "bare").origin == Origin("conf/app.properties", 8, 5)


def test_parse_properties_object_origins() -> None:
    root = parse_properties("x = 1\n  a.b.c = 1\na.d = 2", "f")
    assert root.origin == Origin("f", 1, 1)
    a = root.fields["a"]
    assert isinstance(a, Obj)
    assert a.origin == Origin("f", 2, 3)
    assert leaf(root, "a", "b", "c").origin == Origin("f", 2, 11)


def test_parse_properties_columns_count_bom_and_astral_characters_once() -> None:
    root = parse_properties("\ufeffa = \U0001f600\nb = c", "f")
    assert leaf(root, "a").origin == Origin("f", 1, 6)
    assert leaf(root, "b").origin == Origin("f", 2, 5)
