"""`cfgtool.hocon.parser`: document structure, keys, duplicates, concatenation, origins, includes, syntax errors."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from cfgtool.hocon import HoconError, Origin, loads, parse, parse_file, parse_value, resolve
from cfgtool.hocon.values import Concat, Lst, Node, Num, Obj, Scalar, Subst, Ws
from tests.machine import SLOW


def err(text: str, name: str = "f.conf") -> HoconError:
    with pytest.raises(HoconError) as info:
        resolve([parse(text, name)]).value  # noqa: B018 - some errors only show at resolution
    return info.value


def at(node: Node, *keys: str) -> Node:
    for key in keys:
        assert isinstance(node, Obj), f"{node!r} is not an object"
        node = node.fields[key]
    return node


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def load(path: Path) -> dict[str, Any]:
    return resolve([parse_file(path)]).value


# -- root braces and separators -----------------------------------------------------------------------


def test_parse_root_braces_are_optional() -> None:
    assert loads("{ a = 1, b { c = 2 } }") == loads("a = 1, b { c = 2 }") == {"a": 1, "b": {"c": 2}}


def test_parse_braced_root_with_surrounding_blank_lines_and_comments() -> None:
    assert loads("\n# head\n{\n  a = 1\n}\n// tail\n") == {"a": 1}


def test_parse_empty_document_is_empty_object() -> None:
    assert loads("") == {}
    assert loads("  \n# only a comment\n") == {}
    assert loads("{}") == {}


@pytest.mark.parametrize("text", ["a = 1", "a : 1", "a=1", "a:1", "a\n=\n1"])
def test_parse_equals_and_colon_separators(text: str) -> None:
    assert loads(text) == {"a": 1}


def test_parse_brace_separator_opens_an_object() -> None:
    assert loads("a { b { c = 1 } }") == {"a": {"b": {"c": 1}}}
    assert loads("a{b=1}") == {"a": {"b": 1}}


def test_parse_brace_separator_takes_one_object() -> None:
    """`key {...} {...}` is an error (as in Lightbend); with ':' or '=' the objects concatenate."""
    e = err("x = 1\ncommon_modules {} {perl: 1}")
    assert e.code == "E_SYNTAX" and (e.origin.line, e.origin.col) == (2, 19)
    assert "common_modules = {...} {...}" in e.message
    assert err("a {x = 1} ${b}\nb = {}").code == "E_SYNTAX"
    assert loads("a : {} {x = 1}") == loads("a = {} {x = 1}") == {"a": {"x": 1}}
    assert loads("a {x = 1} // note\nb {y = 2}") == {"a": {"x": 1}, "b": {"y": 2}}


def test_parse_fields_separated_by_commas_newlines_or_both() -> None:
    assert loads("a = 1, b = 2\nc = 3,\nd = 4\n,e = 5,") == {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}


def test_parse_value_may_start_on_the_next_line_after_separator() -> None:
    assert loads("a =\n  1\nb :\n  x") == {"a": 1, "b": "x"}


def test_parse_value_allows_an_array_root() -> None:
    node = parse_value("[1, 2]")
    assert isinstance(node, Lst)
    assert [item.value for item in node.items if isinstance(item, Scalar)] == [1, 2]


def test_parse_document_root_may_not_be_an_array() -> None:
    e = err("[1, 2]")
    assert (e.code, e.origin) == ("E_SYNTAX", Origin("f.conf", 1, 1))
    assert "must be an object" in e.message


# -- keys ---------------------------------------------------------------------------------------------


def test_parse_dotted_key_builds_nested_objects() -> None:
    assert loads("a.b.c = 1") == {"a": {"b": {"c": 1}}}


def test_parse_quoted_key_with_dot_is_one_key() -> None:
    assert loads('a."b.c" = 1') == {"a": {"b.c": 1}}
    assert loads('"a.b" = 1') == {"a.b": 1}
    assert loads('a."b.c".d = 1') == {"a": {"b.c": {"d": 1}}}


def test_parse_key_with_inner_whitespace_keeps_it() -> None:
    assert loads("foo bar = 1") == {"foo bar": 1}
    assert loads('"a" "b" = 1') == {"a b": 1}


def test_parse_numeric_dotted_key_splits() -> None:
    assert loads("1.2 = x") == {"1": {"2": "x"}}


def test_parse_keyword_and_empty_quoted_keys() -> None:
    assert loads('true = 1, null = 2, "" = 3') == {"true": 1, "null": 2, "": 3}


def test_parse_dotted_keys_merge_with_each_other() -> None:
    assert loads("a.b = 1\na.c = 2\na { d = 3 }") == {"a": {"b": 1, "c": 2, "d": 3}}


def test_parse_key_ending_with_dot_is_E_SYNTAX() -> None:
    e = err("a.b. = 1")
    assert (e.code, e.line) == ("E_SYNTAX", 1)
    assert "ends with '.'" in e.message


# -- duplicate keys -----------------------------------------------------------------------------------


def test_parse_duplicate_object_keys_merge_recursively() -> None:
    text = "a { x = 1, n { p = 1 } }\na { y = 2, n { q = 2 } }"
    assert loads(text) == {"a": {"x": 1, "n": {"p": 1, "q": 2}, "y": 2}}


def test_parse_duplicate_key_later_value_wins_inside_merged_objects() -> None:
    assert loads("a { x = 1 }\na { x = 2 }") == {"a": {"x": 2}}


def test_parse_duplicate_non_object_replaces_object() -> None:
    assert loads("a = { x = 1 }\na = 2") == {"a": 2}


def test_parse_duplicate_object_replaces_non_object() -> None:
    assert loads("a = 2\na = { x = 1 }") == {"a": {"x": 1}}


def test_parse_object_after_non_object_does_not_merge_with_earlier_object() -> None:
    assert loads("a = { x = 1 }\na = 2\na = { y = 3 }") == {"a": {"y": 3}}


def test_parse_duplicate_scalar_last_wins() -> None:
    assert loads("a = 1\na = 2\na = three") == {"a": "three"}


def test_parse_duplicate_array_replaces_array() -> None:
    assert loads("a = [1, 2]\na = [3]") == {"a": [3]}


def test_parse_duplicate_keys_keep_first_position() -> None:
    assert list(loads("a = 1\nb = 2\na = 3")) == ["a", "b"]


# -- scalars ------------------------------------------------------------------------------------------


def test_parse_scalar_types() -> None:
    doc = loads("i = 42\nn = -3\nf = 1.5\ne = 1e3\nz = 023\nt = true\nfa = false\nnu = null\ns = text")
    assert doc == {"i": 42, "n": -3, "f": 1.5, "e": 1000.0, "z": 23, "t": True, "fa": False, "nu": None, "s": "text"}
    assert [type(doc[k]) for k in ("i", "f", "e", "z", "t", "nu")] == [int, float, float, int, bool, type(None)]


def test_parse_64_bit_ints_are_exact_and_larger_ones_text_as_in_lightbend() -> None:
    assert loads("a = 9223372036854775807, b = -9223372036854775808") == {"a": 2**63 - 1, "b": -(2**63)}
    assert loads("a = 123456789012345678901234567890") == {"a": "123456789012345678901234567890"}


def test_parse_quoted_keywords_and_numbers_are_strings() -> None:
    assert loads('t = "true", n = "null", i = "42"') == {"t": "true", "n": "null", "i": "42"}


def test_parse_keyword_prefix_is_unquoted_text() -> None:
    assert loads("a = truefalse\nb = nullx") == {"a": "truefalse", "b": "nullx"}


def test_parse_number_node_keeps_source_text() -> None:
    node = at(parse("a = 1.50"), "a")
    assert isinstance(node, Num)
    assert (node.value, node.raw) == (1.5, "1.50")


def test_parse_quoted_flag() -> None:
    root = parse('a = "x"\nb = x')
    a, b = at(root, "a"), at(root, "b")
    assert isinstance(a, Scalar) and isinstance(b, Scalar)
    assert (a.quoted, b.quoted) == (True, False)


# -- unquoted strings and concatenation ---------------------------------------------------------------


def test_parse_unquoted_string_with_inner_whitespace_kept() -> None:
    assert loads("a = foo bar  baz") == {"a": "foo bar  baz"}


def test_parse_unquoted_string_trailing_whitespace_dropped() -> None:
    assert loads("a = foo   \nb =   bar   # c") == {"a": "foo", "b": "bar"}


def test_parse_unquoted_string_with_path_characters() -> None:
    assert loads("a = /usr/local-bin/x_y.conf") == {"a": "/usr/local-bin/x_y.conf"}


def test_parse_string_concatenation_of_mixed_pieces() -> None:
    assert loads('a = "x" 1 true null y') == {"a": "x 1 true null y"}
    assert loads('a = "x"y"z"') == {"a": "xyz"}
    assert loads("a = 10 seconds") == {"a": "10 seconds"}


def test_parse_concatenation_keeps_quoted_whitespace() -> None:
    assert loads('a = " x "   " y "') == {"a": " x " + "   " + " y "}


def test_parse_concatenation_with_substitution_keeps_whitespace_parts() -> None:
    node = at(parse("a = foo  ${b} c", "f.conf"), "a")
    assert isinstance(node, Concat)
    assert [type(p) for p in node.parts] == [Scalar, Ws, Subst, Ws, Scalar]
    assert [p.value for p in node.parts if isinstance(p, (Scalar, Ws))] == ["foo", "  ", " ", "c"]
    assert loads("b = B\na = foo  ${b}  bar") == {"b": "B", "a": "foo  B  bar"}


def test_parse_array_concatenation() -> None:
    assert loads("a = [1, 2] [3]") == {"a": [1, 2, 3]}


def test_parse_array_on_the_next_line_does_not_concatenate() -> None:
    e = err("b = [1]\n  [2]")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 2, 3)


def test_parse_array_concatenation_ignores_whitespace_between_arrays() -> None:
    assert loads("a = [1]   [2] [3]") == {"a": [1, 2, 3]}


def test_parse_object_concatenation_merges_left_to_right() -> None:
    assert loads("a = {x: 1, y: 1} {y: 2} {z: 3}") == {"a": {"x": 1, "y": 2, "z": 3}}


@pytest.mark.parametrize("text", ["a = [1] x", "a = {} [1]", "a = x {b: 1}", "a = [1] {b: 1}"])
def test_parse_concatenating_literal_containers_with_other_kinds_is_E_TYPE(text: str) -> None:
    e = err(text)
    assert (e.code, e.origin) == ("E_TYPE", Origin("f.conf", 1, 5))


# -- triple-quoted strings ----------------------------------------------------------------------------


def test_parse_triple_quoted_string_with_newlines_and_quotes() -> None:
    assert loads('a = """\n  one "two"\n  three\n"""') == {"a": '\n  one "two"\n  three\n'}


def test_parse_triple_quoted_string_extra_closing_quotes() -> None:
    assert loads('a = """x""""') == {"a": 'x"'}
    assert loads('a = """""x"""') == {"a": '""x'}


def test_parse_triple_quoted_string_concatenates() -> None:
    assert loads('a = """x"""y "z"') == {"a": "xy z"}


# -- escapes ------------------------------------------------------------------------------------------


def test_parse_escapes_in_values_and_keys() -> None:
    assert loads(r'"k\u0041\n" = "v\t\u00e9\\"') == {"kA\n": "v\t\u00e9\\"}


def test_parse_invalid_escape_is_E_SYNTAX() -> None:
    e = err('a = 1\nb = "bad \\q escape"')
    assert (e.code, e.file, e.line) == ("E_SYNTAX", "f.conf", 2)
    assert "\\q" in e.message


# -- comments -----------------------------------------------------------------------------------------


def test_parse_hash_and_slash_comments_everywhere() -> None:
    text = "# top\na = 1 # after a\n// mid\nb { // open\n  c = 2 // after c\n} # close\nd = [1, # one\n 2 // two\n]"
    assert loads(text) == {"a": 1, "b": {"c": 2}, "d": [1, 2]}


def test_parse_comment_markers_in_quoted_strings_are_text() -> None:
    assert loads('a = "# no", b = "http://x/y"') == {"a": "# no", "b": "http://x/y"}


# -- arrays -------------------------------------------------------------------------------------------


def test_parse_arrays_with_newlines_commas_and_trailing_comma() -> None:
    assert loads("a = [\n  1\n  2,\n  3,\n]") == {"a": [1, 2, 3]}


def test_parse_array_elements_concatenate_on_one_line() -> None:
    assert loads("a = [1 2, x y]") == {"a": ["1 2", "x y"]}


def test_parse_nested_arrays_and_objects() -> None:
    assert loads("a = [[1, 2], {b: [3]}, []]") == {"a": [[1, 2], {"b": [3]}, []]}


# -- substitution and += nodes ------------------------------------------------------------------------


def test_parse_substitution_nodes() -> None:
    root = parse('a = ${b.c}\nd = ${?e}\nf = ${"x.y"}\ng = ${ h."i.j" }', "f.conf")
    nodes = [at(root, k) for k in "adfg"]
    assert all(isinstance(n, Subst) for n in nodes)
    assert [(n.path, n.optional, n.origin) for n in nodes if isinstance(n, Subst)] == [
        (("b", "c"), False, Origin("f.conf", 1, 5)),
        (("e",), True, Origin("f.conf", 2, 5)),
        (("x.y",), False, Origin("f.conf", 3, 5)),
        (("h", "i.j"), False, Origin("f.conf", 4, 5)),
    ]


def test_parse_plus_equals_becomes_optional_self_reference_with_array() -> None:
    node = at(parse("a { b += 1 }", "f.conf"), "a", "b")
    assert isinstance(node, Concat)
    subst, lst = node.parts
    assert isinstance(subst, Subst) and isinstance(lst, Lst)
    assert (subst.path, subst.optional) == (("a", "b"), True)
    assert [i.value for i in lst.items if isinstance(i, Scalar)] == [1]


def test_parse_plus_equals_values() -> None:
    assert loads("a += 1") == {"a": [1]}
    assert loads("a = [1]\na += 2\na += [3]") == {"a": [1, 2, [3]]}
    assert loads("x { y { z = [0] } }\nx { y { z += 1 } }\nx.y.z += 2") == {"x": {"y": {"z": [0, 1, 2]}}}


# -- BOM ----------------------------------------------------------------------------------------------


def test_parse_utf8_bom_is_ignored() -> None:
    assert loads("\ufeffa = 1\nb = 2") == {"a": 1, "b": 2}


def test_parse_file_with_utf8_bom(tmp_path: Path) -> None:
    path = tmp_path / "bom.conf"
    path.write_bytes(b"\xef\xbb\xbfa = 1\nb { c = x }\n")
    assert load(path) == {"a": 1, "b": {"c": "x"}}
    assert parse_file(path).fields["b"].origin.line == 2


# -- origins ------------------------------------------------------------------------------------------


def test_parse_origins_of_scalars_nested_values_and_array_items() -> None:
    text = 'a = 1\n  b {\n    c = x\n    d = [10,\n      "s"]\n  }\ne.f.g = true\n'
    root = parse(text, "o.conf")
    assert at(root, "a").origin == Origin("o.conf", 1, 5)
    assert at(root, "b").origin == Origin("o.conf", 2, 5)
    assert at(root, "b", "c").origin == Origin("o.conf", 3, 9)
    d = at(root, "b", "d")
    assert isinstance(d, Lst)
    assert d.origin == Origin("o.conf", 4, 9)
    assert [i.origin for i in d.items] == [Origin("o.conf", 4, 10), Origin("o.conf", 5, 7)]
    assert at(root, "e", "f", "g").origin == Origin("o.conf", 7, 9)


def test_parse_origins_after_multiline_triple_quoted_string() -> None:
    text = 'a = """one\ntwo\nthree"""\nb = 2\nc = """x\n""" , d = 4\n'
    root = parse(text, "o.conf")
    assert at(root, "a").origin == Origin("o.conf", 1, 5)
    assert at(root, "b").origin == Origin("o.conf", 4, 5)
    assert at(root, "c").origin == Origin("o.conf", 5, 5)
    assert at(root, "d").origin == Origin("o.conf", 6, 11)


def test_parse_origins_after_comments_and_blank_lines() -> None:
    root = parse("# c1\n\n// c2\n   k = v # trailing\n\n\nm = 1", "o.conf")
    assert at(root, "k").origin == Origin("o.conf", 4, 8)
    assert at(root, "m").origin == Origin("o.conf", 7, 5)


def test_parse_origin_of_concatenation_is_its_first_piece() -> None:
    root = parse("x = 1\na =   foo ${x} bar", "o.conf")
    assert at(root, "a").origin == Origin("o.conf", 2, 7)


def test_parse_origin_of_quoted_string_is_its_opening_quote() -> None:
    assert at(parse('k = "v"', "o.conf"), "k").origin == Origin("o.conf", 1, 5)


# -- syntax errors ------------------------------------------------------------------------------------


def test_parse_unclosed_object_names_where_it_opened() -> None:
    e = err("a = 1\nb = {\n  c = 2\n")
    assert (e.code, e.file, e.line, e.col) == ("E_SYNTAX", "f.conf", 4, 1)
    assert "unclosed object" in e.message
    assert "'}'" in e.message
    assert e.notes == ("note: the object opened at f.conf:2:5",)
    assert str(e) == "f.conf:4:1: unclosed object: add '}'\nnote: the object opened at f.conf:2:5"


def test_parse_unclosed_braced_root_names_where_it_opened() -> None:
    e = err("{\n  a = 1\n")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 3, 1)
    assert e.notes == ("note: the object opened at f.conf:1:1",)


def test_parse_unclosed_array_names_where_it_opened() -> None:
    e = err("a {\n  b = [\n    1\n")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 4, 1)
    assert "unclosed array" in e.message
    assert "']'" in e.message
    assert e.notes == ("note: the array opened at f.conf:2:7",)


def test_parse_unclosed_innermost_construct_is_reported() -> None:
    e = err("a = [1, {b = 2\n")
    assert e.code == "E_SYNTAX"
    assert e.notes == ("note: the object opened at f.conf:1:9",)


def test_parse_array_closed_by_brace_names_where_it_opened() -> None:
    e = err("a {\n  b = [1, 2\n}\n")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 3, 1)
    assert any("f.conf:2:7" in note for note in e.notes)


def test_parse_object_closed_by_bracket_names_where_it_opened() -> None:
    e = err("a = {\n  b = 1\n]")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 3, 1)
    assert any("f.conf:1:5" in note for note in e.notes)


def test_parse_missing_value_says_what_was_expected() -> None:
    e = err("a = 1\nb = ")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 2, 5)
    assert e.message == "expected a value after '=', found end of file"
    e = err("a = }")
    assert (e.code, e.col) == ("E_SYNTAX", 5)
    assert e.message == "expected a value after '=', found '}'"


def test_parse_missing_separator_says_what_was_expected() -> None:
    e = err('"a"')
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 1, 4)
    assert e.message == "expected ':', '=', '+=' or '{' after key 'a', found end of file"


def test_parse_junk_after_value_says_what_was_expected() -> None:
    e = err("a = 1 = 2")
    assert (e.code, e.col) == ("E_SYNTAX", 7)
    assert e.message == "expected ',' or a newline after a field, found '='"


def test_parse_two_commas_are_E_SYNTAX() -> None:
    e = err("a = 1,,b = 2")
    assert (e.code, e.col) == ("E_SYNTAX", 7)
    e = err("a = [1,,2]")
    assert (e.code, e.col) == ("E_SYNTAX", 8)


def test_parse_leading_comma_in_array_is_E_SYNTAX() -> None:
    e = err("a = [,1]")
    assert (e.code, e.col) == ("E_SYNTAX", 6)
    assert "expected an array element or ']'" in e.message


def test_parse_key_missing_is_E_SYNTAX() -> None:
    e = err("= 1")
    assert (e.code, e.origin) == ("E_SYNTAX", Origin("f.conf", 1, 1))
    assert e.message == "expected a key, found '='"


def test_parse_unbalanced_closing_brace_is_E_SYNTAX() -> None:
    e = err("a = 1\n}")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 2, 1)
    assert "unbalanced '}'" in e.message


def test_parse_text_after_braced_root_is_E_SYNTAX() -> None:
    e = err("{a = 1}\nb = 2")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 2, 1)
    assert "after the end of the document" in e.message


def test_parse_object_value_on_next_line_is_not_a_field() -> None:
    e = err("a = {b: 1}\n{c: 2}")
    assert (e.code, e.line, e.col) == ("E_SYNTAX", 2, 1)


# -- hostile nesting ----------------------------------------------------------------------------------


def test_parse_10000_deep_objects_is_E_LIMIT() -> None:
    text = "a = " + "{a = " * 10_000 + "1" + "}" * 10_000
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        parse(text, "deep.conf")
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert info.value.code == "E_LIMIT"
    assert info.value.file == "deep.conf"


def test_parse_10000_deep_arrays_is_E_LIMIT() -> None:
    text = "a = " + "[" * 10_000 + "]" * 10_000
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        parse(text, "deep.conf")
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert info.value.code == "E_LIMIT"
    assert info.value.file == "deep.conf"


def test_parse_value_10000_deep_array_root_is_E_LIMIT() -> None:
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        parse_value("[" * 10_000 + "]" * 10_000, "deep.conf")
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert info.value.code == "E_LIMIT"


def nested(depth: int, wrap: str) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if wrap == "[" else {"a": value}
    return value


def test_parse_moderate_nesting_is_accepted() -> None:
    assert loads("a = " + "[" * 100 + "1" + "]" * 100)["a"] == nested(100, "[")
    assert loads("a = " + "{a = " * 100 + "1" + "}" * 100)["a"] == nested(100, "{")


def test_parse_objects_nested_below_the_depth_limit_parse_like_arrays() -> None:
    depth = 380
    assert loads("a = " + "[" * depth + "1" + "]" * depth)["a"] == nested(depth, "[")
    assert loads("a = " + "{a = " * depth + "1" + "}" * depth)["a"] == nested(depth, "{")


# -- include ------------------------------------------------------------------------------------------


def test_parse_include_relative_file_in_nested_dirs(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main.conf": 'top = 1\ninclude "sub/a.conf"\n',
            "sub/a.conf": 'fromA = "A"\ninclude "deeper/c.conf"\n',
            "sub/deeper/c.conf": "fromC = C\n",
        },
    )
    assert load(tmp_path / "main.conf") == {"top": 1, "fromA": "A", "fromC": "C"}


def test_parse_include_origins_name_the_included_file(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main.conf": 'top = 1\ninclude "sub/a.conf"\nnest {\n  include "sub/b.conf"\n}\n',
            "sub/a.conf": '# a\n\nfromA = "A"\n',
            "sub/b.conf": "x {\n  y = [1, 2]\n}\n",
        },
    )
    root = parse_file(tmp_path / "main.conf")
    main, a, b = (str(tmp_path / n) for n in ("main.conf", "sub/a.conf", "sub/b.conf"))
    assert at(root, "top").origin == Origin(main, 1, 7)
    assert at(root, "fromA").origin == Origin(a, 3, 9)
    assert at(root, "nest", "x", "y").origin == Origin(b, 2, 7)
    y = at(root, "nest", "x", "y")
    assert isinstance(y, Lst)
    assert y.items[1].origin == Origin(b, 2, 11)


def test_parse_include_inside_object_nests_the_fields(tmp_path: Path) -> None:
    write(tmp_path, {"main.conf": 'a { include "inc.conf"\n  own = 1 }', "inc.conf": "x = 1\ny { z = 2 }"})
    assert load(tmp_path / "main.conf") == {"a": {"x": 1, "y": {"z": 2}, "own": 1}}


def test_parse_include_priority_follows_position(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "before.conf": 'k = 1\ninclude "inc.conf"\n',
            "after.conf": 'include "inc.conf"\nk = 1\n',
            "inc.conf": "k = 2\no { p = 1 }\n",
            "merge.conf": 'o { q = 0 }\ninclude "inc.conf"\no { r = 3 }\n',
        },
    )
    assert load(tmp_path / "before.conf") == {"k": 2, "o": {"p": 1}}
    assert load(tmp_path / "after.conf") == {"k": 1, "o": {"p": 1}}
    assert load(tmp_path / "merge.conf") == {"o": {"q": 0, "p": 1, "r": 3}, "k": 2}


def test_parse_include_without_extension_finds_conf(tmp_path: Path) -> None:
    write(tmp_path, {"main.conf": 'include "sub/b"\n', "sub/b.conf": "b = 1\n"})
    assert load(tmp_path / "main.conf") == {"b": 1}


def test_parse_include_file_form(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"main.conf": 'include file("inc.conf")\n', "inc.conf": "b = 1\n"})
    monkeypatch.chdir(tmp_path)
    assert load(tmp_path / "main.conf") == {"b": 1}


def test_parse_missing_optional_include_is_ignored(tmp_path: Path) -> None:
    write(tmp_path, {"main.conf": 'a = 1\ninclude "nope.conf"\nb { include "sub/nope.conf" }\n'})
    assert load(tmp_path / "main.conf") == {"a": 1, "b": {}}


def test_parse_missing_required_include_is_E_INCLUDE(tmp_path: Path) -> None:
    write(tmp_path, {"main.conf": 'a = 1\n  include required("nope.conf")\n'})
    with pytest.raises(HoconError) as info:
        parse_file(tmp_path / "main.conf")
    e = info.value
    assert (e.code, e.origin) == ("E_INCLUDE", Origin(str(tmp_path / "main.conf"), 2, 3))
    assert "nope.conf" in e.message


def test_parse_present_required_include_is_read(tmp_path: Path) -> None:
    write(tmp_path, {"main.conf": 'include required("inc.conf")\n', "inc.conf": "x = 1"})
    assert load(tmp_path / "main.conf") == {"x": 1}


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ('url("http://example.com/x.conf")', "url"),
        ('classpath("x.conf")', "classpath"),
        ('required(url("http://example.com/x.conf"))', "url"),
    ],
)
def test_parse_url_and_classpath_includes_are_E_UNSUPPORTED_INCLUDE(tmp_path: Path, spec: str, kind: str) -> None:
    write(tmp_path, {"main.conf": f"a = 1\ninclude {spec}\n"})
    with pytest.raises(HoconError) as info:
        parse_file(tmp_path / "main.conf")
    e = info.value
    assert (e.code, e.origin) == ("E_UNSUPPORTED_INCLUDE", Origin(str(tmp_path / "main.conf"), 2, 1))
    assert f"{kind}(" in e.message


def test_parse_bad_include_syntax_is_E_SYNTAX(tmp_path: Path) -> None:
    write(tmp_path, {"main.conf": 'include "x.conf" extra\n'})
    with pytest.raises(HoconError) as info:
        parse_file(tmp_path / "main.conf")
    assert (info.value.code, info.value.line, info.value.col) == ("E_SYNTAX", 1, 1)


def test_parse_include_substitutions_are_relative_to_the_include_point(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main.conf": 'x = root-x\ntop = T\nnest {\n  include "sub/b.conf"\n}\n',
            "sub/b.conf": "x = 10\ny = ${x}\nz = ${top}\nw = ${?nothing}\n",
        },
    )
    assert load(tmp_path / "main.conf") == {"x": "root-x", "top": "T", "nest": {"x": 10, "y": 10, "z": "T"}}


def test_parse_include_substitution_falls_back_to_root_through_nested_includes(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "main.conf": 'top = 1\nouter { include "sub/a.conf" }\n',
            "sub/a.conf": 'inner { include "deeper/c.conf" }\n',
            "sub/deeper/c.conf": "fromC = ${top}\nown = 2\nref = ${own}\n",
        },
    )
    assert load(tmp_path / "main.conf") == {"top": 1, "outer": {"inner": {"fromC": 1, "own": 2, "ref": 2}}}


def test_parse_plus_equals_in_included_file_appends(tmp_path: Path) -> None:
    write(tmp_path, {"main.conf": 'nest {\n  l = [0]\n  include "inc.conf"\n}\n', "inc.conf": "l += 1\n"})
    assert load(tmp_path / "main.conf") == {"nest": {"l": [0, 1]}}


def test_parse_include_self_cycle_is_E_INCLUDE(tmp_path: Path) -> None:
    write(tmp_path, {"self.conf": 'a = 1\ninclude "self.conf"\n'})
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        parse_file(tmp_path / "self.conf")
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert info.value.code == "E_INCLUDE"
    assert info.value.file == str(tmp_path / "self.conf")


def test_parse_include_two_file_cycle_is_E_INCLUDE(tmp_path: Path) -> None:
    write(tmp_path, {"one.conf": 'include "two.conf"\n', "two.conf": 'x { include "one.conf" }\n'})
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        parse_file(tmp_path / "one.conf")
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert info.value.code == "E_INCLUDE"
    assert "include" in info.value.message


def test_parse_include_through_reader_callable() -> None:
    files = {"dir/inc.conf": "b = 2"}
    root = parse('a = 1\ninclude "inc.conf"', "dir/main.conf", reader=files.get)
    assert resolve([root]).value == {"a": 1, "b": 2}
    assert at(root, "b").origin == Origin("dir/inc.conf", 1, 5)


def test_parse_include_without_reader_is_skipped() -> None:
    assert loads('a = 1\ninclude "inc.conf"') == {"a": 1}


def test_parse_include_as_quoted_key_is_a_field() -> None:
    assert loads('"include" = 1') == {"include": 1}
