"""The gates of a rollout step (docs/rollout.md "Gates"): each judges the version's health as pass, fail or
inconclusive, and the step's verdict combines them.

- `consumers`: the consumers reports of the servers. Among the cohort's instances that read or applied the version,
  it counts those whose last check of it failed or that reported errors on it.
- `prometheus`: an instant query's value against a maximum.
- `command`: a command of the config repository (exit 0 pass, 1 fail, anything else inconclusive).

A gate never passes on missing evidence. An unreachable server or Prometheus, a query without data, a command that
hangs or is not found: each is inconclusive, and the step holds.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeGuard
from urllib.parse import quote

from cfgtool.client.http import INSTANCE, Connection, consumers
from cfgtool.errors import CfgtoolError
from cfgtool.store.rollout_plan import DEFAULT_COMMAND_TIMEOUT, ConsumersGate, Gate, PrometheusGate

Result = Literal["pass", "fail", "inconclusive"]

PROMETHEUS_TIMEOUT = 5.0  # seconds an instant query may take
PROMETHEUS_BYTES = 16 * 2**20  # the largest query answer read
DETAIL_LIMIT = 300  # characters of a command's last output line kept as its detail
SHOWN_IDS = 10  # failed instance ids a consumers gate names
_OUTPUT_TAIL = 65536  # bytes of a command's output read back to find its last line


@dataclass(frozen=True)
class GateResult:
    """One gate's judgement: `gate` (its kind), `result` and a one-line `detail` saying why."""

    gate: str
    result: Result
    detail: str

    def to_json(self) -> dict[str, str]:
        """`{"gate", "result", "detail"}`: a rollout tag's evidence and `rollout status`'s gates."""
        return {"gate": self.gate, "result": self.result, "detail": self.detail}


@dataclass(frozen=True)
class ServerReport:
    """One server's consumers report (the JSON of `GET /v1/{store}/consumers`), or why it could not be read."""

    server: str
    listing: Mapping[str, Any] | None
    error: str | None = None

    @property
    def problem(self) -> str:
        """Why the report could not be read, naming the server once (most client errors already name it)."""
        said = self.error or "no report"
        return said if self.server.rstrip("/") in said else f"{self.server}: {said}"


@dataclass(frozen=True)
class Step:
    """What the gates of one step judge: version `version` of store `store` (its name as URLs spell it) at `percent`,
    the cohort (`admitted(instance_id)`), the servers' consumers reports, and the config repository's working
    directory, where a command gate runs."""

    store: str
    version: int
    percent: int
    admitted: Callable[[str], bool]
    min_reports: int = 1
    reports: Sequence[ServerReport] = ()
    workdir: Path = Path(".")


def read_reports(
    servers: Iterable[str], store: str, *, token: str | None = None, timeout: float = 10.0
) -> list[ServerReport]:
    """The consumers report of `store` from each server; a server that cannot be read says why instead."""
    found = []
    for server in servers:
        try:
            found.append(ServerReport(server, consumers(server, store, token=token, timeout=timeout)))
        except CfgtoolError as exc:
            found.append(ServerReport(server, None, exc.message))
    return found


def evaluate(gates: Iterable[Gate], step: Step) -> list[GateResult]:
    """Each gate of a plan judged on `step`, in the plan's order."""
    return [_judge(gate, step) for gate in gates]


def verdict(results: Iterable[GateResult]) -> Result:
    """A step's verdict: fail if any gate failed, else inconclusive if any was, else pass (also for no gates)."""
    found = {r.result for r in results}
    return "fail" if "fail" in found else "inconclusive" if "inconclusive" in found else "pass"


def _judge(gate: Gate, step: Step) -> GateResult:
    if isinstance(gate, ConsumersGate):
        return consumers_gate(step.reports, step.version, step.admitted, step.min_reports, gate.max_failed)
    if isinstance(gate, PrometheusGate):
        return prometheus_gate(gate.url, gate.query, gate.max)
    return command_gate(gate.run, step, gate.timeout)


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# -- consumers ------------------------------------------------------------------------------------------------------


@dataclass
class _Seen:
    """One instance as the servers together know it: the newest contact's version, the newest check, the errors
    reported on each version (summed: each report reaches one server)."""

    contact: str = ""
    version: Any = None
    check_at: str = ""
    check: Mapping[str, Any] | None = None
    errors: int = 0


