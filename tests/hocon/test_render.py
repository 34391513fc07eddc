"""`cfgtool.hocon.render.to_hocon`: readable output, and a property test that it reads back unchanged."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from cfgtool.hocon import loads
from cfgtool.hocon.render import quote, render_key, to_hocon


def typed(value: Any) -> Any:
    """`value` with every scalar tagged by its type (floats by repr): 1 != 1.0 != True, -0.0 != 0.0."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def key_order(value: Any) -> Any:
    """The keys of every object, in order, with the same nesting."""
    if isinstance(value, dict):
        return [(key, key_order(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [key_order(item) for item in value]
    return None


TRICKY_STRINGS = [
    "",
    " ",
    " padded ",
    "true",
    "false",
    "null",
    "trueish",
    "nullable",
    "yes",
    "off",
    "include",
    "Infinity",
    "NaN",
    "10",
    "-1",
    "1.5",
    "1e5",
    "0x10",
    "a.b",
    "a b",
    "${x}",
    "${?x}",
    "$",
    "//c",
    "#c",
    "a//b",
    "a#b",
    "a\nb",
    "tab\there",
    '"',
    "'",
    "\\",
    "\x00",
    "\x7f",
    "\u2028",
    "\ufeff",
    "\U0001f600",
    "é",
    "=",
    ":",
    "+=",
    "{",
    "}",
    "[",
    "]",
    ",",
    "?",
    "!",
    "@",
    "*",
    "&",
    "^",
    "`",
    '"""',
    "a\r\nb",
]
tricky_text = st.sampled_from(TRICKY_STRINGS) | st.text()
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)  # HOCON integers are 64-bit, as in Lightbend
    | st.floats(allow_nan=False, allow_infinity=False)
    | tricky_text
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(tricky_text, children, max_size=5),
    max_leaves=25,
)
documents = st.dictionaries(tricky_text, values, max_size=6)


@settings(max_examples=300, deadline=None)
@given(documents)
@example({"a.b": {"": [1.5, -0.0, 1e16, 5e-324, True, 1, None, "true"]}})
@example({"include": "include", "x": {"y": {}}, "l": [[], {}, [[1]]]})
def test_to_hocon_reads_back_as_the_same_value_and_key_order(doc: dict[str, Any]) -> None:
    text = to_hocon(doc)
    parsed = loads(text)
    assert typed(parsed) == typed(doc), text
    assert key_order(parsed) == key_order(doc), text


def test_to_hocon_renders_nested_objects_as_blocks() -> None:
    doc = {
        "name": "events",
        "retention": {"ms": 604800000, "ratio": 0.5},
        "tags": ["a", "b c"],
        "a.b": "",
        "owners": [{"team": "data"}],
        "empty": {},
        "none": None,
        "flag": True,
        "number_like": "10",
    }
    assert to_hocon(doc) == (
        "name = events\n"
        "retention {\n"
        "  ms = 604800000\n"
        "  ratio = 0.5\n"
        "}\n"
        'tags = [a, "b c"]\n'
        '"a.b" = ""\n'
        "owners = [\n"
        "  {\n"
        "    team = data\n"
        "  }\n"
        "]\n"
        "empty {}\n"
        "none = null\n"
        "flag = true\n"
        'number_like = "10"\n'
    )


def test_to_hocon_indent_is_configurable() -> None:
    assert to_hocon({"a": {"b": 1}}, indent=4) == "a {\n    b = 1\n}\n"


def test_to_hocon_empty_document_is_empty_text() -> None:
    assert to_hocon({}) == ""


def test_to_hocon_long_scalar_lists_break_one_item_per_line() -> None:
    text = to_hocon({"hosts": [f"host-{i}.example.com" for i in range(6)]})
    assert text.startswith("hosts = [\n  host-0.example.com,\n")
    assert text.endswith("  host-5.example.com\n]\n")


def test_to_hocon_non_dict_root_renders_one_value() -> None:
    assert to_hocon([1, "x"]) == "[1, x]\n"


@pytest.mark.parametrize(
    ("key", "rendered"),
    [
        ("plain", "plain"),
        ("with-dash_1", "with-dash_1"),
        ("a.b", '"a.b"'),
        ("", '""'),
        ("10", '"10"'),
        ("include", '"include"'),
        ("a b", '"a b"'),
        ('q"', '"q\\""'),
    ],
)
def test_render_key_quotes_only_when_needed(key: str, rendered: str) -> None:
    assert render_key(key) == rendered


def test_quote_escapes_controls_and_keeps_other_unicode() -> None:
    assert quote('a"\\\n\t\x00\x7f\u2028é\U0001f600') == '"a\\"\\\\\\n\\t\\u0000\\u007f\\u2028é\U0001f600"'


def test_to_hocon_nan_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="no literal"):
        to_hocon({"x": math.nan})


@pytest.mark.parametrize("infinity", [math.inf, -math.inf])
def test_to_hocon_infinity_is_refused(infinity: float) -> None:
    with pytest.raises(ValueError, match="no literal"):
        to_hocon({"x": infinity})


def test_to_hocon_unsupported_types_are_type_errors() -> None:
    with pytest.raises(TypeError, match="set"):
        to_hocon({"x": {1, 2}})
    with pytest.raises(TypeError, match="keys must be str"):
        to_hocon({1: "x"})
