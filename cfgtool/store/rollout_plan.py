"""The `rollout` setting of `_CONFIG_STORE` (docs/store-format.md#the-rollout-plan): how a new version reaches the
fleet, step by step, judged by gates.

One checker reads both forms of a plan. The YAML form takes durations such as `10m`. The JSON form, which publish
records in a version's tag, has them in seconds. A tag is data: `RolloutPlan.from_json` gives None for anything
malformed, never an exception.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar
from urllib.parse import urlsplit

MAX_DURATION = 30 * 86400.0  # no step, bake or gate command may take longer than 30 days
DEFAULT_STEP_TIME = 600.0
DEFAULT_BAKE = 600.0
DEFAULT_COMMAND_TIMEOUT = 60.0
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smh]?)")
_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}
_FIELDS = {"steps", "step_time", "bake", "min_reports", "gates"}


class PlanError(ValueError):
    """A bad plan: `path` is where, inside the `rollout` mapping, and the message says what to do."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


@dataclass(frozen=True)
class ConsumersGate:
    """Passes while at most `max_failed` instances of the cohort failed their check on the version."""

    kind: ClassVar[str] = "consumers"
    max_failed: int = 0

    def to_json(self) -> dict[str, Any]:
        """The gate as the plan's JSON form writes it."""
        return {self.kind: {"max_failed": self.max_failed}}


@dataclass(frozen=True)
class PrometheusGate:
    """Passes while the instant `query` at the Prometheus server `url` is at most `max`."""

    kind: ClassVar[str] = "prometheus"
    url: str
    query: str
    max: float

    def to_json(self) -> dict[str, Any]:
        """The gate as the plan's JSON form writes it."""
        return {self.kind: {"url": self.url, "query": self.query, "max": self.max}}


@dataclass(frozen=True)
class CommandGate:
    """Runs `run`: exit 0 passes, 1 fails, anything else (or `timeout` seconds) is inconclusive."""

    kind: ClassVar[str] = "command"
    run: str
    timeout: float = DEFAULT_COMMAND_TIMEOUT

    def to_json(self) -> dict[str, Any]:
        """The gate as the plan's JSON form writes it."""
        return {self.kind: {"run": self.run, "timeout": self.timeout}}


Gate = ConsumersGate | PrometheusGate | CommandGate


