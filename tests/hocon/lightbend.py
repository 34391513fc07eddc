"""Differential testing of cfgtool's HOCON engine against Lightbend Typesafe Config 1.4.1
(docs/serving.md#speed-and-memory).

Shared by `tests/hocon/test_differential.py` and `benchmarks/hocon_diff.py`:
  - `Oracle`: one JVM running `LightbendOracle.java` (compiled on first use into a temporary directory)
    that answers one case per line;
  - `run_cfgtool`: the same case through `cfgtool.hocon.parse` + `resolve`;
  - `compare`: equal values (numbers compared as numbers) or both errors;
  - `classify` and `KNOWN`: the documented disagreement classes, each a named predicate;
  - `shrink`: a smaller case (fewer layers and statements) that disagrees the same way.
An "outcome" is ("ok", value), ("error", what) or ("internal", what): "internal" is a Lightbend
BugOrBroken or other RuntimeException, or, for cfgtool, any exception other than HoconError.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "LightbendOracle.java"
JAR = Path(os.environ.get("LIGHTBEND_CONFIG_JAR", "~/.m2/repository/com/typesafe/config/1.4.1/config-1.4.1.jar"))
JAR = JAR.expanduser()

Outcome = tuple[str, Any]


def unavailable() -> str | None:
    """Why the oracle cannot run here (None when it can): the reason a test skips with."""
    missing = [tool for tool in ("java", "javac") if shutil.which(tool) is None]
    if missing:
        return f"{' and '.join(missing)} not on PATH: the Lightbend differential test needs a JDK (17+)"
    if not JAR.is_file():
        return f"Lightbend Typesafe Config jar not found at {JAR} (set LIGHTBEND_CONFIG_JAR to use another path)"
    return None


class Oracle:
    """One JVM answering cases in order. `ask(texts)` -> outcome. Use as a context manager, or `close()`."""

    def __init__(self) -> None:
        reason = unavailable()
        if reason:
            raise RuntimeError(reason)
        self._dir = tempfile.TemporaryDirectory(prefix="lightbend-oracle-")
        subprocess.run(
            ["javac", "-nowarn", "-d", self._dir.name, "-cp", str(JAR), str(SOURCE)],
            check=True,
            capture_output=True,
            text=True,
        )
        self._proc = subprocess.Popen(
            [
                "java",
                "-Xss16m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                os.pathsep.join((str(JAR), self._dir.name)),
                "LightbendOracle",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def ask(self, texts: Sequence[str]) -> Outcome:
        return self.ask_many([texts])[0]

    def ask_many(self, cases: Sequence[Sequence[str]]) -> list[Outcome]:
        """Answer many cases with one write and one read each way (the pipe is the cost, not the JVM)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        stdin = self._proc.stdin
        payload = "".join(json.dumps(list(texts)) + "\n" for texts in cases)

        def write() -> None:  # from another thread: the JVM's answers fill the other pipe meanwhile
            stdin.write(payload)
            stdin.flush()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        out: list[Outcome] = []
        for _ in cases:
            line = self._proc.stdout.readline()
            if not line:
                raise RuntimeError(f"the Lightbend oracle JVM stopped (exit {self._proc.poll()})")
            answer = json.loads(line)
            if "ok" in answer:
                out.append(("ok", answer["ok"]))
            elif answer.get("kind") == "config":
                out.append(("error", answer["error"]))
            elif answer.get("kind") == "internal":
                out.append(("internal", answer["error"]))
            else:
                raise RuntimeError(f"oracle protocol error: {answer}")
        writer.join()
        return out

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._dir.cleanup()

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_cfgtool(texts: Sequence[str]) -> Outcome:
    """cfgtool's answer: parse each text, resolve all (first highest), the plain value or the error code."""
    from cfgtool import hocon

    try:
        docs = [hocon.parse(text, f"layer{i}") for i, text in enumerate(texts)]
        return ("ok", hocon.resolve(docs).value)
    except hocon.HoconError as exc:
        return ("error", f"{exc.code}: {exc.message}")
    except Exception as exc:  # a crash of the engine, never the right answer
        return ("internal", f"{type(exc).__name__}: {exc}")


