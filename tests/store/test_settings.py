from __future__ import annotations

import jsonschema
import pytest

from cfgtool.store.rollout_plan import CommandGate, ConsumersGate, PrometheusGate, RolloutPlan
from cfgtool.store.settings import (
    PolicySpec,
    Settings,
    Variable,
    assignments,
    parse_settings,
    settings_schema,
)

FILE = "store/_CONFIG_STORE"


def errors(text: str) -> list[tuple[int | None, int | None, str]]:
    _, diags = parse_settings(text, FILE)
    assert all(d.code == "E_SETTINGS" and d.file == FILE and d.severity == "error" for d in diags)
    return [(d.line, d.col, d.message) for d in diags]


def test_settings_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(settings_schema())


@pytest.mark.parametrize("text", ["", "\n", "# only a comment\n", "---\n"])
def test_parse_settings_empty_file_gives_defaults(text: str) -> None:
    settings, diags = parse_settings(text, FILE)
    assert diags == []
    assert settings == Settings()
    assert settings.tag_roots == ("/tags",)
    assert settings.version_tag_prefix == "config/v"
    assert settings.rollback_tag_prefix == "config/rolledback/v"
    assert settings.name is None and settings.schemas is None and settings.policies == ()


def test_parse_settings_full_example_of_design_4_1() -> None:
    text = """\
name: demo
tag_roots: [/tags, demo:/labels/]
version_tag_prefix: config/v
rollback_tag_prefix: config/rolledback/v
variables:
  local_cluster.name:
    values: [ltx1, lva1]
    default: ltx1
  region:
    values: [eu, us]
schemas: ../schemas
policies:
  - cfgtool.policies:FrozenPaths
  - class: policies.retention:MaxRetention
    config: {max_days: 90}
"""
    settings, diags = parse_settings(text, FILE)
    assert diags == []
    assert settings.name == "demo"
    assert settings.tag_roots == ("/tags", "/labels")
    assert settings.variables["local_cluster.name"] == Variable("local_cluster.name", ("ltx1", "lva1"), "ltx1")
    assert settings.variables["region"].default is None
    assert settings.schemas_dir("store") == "schemas"
    assert settings.schemas_dir("") == "../schemas"
    assert [p.class_path for p in settings.policies] == [
        "cfgtool.policies:FrozenPaths",
        "policies.retention:MaxRetention",
    ]
    assert settings.policies[0] == PolicySpec("cfgtool.policies:FrozenPaths")
    assert dict(settings.policies[0].config) == {}
    assert dict(settings.policies[1].config) == {"max_days": 90}


def test_parse_settings_unknown_setting_reports_E_SETTINGS_at_its_key() -> None:
    assert errors("name: demo\nnmae: demo\n") == [(2, 1, "unknown setting 'nmae' (did you mean 'name'?)")]


def test_parse_settings_wrong_type_reports_E_SETTINGS_naming_the_setting() -> None:
    assert errors("name: demo\ntag_roots: /tags\n") == [(2, 12, "setting 'tag_roots': must be a list, not a string")]


def test_parse_settings_invalid_setting_falls_back_to_its_default() -> None:
    settings, diags = parse_settings("name: demo\nversion_tag_prefix: 5\n", FILE)
    assert [(d.line, d.col, d.message) for d in diags] == [
        (2, 21, "setting 'version_tag_prefix': must be a string, not an integer")
    ]
    assert settings.name == "demo"
    assert settings.version_tag_prefix == "config/v"


def test_parse_settings_bad_tag_root_reports_E_SETTINGS() -> None:
    assert errors("tag_roots: [/tags, 'a b']\n") == [
        (1, 20, "setting 'tag_roots[1]': key 'a b' has an invalid segment 'a b'")
    ]


def test_parse_settings_variable_problems_point_into_the_variable() -> None:
    text = """\
variables:
  local_cluster.name:
    values: [ltx1, lva1]
    default: ltx9
  other:
    default: x
    colour: red
"""
    assert errors(text) == [
        (4, 14, "setting 'variables.\"local_cluster.name\".default': 'ltx9' is not one of ['ltx1', 'lva1']"),
        (6, 5, "setting 'variables.other': missing 'values'"),
        (7, 5, "unknown field 'variables.other.colour' (known: values, default)"),
    ]


