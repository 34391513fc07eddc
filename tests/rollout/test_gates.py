"""The gates of a rollout step against real parts: the consumers reports of real `cfgtool serve` processes, a real
Prometheus scraping metrics this test controls, and real commands (docs/rollout.md "Gates")."""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from cfgtool import HttpConfigClient
from cfgtool.client.http import Check, report_applied, report_error
from cfgtool.rollout.gates import (
    GateResult,
    Step,
    command_gate,
    consumers_gate,
    evaluate,
    prometheus_gate,
    read_reports,
    verdict,
)
from cfgtool.store.rollout_plan import Gate, RolloutPlan
from tests.conftest import GitRepo
from tests.rollout.conftest import PrometheusServer, needs_prometheus
from tests.serve.conftest import StartServer


def cohort(*hosts: str) -> Callable[[str], bool]:
    """A cohort of the instances whose id, up to the first `:`, is one of `hosts`."""
    return lambda instance: instance.partition(":")[0] in hosts


def gates(*specs: dict[str, Any]) -> tuple[Gate, ...]:
    """The gates of a plan's JSON form, as a version's tag records them."""
    plan = RolloutPlan.from_json({"steps": [100], "gates": list(specs)})
    assert plan is not None
    return plan.gates


def closed_url() -> str:
    """The URL of a loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


def test_a_gate_result_is_json_and_the_verdict_takes_the_worst() -> None:
    ok, unsure, bad = GateResult("g", "pass", "d"), GateResult("g", "inconclusive", "d"), GateResult("g", "fail", "d")
    assert bad.to_json() == {"gate": "g", "result": "fail", "detail": "d"}
    assert verdict([ok, unsure, bad]) == "fail"
    assert verdict([ok, unsure]) == "inconclusive"
    assert verdict([ok, ok]) == verdict([]) == "pass"


# -- consumers ------------------------------------------------------------------------------------------------------


def test_consumers_gate_sums_the_reports_of_two_servers(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    one, two = start_server(small.root), start_server(small.root)
    # web-1 reads version 1 through one server (a plain client: it read it, it reported nothing)
    assert HttpConfigClient(one.url, "small", instance="web-1:10", cache_dir=tmp_path / "c").get("/data/a")
    report_applied(one.url, "small", 1, Check(1, True), instance="web-2:20")
    report_applied(one.url, "small", None, Check(1, False, "exit 1"), instance="web-3:30")
    report_applied(two.url, "small", None, Check(1, False, "exit 1"), instance="web-9:90")
    report_applied(two.url, "small", None, Check(1, False, "exit 1"), instance="out-1:1")  # not in the cohort
    # web-4 failed on one server, then passed on the other: the newest report wins, and it counts once
    report_applied(one.url, "small", None, Check(1, False, "exit 1"), instance="web-4:40")
    time.sleep(1.1)  # reports are dated to the second
    report_applied(two.url, "small", 1, Check(1, True), instance="web-4:40")
    reports = read_reports([one.url, two.url], "small")
    assert [r.error for r in reports] == [None, None]
    admitted = cohort("web-1", "web-2", "web-3", "web-4", "web-9")

    failed = consumers_gate(reports, 1, admitted, min_reports=2, max_failed=1)
    assert failed == GateResult("consumers", "fail", "2 of 5 instances failed --check on version 1: web-3:30, web-9:90")
    passed = consumers_gate(reports, 1, admitted, min_reports=2, max_failed=2)
    assert passed == GateResult("consumers", "pass", "2 of 5 instances failed --check on version 1")
    # nobody is on version 2 yet: too few reports, the step holds
    none = consumers_gate(reports, 2, admitted, min_reports=1, max_failed=0)
    assert none.result == "inconclusive"
    assert none.detail.startswith("0 reports from the cohort; 1 needed (min_reports): 0 of 0 instances")
    # the same through evaluate, as a plan names the gate
    step = Step("small", 1, 25, admitted, min_reports=2, reports=reports)
    assert evaluate(gates({"consumers": {"max_failed": 1}}), step) == [failed]


def test_consumers_gate_never_passes_without_every_server(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(small.root)
    for n in range(12):
        report_applied(server.url, "small", None, Check(1, False, "exit 1"), instance=f"web-{n:02}:1")
    report_applied(server.url, "small", 1, Check(1, True), instance="api-1:1")
    dead = closed_url()
    reports = read_reports([server.url, dead], "small")
    assert reports[1].listing is None and reports[1].error

    good = consumers_gate(reports, 1, cohort("api-1"), min_reports=1, max_failed=0)
    assert good.result == "inconclusive"
    assert good.detail.startswith("0 of 1 instances failed --check on version 1, but a server cannot be read")
    assert good.detail.count(dead) == 1  # the client's error names the server already: said once
    # failures seen on the servers that answered are failures all the same: at most 10 ids are named
    bad = consumers_gate(reports, 1, cohort(*(f"web-{n:02}" for n in range(12))), min_reports=1, max_failed=0)
    assert bad.result == "fail"
    assert bad.detail.endswith(": " + ", ".join(f"web-{n:02}:1" for n in range(10)) + " and 2 more")
    assert consumers_gate(read_reports([dead], "small"), 1, cohort("api-1"), 0, 0).result == "inconclusive"
    assert consumers_gate([], 1, cohort("api-1"), 0, 0).result == "inconclusive"


def test_consumers_gate_fails_on_errors_an_application_reported(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    one, two = start_server(small.root), start_server(small.root)
    client = HttpConfigClient(one.url, "small", instance="web-1:10", cache_dir=tmp_path / "c")
    assert client.get("/data/a")
    report_applied(one.url, "small", 1, Check(1, True), instance="web-2:20")
    assert consumers_gate(read_reports([one.url], "small"), 1, cohort("web-1", "web-2"), 2, 0).result == "pass"
    client.report_error("a value the code could not use")
    report_error(two.url, "small", 1, "timeouts since the change", instance="web-2:20")
    report_error(two.url, "small", 2, "an error on another version", instance="web-3:30")
    found = consumers_gate(read_reports([one.url, two.url], "small"), 1, cohort("web-1", "web-2", "web-3"), 2, 1)
    assert found == GateResult(
        "consumers", "fail", "2 of 2 instances failed --check or reported errors on version 1: web-1:10, web-2:20"
    )


def test_consumers_gate_names_only_instance_ids_a_server_could_have_heard(misbehaving: Any) -> None:
    """A compromised server's answer names instances no client can be: long ids, or ids with control characters.
    The failure detail becomes a rollback's reason, kept in a tag for good: it names only ids a server accepts."""
    failed = {"version": 1, "last_check": {"version": 1, "ok": False, "at": "2026-01-01T00:00:00+00:00"}}
    odd = ["web-" + "x" * 100_000, "web-\x1b[2J", "web-\n2", ""]
    listing = {"instances": [{**failed, "id": i} for i in [*odd, "web-1:1"]], "by_version": {}}
    body = json.dumps(listing).encode()

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        handler.wfile.write(head.encode() + body)

    server = misbehaving(answer)
    found = consumers_gate(read_reports([server.url], "small"), 1, lambda _: True, 1, 0)
    assert found == GateResult("consumers", "fail", "1 of 1 instances failed --check on version 1: web-1:1")