def same_value(a: Any, b: Any) -> bool:
    """Deep equality of plain values; numbers equal as numbers (Lightbend's 1000 for `1e3`, cfgtool's 1000.0)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def agree(ours: Outcome, theirs: Outcome) -> bool:
    """Both the same value, or both an error (any error: the messages and codes differ by design)."""
    if ours[0] == "ok" and theirs[0] == "ok":
        return same_value(ours[1], theirs[1])
    return ours[0] == "error" and theirs[0] == "error"


# --- disagreement classes ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    texts: tuple[str, ...]
    ours: Outcome
    theirs: Outcome


Ask = Callable[[Sequence[str]], Outcome]  # the oracle's answer for a case (rewrites are checked against it)


@dataclass(frozen=True)
class Known:
    """A documented disagreement class: `applies` recognizes it; `right` says who follows HOCON.md."""

    name: str
    right: str  # who follows HOCON.md: "lightbend", "cfgtool", "unclear" (see the shrunk examples) or a note
    description: str
    applies: Callable[[Case, Ask | None], bool]


_MISSING = object()


def _flat(value: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    """Leaves by path (an empty object is a leaf, so `{}` and a missing key differ)."""
    if isinstance(value, dict) and value:
        out: dict[tuple[str, ...], Any] = {}
        for k, v in value.items():
            out.update(_flat(v, (*path, k)))
        return out
    return {path: value}


def _diff_leaves(case: Case) -> list[tuple[Any, Any]]:
    """(ours, theirs) at every leaf path where two successful results differ (absent: `_MISSING`)."""
    if case.ours[0] != "ok" or case.theirs[0] != "ok":
        return []
    a, b = _flat(case.ours[1]), _flat(case.theirs[1])
    return [
        (a.get(p, _MISSING), b.get(p, _MISSING))
        for p in a.keys() | b.keys()
        if not same_value(a.get(p, _MISSING), b.get(p, _MISSING))
    ]


def _rewrite(pattern: str, replacement: str) -> Callable[[Case, Ask | None], bool]:
    """Applies when the texts match `pattern` and (given an oracle) rewriting every match removes the disagreement."""
    rx = re.compile(pattern)

    def applies(case: Case, ask: Ask | None) -> bool:
        if not any(rx.search(t) for t in case.texts):
            return False
        if ask is None:
            return True
        fixed = [rx.sub(replacement, t) for t in case.texts]
        return agree(run_cfgtool(fixed), ask(fixed))

    return applies


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _numeric_string(case: Case, ask: Ask | None) -> bool:
    """Every differing leaf is a string for cfgtool and the same number for Lightbend (or the reverse)."""
    diffs = _diff_leaves(case)

    def pair(o: Any, t: Any) -> bool:
        s, n = (o, t) if isinstance(o, str) else (t, o)
        if not isinstance(s, str) or not _is_number(n):
            return False
        try:
            return float(s) == float(n)
        except ValueError:
            return False

    return bool(diffs) and all(pair(o, t) for o, t in diffs)


def _cfgtool_extra_keys(case: Case, ask: Ask | None) -> bool:
    """cfgtool's result has fields Lightbend's lacks (a fallback object that a non-object blocks) and no others."""
    diffs = _diff_leaves(case)
    return (
        bool(diffs)
        and all(
            t is _MISSING or (isinstance(t, (str, int, float, type(None))) and isinstance(o, dict)) for o, t in diffs
        )
        and any(t is _MISSING for _, t in diffs)
    )


def _cfgtool_missing_keys(case: Case, ask: Ask | None) -> bool:
    """cfgtool's result lacks fields Lightbend has (e.g. an optional reference into an object concatenation)."""
    diffs = _diff_leaves(case)
    return bool(diffs) and all(o is _MISSING or (isinstance(o, dict) and not o) for o, _ in diffs)


def _outcomes(ours: str, theirs: str, ours_text: str = "", theirs_text: str = "") -> Callable[[Case, Ask | None], bool]:
    def applies(case: Case, ask: Ask | None) -> bool:
        return (
            case.ours[0] == ours
            and case.theirs[0] == theirs
            and ours_text in str(case.ours[1])
            and theirs_text in str(case.theirs[1])
        )

    return applies


