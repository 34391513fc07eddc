"""What every benchmark prints first: how fast this machine runs Python right now, and how loaded it is.

Figures from different machines (or one machine under different loads) compare only beside these: the time of
a pure-Python loop of 10 million additions (median of 3; 0.5 s on the machine the targets are set for) and the
load average.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence


def python_loop() -> float:
    """Seconds of `for i in range(10_000_000): s += i`, median of 3."""
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        s = 0
        for i in range(10_000_000):
            s += i
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def load() -> str:
    """The load average, as printed beside every figure."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def print_machine() -> float:
    """Print the loop time and the load average (a benchmark's first line); return the loop time."""
    seconds = python_loop()
    print(f"pure-Python loop of 10M additions: {seconds:.2f} s (median of 3); {load()}", flush=True)
    return seconds


def spread(values: Sequence[float]) -> str:
    """A figure as benchmarks print it: the median, then the range of the runs."""
    return f"{statistics.median(values):6.3f} s ({min(values):.3f}-{max(values):.3f})"
