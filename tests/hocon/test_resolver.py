"""`cfgtool.hocon.resolver` through `resolve()`: substitutions, late expansion, `+=`, optional and null
substitutions, concatenation, cycles, type errors, and hostile blow-ups. Lightbend semantics are the reference."""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest

from cfgtool.hocon import HoconError, Origin, Resolved, parse, resolve, resolver
from tests.machine import SLOW


def res(*docs: str) -> Resolved:
    """Resolve documents in priority order (first highest); document i is named d<i>.conf."""
    return resolve([parse(text, f"d{i}.conf") for i, text in enumerate(docs)])


def val(*docs: str) -> dict[str, Any]:
    return res(*docs).value


def fail(*docs: str) -> HoconError:
    with pytest.raises(HoconError) as info:
        res(*docs).value  # noqa: B018
    return info.value


# -- plain substitutions ------------------------------------------------------------------------------


def test_resolve_substitution_of_scalars_objects_and_arrays() -> None:
    doc = val("a = 1\nb = ${a}\no = {x: [1, 2]}\np = ${o}\nq = ${o.x}\ns = ${t}\nt = text")
    assert doc == {"a": 1, "b": 1, "o": {"x": [1, 2]}, "p": {"x": [1, 2]}, "q": [1, 2], "s": "text", "t": "text"}


def test_resolve_substitution_keeps_value_type() -> None:
    doc = val('i = 1\nf = 1.5\nt = true\nn = null\ns = "1"\na = ${i}\nb = ${f}\nc = ${t}\nd = ${n}\ne = ${s}')
    assert [(doc[k], type(doc[k])) for k in "abcde"] == [
        (1, int),
        (1.5, float),
        (True, bool),
        (None, type(None)),
        ("1", str),
    ]


def test_resolve_substitution_looks_forward_and_into_nested_paths() -> None:
    assert val("a = ${b.c.d}\nb.c.d = deep") == {"a": "deep", "b": {"c": {"d": "deep"}}}


def test_resolve_substitution_chain() -> None:
    assert val("a = ${b}\nb = ${c}\nc = ${d}\nd = end") == {"a": "end", "b": "end", "c": "end", "d": "end"}


def test_resolve_substitutions_inside_arrays_and_objects() -> None:
    assert val("x = 1\na = [${x}, {y: ${x}}]\no { p { q = ${x} } }") == {
        "x": 1,
        "a": [1, {"y": 1}],
        "o": {"p": {"q": 1}},
    }


def test_resolve_quoted_substitution_path() -> None:
    assert val('"a.b" = 1\nc = ${"a.b"}') == {"a.b": 1, "c": 1}
    assert val('a { "b.c" = 2 }\nd = ${a."b.c"}') == {"a": {"b.c": 2}, "d": 2}


def test_resolve_quoted_substitution_path_is_one_key() -> None:
    e = fail('a.b = 1\nc = ${"a.b"}')
    assert (e.code, e.origin) == ("E_UNRESOLVED_REF", Origin("d0.conf", 2, 5))
    assert '"a.b"' in e.message


def test_resolve_substituted_object_can_be_extended_without_changing_the_source() -> None:
    assert val("a = {x: 1}\nb = ${a}\nb.y = 2") == {"a": {"x": 1}, "b": {"x": 1, "y": 2}}


def test_resolve_substitution_sees_the_final_merged_value() -> None:
    assert val("a = 1\nb = ${a}\na = 2") == {"a": 2, "b": 2}
    assert val("bar : { foo : 42, baz : ${bar.foo} }\nbar : { foo : 43 }") == {"bar": {"foo": 43, "baz": 43}}


# -- late expansion across documents ------------------------------------------------------------------


def test_resolve_self_reference_across_documents_appends_to_lower_value() -> None:
    assert val('path = ${path}"/x"', "path = /usr") == {"path": "/usr/x"}


def test_resolve_self_reference_across_three_documents() -> None:
    assert val('path = ${path}":/c"', 'path = ${path}":/b"', "path = /a") == {"path": "/a:/b:/c"}


def test_resolve_default_in_low_layer_uses_value_from_high_layer() -> None:
    high = "name = sales"
    low = 'name = default\np = "/data/"${name}'
    assert val(high, low) == {"name": "sales", "p": "/data/sales"}


