"""`cfgtool.hocon.fastparse`: the fast path builds exactly the general parser's trees, or hands the document over.

The oracle is the general tokenizer and parser (`parser._Parser`), which the fast path must match node for node,
origin for origin; where it hands over (None), `hocon.parse` must give the general parser's result or error.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from cfgtool.hocon import HoconError, fastparse, parse
from cfgtool.hocon.fastparse import FAST_DEPTH, parse_fast
from cfgtool.hocon.parser import _Parser
from cfgtool.hocon.values import Concat, Lst, Merge, Node, Num, Obj, Scalar, Subst, Ws
from tests.hocon.hocon_gen import case


def shape(node: Node) -> Any:
    """Everything a node holds, origins included, as plain data (node classes by name)."""
    kind = type(node).__name__
    if isinstance(node, Obj):
        return (kind, tuple(node.origin), [(k, shape(v)) for k, v in node.fields.items()])
    if isinstance(node, Lst):
        return (kind, tuple(node.origin), [shape(v) for v in node.items])
    if isinstance(node, Concat):
        return (kind, tuple(node.origin), node.append, [shape(v) for v in node.parts])
    if isinstance(node, Merge):
        return (kind, tuple(node.origin), [shape(v) for v in node.stack])
    if isinstance(node, Subst):
        return (kind, tuple(node.origin), node.path, node.optional, node.prefix)
    if isinstance(node, Num):
        return (kind, tuple(node.origin), repr(node.value), node.raw)
    if isinstance(node, Scalar):
        return (kind, tuple(node.origin), repr(node.value), node.quoted)
    assert isinstance(node, Ws)
    return (kind, tuple(node.origin), node.value)


def general(text: str) -> Any:
    """The general parser's tree (as `shape`), or its error as (code, message, origin, notes)."""
    try:
        return shape(_Parser(text, "f.conf", None, 0).document(False))
    except HoconError as exc:
        return ("error", exc.code, exc.message, exc.origin, exc.notes)


def public(text: str) -> Any:
    """`hocon.parse`'s tree (as `shape`) or error, the fast path first."""
    try:
        return shape(parse(text, "f.conf"))
    except HoconError as exc:
        return ("error", exc.code, exc.message, exc.origin, exc.notes)


READ_FAST = [
    'a = 1\nb : two\nc = "three"\n',
    "a.b.c = 1\na.b.d = x\na { e = true, f = null }\n",  # dotted keys merge into one object
    'meta."cost.center" = cc-1\n"x y" = 2\na b c = 3\n',  # path expressions of several tokens
    'list = [a, "b", 3, -4, 1.5, true]\nlist += c\nlist += [d]\n',  # `+=` onto an array literal
    'x = ${a.b}"-suffix"\ny = "pre-"${?c} z\nw = ${ a . b }\n',  # concatenations, a path with spaces
    "o = { a = 1 } { b = 2 }\np = [1] [2]\nq = ${o} { c = 3 }\n",  # objects and arrays joined as Lightbend
    "r = {\n  a = 1\n} { b = 2 }\ns = [\n  1\n] [2]\nt = after\n",  # the line moves on, and back for the join
    'notes = """line one\nline "two"\n""""\nafter = ${notes}\n',  # a triple-quoted string moves the line on
    "\ufeffa = 1\r\nb = 2 # comment\r\n// another\n\n\tc = /usr/bin // path, then comment\nd = -x-y\n",
    "a = 9223372036854775807\nb = 9223372036854775808\nc = 1.2.3\nd = 023\ne = 1e999\nf = -.5\n",
    'esc = "tab\\tquote\\" \\u00e9"\nempty = ""\nk = {}\n',
    "description = Events emitted by the web frontend\nflag = true false\n",
    "a = 1,\nb = 2\nc = [\n  1,\n  2\n]\nd {\n  e {\n    f = [{ g = 1 }, { g = 2 }]\n  }\n}\n",
    "a = 1 // no newline at the end",
    "{ a = 1 }\n",
    "",
]


@pytest.mark.parametrize("text", READ_FAST)
def test_fast_path_reads_the_document_and_builds_the_general_tree(text: str) -> None:
    fast = parse_fast(text, "f.conf")
    assert fast is not None, "the fast path handed this document over"
    assert shape(fast) == general(text)


HANDED_OVER = [
    "a = 1\nb = 2 = 3\n",  # errors: the general parser raises them, with its positions
    'a = }\nb = "\\q"\n',  # a lexical error later in the file wins, as the tokenizer runs first
    'a = "unclosed\nb = 1\n',
    "a = ${x\n",
    "a = 1 + 2\n",
    "a = `x`\n",
    "a { b = 1\n",
    "a = [1, 2\n",
    "a = [1,, 2]\n",
    "a..b = 1\n",
    'include "other.conf"\na = 1\n',  # includes need a reader
    "[1, 2]\n",  # a root array
    "a = 1+2\n",  # number-like text with a reserved character
    "a = " + "{ b = " * (FAST_DEPTH + 5) + "1" + " }" * (FAST_DEPTH + 5) + "\n",  # deeper than the fast path
]


@pytest.mark.parametrize("text", HANDED_OVER)
def test_fast_path_hands_errors_includes_and_deep_documents_to_the_general_parser(text: str) -> None:
    assert parse_fast(text, "f.conf") is None
    assert public(text) == general(text)


def test_generated_documents_and_their_mutations_parse_as_the_general_parser_does() -> None:
    rng = random.Random(7)
    alphabet = [*'{}[]:=,+#/"$\\\n \t-.0123456789abxyz`?\ufeff\u3000', '"""', "${", "//", "+=", "include "]
    texts = [text for seed in range(150) for text in case(seed)]
    mutated = []
    for text in texts:
        chars = list(text)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(chars) + 1)
            chars[at : at + rng.randint(0, 1)] = [rng.choice(alphabet)]
        mutated.append("".join(chars))
    read_fast = 0
    for text in texts + mutated:
        read_fast += parse_fast(text, "f.conf") is not None
        assert public(text) == general(text), text
    assert read_fast > len(texts) * 0.9  # the generated documents are valid: nearly all take the fast path


def test_substitution_paths_are_shared_up_to_a_bound() -> None:
    fastparse._PATHS.clear()
    first = parse_fast("a = ${x.y}\n", "f.conf")
    second = parse_fast("b = ${x.y}\n", "g.conf")
    assert first is not None and second is not None
    path_a, path_b = first.fields["a"], second.fields["b"]
    assert isinstance(path_a, Subst) and isinstance(path_b, Subst)
    assert path_a.path == ("x", "y") and path_a.path is path_b.path
    long_path = "k" * 200
    parse_fast("".join(f"a{i} = ${{p{i}}}\n" for i in range(5000)) + f"z = ${{{long_path}}}\n", "f.conf")
    assert len(fastparse._PATHS) == fastparse._PATHS_KEPT
    assert long_path not in fastparse._PATHS