def _array_string(case: Case, ask: Ask | None) -> bool:
    """Lightbend keeps the array of `[1] foo` (or the object of `{} ${s}`) and drops the string; cfgtool says
    E_TYPE naming a string beside the array or object."""
    if not (case.ours[0] == "error" and "E_TYPE" in case.ours[1] and case.theirs[0] == "ok"):
        return False
    if re.search(r"cannot concatenate .*(string|value) \(", case.ours[1]):
        return True
    return "array" in case.ours[1] or any(re.search(r"\][ \t]*[\w\"]|[\w\"][ \t]*\[", t) for t in case.texts)


def _fails_on_unneeded(case: Case, ask: Ask | None) -> bool:
    """Lightbend errs, cfgtool has a value, and one statement (a line, or lines up to where brackets balance)
    can be deleted without changing cfgtool's value while Lightbend then agrees with it."""
    if ask is None or case.ours[0] != "ok" or case.theirs[0] != "error":
        return False
    texts = list(case.texts)
    for li, text in enumerate(texts):
        lines = text.split("\n")
        for a, b in _line_groups(text):
            candidate = [*texts[:li], "\n".join(lines[:a] + lines[b:]), *texts[li + 1 :]]
            ours = run_cfgtool(candidate)
            if ours[0] == "ok" and same_value(ours[1], case.ours[1]) and agree(ours, ask(candidate)):
                return True
    return False


_SUBST = re.compile(r"\$\{\??([^}]*)\}")


def _path_value(value: Any, expr: str) -> Any:
    """The value at a simple path expression (`a.b`, `"x y".c`) in plain data, or _MISSING."""
    keys = re.findall(r'"([^"]*)"|([^."\s]+)', expr.strip())
    for quoted, bare in keys:
        key = quoted or bare
        if not isinstance(value, dict) or key not in value:
            return _MISSING
        value = value[key]
    return value


def _not_transparent(case: Case, ask: Ask | None) -> bool:
    """Writing a substitution's resolved value (Lightbend's own, as JSON) in its place changes Lightbend's answer
    to cfgtool's, and leaves cfgtool's as it was: a substitution must be the same as its value written there
    (Lightbend carries internal state through it, such as an object's 'ignores fallbacks' flag)."""
    if ask is None or case.theirs[0] != "ok" or case.ours[0] != "ok":
        return False
    texts = list(case.texts)
    for li, text in enumerate(texts):
        for m in _SUBST.finditer(text):
            line = text[text.rfind("\n", 0, m.start()) + 1 : m.start()]
            if m.group(1).strip().split(".")[0].strip('"') in line:
                continue  # possibly a self-reference: its value is the previous definition's, not the final one
            value = _path_value(case.theirs[1], m.group(1))
            if value is _MISSING:
                continue
            candidate = [*texts[:li], text[: m.start()] + json.dumps(value) + text[m.end() :], *texts[li + 1 :]]
            ours = run_cfgtool(candidate)
            if agree(ours, case.ours) and agree(ours, ask(candidate)):
                return True
    return False