def test_parse_settings_bad_policy_entries_are_reported_each() -> None:
    text = "policies:\n  - nocolon\n  - {class: 'a:B', extra: 1}\n  - 5\n"
    assert errors(text) == [
        (2, 5, "setting 'policies[0]': 'nocolon' must be 'module:Class', e.g. policies.retention:MaxRetention"),
        (3, 20, "unknown field 'policies[1].extra' (known: class, config)"),
        (4, 5, "setting 'policies[2]': must be 'module:Class' or {class: 'module:Class', config: {...}}"),
    ]


def test_parse_settings_invalid_yaml_reports_E_SETTINGS_with_position() -> None:
    assert errors("name: [demo\n") == [(2, 1, "not valid YAML: expected ',' or ']', but got '<stream end>'")]


def test_parse_settings_not_a_mapping() -> None:
    assert errors("- name\n") == [(1, 1, "must be a mapping of settings, not a list")]


def test_parse_settings_duplicate_setting_is_reported() -> None:
    assert errors("name: a\nname: b\n") == [(2, 1, "setting 'name' is set twice")]


def test_parse_settings_equal_tag_prefixes_are_rejected() -> None:
    assert errors("version_tag_prefix: v\nrollback_tag_prefix: v\n") == [
        (2, 22, "setting 'rollback_tag_prefix': must differ from version_tag_prefix")
    ]


def test_parse_settings_bad_name_explains_the_form() -> None:
    assert errors("name: 1demo\n") == [
        (1, 7, "setting 'name': '1demo' must be a URI scheme: a letter, then letters, digits, '+', '.' or '-'")
    ]


def test_assignments_cover_every_declared_value_with_given_ones_fixed() -> None:
    variables = {
        "a": Variable("a", ("1", "2")),
        "b": Variable("b", ("x", "y"), "x"),
    }
    assert assignments(variables, ["a", "b", "undeclared"]) == [
        {"a": "1", "b": "x"},
        {"a": "1", "b": "y"},
        {"a": "2", "b": "x"},
        {"a": "2", "b": "y"},
    ]
    assert assignments(variables, ["a", "b"], {"b": "y"}) == [{"b": "y", "a": "1"}, {"b": "y", "a": "2"}]
    assert assignments(variables, []) == [{}]


ROLLOUT = """\
rollout:
  steps: [5, 25, 100]
  step_time: 10m
  bake: 1h
  min_reports: 2
  gates:
    - consumers: {max_failed: 0}
    - prometheus: {url: 'http://prom:9090', query: 'sum(rate(app_errors_total[1m]))', max: 0.5}
    - command: {run: ./scripts/health.sh, timeout: 90}
"""


def test_parse_settings_rollout_plan_with_every_gate_kind() -> None:
    settings, diags = parse_settings(ROLLOUT, FILE)
    assert diags == []
    assert settings.rollout == RolloutPlan(
        steps=(5, 25, 100),
        step_time=600.0,
        bake=3600.0,
        min_reports=2,
        gates=(
            ConsumersGate(max_failed=0),
            PrometheusGate("http://prom:9090", "sum(rate(app_errors_total[1m]))", 0.5),
            CommandGate("./scripts/health.sh", 90.0),
        ),
    )


def test_parse_settings_rollout_defaults_and_no_plan() -> None:
    assert parse_settings("name: demo\n", FILE)[0].rollout is None
    settings, diags = parse_settings("rollout: {steps: [100]}\n", FILE)
    assert diags == []
    assert settings.rollout == RolloutPlan(steps=(100,), step_time=600.0, bake=600.0, min_reports=1, gates=())


