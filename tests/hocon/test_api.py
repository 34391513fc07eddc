"""`cfgtool.hocon.api`: parse / parse_file / loads / merge / resolve, `Resolved` provenance, `extra`,
hermeticity, `HoconError` structure, and limits on what one document may expand to."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from cfgtool.hocon import (
    HoconError,
    Origin,
    Resolved,
    from_plain,
    loads,
    merge,
    parse,
    parse_file,
    parse_value,
    quoted_path,
    resolve,
    split_path,
    to_plain,
)
from cfgtool.hocon.values import Lst, Merge, Obj, Scalar, Subst
from tests.machine import slowness_now

MB = 1024 * 1024


def res(*docs: str, extra: object = None) -> Resolved:
    return resolve([parse(text, f"d{i}.conf") for i, text in enumerate(docs)], extra)  # type: ignore[arg-type]


# -- parse / parse_value / parse_file / loads ---------------------------------------------------------


def test_parse_returns_unresolved_object_with_named_origins() -> None:
    root = parse("a = 1\nb = ${a}", "my/main.conf")
    assert isinstance(root, Obj)
    assert root.origin == Origin("my/main.conf", 1, 1)
    a, b = root.fields["a"], root.fields["b"]
    assert isinstance(a, Scalar) and a.value == 1 and a.origin == Origin("my/main.conf", 1, 5)
    assert isinstance(b, Subst) and b.path == ("a",) and b.origin == Origin("my/main.conf", 2, 5)


def test_parse_default_origin_name() -> None:
    assert parse("a = 1").fields["a"].origin == Origin("<string>", 1, 5)


def test_parse_value_returns_array_root() -> None:
    node = parse_value("[1, [2]]", "v.conf")
    assert isinstance(node, Lst)
    assert node.origin == Origin("v.conf", 1, 1)


def test_loads_parses_and_resolves_one_document() -> None:
    assert loads("a = 1\nb = ${a}\nc { d = [${b}] }") == {"a": 1, "b": 1, "c": {"d": [1]}}


def test_loads_error_carries_the_origin_name() -> None:
    with pytest.raises(HoconError) as info:
        loads("a = ${nope}", "named.conf")
    assert (info.value.code, info.value.origin) == ("E_UNRESOLVED_REF", Origin("named.conf", 1, 5))


def test_parse_file_reads_hocon_with_file_origins(tmp_path: Path) -> None:
    path = tmp_path / "main.conf"
    path.write_text("a {\n  b = 1\n}\n", encoding="utf-8")
    root = parse_file(path)
    r = resolve([root])
    assert r.value == {"a": {"b": 1}}
    assert r.origin("a.b") == Origin(str(path), 2, 7)


def test_parse_file_accepts_str_path(tmp_path: Path) -> None:
    path = tmp_path / "main.conf"
    path.write_text("a = 1", encoding="utf-8")
    assert resolve([parse_file(str(path))]).value == {"a": 1}


def test_parse_file_json(tmp_path: Path) -> None:
    path = tmp_path / "data.json"
    path.write_text('{"a": {"b": [1, 2.5, "x", null, true]}}', encoding="utf-8")
    assert resolve([parse_file(path)]).value == {"a": {"b": [1, 2.5, "x", None, True]}}


def test_parse_file_missing_is_E_INCLUDE(tmp_path: Path) -> None:
    with pytest.raises(HoconError) as info:
        parse_file(tmp_path / "nope.conf")
    assert info.value.code == "E_INCLUDE"
    assert str(tmp_path / "nope.conf") in info.value.message


def test_parse_file_missing_error_names_the_file_as_origin(tmp_path: Path) -> None:
    with pytest.raises(HoconError) as info:
        parse_file(tmp_path / "nope.conf")
    assert info.value.file == str(tmp_path / "nope.conf")


def test_parse_file_uses_the_given_reader() -> None:
    files = {"cfg/main.conf": 'a = 1\ninclude "sub/inc.conf"', "cfg/sub/inc.conf": "b = ${a}"}
    root = parse_file("cfg/main.conf", reader=files.get)
    r = resolve([root])
    assert r.value == {"a": 1, "b": 1}
    assert r.origin("b") == Origin("cfg/sub/inc.conf", 1, 5)


def test_parse_file_syntax_error_names_file_line_col(tmp_path: Path) -> None:
    path = tmp_path / "bad.conf"
    path.write_text("a = 1\nb = {\n", encoding="utf-8")
    with pytest.raises(HoconError) as info:
        parse_file(path)
    e = info.value
    assert (e.code, e.file, e.line, e.col) == ("E_SYNTAX", str(path), 3, 1)
    assert e.notes == (f"note: the object opened at {path}:2:5",)


# -- merge --------------------------------------------------------------------------------------------


def test_merge_first_document_has_priority() -> None:
    merged = merge([parse("a = 1\no { x = 1 }"), parse("a = 2\nb = 3\no { x = 0, y = 2 }")])
    assert to_plain(merged) == {"a": 1, "b": 3, "o": {"x": 1, "y": 2}}


def test_merge_keeps_substitutions_unresolved() -> None:
    merged = merge([parse("a = ${a} [2]"), parse("a = [1]")])
    assert isinstance(merged, Obj)
    assert isinstance(merged.fields["a"], Merge)


def test_merge_of_nothing_is_empty_object() -> None:
    merged = merge([])
    assert isinstance(merged, Obj) and merged.fields == {}
    assert resolve([]).value == {}


# -- resolve and Resolved -----------------------------------------------------------------------------


def test_resolve_value_get_and_node() -> None:
    r = res('a { b = [1, 2], "c.d" = x }')
    assert r.is_resolved
    assert r.value == {"a": {"b": [1, 2], "c.d": "x"}}
    assert r.get("a.b") == [1, 2]
    assert r.get('a."c.d"') == "x"
    assert r.get(("a", "c.d")) == "x"
    assert r.get("a") == {"b": [1, 2], "c.d": "x"}
    node = r.node("a.b")
    assert isinstance(node, Lst)


def test_resolved_get_missing_is_KeyError() -> None:
    r = res("a { b = 1 }")
    with pytest.raises(KeyError):
        r.get("a.c")
    with pytest.raises(KeyError):
        r.get("a.b.c")
    assert r.node("nope") is None


def test_resolved_leaves_in_document_order() -> None:
    r = res("a = 1\nb { c = [2], d = x }\ne = null")
    assert [(path, to_plain(node)) for path, node in r.leaves()] == [
        (("a",), 1),
        (("b", "c"), [2]),
        (("b", "d"), "x"),
        (("e",), None),
    ]


def test_resolve_allow_unresolved_keeps_going() -> None:
    r = resolve([parse("a = ${x}\nb = 1\nc = ${b}", "u.conf")], allow_unresolved=True)
    assert r.is_resolved is False
    assert r.get("b") == 1
    assert r.get("c") == 1
    with pytest.raises(HoconError) as info:
        r.value  # noqa: B018
    assert (info.value.code, info.value.origin) == ("E_UNRESOLVED_REF", Origin("u.conf", 1, 5))


def test_resolve_without_allow_unresolved_raises_at_once() -> None:
    with pytest.raises(HoconError) as info:
        resolve([parse("a = ${x}", "u.conf")])
    assert info.value.code == "E_UNRESOLVED_REF"


# -- origins and sources ------------------------------------------------------------------------------


def test_resolved_origin_of_plain_values() -> None:
    r = res('a = 1\nb {\n  c = x\n  d = [1, 2]\n}\n  e = "q"')
    assert r.origin("a") == Origin("d0.conf", 1, 5)
    assert r.origin("b") == Origin("d0.conf", 2, 3)
    assert r.origin("b.c") == Origin("d0.conf", 3, 7)
    assert r.origin("b.d") == Origin("d0.conf", 4, 7)
    assert r.origin("e") == Origin("d0.conf", 6, 7)
    assert r.sources("a") == ()
    assert r.sources("b.c") == ()
    assert r.origin("nope") is None
    assert r.sources("nope") == ()


def test_resolved_origin_after_multiline_triple_quoted_string() -> None:
    r = res('s = """x\ny\nz""" , t = 5\nu = 6')
    assert r.origin("s") == Origin("d0.conf", 1, 5)
    assert r.origin("t") == Origin("d0.conf", 3, 12)
    assert r.origin("u") == Origin("d0.conf", 4, 5)


def test_resolved_origin_of_substituted_value_is_the_substitution() -> None:
    r = res("a = 1\nb = ${a}")
    assert r.origin("b") == Origin("d0.conf", 2, 5)
    assert r.sources("b") == (Origin("d0.conf", 1, 5),)


def test_resolved_sources_of_substitution_chain_include_every_step() -> None:
    r = res("a = 1\nb = ${a}\nc = ${b}")
    assert r.origin("c") == Origin("d0.conf", 3, 5)
    assert set(r.sources("c")) == {Origin("d0.conf", 2, 5), Origin("d0.conf", 1, 5)}


def test_resolved_origin_of_concatenation_is_where_it_was_written() -> None:
    r = res('a = 1\nb = 2\nc = ${a}"-"${b}')
    assert r.value["c"] == "1-2"
    assert r.origin("c") == Origin("d0.conf", 3, 5)
    assert r.sources("c") != ()


def test_resolved_sources_of_concatenation_list_both_referenced_values() -> None:
    r = res('a = 1\nb = 2\nc = ${a}"-"${b}')
    assert Origin("d0.conf", 1, 5) in r.sources("c")
    assert Origin("d0.conf", 2, 5) in r.sources("c")


def test_resolved_sources_of_self_reference_across_layers_include_lower_value() -> None:
    r = res('path = ${path}"/x"', "path = /usr")
    assert r.value == {"path": "/usr/x"}
    assert r.origin("path") == Origin("d0.conf", 1, 8)
    assert Origin("d1.conf", 1, 8) in r.sources("path")


def test_resolved_sources_of_low_default_include_high_value() -> None:
    r = res("name = sales", 'p = "/data/"${name}')
    assert r.value == {"name": "sales", "p": "/data/sales"}
    assert r.origin("p") == Origin("d1.conf", 1, 5)
    assert Origin("d0.conf", 1, 8) in r.sources("p")


def test_resolved_origin_of_late_expansion_is_in_the_winning_layer() -> None:
    r = res('path = ${path}"/x"', "path = /usr")
    assert r.origin("path") == Origin("d0.conf", 1, 8)
    r = res("name = sales", 'p = "/data/"${name}')
    assert r.origin("p") == Origin("d1.conf", 1, 5)
    assert r.origin("name") == Origin("d0.conf", 1, 8)


def test_resolved_origin_of_substituted_array_and_object_is_the_substitution() -> None:
    r = res("a = [1, 2]\nb = ${a}\no = {k: v}\np = ${o}")
    assert r.origin("b") == Origin("d0.conf", 2, 5)
    assert r.origin("p") == Origin("d0.conf", 4, 5)
    assert Origin("d0.conf", 1, 5) in r.sources("b")
    assert Origin("d0.conf", 3, 5) in r.sources("p")


def test_resolved_origin_inside_substituted_object_is_where_the_field_was_written() -> None:
    r = res("o = {k: v}\np = ${o}")
    assert r.origin("p.k") == Origin("d0.conf", 1, 9)


def test_resolved_origin_shows_which_layer_wins() -> None:
    r = res("a = 2\no { x = 1 }", "a = 1\nb = 3\no { x = 0, y = 2 }")
    assert r.value == {"a": 2, "b": 3, "o": {"x": 1, "y": 2}}
    assert r.origin("a") == Origin("d0.conf", 1, 5)
    assert r.origin("b") == Origin("d1.conf", 2, 5)
    assert r.origin("o") == Origin("d0.conf", 2, 3)
    assert r.origin("o.x") == Origin("d0.conf", 2, 9)
    assert r.origin("o.y") == Origin("d1.conf", 3, 16)


def test_resolved_origin_of_substitution_across_layers() -> None:
    r = res("b = ${a}", "a = 1")
    assert r.origin("b") == Origin("d0.conf", 1, 5)
    assert r.sources("b") == (Origin("d1.conf", 1, 5),)


def test_resolved_origin_of_plus_equals_is_in_the_appending_layer() -> None:
    r = res("a += 2", "a = [1]")
    assert r.value == {"a": [1, 2]}
    origin = r.origin("a")
    assert origin is not None
    assert (origin.file, origin.line) == ("d0.conf", 1)


def test_resolved_origin_of_duplicate_key_is_the_last_definition() -> None:
    r = res("a = 1\na = 2")
    assert r.origin("a") == Origin("d0.conf", 2, 5)


def test_resolved_origin_of_value_from_included_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "main.conf").write_text('top = 1\nn { include "sub/inc.conf" }\n', encoding="utf-8")
    (tmp_path / "sub" / "inc.conf").write_text("\nx = ${top}\ny = 2\n", encoding="utf-8")
    r = resolve([parse_file(tmp_path / "main.conf")])
    inc = str(tmp_path / "sub" / "inc.conf")
    assert r.value == {"top": 1, "n": {"x": 1, "y": 2}}
    assert r.origin("n.y") == Origin(inc, 3, 5)
    assert r.origin("n.x") == Origin(inc, 2, 5)
    assert r.sources("n.x") == (Origin(str(tmp_path / "main.conf"), 1, 7),)


# -- extra --------------------------------------------------------------------------------------------


def test_resolve_extra_values_are_visible_and_absent_from_output() -> None:
    r = res('key = ${cfgtool.key}\npath = "/data/"${cfgtool.name}', extra={"cfgtool": {"key": "/a/b", "name": "b"}})
    assert r.value == {"key": "/a/b", "path": "/data/b"}
    assert "cfgtool" not in r.value
    with pytest.raises(KeyError):
        r.get("cfgtool.key")


def test_resolve_extra_is_looked_up_before_the_documents() -> None:
    r = res("k = doc\na = ${k}", extra={"k": "extra"})
    assert r.value == {"k": "doc", "a": "extra"}


def test_resolve_extra_falls_through_to_documents_for_other_paths() -> None:
    assert res("k = doc\na = ${k}", extra={"other": 1}).value == {"k": "doc", "a": "doc"}


def test_resolve_extra_as_parsed_node_keeps_its_origins() -> None:
    r = resolve([parse("a = ${k}", "d.conf")], parse("k = 5", "vars.conf"))
    assert r.value == {"a": 5}
    assert r.sources("a") == (Origin("vars.conf", 1, 5),)


def test_resolve_extra_plain_values_have_an_extra_origin() -> None:
    r = res("a = ${k}", extra={"k": 1})
    (source,) = r.sources("a")
    assert source.file == "<extra>"


def test_resolve_extra_object_and_list_values() -> None:
    r = res("a = ${o}\nb = ${l} [3]\nc = ${o.n}", extra={"o": {"n": None}, "l": [1, 2]})
    assert r.value == {"a": {"n": None}, "b": [1, 2, 3], "c": None}


def test_resolve_optional_reference_to_extra() -> None:
    assert res("a = ${?k}\nb = ${?nope}", extra={"k": 1}).value == {"a": 1}


# -- hermeticity --------------------------------------------------------------------------------------


def test_resolve_ignores_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    monkeypatch.setenv("CFGTOOL_TEST_SECRET", "leaked")
    assert res("home = ${?HOME}\nsecret = ${?CFGTOOL_TEST_SECRET}\nkeep = 1").value == {"keep": 1}
    with pytest.raises(HoconError) as info:
        res("a = 1\nsecret = ${CFGTOOL_TEST_SECRET}").value  # noqa: B018
    assert (info.value.code, info.value.origin) == ("E_UNRESOLVED_REF", Origin("d0.conf", 2, 10))
    assert "CFGTOOL_TEST_SECRET" in info.value.message
    with pytest.raises(HoconError) as info:
        res("home = ${HOME}").value  # noqa: B018
    assert info.value.code == "E_UNRESOLVED_REF"


def test_resolve_ignores_environment_in_self_references(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH_EXTRA", "/env")
    monkeypatch.setenv("a", "from-env")
    assert res('a = ${?a}"/x"').value == {"a": "/x"}
    assert res("l = ${?PATH_EXTRA} [1]").value == {"l": [1]}


def test_resolve_ignores_system_properties_like_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "someone")
    assert res("a = ${?user.name}\nb = ${?java.version}\nc = ${?USER}").value == {}


# -- split_path, from_plain, to_plain -----------------------------------------------------------------


def test_split_path_expressions_and_sequences() -> None:
    assert split_path('a."b.c".d') == ("a", "b.c", "d")
    assert split_path("a.b") == ("a", "b")
    assert split_path(["a.b", "c"]) == ("a.b", "c")
    assert split_path(("x",)) == ("x",)


def test_split_path_bad_expression_is_E_SYNTAX() -> None:
    with pytest.raises(HoconError) as info:
        split_path("a..b")
    assert info.value.code == "E_SYNTAX"


def test_from_plain_and_to_plain_round_trip() -> None:
    data = {"a": [1, 2.5, "x", None, True, {"b": []}], "c": {}}
    node = from_plain(data, Origin("p", 1, 1))
    assert to_plain(node) == data
    assert node.origin == Origin("p", 1, 1)


def test_from_plain_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        from_plain({"a": object()}, Origin("p", 1, 1))


# -- HoconError ---------------------------------------------------------------------------------------


def test_hocon_error_is_structured_and_prints_file_line_col() -> None:
    with pytest.raises(HoconError) as info:
        loads("a = 1\nb = [\n", "e.conf")
    e = info.value
    assert (e.code, e.file, e.line, e.col) == ("E_SYNTAX", "e.conf", 3, 1)
    assert e.origin == Origin("e.conf", 3, 1)
    assert e.message == "unclosed array: add ']'"
    assert str(e) == "e.conf:3:1: unclosed array: add ']'\nnote: the array opened at e.conf:2:5"


def test_hocon_error_without_origin() -> None:
    e = HoconError("E_LIMIT", "too big")
    assert (e.file, e.line, e.col) == (None, None, None)
    assert str(e) == "too big"


def test_hocon_error_cycle_prints_its_steps() -> None:
    with pytest.raises(HoconError) as info:
        loads("a = ${b}\nb = ${a}", "c.conf")
    text = str(info.value)
    assert text.startswith("c.conf:")
    assert "${a} at c.conf:2:5" in text
    assert "${b} at c.conf:1:5" in text


# -- size limits on input and output ------------------------------------------------------------------
# Bounds in CPU seconds of this process (others' load does not stretch them) on the reference machine, scaled by
# SLOW (tests/machine.py): 2 s there is 10 s on a machine five times slower.


def test_loads_50_MB_string_is_fast_and_bounded() -> None:
    text = 'a = "' + "x" * (50 * MB) + '"\nb = 1'
    tracemalloc.start()
    start = time.thread_time()
    try:
        doc = loads(text, "big.conf")
        elapsed = time.thread_time() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 2 * slowness_now()
    assert peak < 500 * MB
    assert len(doc["a"]) == 50 * MB
    assert doc["b"] == 1


def test_loads_50_MB_unquoted_string_is_fast() -> None:
    start = time.thread_time()
    doc = loads("a = " + "y" * (50 * MB))
    assert time.thread_time() - start < 2 * slowness_now()
    assert len(doc["a"]) == 50 * MB


def test_loads_input_over_64_MB_is_E_LIMIT() -> None:
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        loads('a = "' + "x" * (70 * MB) + '"', "big.conf")
    assert time.thread_time() - start < 2 * slowness_now()
    assert (info.value.code, info.value.file) == ("E_LIMIT", "big.conf")


def test_resolved_value_of_doubling_strings_is_E_LIMIT_before_value() -> None:
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        resolve([parse("a0 = x\n" + "".join(f"a{i + 1} = ${{a{i}}}${{a{i}}}\n" for i in range(60)), "h.conf")])
    assert time.thread_time() - start < 2 * slowness_now()
    assert info.value.code == "E_LIMIT"


def test_resolved_value_of_doubling_objects_is_E_LIMIT_quickly() -> None:
    text = "a0 = {}\n" + "".join(f"a{i + 1} = {{x: ${{a{i}}}, y: ${{a{i}}}}}\n" for i in range(60))
    start = time.thread_time()
    with pytest.raises(HoconError) as info:
        resolve([parse(text, "h.conf")]).value  # noqa: B018
    # 1 s, not 2: the size of a shared tree is known without expanding it (an older guard took 8-17 s here).
    assert time.thread_time() - start < slowness_now()
    assert info.value.code == "E_LIMIT"


def test_a_document_over_the_size_limit_says_so_before_a_bad_number_it_holds() -> None:
    """The size check runs only once a conversion is large or fails, yet its E_LIMIT still comes first, as
    when every document was checked before converting: here the bad number is met first in document order."""
    text = "n = 1e999\na0 = [1, 2]\n" + "".join(f"a{i + 1} = [${{a{i}}}, ${{a{i}}}]\n" for i in range(30))
    with pytest.raises(HoconError) as info:
        resolve([parse(text, "h.conf")]).value  # noqa: B018
    assert info.value.code == "E_LIMIT"
    assert "more than 2000000 values" in str(info.value)
    with pytest.raises(HoconError) as small:
        resolve([parse("n = 1e999\na = [1, 2]\n", "h.conf")]).value  # noqa: B018
    assert small.value.code == "E_SYNTAX"


def test_an_ordinary_document_is_walked_once_to_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """A document of ordinary size is converted without the separate size walk (a compile converts every
    node: the walk cost a sixth of it); a large one is checked."""
    import cfgtool.hocon.api as api

    walks: list[object] = []
    real = api._check_size

    def counted(root: object) -> None:
        walks.append(root)
        real(root)  # type: ignore[arg-type]

    monkeypatch.setattr(api, "_check_size", counted)
    assert resolve([parse("a { b = [1, 2, {c: 3}] }\nd = ${a}", "h.conf")]).value["d"] == {"b": [1, 2, {"c": 3}]}
    assert walks == []
    big = "a0 = [1, 2]\n" + "".join(f"a{i + 1} = [${{a{i}}}, ${{a{i}}}]\n" for i in range(16))
    assert len(resolve([parse(big, "h.conf")]).value["a16"]) == 2
    assert len(walks) == 1


def test_converting_a_tree_keeps_no_reference_to_it() -> None:
    """A compile pauses the cyclic GC: a conversion that left a reference cycle holding the tree (a recursive
    closure does) kept every node's resolved tree alive until the end (+10% peak memory at 10k nodes)."""
    import gc
    import sys

    root = resolve([parse("a { b = [1, {c: 2}] }\nd = ${a}", "h.conf")]).root
    gc.disable()
    try:
        before = sys.getrefcount(root)
        assert to_plain(root) == {"a": {"b": [1, {"c": 2}]}, "d": {"b": [1, {"c": 2}]}}
        assert sys.getrefcount(root) == before
    finally:
        gc.enable()