def consumers_gate(
    reports: Sequence[ServerReport],
    version: int,
    admitted: Callable[[str], bool],
    min_reports: int,
    max_failed: int,
) -> GateResult:
    """The `consumers` gate: of the cohort's instances that read or applied `version` (or checked or reported errors
    on it), how many failed its check or reported errors on it, summed over the servers' reports. More than
    `max_failed` fails, even when a server is missing: those failures are real. Else a missing server, or fewer
    than `min_reports` instances, is inconclusive."""
    seen = _merged(reports, version, admitted)
    on = sorted(i for i, s in seen.items() if _on(s, version))
    failed = [i for i in on if _failed(seen[i], version)]
    errors = any(seen[i].errors for i in failed)
    what = f"failed --check{' or reported errors' if errors else ''} on version {version}"
    summary = f"{len(failed)} of {len(on)} instances {what}"
    if len(failed) > max_failed:
        more = f" and {len(failed) - SHOWN_IDS} more" if len(failed) > SHOWN_IDS else ""
        shown = ", ".join(failed[:SHOWN_IDS]) + more
        return GateResult("consumers", "fail", f"{summary}: {shown}")
    missing = [r for r in reports if r.listing is None]
    if missing:
        said = "; ".join(r.problem for r in missing)
        return GateResult("consumers", "inconclusive", f"{summary}, but a server cannot be read ({said})")
    if not reports:
        return GateResult("consumers", "inconclusive", "no server to read consumers reports from")
    if len(on) < min_reports:
        return GateResult(
            "consumers",
            "inconclusive",
            f"{len(on)} reports from the cohort; {min_reports} needed (min_reports): {summary}",
        )
    return GateResult("consumers", "pass", summary)


@dataclass(frozen=True)
class Cohort:
    """The cohort as the servers' reports together know it: its instances, those that read or applied the version
    (or checked it or reported errors on it), and those that failed on it, counted as the `consumers` gate counts."""

    instances: int
    applied: int
    failed: int


def cohort(reports: Sequence[ServerReport], version: int, admitted: Callable[[str], bool]) -> Cohort:
    """The cohort's counts over every readable report (`rollout status`)."""
    seen = _merged(reports, version, admitted)
    on = [s for s in seen.values() if _on(s, version)]
    return Cohort(len(seen), len(on), sum(1 for s in on if _failed(s, version)))


def _merged(reports: Sequence[ServerReport], version: int, admitted: Callable[[str], bool]) -> dict[str, _Seen]:
    """The cohort's instances over every readable report, each id once. An id no server accepts from a client (a
    compromised server's) is not counted: ids end up in a rollback's reason."""
    seen: dict[str, _Seen] = {}
    for report in reports:
        listed = report.listing.get("instances") if report.listing is not None else None
        for item in listed if isinstance(listed, list) else ():
            ident = item.get("id") if isinstance(item, dict) else None
            if not isinstance(ident, str) or not INSTANCE.fullmatch(ident) or not admitted(ident):
                continue
            entry = seen.setdefault(ident, _Seen())
            contact = str(item.get("last_contact") or "")
            if contact >= entry.contact:
                entry.contact, entry.version = contact, item.get("version")
            check = item.get("last_check")
            if isinstance(check, dict) and str(check.get("at") or "") >= entry.check_at:
                entry.check_at, entry.check = str(check.get("at") or ""), check
            errors = item.get("errors")
            count = errors.get(str(version)) if isinstance(errors, dict) else None
            entry.errors += count if _count(count) else 0
    return seen


def _on(seen: _Seen, version: int) -> bool:
    checked = seen.check is not None and seen.check.get("version") == version
    return seen.version == version or checked or seen.errors > 0


def _failed(seen: _Seen, version: int) -> bool:
    check = seen.check
    return seen.errors > 0 or (check is not None and check.get("version") == version and check.get("ok") is False)


# -- prometheus -----------------------------------------------------------------------------------------------------


def prometheus_gate(url: str, query: str, top: float, timeout: float = PROMETHEUS_TIMEOUT) -> GateResult:
    """The `prometheus` gate: the value of instant query `query` at `url` (a vector's samples summed) fails above
    `top`. No data, NaN, an error answer or no answer is inconclusive."""
    try:
        value = _instant(url, query, timeout)
    except _NoValue as exc:
        return GateResult("prometheus", "inconclusive", f"{query}: {exc}")
    if math.isnan(value):
        return GateResult("prometheus", "inconclusive", f"{query} = NaN")
    if value > top:
        return GateResult("prometheus", "fail", f"{query} = {value:.6g} > {top:g}")
    return GateResult("prometheus", "pass", f"{query} = {value:.6g} <= {top:g}")


class _NoValue(Exception):
    """An instant query that gave no number: why."""


