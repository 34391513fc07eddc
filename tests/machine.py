"""How fast this machine runs Python, for the few tests whose bounds are times: they scale by it, so a shared
runner several times slower than the reference machine passes what is bounded, while a hang or a quadratic
blow-up still exceeds the scaled bound by far. Figures themselves are measured in benchmarks/ (benchmarks/machine.py
prints the same loop).

Times are the calling thread's CPU time (`time.thread_time`): neither waiting for a core nor another thread of the
test's worker process (a server some earlier test left finishing its background work) counts."""

from __future__ import annotations

import time


def slowness() -> float:
    """How many times slower than the reference machine this one runs pure Python (at least 1). The time bounds
    below are for a machine that adds 10 million integers in a Python loop in 0.5 s; a shared runner several
    times slower would otherwise fail inputs that are bounded, while a hang or a quadratic blow-up still
    exceeds the scaled bounds by far."""
    best = min(_loop_seconds() for _ in range(3))
    return max(1.0, best * 10 / 0.5)  # a tenth of the reference loop, scaled to the whole


def _loop_seconds() -> float:
    start, s = time.thread_time(), 0
    for i in range(1_000_000):
        s += i
    return time.thread_time() - start


SLOW = slowness()


def slowness_now() -> float:
    """`SLOW`, or the slowness measured now where that is more (a runner whose cores other workers share): for a
    bound on large work measured right after, which such a moment slows alike."""
    return max(SLOW, slowness())