def test_resolve_unresolved_reference_suggests_the_closest_path_that_is_set() -> None:
    assert fail("owner = sales\nx = ${owners}").notes == ("did you mean ${owner}?",)
    assert fail("team { lead = ann }", "x = ${team.laed}").notes == ("did you mean ${team.lead}?",)  # any layer
    assert fail("owner = sales\nx = ${zzz}").notes == ()  # nothing close: no guess


def test_resolve_reference_in_low_layer_sees_override_from_high_layer() -> None:
    assert val("a = 2", "a = 1\nb = ${a}") == {"a": 2, "b": 2}


def test_resolve_object_layers_merge_before_resolution() -> None:
    assert val("a { x = 1 }", "a { y = ${a.x} }\na { z = 3 }") == {"a": {"y": 1, "z": 3, "x": 1}}


def test_resolve_optional_undefined_in_high_layer_keeps_low_value() -> None:
    assert val("a = ${?nope}", "a = 1") == {"a": 1}


def test_resolve_higher_scalar_hides_lower_substitution() -> None:
    assert val("a = 1", "a = ${nope}") == {"a": 1}


# -- self-referential fields (Lightbend ConfigSubstitutionTest) ---------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=1, a=${a}", {"a": 1}),
        ("a=1, a=${a}, a=2", {"a": 2}),
        ("a=${a}, a=1, a=2", {"a": 2}),
        ("a=1, a=2, a=${a}", {"a": 2}),
        ("a=1,a=${a},a=${a},a=${a}", {"a": 1}),
        ("a=1,a=${a}x,a=${a}y,a=${a}z", {"a": "1xyz"}),
        ("a=${?a}foo${?a}", {"a": "foo"}),
        ("a=1,a=${?a}foo${?a}", {"a": "1foo1"}),
        ("a=${?a}foo", {"a": "foo"}),
        ("a.b.c=1, a.b.c=${a.b.c}", {"a": {"b": {"c": 1}}}),
        ("a={b=5}, a=${a}", {"a": {"b": 5}}),
        ("a={b=5}, a=${a}, a={c=6}", {"a": {"b": 5, "c": 6}}),
        ("a={b={c=5}}, a=${a.b}, a={b=2}", {"a": {"c": 5, "b": 2}}),
        ("a={b={c=5}}, a={ x : ${a.b} }, a={b=2}", {"a": {"b": 2, "x": 2}}),
        ("foo : { a : { c : 1 } }\nfoo : ${foo.a}\nfoo : { a : 2 }", {"foo": {"c": 1, "a": 2}}),
        ("bar : 101\nbar : { foo : 42, baz : ${bar.foo} }", {"bar": {"foo": 42, "baz": 42}}),
        ("a=1, a={ x : 42, y : ${a.x} }", {"a": {"x": 42, "y": 42}}),
    ],
)
def test_resolve_self_reference_lightbend_cases(text: str, expected: dict[str, Any]) -> None:
    assert val(text) == expected


def test_resolve_self_reference_without_previous_value_is_E_REF_CYCLE() -> None:
    e = fail("a = ${a}")
    assert (e.code, e.origin) == ("E_REF_CYCLE", Origin("d0.conf", 1, 5))


@pytest.mark.parametrize("text", ["a=1, a=[${a}, 2]", "a=1, a={ x : ${a} }"])
def test_resolve_self_reference_inside_array_or_object_is_E_REF_CYCLE(text: str) -> None:
    e = fail(text)
    assert e.code == "E_REF_CYCLE"
    assert "${a}" in e.message


def test_resolve_cycle_closed_by_a_required_substitution_is_an_error_even_under_an_optional_one() -> None:
    # as Lightbend: `${a}` closes the cycle and is required; only an optional substitution that closes a
    # cycle is undefined
    e = fail("a=${?b}foo, b=${a}")
    assert e.code == "E_REF_CYCLE"


# -- += -----------------------------------------------------------------------------------------------


def test_resolve_plus_equals_on_new_key_makes_an_array() -> None:
    assert val("a += 1") == {"a": [1]}


def test_resolve_plus_equals_appends_to_existing_array() -> None:
    assert val("a = [1]\na += 2\na += {b: 3}") == {"a": [1, 2, {"b": 3}]}


def test_resolve_plus_equals_appends_an_array_as_one_element() -> None:
    assert val("a = [1]\na += [2, 3]") == {"a": [1, [2, 3]]}