def test_a_servers_error_message_cannot_forge_a_controller_log_line(misbehaving: Any) -> None:
    """A server's error message becomes part of a gate's detail, which the controller logs. A compromised server
    wrote a second log line of its own (and escape sequences, and megabytes) into the controller's log."""
    forged = "down\ncfgtool rollout: INFO version 7 at 100%: done: config/rollout/v7/9\x1b[2J" + "x" * 2**20
    body = json.dumps({"error": "E_INTERNAL", "message": forged}).encode()

    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        head = f"HTTP/1.1 503 Unavailable\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        handler.wfile.write(head.encode() + body)

    server = misbehaving(answer)
    found = consumers_gate(read_reports([server.url], "small"), 1, lambda _: True, 1, 0)
    assert found.result == "inconclusive" and found.detail.isprintable() and len(found.detail) < 1000
    assert "down cfgtool rollout: INFO" in found.detail


# -- prometheus -----------------------------------------------------------------------------------------------------


@needs_prometheus
def test_prometheus_gate_sums_a_vector_against_its_maximum(prometheus: PrometheusServer) -> None:
    prometheus.metrics.set('gate_errors{pod="a"}', 0.5)
    prometheus.metrics.set('gate_errors{pod="b"}', 0.33)
    prometheus.wait_for("gate_errors", 0.83)
    query = "sum(gate_errors)"
    assert prometheus_gate(prometheus.url, query, 0.5) == GateResult("prometheus", "fail", f"{query} = 0.83 > 0.5")
    assert prometheus_gate(prometheus.url, "gate_errors", 1) == GateResult(
        "prometheus", "pass", "gate_errors = 0.83 <= 1"
    )
    assert prometheus_gate(prometheus.url, "scalar(sum(gate_errors)) * 2", 1).result == "fail"  # a scalar
    step = Step("small", 1, 5, cohort())
    plan = [{"prometheus": {"url": prometheus.url + "/", "query": query, "max": 1}}]
    assert [r.result for r in evaluate(gates(*plan), step)] == ["pass"]


@needs_prometheus
def test_prometheus_gate_is_inconclusive_without_a_number(prometheus: PrometheusServer) -> None:
    prometheus.metrics.set("gate_nan", float("nan"))
    prometheus.wait_for("gate_nan", float("nan"))
    assert prometheus_gate(prometheus.url, "gate_nan", 1) == GateResult("prometheus", "inconclusive", "gate_nan = NaN")
    assert prometheus_gate(prometheus.url, "gate_never_exposed", 1) == GateResult(
        "prometheus", "inconclusive", "gate_never_exposed: no data"
    )
    broken = prometheus_gate(prometheus.url, "sum(", 1)
    assert broken.result == "inconclusive" and broken.detail.startswith("sum(: Prometheus answered HTTP 400: ")
    dead = prometheus_gate(closed_url(), "up", 1)
    assert dead.result == "inconclusive" and "Prometheus cannot be reached" in dead.detail
    assert prometheus_gate(prometheus.url, "up[1m]", 1).result == "inconclusive"