KNOWN: tuple[Known, ...] = (
    Known(
        "lightbend-internal-error",
        "neither: Lightbend crashes",
        "Lightbend throws BugOrBroken or another RuntimeException (e.g. a self-reference inside a concatenated "
        "object); counted apart, neither agreement nor disagreement",
        lambda c, a: c.theirs[0] == "internal",
    ),
    Known(
        "cfgtool-crash",
        "lightbend",
        "cfgtool raised something other than HoconError",
        lambda c, a: c.ours[0] == "internal",
    ),
    Known(
        "neg-leading-dot-number",
        "lightbend",
        "`-.5` is the number -0.5 for Lightbend (a number token starts at '-'); cfgtool reads the string '-.5'",
        _rewrite(r"(?<![\w.\"])-\.(\d)", r"-0.\1"),
    ),
    Known(
        "big-int",
        "unclear",
        "an integer beyond 64 bits: Lightbend gives the string of its digits, cfgtool a Python int",
        _rewrite(r"(?<![\w.])(-?)\d{19,}(?![\w.])", r"\g<1>7"),
    ),
    Known(
        "float-overflow",
        "cfgtool",
        "`1e999` as a value: Lightbend gives Infinity, which JSON (every output of cfgtool, and what clients in "
        "other languages read) cannot hold; cfgtool says E_SYNTAX and to quote it. In a string concatenation both "
        "keep the text",
        _rewrite(r"1e999", "1e9"),
    ),
    Known(
        "whitespace-beside-undefined-optional",
        "cfgtool",
        "`${?undefined} ${obj}`: HOCON.md says an undefined optional substitution in a concatenation with an "
        "object or array becomes an empty one, and whitespace between objects or arrays is ignored; Lightbend "
        'keeps the whitespace as a string and fails (WrongType: Unquoted(" "))',
        lambda c, a: (
            c.ours[0] == "ok"
            and c.theirs[0] == "error"
            and "WrongType" in str(c.theirs[1])
            and re.search(r'Unquoted\("\s+"\)', str(c.theirs[1])) is not None
        ),
    ),
    Known(
        "lightbend-resolves-unneeded",
        "cfgtool",
        "Lightbend fails on a statement that does not change the result: deleting that one statement leaves "
        "cfgtool's value as it was and makes Lightbend give the same value (typically a definition a later one "
        "overrides, which Lightbend resolves anyway; HOCON.md resolves only what the result needs)",
        lambda c, a: _fails_on_unneeded(c, a),
    ),
    Known(
        "array-string-dropped",
        "cfgtool",
        "Lightbend bug: `[1] foo` (an array, or an object, next to a string) keeps [1] and silently drops the "
        "string; HOCON.md makes it an error (cfgtool E_TYPE)",
        _array_string,
    ),
    Known(
        "number-vs-numeric-string",
        "lightbend",
        "one side a number, the other the same digits as a string (e.g. `${?b}1.5` with b undefined is the "
        "number 1.5 for Lightbend, the string '1.5' for cfgtool)",
        _numeric_string,
    ),
    Known(
        "cfgtool-cycle-lightbend-value",
        "lightbend",
        "cfgtool E_REF_CYCLE where Lightbend resolves (e.g. `a = {x = 1} {y = ${a.x}}`: a reference into an "
        "earlier part of the same object concatenation)",
        _outcomes("error", "ok", "E_REF_CYCLE"),
    ),
    Known(
        "cfgtool-missing-keys",
        "lightbend",
        "cfgtool's value lacks fields Lightbend has (e.g. `a = {x = 1} {y = ${?a.x}}`: y vanishes)",
        _cfgtool_missing_keys,
    ),
    Known(
        "non-object-blocks-fallback",
        "lightbend",
        "a non-object value (null, a string...) between two objects of a path blocks the lower one: Lightbend "
        "drops the lower object's fields, cfgtool merges them (layers `a = {x = 1}`, `a = null`, `a = {y = 2}`); "
        "cases without substitutions",
        lambda c, a: _cfgtool_extra_keys(c, a) and not any("${" in t for t in c.texts),
    ),
    Known(
        "lightbend-not-transparent",
        "cfgtool",
        "Lightbend's answer changes when a substitution is replaced by its own resolved value written out, and "
        "then equals cfgtool's: Lightbend carries an object's internal 'ignores fallbacks' flag (set where the "
        "object was merged over a non-object) through `${x}` into another path, dropping that path's lower "
        "definitions. HOCON.md defines a substitution by its value, so cfgtool merges them",
        _not_transparent,
    ),
    Known(
        "blocked-fallback-via-substitution",
        "unclear",
        "cfgtool merges fields that Lightbend drops, in a case with substitutions: either the blocking above, "
        "or Lightbend carrying an object's 'ignores fallbacks' flag through a substitution into another path",
        _cfgtool_extra_keys,
    ),
    Known(
        "lightbend-error-cfgtool-value",
        "unclear",
        "Lightbend fails (unresolved or cyclic substitution, wrong type) where cfgtool gives a value; see the "
        "minimal examples: typically an overridden or unneeded value that Lightbend evaluates anyway",
        _outcomes("ok", "error"),
    ),
    Known(
        "cfgtool-error-lightbend-value",
        "unclear",
        "cfgtool fails where Lightbend gives a value",
        _outcomes("error", "ok"),
    ),
    Known("different-values", "unclear", "both give a value, and they differ", _outcomes("ok", "ok")),
)
KNOWN_BY_NAME = {k.name: k for k in KNOWN}
# Classes where Lightbend, not cfgtool, is known to be wrong: excluded from the agreement rate's denominator.
LIGHTBEND_WRONG = frozenset(
    {
        "lightbend-internal-error",
        "array-string-dropped",
        "float-overflow",
        "whitespace-beside-undefined-optional",
        "lightbend-resolves-unneeded",
        "lightbend-not-transparent",
    }
)


