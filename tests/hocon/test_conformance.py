"""The shared HOCON conformance suite, parts A-D, run exactly as its README prescribes.

The suite is data only and is never copied into this repository: it is located as README section 1 says
(HOCON_CONFORMANCE_DIR, then `<repo>/shared/hocon-conformance`, then `<repo>/../shared/hocon-conformance`),
and every test is skipped, with the paths tried, when it is absent.
Select one part with `-k test_a_` ... `-k test_d_`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeAlias

import pytest
import yaml

from cfgtool.hocon import (
    HoconError,
    Origin,
    Resolved,
    from_plain,
    merge,
    parse,
    parse_file,
    parse_value,
    resolve,
    split_path,
)
from cfgtool.hocon.errors import E_REF_CYCLE, E_SYNTAX, E_TYPE, E_UNRESOLVED_REF
from cfgtool.hocon.values import Concat, Lst, Merge, Node, Obj, Subst

REPO_ROOT = Path(__file__).resolve().parents[2]


def _locate_suite() -> tuple[Path | None, list[str]]:
    """The first candidate folder that holds `xx-hocon/manifest.json`, and every candidate tried."""
    candidates = []
    if os.environ.get("HOCON_CONFORMANCE_DIR"):
        candidates.append(Path(os.environ["HOCON_CONFORMANCE_DIR"]).resolve())
    candidates += [
        REPO_ROOT / "shared" / "hocon-conformance",
        REPO_ROOT.parent / "shared" / "hocon-conformance",
    ]
    tried = [str(c) for c in candidates]
    return next((c for c in candidates if (c / "xx-hocon" / "manifest.json").is_file()), None), tried


SUITE, _TRIED = _locate_suite()
_SKIP_REASON = "HOCON conformance suite not found; tried: " + ", ".join(_TRIED)


def _missing(arity: int) -> Any:
    """The one, skipped, parameter set of a part whose suite folder was not found."""
    return pytest.param(*[None] * arity, id="suite-missing", marks=pytest.mark.skip(reason=_SKIP_REASON))


def _read(path: Path) -> str:
    """README section 2: bytes decoded as UTF-8, no newline translation, BOM kept."""
    return path.read_bytes().decode("utf-8")


def _load_json(path: Path) -> Any:
    return json.loads(_read(path))


# ----------------------------------------------------------------------------------------- JSON equality


def _kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int | float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list | tuple):
        return "array"
    if isinstance(v, Mapping):
        return "object"
    return f"non-JSON {type(v).__name__}"


def json_diff(actual: Any, expected: Any, where: str = "$") -> str | None:
    """README section 2 equality; None when equal, else where and how the values first differ."""
    kind, want = _kind(actual), _kind(expected)
    if kind != want:
        return f"{where}: got {kind} {actual!r}, expected {want} {expected!r}"
    if kind == "object":
        if set(actual) != set(expected):
            extra, missing = sorted(set(actual) - set(expected)), sorted(set(expected) - set(actual))
            return f"{where}: keys differ; unexpected {extra}, missing {missing}"
        diffs = (json_diff(actual[k], expected[k], f"{where}.{k}") for k in sorted(expected))
        return next((d for d in diffs if d), None)
    if kind == "array":
        if len(actual) != len(expected):
            return f"{where}: got {len(actual)} items {list(actual)!r}, expected {len(expected)} {expected!r}"
        diffs = (json_diff(a, e, f"{where}[{i}]") for i, (a, e) in enumerate(zip(actual, expected, strict=True)))
        return next((d for d in diffs if d), None)
    return None if actual == expected else f"{where}: got {actual!r}, expected {expected!r}"


def assert_json_equal(actual: Any, expected: Any) -> None:
    diff = json_diff(actual, expected)
    shown = f"actual:   {json.dumps(actual, default=repr)}\nexpected: {json.dumps(expected)}"
    assert diff is None, f"{diff}\n{shown}"


# ----------------------------------------------------------------------------- Part A: lightbend-equiv


def _equiv_params() -> Iterator[Any]:
    if SUITE is None:
        yield _missing(2)
        return
    for folder in sorted(p for p in (SUITE / "lightbend-equiv").iterdir() if p.is_dir()):
        for path in sorted(p for p in folder.iterdir() if p.is_file()):
            if path.suffix in (".conf", ".json") and path.name != "original.json":
                yield pytest.param(path, False, id=f"{folder.name}/{path.name}")
                if path.suffix == ".json":
                    yield pytest.param(path, True, id=f"{folder.name}/{path.name}[as-hocon]")


def test_a_suite_shape() -> None:
    """Upstream checks it saw exactly 5 directories and 15 non-original files (16 comparisons)."""
    if SUITE is None:
        pytest.skip(_SKIP_REASON)
    params = list(_equiv_params())
    assert len({p.values[0].parent for p in params}) == 5
    assert len({p.values[0] for p in params}) == 15
    assert len(params) == 16


@pytest.mark.parametrize(("path", "as_hocon"), list(_equiv_params()))
def test_a_equivalent_file(path: Path, as_hocon: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # `include file(...)` is relative to the working directory, as in Lightbend
    expected = resolve([parse_file(str(path.parent / "original.json"))]).value
    root = parse(_read(path), str(path)) if as_hocon else parse_file(str(path))
    assert_json_equal(resolve([root]).value, expected)


# ----------------------------------------------------------------------------- Part B: lightbend-parse

_VARIANT_NAMES = (
    *("as-is", "lead-space", "trail-space", "both-space"),
    *("no-spaces", "spaced-colons", "spaced-commas"),
)


def whitespace_variants(s: str, enabled: bool) -> list[tuple[str, str]]:
    """Upstream `whitespaceVariations`, in its order (duplicates kept), each with a short name."""
    if not enabled:
        return [("whitespace-matters", s)]
    texts = [s, " " + s, s + " ", " " + s + " "]
    texts += [s.replace(" ", ""), s.replace(":", " : "), s.replace(",", " , ")]
    named = list(zip(_VARIANT_NAMES, texts, strict=True))
    return [("em-space", s.replace(" ", "\u2003")), *named] if " " in s else named


def _snippet(s: str) -> str:
    text = json.dumps(s)
    return text if len(text) <= 40 else text[:36] + '..."'


def _parse_params(kind: str) -> Iterator[Any]:
    if SUITE is None:
        yield _missing(2)
        return
    for case in _load_json(SUITE / "lightbend-parse" / "cases.json")[kind]:
        for name, text in whitespace_variants(case["text"], case["whitespace_variants"]):
            yield pytest.param(text, case, id=f"{kind}-{case['index']:03d}-{name} {_snippet(case['text'])}")


def test_b_variant_counts() -> None:
    if SUITE is None:
        pytest.skip(_SKIP_REASON)
    cases = _load_json(SUITE / "lightbend-parse" / "cases.json")
    texts = {k: _load_json(SUITE / "lightbend-parse" / f"{k}.json") for k in ("valid", "invalid")}
    for kind, total in (("valid", 825), ("invalid", 623)):
        assert [c["text"] for c in cases[kind]] == texts[kind]
        for case in cases[kind]:
            variants = whitespace_variants(case["text"], case["whitespace_variants"])
            assert len(variants) == case["variant_count"], case
        assert sum(c["variant_count"] for c in cases[kind]) == total


def _parse_and_resolve(text: str) -> Node:
    """ConfParserTest: value-level parse; only an object root is resolved (against itself, no environment)."""
    node = parse_value(text)
    if isinstance(node, Obj):
        resolve([node])
    return node


@pytest.mark.parametrize(("text", "case"), list(_parse_params("valid")))
def test_b_valid_parses(text: str, case: dict[str, Any]) -> None:
    node = _parse_and_resolve(text)
    expected_root = Obj if case["root"] == "object" else Lst
    assert isinstance(node, expected_root), f"root is {node!r}, Lightbend parses a {case['root']}"


@pytest.mark.parametrize(("text", "case"), list(_parse_params("invalid")))
def test_b_invalid_raises(text: str, case: dict[str, Any]) -> None:
    try:
        node = _parse_and_resolve(text)
    except HoconError:
        return
    pytest.fail(f"no HoconError (Lightbend fails at {case['lightbend_fails_at']}); parsed {node!r}")


# ---------------------------------------------------------------------------- Part C: xx-hocon fixtures

_ENV_LIST_SKIP = (
    "env-list needs ${NAME[]} list substitution and an env map; cfgtool's resolver is hermetic and "
    "does not support it (README 5.4: optional, report as skipped)"
)


def _manifest() -> dict[str, Any]:
    assert SUITE is not None
    manifest: dict[str, Any] = _load_json(SUITE / "xx-hocon" / "manifest.json")
    return manifest


def _fixture_params() -> Iterator[Any]:
    if SUITE is None:
        yield _missing(1)
        return
    for fixture in _manifest()["fixtures"]:
        marks = [pytest.mark.skip(reason=_ENV_LIST_SKIP)] if fixture["category"] == "env-list" else []
        yield pytest.param(fixture, id=fixture["id"], marks=marks)


def _drop_path(value: Any, path: str) -> None:
    *parents, last = path.split(".")
    for key in parents:
        value = value.get(key) if isinstance(value, Mapping) else None
    if isinstance(value, dict):
        value.pop(last, None)


def _without_null_members(value: Any) -> Any:
    """Gson without serializeNulls: null object members vanish, nulls inside arrays stay."""
    if isinstance(value, Mapping):
        return {k: _without_null_members(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_null_members(v) for v in value]
    return value


@pytest.mark.parametrize("fixture", list(_fixture_params()))
def test_c_fixture(fixture: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # `include file(...)` is relative to the working directory, as in Lightbend
    assert SUITE is not None
    base = SUITE / "xx-hocon"
    path = base / fixture["input"]
    assert path.suffix == {"conf": ".conf", "properties": ".properties"}[fixture["syntax"]]
    try:
        root = parse_file(str(path))
        # README 5.1 step 3: a non-object root is an error (None here; the API promises an Obj anyway).
        result = resolve([root]).value if isinstance(root, Obj) else None
    except HoconError as err:
        if fixture["expect"] == "error":
            return
        pytest.fail(f"unexpected HoconError {err.code}: {err}")
    if fixture["expect"] == "error":
        if result is None:
            return
        lightbend = _read(base / fixture["expected"]).strip()
        got = json.dumps(result, default=repr)
        pytest.fail(f"no HoconError; resolved to {got}\nLightbend: {lightbend[:300]}")
    assert result is not None, f"parse_file returned a non-object root {root!r}"
    actual = json.loads(json.dumps(result))  # a deep copy we may edit
    for drop in fixture.get("drop_paths") or ():
        _drop_path(actual, drop)
    assert_json_equal(_without_null_members(actual), _load_json(base / fixture["expected"]))


# --------------------------------------------------------------------------- Part D: xx-hocon scenarios

_CATEGORY = {
    E_SYNTAX: "ParseError",
    E_UNRESOLVED_REF: "ResolveError",
    E_REF_CYCLE: "CycleError",
    E_TYPE: "TypeError",
}

Artifact: TypeAlias = "Node | Resolved"


class ScenarioFailure(Exception):
    """A Lightbend-style error raised by the scenario runner itself (e.g. NotResolved, Missing)."""

    def __init__(self, category: str, message: str) -> None:
        super().__init__(message)
        self.category = category


def _category(err: Exception) -> str:
    if isinstance(err, ScenarioFailure):
        return err.category
    assert isinstance(err, HoconError)
    return _CATEGORY.get(err.code, err.code)


def _as_node(artifact: Artifact) -> Node:
    """A config as input to the next step: an unresolved tree, or the (maybe partly) resolved root."""
    return artifact.root if isinstance(artifact, Resolved) else artifact


def _read_path(artifact: Artifact, path: str) -> Any:
    """Config.getValue: read `path` of a result; NotResolved when that fails and the config is unresolved."""
    if not isinstance(artifact, Resolved):
        artifact = _finish(artifact)
    try:
        return artifact.get(path)
    except HoconError as err:
        if not artifact.is_resolved:
            raise ScenarioFailure("NotResolved", str(err)) from err
        raise
    except KeyError as err:
        raise ScenarioFailure("Missing", f"no value at {path!r}") from err


def _extract(artifact: Artifact, path: str) -> Artifact:
    """Config.getConfig(path) on an unresolved tree (walking Obj fields) or on a resolved result."""
    if isinstance(artifact, Resolved):
        value = _read_path(artifact, path)
        if not isinstance(value, Mapping):
            raise ScenarioFailure("TypeError", f"{path} is {_kind(value)}, not an object")
        return from_plain(value, artifact.origin(path) or Origin("<resolved>", 1, 1))
    node = artifact
    for key in split_path(path):
        child = node.fields.get(key) if isinstance(node, Obj) else None
        if child is None:
            category = "Missing" if isinstance(node, Obj) else "TypeError"
            raise ScenarioFailure(category, f"no object at {path!r}")
        node = child
    if isinstance(node, Subst | Concat | Merge):
        raise ScenarioFailure("NotResolved", f"{path} holds an unresolved value {node!r}")
    if not isinstance(node, Obj):
        raise ScenarioFailure("TypeError", f"{path} is {node!r}, not an object")
    return node


def _run_step(step: dict[str, Any], names: dict[str, Artifact]) -> Artifact:
    op = step["op"]
    assert not step.get("useSystemEnvironment", False), "scenario wants the system environment"
    allow = bool(step.get("allowUnresolved", False))
    if op == "take":
        return names[step["source"]]
    if op == "extract":
        return _extract(names[step["this"]], step["path"])
    if op == "withFallback":
        return merge([_as_node(names[step["this"]]), _as_node(names[step["other"]])])
    if op == "resolve":
        return resolve([_as_node(names[step["this"]])], allow_unresolved=allow)
    if op == "resolveWith":
        source = _as_node(names[step["source"]])
        return resolve([_as_node(names[step["this"]])], extra=source, allow_unresolved=allow)
    raise AssertionError(f"unknown scenario op {op!r}")


def _materialise(sid: str, spec: dict[str, Any]) -> Artifact:
    if "parseString" in spec:
        options = spec.get("parseOptions") or {}
        node = parse(spec["parseString"], options.get("originDescription", sid))
        return resolve([node]) if options.get("resolveSubstitutions") else node
    return from_plain(spec["fromMap"] or {}, Origin(spec.get("originDescription", sid), 1, 1))


def _finish(artifact: Artifact) -> Resolved:
    """The final config as a `Resolved`; a result that no step resolved is resolved leniently to read it."""
    if isinstance(artifact, Resolved):
        return artifact
    return resolve([artifact], allow_unresolved=True)


def _run_scenario(scenario: dict[str, Any]) -> tuple[Artifact | None, tuple[int, Exception] | None]:
    """Run sources, then steps: (result, None), or (None, (failing step index or -1 for sources, error))."""
    names: dict[str, Artifact] = {}
    try:
        for sid, spec in scenario["sources"].items():
            names[sid] = _materialise(sid, spec)
    except (HoconError, ScenarioFailure) as err:
        return None, (-1, err)
    last: Artifact | None = None
    for index, step in enumerate(scenario["build"]):
        try:
            last = _run_step(step, names)
        except (HoconError, ScenarioFailure) as err:
            return None, (index, err)
        if "as" in step:
            names[step["as"]] = last
    return names.get("result", last), None


def _getter_value(result: Artifact, getter: dict[str, Any]) -> Any:
    """Lightbend getInt / getString / getList / getConfig on a path, with their coercions and failures."""
    value = _read_path(result, getter["path"])
    if value is None:
        raise ScenarioFailure("Null", f"{getter['path']} is null")
    if "expectInt" in getter:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise ScenarioFailure("TypeError", f"{getter['path']} is {_kind(value)} {value!r}, not an int")
        return int(value)
    if "expectString" in getter:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str | int | float):
            return str(value)
        raise ScenarioFailure("TypeError", f"{getter['path']} is {_kind(value)}, not a string")
    wanted = "array" if "expectArray" in getter else "object"
    if _kind(value) != wanted:
        raise ScenarioFailure("TypeError", f"{getter['path']} is {_kind(value)}, not an {wanted}")
    return value


def _check_getters(result: Artifact, getters: list[dict[str, Any]]) -> list[str]:
    problems = []
    for getter in getters:
        expect_key = next(k for k in getter if k.startswith("expect"))
        try:
            got: Any = _getter_value(result, getter)
        except (HoconError, ScenarioFailure) as err:
            got = f"ERROR: {_category(err)} ({err})"
            if expect_key == "expectError" and _category(err) == getter["expectError"]:
                continue
        else:
            if expect_key != "expectError" and json_diff(got, getter[expect_key]) is None:
                continue
        problems.append(f"getter {getter['path']}: got {got!r}, expected {expect_key}={getter[expect_key]!r}")
    return problems


def _scenario_params() -> Iterator[Any]:
    if SUITE is None:
        yield _missing(1)
        return
    for scenario in _manifest()["scenarios"]:
        yield pytest.param(scenario, id=scenario["id"].rsplit("/", 1)[-1])


def _expected_file(base: Path, scenario: dict[str, Any], suffix: str) -> Path | None:
    return next((base / f for f in scenario["expected_files"] if f.endswith(suffix)), None)


@pytest.mark.parametrize("scenario", list(_scenario_params()))
def test_d_scenario(scenario: dict[str, Any]) -> None:
    assert SUITE is not None
    base = SUITE / "xx-hocon"
    skip_file = _expected_file(base, scenario, "-expected.skip")
    if skip_file:
        pytest.skip(f"lightbendSkip: {_read(skip_file).strip()}")
    program = yaml.safe_load(_read(base / scenario["scenario"]))
    result, failure = _run_scenario(program)
    error_file = _expected_file(base, scenario, "-expected.error")
    if error_file:
        fields = dict(line.split(": ", 1) for line in _read(error_file).splitlines() if ": " in line)
        wanted = f"{fields['Category']} at step {fields['At']}"
        assert failure is not None, f"expected {wanted}, but the build succeeded"
        at, err = failure
        assert (_category(err), at) == (fields["Category"], int(fields["At"])), (
            f"got {_category(err)} at step {at}: {err}\nexpected {wanted} (Lightbend: {fields['Message']})"
        )
        contains = program["expect"].get("errorContains")
        assert contains is None or contains in str(err), f"message lacks {contains!r}: {err}"
        return
    if failure is not None:
        at, err = failure
        pytest.fail(f"build failed at step {at} with {_category(err)}: {err}")
    assert result is not None
    final = _finish(result)
    json_file = _expected_file(base, scenario, "-expected.json")
    problems = []
    if json_file:
        if not final.is_resolved:
            problems.append("is_resolved is False, expected True")
        diff = json_diff(final.value, _load_json(json_file))
        if diff:
            problems.append(f"JSON differs: {diff}\nactual: {json.dumps(final.value, default=repr)}")
    elif final.is_resolved:
        problems.append("is_resolved is True, expected an unresolved result")
    problems += _check_getters(final, program["expect"].get("getter") or [])
    assert not problems, "\n".join(problems)