def _instant(url: str, query: str, timeout: float) -> float:
    """The value of `query` now: a scalar, or the sum of a vector's samples."""
    try:
        connection = Connection(url.rstrip("/"), timeout, PROMETHEUS_BYTES)
    except CfgtoolError as exc:
        raise _NoValue(exc.message) from None
    try:
        status, _, data = connection.get(f"/api/v1/query?query={quote(query, safe='')}", {"Accept": "application/json"})
    except CfgtoolError as exc:
        raise _NoValue(f"Prometheus cannot be reached: {exc.message}") from None
    finally:
        connection.close()
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        raise _NoValue(f"Prometheus answered HTTP {status} without JSON") from None
    if not isinstance(body, dict) or body.get("status") != "success":
        said = body.get("error") if isinstance(body, dict) else None
        raise _NoValue(f"Prometheus answered HTTP {status}: {str(said or 'not a success')[:200]}")
    found = body.get("data")
    kind, result = (found.get("resultType"), found.get("result")) if isinstance(found, dict) else (None, None)
    if kind == "scalar" and isinstance(result, list) and len(result) == 2:
        return _sample(result[1])
    if kind == "vector" and isinstance(result, list):
        if not result:
            raise _NoValue("no data")
        samples = [_sample(_pair(s.get("value") if isinstance(s, dict) else None)) for s in result]
        try:
            return math.fsum(samples)
        except (ValueError, OverflowError):  # +Inf and -Inf (NaN), or a sum past the largest float (+Inf)
            return sum(samples)
    raise _NoValue(f"the answer is a {kind}, not a scalar or an instant vector")


def _pair(value: Any) -> Any:
    """The sample of a vector entry's `[time, "sample"]` pair (None when it is not one)."""
    return value[1] if isinstance(value, list) and len(value) == 2 else None


def _sample(text: Any) -> float:
    try:
        return float(text)
    except (TypeError, ValueError):
        raise _NoValue(f"not a sample value: {str(text)[:40]}") from None


# -- command --------------------------------------------------------------------------------------------------------


def command_gate(run: str, step: Step, timeout: float = DEFAULT_COMMAND_TIMEOUT) -> GateResult:
    """The `command` gate: `run`, split as a shell would but run without one, in the config repository's working
    directory, with `CFGTOOL_ROLLOUT_VERSION`, `CFGTOOL_ROLLOUT_PERCENT` and `CFGTOOL_ROLLOUT_STORE` set. Exit 0
    passes, 1 fails; any other status, a timeout, or a command that cannot start is inconclusive. The detail is
    the last line of its output."""
    try:
        argv = shlex.split(run)
    except ValueError as exc:
        return GateResult("command", "inconclusive", f"{run[:100]}: cannot split it ({exc})")
    if not argv:
        return GateResult("command", "inconclusive", "an empty command")
    env = {
        **os.environ,
        "CFGTOOL_ROLLOUT_VERSION": str(step.version),
        "CFGTOOL_ROLLOUT_PERCENT": str(step.percent),
        "CFGTOOL_ROLLOUT_STORE": step.store,
    }
    with tempfile.TemporaryFile() as output:
        try:
            proc = subprocess.Popen(
                argv, cwd=step.workdir, env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            return GateResult("command", "inconclusive", f"{argv[0]}: cannot run it ({exc.strerror or exc})")
        try:
            status = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return GateResult("command", "inconclusive", f"{argv[0]}: no exit within {timeout:g} s (killed)")
        last = _last_line(output)
    said = last or "no output"
    if status == 0:
        return GateResult("command", "pass", said)
    if status == 1:
        return GateResult("command", "fail", said)
    how = f"killed by signal {-status}" if status < 0 else f"exit {status}"
    return GateResult("command", "inconclusive", f"{how}: {said}"[:DETAIL_LIMIT])


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill a timed-out command and whatever it started (its own session)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


def _last_line(output: Any) -> str:
    """The last non-blank line of a command's output file, at most DETAIL_LIMIT characters."""
    size = output.seek(0, os.SEEK_END)
    output.seek(max(0, size - _OUTPUT_TAIL))
    lines = [line.strip() for line in output.read().decode("utf-8", "replace").splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    return "".join(c if c.isprintable() else "?" for c in last)[:DETAIL_LIMIT]


__all__ = [
    "Cohort",
    "GateResult",
    "Result",
    "ServerReport",
    "Step",
    "cohort",
    "command_gate",
    "consumers_gate",
    "evaluate",
    "prometheus_gate",
    "read_reports",
    "verdict",
]