def classify(case: Case, ask: Ask | None = None) -> str:
    """The name of the first KNOWN class that applies to a disagreeing case, or "unclassified"."""
    return next((k.name for k in KNOWN if k.applies(case, ask)), "unclassified")


# --- shrinking -----------------------------------------------------------------------------------------------

_OPEN, _CLOSE = "{[", "}]"


def _spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every balanced `{...}` and `[...]` outside quotes (approximately: no triple quotes)."""
    out, stack, quoted, i = [], [], False, 0
    while i < len(text):
        ch = text[i]
        if quoted:
            if ch == "\\":
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in _OPEN:
            stack.append(i)
        elif ch in _CLOSE and stack:
            out.append((stack.pop(), i + 1))
        i += 1
    return out


def _line_groups(text: str) -> list[tuple[int, int]]:
    """(first, last+1) line ranges: each single line, and from each line the lines up to where brackets balance."""
    lines = text.split("\n")
    out = []
    for i in range(len(lines)):
        out.append((i, i + 1))
        level = 0
        for j in range(i, len(lines)):
            level += sum(lines[j].count(c) for c in _OPEN) - sum(lines[j].count(c) for c in _CLOSE)
            if level <= 0:
                if j > i:
                    out.append((i, j + 1))
                break
    return sorted(out, key=lambda r: r[0] - r[1])  # the largest first


def _candidates(texts: list[str]) -> list[list[str]]:
    out: list[list[str]] = []
    if len(texts) > 1:
        out += [texts[:i] + texts[i + 1 :] for i in range(len(texts))]
    for li, text in enumerate(texts):
        lines = text.split("\n")
        edits = ["\n".join(lines[:a] + lines[b:]) for a, b in _line_groups(text) if b - a < len(lines) or a > 0]
        edits += [text[:a] + text[a] + text[b - 1] + text[b:] for a, b in _spans(text) if b - a > 2]
        for sep in (",", " "):
            pieces = text.split(sep)
            if len(pieces) > 1:
                edits += [sep.join(pieces[:j] + pieces[j + 1 :]) for j in range(len(pieces))]
        out += [[*texts[:li], e, *texts[li + 1 :]] for e in edits if e != text]
    return out


def shrink(texts: Sequence[str], still_fails: Callable[[list[str]], bool], budget: int = 600) -> list[str]:
    """Delete layers, statements (also multi-line ones), bracket contents, comma- and space-separated pieces
    while `still_fails` holds; greedy, to a fixed point or `budget` calls."""
    current = list(texts)
    calls = 0
    progress = True
    while progress and calls < budget:
        progress = False
        for candidate in _candidates(current):
            if calls >= budget:
                break
            calls += 1
            if still_fails(candidate):
                current, progress = candidate, True
                break
    return current


def disagreement(texts: Sequence[str], ask: Ask) -> tuple[Case, str] | None:
    """The case and its class when cfgtool and Lightbend disagree on `texts` (None when they agree)."""
    case = Case(tuple(texts), run_cfgtool(texts), ask(texts))
    if agree(case.ours, case.theirs):
        return None
    return case, classify(case, ask)


def shrink_case(case: Case, name: str, ask: Ask, budget: int = 600) -> Case:
    """A smaller case that disagrees in the same class."""

    def same_class(candidate: list[str]) -> bool:
        found = disagreement(candidate, ask)
        return found is not None and found[1] == name

    small = shrink(list(case.texts), same_class, budget)
    return Case(tuple(small), run_cfgtool(small), ask(small))
