"""Differential test: cfgtool's HOCON engine against Lightbend Typesafe Config 1.4.1 (docs/serving.md#speed-and-memory).

One JVM (module fixture) answers a few thousand seeded, generated, layered cases (`hocon_gen.case`); cfgtool
must give the same value, or also an error, on >= 99% of them. Cases where Lightbend itself is known wrong
(its internal errors, the string it drops next to an array) are counted apart. Disagreements are classified
by `lightbend.KNOWN`; `benchmarks/hocon_diff.py` runs many more cases and prints one shrunk example per class.
Skipped when `java`/`javac` or the jar is absent.

The `test_issue_*` cases are the fixed regressions of the HOCON-vs-Lightbend issue. Those in ISSUE_CFGTOOL_WRONG
fail until the engine is fixed (Lightbend is right there); those in ISSUE_LIGHTBEND_WRONG check that cfgtool
keeps the HOCON.md answer where Lightbend 1.4.1 has a bug.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import pytest

from tests.hocon import hocon_gen
from tests.hocon import lightbend as lb

pytestmark = pytest.mark.xdist_group("lightbend")

CASES = 3000  # about 10 s with the JVM's start; the benchmark script runs more
MIN_AGREEMENT = 0.99


@pytest.fixture(scope="module")
def oracle() -> Iterator[lb.Oracle]:
    reason = lb.unavailable()
    if reason:
        pytest.skip(reason)
    with lb.Oracle() as o:
        yield o


def test_oracle_protocol(oracle: lb.Oracle) -> None:
    """The oracle answers values, config errors and internal errors distinctly (and numbers as JSON numbers)."""
    assert oracle.ask(["a = 1, b = ${a} x, c = -.5, d = 1e3"]) == ("ok", {"a": 1, "b": "1 x", "c": -0.5, "d": 1000})
    assert oracle.ask(["a = ${b}"])[0] == "error"
    assert oracle.ask(["a = {"])[0] == "error"
    assert oracle.ask([]) == ("ok", {})
    assert oracle.ask(['a = "\\u00e9\\n"', "b = 2"]) == ("ok", {"a": "\u00e9\n", "b": 2})


def test_generated_cases_agree(oracle: lb.Oracle) -> None:
    cases = [hocon_gen.case(seed) for seed in range(CASES)]
    theirs = oracle.ask_many(cases)
    counts: collections.Counter[str] = collections.Counter()
    examples: dict[str, tuple[str, ...]] = {}
    for texts, answer in zip(cases, theirs, strict=True):
        ours = lb.run_cfgtool(texts)
        if lb.agree(ours, answer):
            continue
        name = lb.classify(lb.Case(tuple(texts), ours, answer), oracle.ask)
        counts[name] += 1
        examples.setdefault(name, tuple(texts))
    apart = sum(counts[name] for name in lb.LIGHTBEND_WRONG)
    wrong = sum(counts.values()) - apart
    rate = 1 - wrong / max(1, CASES - apart)
    report = "\n".join(
        f"  {name} ({counts[name]}; {lb.KNOWN_BY_NAME[name].right if name in lb.KNOWN_BY_NAME else '?'} is right"
        f"): {examples[name]!r}"
        for name in sorted(counts, key=counts.__getitem__, reverse=True)
    )
    assert counts["unclassified"] == 0, f"unclassified disagreements:\n{report}"
    assert rate >= MIN_AGREEMENT, (
        f"agreement {rate:.2%} < {MIN_AGREEMENT:.0%} over {CASES - apart} cases ({apart} where Lightbend is known "
        f"wrong set apart); disagreements by class (run benchmarks/hocon_diff.py for shrunk examples):\n{report}"
    )


# Fixed cases that once disagreed. Texts are layers, highest priority first; the expected value follows the HOCON spec.
ISSUE_CFGTOOL_WRONG: list[Any] = [
    pytest.param(["a = {x = 1}", "a = null", "a = {y = 2}"], {"a": {"x": 1}}, id="null-blocks-lower-object"),
    pytest.param(["a = {x = 1}", 'a = "s"', "a = {y = 2}"], {"a": {"x": 1}}, id="string-blocks-lower-object"),
    pytest.param(["a : foo\na.a = 2", "a.b = 3"], {"a": {"a": 2}}, id="string-blocks-lower-object-in-one-doc"),
    pytest.param(["a = {x = 1} {y = ${a.x}}"], {"a": {"x": 1, "y": 1}}, id="ref-into-object-concat"),
    pytest.param(["a = {x = 1} {y = ${?a.x}}"], {"a": {"x": 1, "y": 1}}, id="optional-ref-into-object-concat"),
    pytest.param(["a = -.5"], {"a": -0.5}, id="neg-leading-dot-number"),
    pytest.param(["a = -.25e1"], {"a": -2.5}, id="neg-leading-dot-exponent"),
    pytest.param(["a = ${?b}1.5"], {"a": 1.5}, id="undefined-optional-then-number"),
]


@pytest.mark.parametrize(("texts", "expected"), ISSUE_CFGTOOL_WRONG)
def test_issue_cfgtool_wrong(oracle: lb.Oracle, texts: list[str], expected: dict[str, Any]) -> None:
    """Known cfgtool bugs (the engine is being fixed): Lightbend gives the HOCON.md answer, cfgtool must too."""
    assert oracle.ask(texts) == ("ok", expected), "Lightbend changed its answer: re-check the expectation"
    ours = lb.run_cfgtool(texts)
    assert ours[0] == "ok" and lb.same_value(ours[1], expected), f"cfgtool: {ours}, Lightbend/HOCON.md: {expected}"


# `key {...}` without ':' or '=' takes one object: anything after it on the line is a syntax error in Lightbend
# (cfgtool concatenated it); with the separator both engines concatenate.
SEPARATOR_OMITTED: list[Any] = [
    pytest.param(["common_modules {} {perl: 1}"], ("error", None), id="object-after-object-no-separator"),
    pytest.param(["x { a {x = 1} {y = 2} }"], ("error", None), id="nested-object-after-object-no-separator"),
    pytest.param(["a.b {} {x = 1}, c = 2"], ("error", None), id="path-key-object-after-object-no-separator"),
    pytest.param(["a {} ${b}", "b = {}"], ("error", None), id="subst-after-object-no-separator"),
    pytest.param(["a : {} {x = 1}"], ("ok", {"a": {"x": 1}}), id="object-after-object-with-colon"),
    pytest.param(["a = {x = 1} {y = 2}"], ("ok", {"a": {"x": 1, "y": 2}}), id="object-after-object-with-equals"),
    pytest.param(["a {x = 1} # c\nb {y = 2}"], ("ok", {"a": {"x": 1}, "b": {"y": 2}}), id="object-then-comment"),
]


@pytest.mark.parametrize(("texts", "expected"), SEPARATOR_OMITTED)
def test_separator_omitted_takes_one_object(oracle: lb.Oracle, texts: list[str], expected: lb.Outcome) -> None:
    """Both engines agree: an error where Lightbend has one, the same value otherwise."""
    theirs = oracle.ask(texts)
    assert theirs[0] == expected[0], f"Lightbend's answer changed: {theirs}"
    ours = lb.run_cfgtool(texts)
    if expected[0] == "error":
        assert ours[0] == "error", f"cfgtool: {ours}, Lightbend: {theirs}"
    else:
        assert theirs == expected
        assert ours[0] == "ok" and lb.same_value(ours[1], expected[1]), f"cfgtool: {ours}, expected {expected}"


ISSUE_LIGHTBEND_WRONG: list[Any] = [
    # Lightbend 1.4.1 throws BugOrBroken ("replace in parent not possible ConfigDelayedMerge...") on `+=` inside
    # an object concatenated to a self-reference. In `{c.y = 1, c += 2}` the `+=` extends the object {y = 1}:
    # an error per HOCON.md (as `x = {c.y = 1, c += 2}` alone is, for both engines).
    pytest.param(
        ["x : ${x} {c.y = 1, c += 2}", "x.c = null"],
        ("error", None),
        "internal",
        id="self-ref-concat-object-plus-equals",
    ),
    # The same with a lower `x = {}`: cfgtool (wrongly) answers {"x": {"c": [2]}}, forgetting `c.y = 1`: the
    # `${?x.c}` that `+=` stands for meets `x` while `x` resolves, and a cycle it closes is undefined. Open gap,
    # listed in docs/hocon.md.
    pytest.param(
        ["x : ${x} {c.y = 1, c += 2}", "x = {}"],
        ("error", None),
        "internal",
        id="self-ref-concat-object-plus-equals-cfgtool-also-wrong",
        marks=pytest.mark.xfail(strict=True, reason="open: a self-reference through a prefix of its own path"),
    ),
    # `[1] foo`: Lightbend keeps [1] and drops the string; HOCON.md: arrays and strings do not concatenate.
    pytest.param(["a = [1] foo"], ("error", None), "ok", id="array-string-dropped"),
    pytest.param(["c = ${c}ab1", "c = []"], ("error", None), "ok", id="array-string-dropped-via-self-ref"),
]


@pytest.mark.parametrize(("texts", "expected", "lightbend_kind"), ISSUE_LIGHTBEND_WRONG)
def test_issue_lightbend_wrong(oracle: lb.Oracle, texts: list[str], expected: lb.Outcome, lightbend_kind: str) -> None:
    """Lightbend's own bugs: cfgtool keeps the HOCON.md answer (and Lightbend still shows the bug)."""
    assert oracle.ask(texts)[0] == lightbend_kind, "Lightbend's answer changed: re-check this case"
    ours = lb.run_cfgtool(texts)
    if expected[0] == "error":
        assert ours[0] == "error", f"cfgtool: {ours}"
    else:
        assert ours[0] == "ok" and lb.same_value(ours[1], expected[1]), f"cfgtool: {ours}, expected {expected}"