def test_resolve_plus_equals_nested_inside_objects() -> None:
    assert val("x { l = [1] }\nx { l += 2 }\nx.l += 3\ny { z { w += 1 } }") == {
        "x": {"l": [1, 2, 3]},
        "y": {"z": {"w": [1]}},
    }


def test_resolve_plus_equals_across_documents() -> None:
    assert val("a += 3", "a += 2", "a = [1]") == {"a": [1, 2, 3]}


def test_resolve_plus_equals_nested_across_documents() -> None:
    assert val("x { l += 2 }", "x { l = [1], k = 0 }") == {"x": {"l": [1, 2], "k": 0}}


def test_resolve_plus_equals_with_substituted_element() -> None:
    assert val("v = 9\na = [1]\na += ${v}") == {"v": 9, "a": [1, 9]}


def test_resolve_reference_to_appended_array_sees_the_final_array() -> None:
    assert val("a = [1]\nb = ${a}\na += 2") == {"a": [1, 2], "b": [1, 2]}


def test_resolve_plus_equals_to_object_is_E_TYPE() -> None:
    e = fail("a = {x: 1}\na += 2")
    assert (e.code, e.origin) == ("E_TYPE", Origin("d0.conf", 2, 3))
    assert "d0.conf:1:5" in e.message  # where the object came from


def test_resolve_plus_equals_to_object_E_TYPE_names_the_path() -> None:
    e = fail("retention = {x: 1}\nretention += 2")
    assert e.code == "E_TYPE"
    assert "retention" in e.message


def test_resolve_plus_equals_to_scalar_is_E_TYPE() -> None:
    e = fail("a = 1\na += 2")
    assert (e.code, e.origin) == ("E_TYPE", Origin("d0.conf", 2, 3))


def test_resolve_plus_equals_to_string_E_TYPE_does_not_claim_an_object() -> None:
    e = fail('a = "x"\na += 1')
    assert e.code == "E_TYPE"
    assert "object" not in e.message


# -- optional substitutions ---------------------------------------------------------------------------


def test_resolve_optional_undefined_removes_the_field() -> None:
    assert val("a = ${?nope}\nb = 1") == {"b": 1}


def test_resolve_optional_undefined_keeps_earlier_value() -> None:
    assert val("a = 1\na = ${?nope}") == {"a": 1}
    assert val("a = {b: 42}\na = ${?nope}") == {"a": {"b": 42}}


def test_resolve_optional_defined_overrides_earlier_value() -> None:
    assert val("here = 43\na = 42\na = ${?here}") == {"here": 43, "a": 43}
    assert val("here = 43\na = {b: 42}\na = ${?here}") == {"here": 43, "a": 43}


def test_resolve_optional_undefined_removes_array_items() -> None:
    assert val("a = [1, ${?nope}, 2, ${?nope.deeper}]") == {"a": [1, 2]}


def test_resolve_optional_defined_array_item_is_kept() -> None:
    assert val("here = 4\na = [1, ${?here}]") == {"here": 4, "a": [1, 4]}


def test_resolve_optional_undefined_vanishes_from_string_concatenation() -> None:
    assert val("a = x${?nope}y") == {"a": "xy"}
    assert val('a = "x" ${?nope} "y"') == {"a": "x  y"}  # both whitespace pieces stay


def test_resolve_all_optional_concatenation_undefined_removes_field() -> None:
    assert val("a = ${?n}${?m}\nb = 1") == {"b": 1}


def test_resolve_optional_undefined_vanishes_from_array_concatenation() -> None:
    assert val("a = [1] ${?nope} [2]") == {"a": [1, 2]}


def test_resolve_optional_undefined_inside_object_removes_only_that_field() -> None:
    assert val("o { a = ${?nope}, b = 2 }") == {"o": {"b": 2}}


# -- null substitutions -------------------------------------------------------------------------------


def test_resolve_substitution_of_null_is_null() -> None:
    doc = val("a = null\nb = ${a}")
    assert doc == {"a": None, "b": None}
    assert "b" in doc


def test_resolve_optional_substitution_of_null_is_null_not_undefined() -> None:
    doc = val("a = null\nb = ${?a}")
    assert doc == {"a": None, "b": None}