def test_bulk_pauses_the_collector_and_hands_what_it_made_to_the_oldest_generation() -> None:
    import gc

    from cfgtool.hocon import bulk

    gc.unfreeze()  # an earlier test in this worker (a server's loaded versions) may have frozen objects: start clean
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with bulk():
        assert not gc.isenabled()
        kept = [{"k": [i]} for i in range(1000)]  # container objects the collector tracks
    assert gc.isenabled() and gc.get_freeze_count() == 0
    assert any(o is kept for o in gc.get_objects(generation=2))  # moved without a scan
    gc.freeze()  # a program that keeps frozen objects of its own: they stay frozen
    try:
        with bulk():
            more = [[i] for i in range(10)]
        assert gc.get_freeze_count() > 0 and not any(o is more for o in gc.get_objects(generation=2))
    finally:
        gc.unfreeze()


def test_quoted_path_names_the_quoted_keys_that_spell_an_unset_dotted_path() -> None:
    config = {"kafka": {"config": {"retention.ms": 1, "a": {"b.c": 2}}}, "x.y": {"z": 3}, "retention": {"ms": 4}}
    assert quoted_path(config, "kafka.config.retention.ms") == 'kafka.config."retention.ms"'
    assert quoted_path(config, "kafka.config.a.b.c") == 'kafka.config.a."b.c"'
    assert quoted_path(config, "x.y.z") == '"x.y".z'
    assert quoted_path(config, "retention.ms") is None  # set as it is written
    assert quoted_path(config, "kafka.config.nope") is None
    assert quoted_path(None, "a.b") is None
    start = time.process_time()
    assert quoted_path({"a": {"a": {"a": 1}}, "a.a": 2}, ".".join(["a"] * 5000)) is None  # a hostile path
    deep: dict[str, object] = {"x.y": 1}
    for _ in range(3000):  # deeper than Python's default recursion limit
        deep = {"a": deep}
    assert quoted_path(deep, ".".join(["a"] * 3000 + ["x", "y"])) == ".".join(["a"] * 3000) + '."x.y"'
    assert time.process_time() - start < slowness_now()
