from __future__ import annotations

import json
from typing import Any

import pytest

from cfgtool.store.rollout_plan import (
    CommandGate,
    ConsumersGate,
    PlanError,
    PrometheusGate,
    RolloutPlan,
    duration,
    format_duration,
)

PLAN = RolloutPlan(
    steps=(5, 25, 100),
    step_time=600.0,
    bake=0.0,
    min_reports=2,
    gates=(
        ConsumersGate(0),
        PrometheusGate("https://prom:9090", "sum(up)", 0.5),
        CommandGate("./health.sh", 60.0),
    ),
)


def test_plan_json_form_round_trips_through_json_text() -> None:
    form = PLAN.to_json()
    assert form == {
        "steps": [5, 25, 100],
        "step_time": 600.0,
        "bake": 0.0,
        "min_reports": 2,
        "gates": [
            {"consumers": {"max_failed": 0}},
            {"prometheus": {"url": "https://prom:9090", "query": "sum(up)", "max": 0.5}},
            {"command": {"run": "./health.sh", "timeout": 60.0}},
        ],
    }
    assert RolloutPlan.from_json(json.loads(json.dumps(form))) == PLAN


def _with(**changes: Any) -> dict[str, Any]:
    return {**PLAN.to_json(), **changes}


@pytest.mark.parametrize(
    "data",
    [
        None,
        [],
        "steps",
        {},
        _with(steps=[5, 25]),
        _with(steps=[25, 5, 100]),
        _with(steps=[0, 100]),
        _with(steps=[True, 100]),
        _with(steps="100"),
        _with(step_time=-1),
        _with(step_time=float("nan")),
        _with(bake=10**400),
        _with(bake=True),
        _with(min_reports=-1),
        _with(min_reports=1.5),
        _with(gates={"consumers": {"max_failed": 0}}),
        _with(gates=[{"consumers": {"max_failed": 0}, "command": {"run": "x"}}]),
        _with(gates=[{"canary": {}}]),
        _with(gates=[{"consumers": {}}]),
        _with(gates=[{"consumers": {"max_failed": 0, "extra": 1}}]),
        _with(gates=[{"prometheus": {"url": "file:///etc/passwd", "query": "q", "max": 1}}]),
        _with(gates=[{"prometheus": {"url": "http://p", "query": "q", "max": float("inf")}}]),
        _with(gates=[{"prometheus": {"url": "http://p:99999", "query": "q", "max": 1}}]),  # no such port
        _with(gates=[{"prometheus": {"url": "https://user:secret@p", "query": "q", "max": 1}}]),  # credentials
        _with(gates=[{"prometheus": {"url": "http://p:abc", "query": "q", "max": 1}}]),  # a port that is not a number
        _with(gates=[{"prometheus": {"url": "http://p\x00q:1", "query": "q", "max": 1}}]),  # a control character
        _with(gates=[{"command": {"run": "", "timeout": 1}}]),
        _with(gates=[{"command": {"run": "x", "timeout": 0}}]),
        _with(gates=[{"command": {"run": "./health.sh 'eu west", "timeout": 1}}]),
        _with(extra=1),
    ],
)
def test_from_json_gives_none_for_anything_malformed(data: object) -> None:
    assert RolloutPlan.from_json(data) is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [(90, 90.0), (1.5, 1.5), ("90", 90.0), ("30s", 30.0), ("10m", 600.0), ("1h", 3600.0), ("0.5m", 30.0)],
)
def test_duration_reads_seconds_minutes_and_hours(text: object, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["-5s", "1d", "1 h", "h", "", "721h", 10**400])
def test_duration_refuses_what_it_cannot_read(text: object) -> None:
    with pytest.raises(PlanError):
        duration(text)


def test_describe_spells_steps_and_durations_for_people() -> None:
    assert PLAN.describe() == "5% -> 25% -> 100% (step time 10m, bake 0s)"
    assert [format_duration(s) for s in (30, 600, 3600, 5400, 2.5)] == ["30s", "10m", "1h", "1h30m", "2.5s"]