def test_resolve_null_substitution_overrides_earlier_value() -> None:
    assert val("n = null\na = 1\na = ${n}") == {"n": None, "a": None}


def test_resolve_null_in_string_concatenation_is_text_null() -> None:
    assert val("n = null\na = x${n}y") == {"n": None, "a": "xnully"}


def test_resolve_null_overrides_object_in_lower_layer() -> None:
    assert val("a = null", "a = {x: 1}") == {"a": None}


# -- concatenation ------------------------------------------------------------------------------------


def test_resolve_string_concatenation_keeps_whitespace_between_pieces() -> None:
    assert val("k = K\na = foo  ${k}  bar\nb = ${k}${k}\nc = ${k} ${k}") == {
        "k": "K",
        "a": "foo  K  bar",
        "b": "KK",
        "c": "K K",
    }


def test_resolve_string_concatenation_of_typed_values_uses_their_text() -> None:
    assert val("t = true\ni = 10\na = ${t} ${i} x") == {"t": True, "i": 10, "a": "true 10 x"}


def test_resolve_substituted_number_keeps_source_text_in_concatenation() -> None:
    assert val("n = 1.50\nm = 023\na = ${n}x\nb = ${m}y") == {"n": 1.5, "m": 23, "a": "1.50x", "b": "023y"}


def test_resolve_object_concatenation_with_substitution() -> None:
    doc = val("base { y: 2, x: 0 }\na = ${base} {x: 1}\nb = {x: 1} ${base}")
    assert doc == {"base": {"y": 2, "x": 0}, "a": {"y": 2, "x": 1}, "b": {"x": 0, "y": 2}}


def test_resolve_object_concatenation_merges_nested_objects() -> None:
    assert val("base { n { p: 1 } }\na = ${base} { n { q: 2 } }") == {
        "base": {"n": {"p": 1}},
        "a": {"n": {"p": 1, "q": 2}},
    }


def test_resolve_self_referential_object_concatenation() -> None:
    assert val("foo { a = 1 }\nfoo = ${foo} { b = 2 }") == {"foo": {"a": 1, "b": 2}}
    assert val("foo = ${foo} { b = 2 }", "foo { a = 1 }", "foo.c = 3") == {"foo": {"c": 3, "a": 1, "b": 2}}


def test_resolve_array_concatenation_with_substitutions() -> None:
    assert val("x = [1, 2]\ny = ${x} [3] ${x}\nz = [0] ${x}") == {"x": [1, 2], "y": [1, 2, 3, 1, 2], "z": [0, 1, 2]}


def test_resolve_self_referential_array_concatenation() -> None:
    assert val("path = [a]\npath = ${path} [b]", "path = [z]") == {"path": ["a", "b"]}
    assert val("path = ${path} [b]", "path = [a]") == {"path": ["a", "b"]}


def test_resolve_scalar_then_array_concatenation_is_E_TYPE() -> None:
    e = fail("a = 1\nb = ${a} [2]")
    assert (e.code, e.origin) == ("E_TYPE", Origin("d0.conf", 2, 5))


def test_resolve_scalar_then_array_concatenation_E_TYPE_names_the_path() -> None:
    e = fail("limit = 1\nretention = ${limit} [2]")
    assert e.code == "E_TYPE"
    assert "retention" in e.message
    assert "object" not in e.message


def test_resolve_object_then_array_concatenation_is_E_TYPE() -> None:
    e = fail("o = {x: 1}\nb = ${o} [2]")
    assert (e.code, e.origin) == ("E_TYPE", Origin("d0.conf", 2, 5))
    assert "d0.conf:1:5" in e.message


def test_resolve_array_then_object_concatenation_is_E_TYPE() -> None:
    e = fail("l = [1]\nb = ${l} {x: 1}")
    assert (e.code, e.origin) == ("E_TYPE", Origin("d0.conf", 2, 5))


def test_resolve_string_then_object_concatenation_is_E_TYPE() -> None:
    e = fail("s = text\nb = ${s} {x: 1}")
    assert (e.code, e.origin) == ("E_TYPE", Origin("d0.conf", 2, 5))


def test_resolve_object_with_numeric_keys_concatenates_with_array() -> None:
    assert val('o { "1" = b, "0" = a }\nl = [x] ${o}') == {"o": {"1": "b", "0": "a"}, "l": ["x", "a", "b"]}