@pytest.mark.parametrize(
    ("steps", "col", "message"),
    [
        ("[5, 5, 100]", 14, "setting 'rollout.steps[1]': must increase strictly: 5 follows 5; e.g. [5, 25, 100]"),
        ("[50, 25, 100]", 15, "setting 'rollout.steps[1]': must increase strictly: 25 follows 50; e.g. [5, 25, 100]"),
        ("[5, 50]", 14, "setting 'rollout.steps[1]': must end at 100 (every instance), not 50: add 100"),
        ("[0, 100]", 11, "setting 'rollout.steps[0]': 0 is not a percent from 1 to 100"),
        ("[5, 101]", 14, "setting 'rollout.steps[1]': 101 is not a percent from 1 to 100"),
        ("[]", 10, "setting 'rollout.steps': must list at least one percent, e.g. [5, 25, 100]"),
        ("[5, x, 100]", 14, "setting 'rollout.steps[1]': must be an integer, not a string"),
    ],
)
def test_parse_settings_bad_rollout_steps_point_at_the_step(steps: str, col: int, message: str) -> None:
    settings, diags = parse_settings(f"rollout:\n  steps: {steps}\n", FILE)
    assert [(d.code, d.line, d.col, d.message) for d in diags] == [("E_SETTINGS", 2, col, message)]
    assert settings.rollout is None


def test_parse_settings_bad_rollout_durations_and_counts() -> None:
    text = "rollout:\n  steps: [100]\n  step_time: 10d\n  bake: -1\n  min_reports: -2\n"
    duration = "is not a duration: seconds, or a number with s, m or h (30s, 10m, 1h)"
    assert errors(text) == [
        (3, 14, f"setting 'rollout.step_time': '10d' {duration}"),
        (4, 9, "setting 'rollout.bake': -1 is not a duration: it must be 0 or more"),
        (5, 16, "setting 'rollout.min_reports': -2 must be 0 or more"),
    ]
    assert errors("rollout:\n  steps: [100]\n  bake: 800h\n") == [
        (3, 9, "setting 'rollout.bake': '800h' is out of range: from 0 to 30 days (720h)")
    ]
    assert errors("rollout:\n  steps: [100]\n  gates:\n    - command: {run: x, timeout: 0s}\n") == [
        (4, 34, "setting 'rollout.gates[0].command.timeout': must be more than 0 seconds, e.g. 60s")
    ]


def test_parse_settings_refuses_a_gate_command_with_a_quote_left_open() -> None:
    assert errors('rollout:\n  steps: [100]\n  gates:\n    - command: {run: "./health.sh \'eu west"}\n') == [
        (
            4,
            22,
            "setting 'rollout.gates[0].command.run': \"./health.sh 'eu west\" cannot be split as a shell splits"
            " words: no closing quotation",
        )
    ]


def test_parse_settings_bad_rollout_gates_name_the_gate_and_the_fix() -> None:
    text = """\
rollout:
  steps: [100]
  stepz: 1
  gates:
    - promethus: {url: 'http://p:9090'}
    - {}
    - consumers: {max_failed: 1}
      command: {run: x}
    - prometheus: {url: 'ftp://p', query: q, max: 1, min: 0}
    - command: {}
    - consumers: {max_failed: -1}
"""
    kinds = "a gate has exactly one kind: consumers, prometheus or command"
    assert errors(text) == [
        (3, 3, "unknown field 'rollout.stepz' (did you mean 'steps'?)"),
        (5, 7, "unknown gate kind 'rollout.gates[0].promethus' (did you mean 'prometheus'?)"),
        (6, 7, f"setting 'rollout.gates[1]': {kinds}"),
        (7, 7, f"setting 'rollout.gates[2]': {kinds}; write each as its own list item"),
        (
            9,
            25,
            "setting 'rollout.gates[3].prometheus.url': 'ftp://p' is not an http:// or https:// URL, "
            "e.g. http://prometheus:9090",
        ),
        (9, 54, "unknown field 'rollout.gates[3].prometheus.min' (known: url, query, max)"),
        (10, 16, "setting 'rollout.gates[4].command': missing 'run'"),
        (11, 31, "setting 'rollout.gates[5].consumers.max_failed': -1 must be 0 or more"),
    ]
