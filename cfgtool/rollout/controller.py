"""The rollout controller (docs/rollout.md "The controller"): `cfgtool rollout run`, one round every interval.

A round fetches the tags, finds the candidate, reads the consumers reports of every server, judges the gates of the
current step and then does at most one thing: a failing gate rolls the version back at once (rollback beats
promote); all passing, after the step's time and with enough reports from its cohort, the next step (or, after the
bake at 100%, `done`) is tagged. Anything it cannot judge holds the step. The decisions read the wall clock and the
tags' dates only, so a controller restarted at any point carries on from the tags: a step is a create-only tag, so
none is taken twice, and a round takes one step at most, so none is skipped.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from cfgtool.errors import CfgtoolError
from cfgtool.rollout.gates import GateResult, Step, consumers_gate, evaluate, read_reports, verdict
from cfgtool.rollout.status import status
from cfgtool.store import git
from cfgtool.store.rollout_plan import ConsumersGate, RolloutPlan
from cfgtool.versions.refs import checked_remote, identity
from cfgtool.versions.rollback import RollbackRefused, rollback, unfinished
from cfgtool.versions.rollout import Rollout
from cfgtool.versions.rollout_tags import current, record

log = logging.getLogger("cfgtool.rollout")

Action = Literal["idle", "hold", "step", "done", "rollback", "lost", "error"]
UNLIMITED = 2**62  # the failures the reports check tolerates: it only counts the cohort's reports


@dataclass(frozen=True)
class Options:
    """What `cfgtool rollout run` was given: the repository, its store directory, the servers to read the consumers
    reports from, the remote to fetch from and push to (None: this repository only), a bearer token for the
    servers, and the seconds between rounds."""

    repo: Path
    store: str | Path = "store"
    servers: tuple[str, ...] = ()
    remote: str | None = None
    token: str | None = None
    interval: float = 5.0


@dataclass(frozen=True)
class Decision:
    """What one round did: `action` on `version` at `percent`, why (`detail`), and the gates' results."""

    action: Action
    version: int | None = None
    percent: int | None = None
    detail: str = ""
    results: tuple[GateResult, ...] = field(default=())
    tag: str | None = None

    def line(self) -> str:
        """One log line: `version 7 at 5%: step: config/rollout/v7/1`. A hold says only why (`version 7 at 5%:
        holds: gates inconclusive: ...`, `... next step (25%) at <time> if the gates pass`)."""
        where = f"version {self.version} at {self.percent}%: " if self.version is not None else ""
        if self.action == "hold":
            return f"{where}{self.detail}"
        return f"{where}{self.action}: {self.detail}" if self.detail else f"{where}{self.action}"

    def to_json(self) -> dict[str, Any]:
        """The round as JSON: its action, version, percent, detail, gates and the tag it wrote."""
        return {
            "action": self.action,
            "version": self.version,
            "percent": self.percent,
            "detail": self.detail,
            "gates": [r.to_json() for r in self.results],
            "tag": self.tag,
        }