# -- missing references and cycles --------------------------------------------------------------------


def test_resolve_missing_reference_is_E_UNRESOLVED_REF_naming_path_and_origin() -> None:
    e = fail("a = 1\nb {\n  c = ${missing.key}\n}")
    assert (e.code, e.file, e.line, e.col) == ("E_UNRESOLVED_REF", "d0.conf", 3, 7)
    assert "${missing.key}" in e.message
    assert str(e).startswith("d0.conf:3:7: ")


def test_resolve_missing_reference_in_lower_layer_names_that_file() -> None:
    e = fail("a = 1", "b = ${nope}")
    assert (e.code, e.origin) == ("E_UNRESOLVED_REF", Origin("d1.conf", 1, 5))
    assert "nope" in e.message


def test_resolve_missing_reference_in_array_item_and_concatenation() -> None:
    assert fail("a = [1, ${nope}]").origin == Origin("d0.conf", 1, 9)
    assert fail("a = x${nope}").origin == Origin("d0.conf", 1, 6)


def test_resolve_reference_through_a_scalar_is_E_UNRESOLVED_REF() -> None:
    e = fail("a = 1\nb = ${a.x}")
    assert (e.code, e.origin) == ("E_UNRESOLVED_REF", Origin("d0.conf", 2, 5))


def test_resolve_self_cycle_reports_E_REF_CYCLE() -> None:
    e = fail("a = ${a}")
    assert e.code == "E_REF_CYCLE"
    assert e.notes[0] == "cycle:"
    assert "  ${a} at d0.conf:1:5" in e.notes


def test_resolve_three_step_cycle_lists_each_step_in_order() -> None:
    e = fail("a = ${b}\nb = ${c}\nc = ${a}")
    assert (e.code, e.file) == ("E_REF_CYCLE", "d0.conf")
    steps = [n for n in e.notes if n.startswith("  ${")]
    positions = [steps.index(s) for s in ("  ${b} at d0.conf:1:5", "  ${c} at d0.conf:2:5", "  ${a} at d0.conf:3:5")]
    assert positions == sorted(positions)


def test_resolve_three_step_cycle_lists_each_step_once() -> None:
    e = fail("a = ${b}\nb = ${c}\nc = ${a}")
    assert e.notes == ("cycle:", "  ${b} at d0.conf:1:5", "  ${c} at d0.conf:2:5", "  ${a} at d0.conf:3:5")


def test_resolve_cycle_across_documents_names_both_files() -> None:
    e = fail("a = ${b}", "b = ${a}")
    assert e.code == "E_REF_CYCLE"
    notes = "\n".join(e.notes)
    assert "d0.conf:1:5" in notes
    assert "d1.conf:1:5" in notes


def test_resolve_cycle_through_object_fields_is_E_REF_CYCLE() -> None:
    e = fail("a { x = ${b.y} }\nb { y = ${a.x} }")
    assert e.code == "E_REF_CYCLE"


def test_resolve_mutually_referring_objects_are_not_a_cycle() -> None:
    text = "bar : { a : ${foo.d}, b : 1 }\nbar.b = 3\nfoo : { c : ${bar.b}, d : 2 }\nfoo.d = 4"
    assert val(text) == {"bar": {"a": 4, "b": 3}, "foo": {"c": 3, "d": 4}}


# -- hostile input ------------------------------------------------------------------------------------


def limited(text: str, code: str = "E_LIMIT") -> HoconError:
    """Resolve and render `text`; it must fail with `code` within 2 s of CPU on the reference machine and 500 MB."""
    tracemalloc.start()
    start = time.thread_time()
    try:
        with pytest.raises(HoconError) as info:
            resolve([parse(text, "h.conf")]).value  # noqa: B018
        elapsed = time.thread_time() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert peak < 500 * 1024 * 1024
    assert info.value.code == code, str(info.value)
    assert info.value.file == "h.conf"
    return info.value


def test_resolve_string_doubling_60_times_is_E_LIMIT() -> None:
    limited("a = x\n" + "a = ${a}${a}\n" * 60)


def test_resolve_string_doubling_with_distinct_names_is_E_LIMIT() -> None:
    limited("a0 = x\n" + "".join(f"a{i + 1} = ${{a{i}}}${{a{i}}}\n" for i in range(60)))


