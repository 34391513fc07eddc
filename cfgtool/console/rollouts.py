"""Staged rollouts on the console's pages (docs/console.md): each rolling version's progress on the timeline, and on
the consumers page which instances read the candidate.

What a page shows of a rollout is `rollout status` (`cfgtool.rollout.status`): its state, percent, step, the gates
of its newest step tag, and why it waits. The cohort counts come from this server's consumers only (each replica
knows its own clients). Every page of a store is for those who may describe it, as `GET /v1/{store}/rollouts` is,
so the gates' details are shown whole.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cfgtool.rollout.gates import ServerReport
from cfgtool.rollout.status import status
from cfgtool.serve.consumers import Consumers, Instance
from cfgtool.serve.store_state import StoreState, View
from cfgtool.versions import History, history
from cfgtool.versions.rollout import Rollout, Selection, selection

THIS_SERVER = "this server"  # the one report the console sums: its own consumers
FRESH = 2.0  # seconds a candidate's cohort counts are shown again before they are counted again


@dataclass(frozen=True)
class Rollouts:
    """A store's staged rollouts as one view of it sees them: its tags (`known`) and their selection."""

    known: History
    chosen: Selection

    @property
    def candidate(self) -> Rollout | None:
        """The version rolling out now, when it reaches some instances (not when it is superseded)."""
        c = self.chosen.candidate
        return c if c is not None and c.state in ("rolling", "paused", "baking") else None

    def statuses(self, consumers: Consumers, versions: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The status of each of `versions` that has a rollout; the candidate's with its cohort among this server's
        consumers (and always, for the live timeline's `mark`)."""
        found = {n: status(self.known, self.chosen, n) for n in versions if n in self.chosen.rollouts}
        found.update(self._candidate(consumers))
        return found

    def mark(self, consumers: Consumers) -> str:
        """What the live timeline shows of the candidate, as `mark` spells it."""
        return mark(next(iter(self._candidate(consumers).values()), None))

    def _candidate(self, consumers: Consumers) -> dict[int, dict[str, Any]]:
        """The candidate's status with its cohort counts (none without a candidate), counted again at most every
        `FRESH` seconds: every open timeline asks, and counting hashes every instance."""
        c = self.candidate
        if c is None:
            return {}
        now = time.monotonic()
        kept = _COUNTED.get(consumers)
        if kept is None or kept[1] != c or now - kept[0] >= FRESH:
            counted = status(self.known, self.chosen, c.version, reports=_report(consumers, c))
            kept = _COUNTED[consumers] = (now, c, counted)
        return {c.version: kept[2]}

    def reads(self, instance: Instance) -> str | None:
        """`candidate` when the instance is in the candidate's cohort, `stable` when it reads the stable version
        (None: no version rolls out)."""
        candidate = self.candidate
        if candidate is None:
            return None
        return "candidate" if candidate.admits(instance.id) else "stable"


COUNTS = ("instances", "applied", "failed")
_COUNTED: weakref.WeakKeyDictionary[Consumers, tuple[float, Rollout, dict[str, Any]]] = weakref.WeakKeyDictionary()


def mark(found: Mapping[str, Any] | None) -> str:
    """A rolling version's status in one word: its version, state, percent and cohort counts (empty: none). The
    live timeline asks again with it, and is shown again when it changes."""
    if found is None:
        return ""
    counts = found["cohort"] or {}
    return ".".join(str(x) for x in (found["version"], found["state"], found["percent"], *map(counts.get, COUNTS)))


def rollouts(state: StoreState, view: View) -> Rollouts:
    """The store's rollouts as `view` holds them: the tags it was read from and their selection (read again only
    before the store's first refresh)."""
    if view.tags is not None and view.selection is not None:
        return Rollouts(view.tags, view.selection)
    known = history(state.root, state.path or ".")
    return Rollouts(known, selection(known, state.name))


def _report(consumers: Consumers, candidate: Rollout) -> Sequence[ServerReport]:
    """This server's consumers report, of the candidate's cohort only (the others are not counted)."""
    listed: list[Mapping[str, Any]] = [i.to_json() for i in consumers.instances(time.time()) if candidate.admits(i.id)]
    return [ServerReport(THIS_SERVER, {"instances": listed})]


__all__ = ["Rollouts", "rollouts"]
