"""A crashing CI runner (docs/security.md): publish and rollback SIGKILLed at points spread over their run, from a
persistent clone, against a bare remote reached over ssh:// (whose side of the transfer, like a real server's, is
not killed with the client). After every kill the clone's index is not locked, no remote tag moved, the remote's
versions are contiguous, no local version tag is missing from the remote, and running the same command again
does the right thing. The sweep itself is `benchmarks/kill_sweep.py` (which runs hundreds of points); here a
few dozen."""

from __future__ import annotations

import importlib.util
import random
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest


def kill_sweep() -> ModuleType:
    """The sweep of `benchmarks/kill_sweep.py` (a short one runs here; the benchmark runs it long)."""
    return importlib.import_module("benchmarks.kill_sweep")


@pytest.mark.long
def test_publish_and_rollback_killed_anywhere_leave_the_versions_intact(tmp_path: Path) -> None:
    sweep_module = kill_sweep()
    sweep = sweep_module.Sweep.create(tmp_path)
    sweep_module.warm_up(sweep)
    rng = random.Random(12)
    outcomes: Counter[str] = Counter()
    for i in range(16):  # evenly spread over the run, jittered
        outcomes["publish " + sweep.publish_round((i + rng.random()) / 15)] += 1
    for i in range(10):
        outcomes["rollback " + sweep.rollback_round((i + rng.random()) / 9)] += 1
    killed = sum(n for what, n in outcomes.items() if "killed" in what)
    assert killed >= 16, outcomes  # most points fall inside the run
    assert outcomes["publish killed before the push"] and outcomes["rollback killed before the push"], outcomes