def test_resolve_array_doubling_60_times_is_E_LIMIT() -> None:
    limited("a = [x]\n" + "a = ${a} ${a}\n" * 60)


def test_resolve_array_doubling_with_distinct_names_is_E_LIMIT() -> None:
    limited("a0 = [x]\n" + "".join(f"a{i + 1} = ${{a{i}}} ${{a{i}}}\n" for i in range(60)))


def test_resolve_object_doubling_60_times_is_E_REF_CYCLE() -> None:
    # `a = {x: ${a}}` never looks back (Lightbend: an object with a substitution inside is not a
    # self-referential field), so this is an unbreakable cycle, reported at once.
    e = limited("a = {}\n" + "a = {x: ${a}, y: ${a}}\n" * 60, code="E_REF_CYCLE")
    assert e.line == 61


def test_resolve_chain_of_5000_references_ends_quickly() -> None:
    text = "".join(f"a{i} = ${{a{i + 1}}}\n" for i in range(5000)) + "a5000 = end\n"
    start = time.thread_time()
    try:
        doc = resolve([parse(text, "h.conf")]).value
    except HoconError as e:  # a clear limit is acceptable for hostile input
        assert e.code == "E_LIMIT"
    else:
        assert all(doc[f"a{i}"] == "end" for i in range(5001))
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)


def test_resolve_chain_of_5000_references_defined_bottom_up_resolves() -> None:
    text = "a5000 = end\n" + "".join(f"a{i} = ${{a{i + 1}}}\n" for i in range(4999, -1, -1))
    start = time.thread_time()
    doc = resolve([parse(text, "h.conf")]).value
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert doc["a0"] == "end"
    assert len(doc) == 5001


def test_resolve_chain_of_100_references_resolves() -> None:
    text = "".join(f"a{i} = ${{a{i + 1}}}\n" for i in range(100)) + "a100 = end\n"
    assert resolve([parse(text)]).value["a0"] == "end"


def test_resolve_10000_deep_dotted_key_is_E_LIMIT() -> None:
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        resolve([parse("a" + ".a" * 10_000 + " = 1", "h.conf")]).value  # noqa: B018
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert info.value.code == "E_LIMIT"


def test_resolve_10000_deep_dotted_keys_in_two_documents_is_E_LIMIT() -> None:
    deep = "a" + ".a" * 10_000
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        resolve([parse(deep + " = 1", "h.conf"), parse(deep + " = 2", "l.conf")]).value  # noqa: B018
    assert time.thread_time() - start < 2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert info.value.code == "E_LIMIT"


def test_resolve_repeated_object_self_extension_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolver, "MAX_STEPS", 10_000)  # hundreds of steps per line: still generous
    text = "a = {}\n" + "".join(f"a = ${{a}} {{x{i}: {i}}}\n" for i in range(16))
    assert resolve([parse(text)]).value == {"a": {f"x{i}": i for i in range(16)}}


def test_resolve_object_self_extension_over_16_layers_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolver, "MAX_STEPS", 10_000)
    docs = [parse(f"a = ${{a}} {{x{i}: {i}}}", f"l{i}.conf") for i in range(16)] + [parse("a = {}")]
    assert resolve(docs).value == {"a": {f"x{i}": i for i in range(15, -1, -1)}}


def test_resolve_object_extension_of_another_key_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolver, "MAX_STEPS", 10_000)
    text = "o = {x: 1}\n" + "".join(f"p{i} = ${{o}} {{y{i}: {i}}}\n" for i in range(16))
    doc = resolve([parse(text)]).value
    assert doc["p15"] == {"x": 1, "y15": 15}


def test_resolve_step_limit_is_E_LIMIT(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resolver, "MAX_STEPS", 50)
    text = "".join(f"k{i} = {{v = ${{k{i + 1}.v}}}}\n" for i in range(100)) + "k100 { v = 1 }\n"
    with pytest.raises(HoconError) as info:
        resolve([parse(text, "h.conf")])
    assert (info.value.code, info.value.file) == ("E_LIMIT", "h.conf")


def test_resolve_50_plus_equals_on_one_key() -> None:
    text = "a = []\n" + "a += 1\n" * 50
    start = time.thread_time()
    doc = resolve([parse(text)]).value
    assert time.thread_time() - start < 0.2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert doc == {"a": [1] * 50}


