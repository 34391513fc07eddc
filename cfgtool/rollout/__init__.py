"""Staged rollout (docs/rollout.md): a version reaches a growing share of the instances, step by step, judged by
its gates. `gates` judges one step: the consumers reports, a Prometheus query, a command of the repository.
"""

from __future__ import annotations

from cfgtool.rollout.gates import GateResult, ServerReport, Step, evaluate, read_reports, verdict

__all__ = ["GateResult", "ServerReport", "Step", "evaluate", "read_reports", "verdict"]