@pytest.mark.parametrize("url", ["http://p:99999", "http://p:abc", "http://p\x00q:1", f"http://{'b' * 300}.com"])
def test_prometheus_gate_is_inconclusive_on_a_url_it_cannot_ask(url: str) -> None:
    """A plan's URL that connecting cannot use (a tag's plan is data, and a hostname past DNS's label length passes
    every parser): inconclusive, never a crash of the controller."""
    found = prometheus_gate(url, "up", 0.5, timeout=2)
    assert found.result == "inconclusive" and "up: " in found.detail


def vector(*samples: object) -> bytes:
    """An instant vector's answer with these `value` fields."""
    result = [{"metric": {}, "value": s} for s in samples]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


@pytest.mark.parametrize(
    ("body", "result"),
    [
        (b"[" * 200_000 + b"]" * 200_000, "inconclusive"),  # JSON nested past the parser's recursion
        (vector(5), "inconclusive"),  # a value that is not a [time, "sample"] pair
        (vector([]), "inconclusive"),
        (vector([1, "0.1"], [1]), "inconclusive"),
        (vector([1, "+Inf"], [1, "-Inf"]), "inconclusive"),  # NaN
        (vector([1, "1e308"], [1, "1e308"]), "fail"),  # +Inf
    ],
    ids=["deep", "number", "empty pair", "short pair", "inf minus inf", "overflow"],
)
def test_prometheus_gate_judges_a_hostile_answer_without_a_crash(misbehaving: Any, body: bytes, result: str) -> None:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        handler.wfile.write(head.encode() + body)

    server = misbehaving(answer)
    assert prometheus_gate(server.url, "up", 0.5).result == result


# -- command --------------------------------------------------------------------------------------------------------


def script(root: Path, name: str, body: str) -> Path:
    path = root / "scripts" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
    path.chmod(0o755)
    return path


def test_command_gate_judges_by_exit_status(tmp_path: Path) -> None:
    script(tmp_path, "health.sh", 'echo "checking"\necho "v$CFGTOOL_ROLLOUT_VERSION at $CFGTOOL_ROLLOUT_PERCENT% of'
           ' $CFGTOOL_ROLLOUT_STORE in $(pwd): $*"\nexit "$1"')  # fmt: skip
    step = Step("small", 7, 25, cohort(), workdir=tmp_path)
    where = os.path.realpath(tmp_path)
    assert command_gate("./scripts/health.sh 0", step) == GateResult(
        "command", "pass", f"v7 at 25% of small in {where}: 0"
    )
    assert command_gate("./scripts/health.sh 1", step) == GateResult(
        "command", "fail", f"v7 at 25% of small in {where}: 1"
    )
    assert command_gate("./scripts/health.sh 2", step) == GateResult(
        "command", "inconclusive", f"exit 2: v7 at 25% of small in {where}: 2"
    )
    # no shell: `;` and `$(...)` are words handed to the command, not run
    passed = command_gate("./scripts/health.sh 0 ';' 'exit 1' '$(false)'", step)
    assert passed.result == "pass" and passed.detail.endswith(": 0 ; exit 1 $(false)")
    plan = gates({"command": {"run": "./scripts/health.sh 1", "timeout": 10}}, {"command": {"run": "true"}})
    assert [r.result for r in evaluate(plan, step)] == ["fail", "pass"]


def test_command_gate_is_inconclusive_when_it_cannot_judge(tmp_path: Path) -> None:
    script(tmp_path, "slow.sh", "echo started\nsleep 30 &\nsleep 30")
    script(tmp_path, "quiet.sh", "exec 1>&-\nexit 0")
    script(tmp_path, "long.sh", "printf 'x%.0s' $(seq 1 2000)\necho\necho\nexit 1")
    step = Step("small", 7, 25, cohort(), workdir=tmp_path)
    began = time.monotonic()
    slow = command_gate("./scripts/slow.sh", step, timeout=0.5)
    assert slow == GateResult("command", "inconclusive", "./scripts/slow.sh: no exit within 0.5 s (killed)")
    assert time.monotonic() - began < 10  # its children were killed too: nothing held it
    missing = command_gate("./scripts/missing.sh", step)
    assert missing.result == "inconclusive" and missing.detail.startswith("./scripts/missing.sh: cannot run it")
    assert command_gate("./scripts/quiet.sh", step) == GateResult("command", "pass", "no output")
    assert command_gate("./scripts/long.sh", step) == GateResult("command", "fail", "x" * 300)
    assert command_gate("'unbalanced", step).result == "inconclusive"
    assert command_gate("  ", step).result == "inconclusive"