def test_resolve_200_plus_equals_on_one_key() -> None:
    text = "a = []\n" + "a += 1\n" * 200
    start = time.thread_time()
    doc = resolve([parse(text)]).value
    assert time.thread_time() - start < 0.2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert doc == {"a": [1] * 200}


def test_resolve_200_string_self_references_on_one_key() -> None:
    text = "a = x\n" + "a = ${a}y\n" * 200
    start = time.thread_time()
    doc = resolve([parse(text)]).value
    assert time.thread_time() - start < 0.2 * SLOW  # CPU seconds, scaled (tests/machine.py)
    assert doc == {"a": "x" + "y" * 200}


def test_resolve_plus_equals_in_200_layers() -> None:
    docs = [parse(f"a += {i}", f"l{i}.conf") for i in range(199, -1, -1)] + [parse("a = []")]
    assert resolve(docs).value == {"a": list(range(200))}


# -- agreement with Lightbend; each expected value is what Typesafe Config 1.4.1 answers -----------


@pytest.mark.parametrize(
    ("docs", "expected"),
    [
        # a non-object in a higher layer hides every object below it (the spec's own example)
        (("a = {x = 1}", "a = null", "a = {y = 2}"), {"a": {"x": 1}}),
        (("a = {x = 1}", "a = 5", "a = {y = 2}"), {"a": {"x": 1}}),
        (("a.b = {x = 1}", "a = {b = [1]}", "a.b = {y = 2}"), {"a": {"b": {"x": 1}}}),
        (("a = {x = 1}", "a = {z = 3}", "a = null", "a = {y = 2}"), {"a": {"x": 1, "z": 3}}),
        # the same inside one document: the last definition is the highest
        (("a = {y = 2}\na = null\na = {x = 1}",), {"a": {"x": 1}}),
    ],
)
def test_a_non_object_in_a_higher_layer_stops_lower_objects_from_merging(
    docs: tuple[str, ...], expected: dict[str, Any]
) -> None:
    assert val(*docs) == expected


def test_a_reference_into_another_part_of_the_same_object_concatenation_is_not_a_cycle() -> None:
    assert val("a = {x = 1} {y = ${a.x}}") == {"a": {"x": 1, "y": 1}}
    assert val("a = {x = 1} {y = ${?a.x}}") == {"a": {"x": 1, "y": 1}}
    assert val("a = {x = 1} {y = ${a.x}} {z = ${a.y}}") == {"a": {"x": 1, "y": 1, "z": 1}}


def test_a_part_that_a_later_part_of_a_concatenation_overrides_is_never_resolved() -> None:
    assert val("a = {x = ${nosuch}} {x = 2}") == {"a": {"x": 2}}
    assert val("a = [1] [2] [3]") == {"a": [1, 2, 3]}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = -.5", -0.5),
        ("a = -.5e1", -5.0),
        ("a = .5", ".5"),  # a number starts with a digit or '-': this is text, as in Lightbend
        ("a = -.x", "-.x"),
        ("a = 9223372036854775807", 2**63 - 1),
        ("a = 9223372036854775808", "9223372036854775808"),  # beyond 64 bits: text, as in Lightbend
    ],
)
def test_numbers_are_read_as_lightbend_reads_them(text: str, expected: Any) -> None:
    value = val(text)["a"]
    assert value == expected
    assert type(value) is type(expected)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = ${?b}1.5", 1.5),
        ("a = 1.5${?b}", 1.5),
        ("a = ${?b}true", True),
        ("a = ${?b}null", None),
        ("a = ${?b} 1.5", " 1.5"),  # whitespace is a piece of the concatenation: a string
        ("a = 2 ${?b}", "2 "),
    ],
)
def test_an_undefined_optional_substitution_beside_one_value_keeps_its_type(text: str, expected: Any) -> None:
    value = val(text)["a"]
    assert value == expected
    assert type(value) is type(expected)


def test_type_errors_name_the_operation_written() -> None:
    append = fail("a = {x = 1}\na += 2")
    assert append.code == "E_TYPE"
    assert append.message.startswith("cannot append with '+=' at 'a'")
    concat = fail("o = {x = 1}\na = ${o} [2]")
    assert concat.code == "E_TYPE"
    assert concat.message.startswith("cannot concatenate object")
    assert "+=" not in concat.message