def run_round(options: Options, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> Decision:
    """One round: fetch, judge, and roll back, step, finish or hold. A remote, server or git failure is a decision
    (`error`, the next round tries again), never an exception."""
    root = git.locate(options.repo).root
    try:
        known, chosen = current(root, options.store, remote=options.remote)
    except CfgtoolError as exc:
        return Decision("error", detail=f"cannot read the tags: {exc.message}")
    rollout = chosen.candidate
    if rollout is None:
        return Decision("idle", detail="no version is rolling out")
    v, p = rollout.version, rollout.percent
    plan = RolloutPlan.from_json(rollout.plan)
    if plan is None:
        return Decision("hold", v, p, detail="its tag's rollout plan cannot be read; promote or abort it by hand")
    reports = read_reports(options.servers, chosen.store, token=options.token)
    step = Step(chosen.store, rollout.version, rollout.percent, rollout.admits, plan.min_reports, reports, root)
    results = tuple(evaluate(plan.gates, step)) + _reports_check(plan, step)
    judged = verdict(results)
    if judged == "fail":
        return _roll_back(options, root, rollout, results)
    moment = now()
    last = rollout.percent >= 100
    waited = (moment - (rollout.since or moment)).total_seconds()
    if judged == "inconclusive" or rollout.state == "paused" or waited < (plan.bake if last else plan.step_time):
        why = status(known, chosen, v, gates=results, now=moment)["why"]
        return Decision("hold", v, p, detail=str(why), results=results)
    action: Literal["step", "done"] = "done" if last else "step"
    percent = 100 if last else rollout.steps[rollout.step + 1]
    evidence = [r.to_json() for r in results]
    try:
        tag = record(root, known, chosen, rollout, action, percent, by=_by(root), evidence=evidence,
                     remote=options.remote)  # fmt: skip
    except CfgtoolError as exc:
        return Decision("error", v, p, detail=f"cannot record the {action}: {exc.message}", results=results)
    if tag is None:
        return Decision("lost", v, p, detail=f"another controller recorded this {action} first", results=results)
    return Decision(action, rollout.version, percent, detail=tag, results=results, tag=tag)


def _reports_check(plan: RolloutPlan, step: Step) -> tuple[GateResult, ...]:
    """Without a consumers gate, the plan's `min_reports` is still needed before a step: the consumers reports,
    counted and never failing."""
    if plan.min_reports == 0 or any(isinstance(g, ConsumersGate) for g in plan.gates):
        return ()
    return (consumers_gate(step.reports, step.version, step.admitted, step.min_reports, UNLIMITED),)


def _roll_back(options: Options, root: Path, rollout: Rollout, results: Sequence[GateResult]) -> Decision:
    """The rollback marker of the candidate, its reason the first failing gate (`auto: consumers: 2 of 5 ...`)."""
    failed = next(r for r in results if r.result == "fail")
    reason = f"auto: {failed.gate}: {failed.detail}"
    left = unfinished(root)
    if left is not None and rollout.version in left.rolled_back:
        reason = left.reason  # a controller killed during its push: finish that rollback, with its reason
    v, p, judged = rollout.version, rollout.percent, tuple(results)
    try:
        done = rollback(root, rollout.version, reason=reason, remote=options.remote, by=_by(root),
                        store=options.store, not_current=True)  # fmt: skip
    except RollbackRefused as exc:  # rolled back meanwhile, by hand or by another controller
        return Decision("lost", v, p, detail=exc.message, results=judged)
    except CfgtoolError as exc:
        return Decision("error", v, p, detail=f"cannot roll back ({reason}): {exc.message}", results=judged)
    return Decision("rollback", v, p, detail=reason, results=judged, tag=done.tags[0] if done.tags else None)


def _by(root: Path) -> str:
    """Who the tags say acted: the clone's git identity, as the controller."""
    return f"{identity(root).name} (cfgtool rollout run)"


def run(options: Options, stop: threading.Event, *, once: bool = False) -> Decision:
    """Rounds every `interval` seconds until `stop` is set (or one round with `once`), each logged when its line
    differs from the round before. Returns the last round's decision."""
    said = ""
    while True:
        decision = run_round(options)
        line = decision.line()
        if line != said:
            level = logging.WARNING if decision.action in ("rollback", "error") else logging.INFO
            log.log(level, "%s", line)
            said = line
        if once or stop.wait(options.interval):
            return decision


def start(options: Options, *, once: bool = False) -> Decision:
    """Run the controller, logging to stderr, until SIGTERM or SIGINT (or one round with `once`). A signal ends it
    after the round under way: a step or a rollback is never cut halfway by the controller itself. UsageError, before
    any round, for a remote that is neither a remote of the repository nor a URL (`checked_remote`)."""
    if options.remote is not None:
        options = replace(options, remote=checked_remote(git.locate(options.repo).root, options.remote))
    _log_to_stderr()
    stop = threading.Event()

    def stopping(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    return run(options, stop, once=once)


def _log_to_stderr() -> None:
    """The controller's log: one line per change of decision on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cfgtool rollout: %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


__all__ = ["Decision", "Options", "run", "run_round", "start"]