@dataclass(frozen=True)
class RolloutPlan:
    """Percent steps (strictly increasing, ending at 100), the seconds at each step and of the bake at 100%, the
    reports a step needs from its cohort, and the gates that must all pass."""

    steps: tuple[int, ...]
    step_time: float = DEFAULT_STEP_TIME
    bake: float = DEFAULT_BAKE
    min_reports: int = 1
    gates: tuple[Gate, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON form that publish records in a version's tag metadata."""
        return {
            "steps": list(self.steps),
            "step_time": self.step_time,
            "bake": self.bake,
            "min_reports": self.min_reports,
            "gates": [gate.to_json() for gate in self.gates],
        }

    @classmethod
    def from_json(cls, data: object) -> RolloutPlan | None:
        """The plan of a JSON form read from a tag, or None when it is malformed in any way."""
        try:
            return plan(data)
        except PlanError:
            return None

    def describe(self) -> str:
        """One line for people: `5% -> 25% -> 100% (step time 10m, bake 10m)`."""
        steps = " -> ".join(f"{p}%" for p in self.steps)
        return f"{steps} (step time {format_duration(self.step_time)}, bake {format_duration(self.bake)})"


def plan(data: object) -> RolloutPlan:
    """The plan of the `rollout` mapping (YAML or JSON form); PlanError at the first problem."""
    spec = _mapping(data, (), _FIELDS, {"steps"})
    return RolloutPlan(
        steps=_steps(spec["steps"]),
        step_time=duration(spec.get("step_time", DEFAULT_STEP_TIME), ("step_time",)),
        bake=duration(spec.get("bake", DEFAULT_BAKE), ("bake",)),
        min_reports=_count(spec.get("min_reports", 1), ("min_reports",)),
        gates=tuple(_gate(g, ("gates", i)) for i, g in enumerate(_list(spec.get("gates", []), ("gates",)))),
    )


def duration(value: object, path: tuple[str | int, ...] = ()) -> float:
    """Seconds from `90`, `1.5`, `30s`, `10m` or `1h`; PlanError when it is none of these or over 30 days."""
    if isinstance(value, str) and (match := _DURATION.fullmatch(value)):
        seconds = float(match[1]) * _UNITS[match[2]]
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        seconds = float(value) if abs(value) <= MAX_DURATION else math.inf
    else:
        raise PlanError(path, f"{value!r} is not a duration: seconds, or a number with s, m or h (30s, 10m, 1h)")
    if not 0 <= seconds <= MAX_DURATION:
        raise PlanError(path, f"{value!r} is out of range: from 0 to 30 days ({int(MAX_DURATION / 3600)}h)")
    return seconds


def format_duration(seconds: float) -> str:
    """`10m`, `30s`, `1h`, `1h30m`, `2.5s`: the shortest spelling people read back."""
    if seconds != int(seconds):
        return f"{seconds:g}s"
    whole = int(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return "".join(parts) or "0s"


def _steps(value: object) -> tuple[int, ...]:
    """Percents from 1 to 100, strictly increasing, the last one 100."""
    steps = _list(value, ("steps",))
    if not steps:
        raise PlanError(("steps",), "must list at least one percent, e.g. [5, 25, 100]")
    for i, step in enumerate(steps):
        if not isinstance(step, int) or isinstance(step, bool) or not 1 <= step <= 100:
            raise PlanError(("steps", i), f"{step!r} is not a percent from 1 to 100")
        if i and step <= steps[i - 1]:
            raise PlanError(("steps", i), f"must increase strictly: {step} follows {steps[i - 1]}; e.g. [5, 25, 100]")
    if steps[-1] != 100:
        raise PlanError(("steps", len(steps) - 1), f"must end at 100 (every instance), not {steps[-1]}: add 100")
    return tuple(steps)


def _gate(value: object, path: tuple[str | int, ...]) -> Gate:
    """One gate: a mapping with exactly one kind, `consumers`, `prometheus` or `command`."""
    kinds = ("consumers", "prometheus", "command")
    if not isinstance(value, Mapping) or len(value) != 1:
        raise PlanError(path, f"a gate is a mapping with exactly one kind: {', '.join(kinds)}")
    ((kind, spec),) = value.items()
    where = (*path, str(kind))
    if kind == "consumers":
        fields = _mapping(spec, where, {"max_failed"}, {"max_failed"})
        return ConsumersGate(_count(fields["max_failed"], (*where, "max_failed")))
    if kind == "prometheus":
        fields = _mapping(spec, where, {"url", "query", "max"}, {"url", "query", "max"})
        return PrometheusGate(
            _url(fields["url"], (*where, "url")),
            _text(fields["query"], (*where, "query")),
            _number(fields["max"], (*where, "max")),
        )
    if kind == "command":
        fields = _mapping(spec, where, {"run", "timeout"}, {"run"})
        timeout = duration(fields.get("timeout", DEFAULT_COMMAND_TIMEOUT), (*where, "timeout"))
        if timeout <= 0:
            raise PlanError((*where, "timeout"), "must be more than 0 seconds, e.g. 60s")
        return CommandGate(_command(fields["run"], (*where, "run")), timeout)
    raise PlanError(where, f"unknown gate kind {kind!r}: use one of {', '.join(kinds)}")


def _mapping(value: object, path: tuple[str | int, ...], known: set[str], required: set[str]) -> Mapping[str, Any]:
    """A mapping with only `known` fields and every `required` one."""
    if not isinstance(value, Mapping):
        raise PlanError(path, "must be a mapping")
    extra = sorted(str(k) for k in value if k not in known)
    if extra:
        raise PlanError((*path, extra[0]), f"unknown field {extra[0]!r} (known: {', '.join(sorted(known))})")
    missing = sorted(required - set(value))
    if missing:
        raise PlanError(path, f"missing {', '.join(map(repr, missing))}")
    return value


def _list(value: object, path: tuple[str | int, ...]) -> list[Any]:
    if not isinstance(value, list):
        raise PlanError(path, "must be a list")
    return value


def _count(value: object, path: tuple[str | int, ...]) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise PlanError(path, f"{value!r} is not a whole number of 0 or more")


def _number(value: object, path: tuple[str | int, ...]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PlanError(path, f"{value!r} is not a finite number")
    return float(value)


def _text(value: object, path: tuple[str | int, ...]) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PlanError(path, "must be a non-empty string")
    return value


def _command(value: object, path: tuple[str | int, ...]) -> str:
    """A command line the gate can split as a shell splits words (no shell runs it): checked here, so that a quote
    left open is an error at compile rather than a gate that can never judge."""
    text = _text(value, path)
    try:
        shlex.split(text)
    except ValueError as exc:
        raise PlanError(path, f"{text!r} cannot be split as a shell splits words: {str(exc).lower()}") from None
    return text


def _url(value: object, path: tuple[str | int, ...]) -> str:
    """An http(s) URL with a host: the Prometheus server the gate asks."""
    text = _text(value, path)
    try:
        parts = urlsplit(text)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and text.isprintable() and " " not in text
        ok = ok and parts.port != -1  # reading the port raises ValueError for one that is not from 0 to 65535
    except ValueError:
        ok = False
    if not ok:
        raise PlanError(path, f"{text!r} is not an http:// or https:// URL, e.g. http://prometheus:9090")
    if parts.username is not None or parts.password is not None:
        raise PlanError(
            path,
            "holds credentials (user@ or user:password@), which every reader of the repository and its tags sees,"
            " and which the gate never sends: give the controller a Prometheus it reaches without them",
        )
    return text
