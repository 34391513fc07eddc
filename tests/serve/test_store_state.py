"""What a store's view names for each instance: `current` and `previous` during staged rollouts."""

from __future__ import annotations

import time

from cfgtool.serve.store_state import View
from cfgtool.serve.timeline import Published
from cfgtool.versions.names import PREVIOUS
from tests.serve.test_cohorts import NOW, _rollout, _selection


def test_previous_costs_the_same_with_ten_thousand_rolled_out_versions() -> None:
    """`versions/previous/...` asked, for every version below the instance's current, whether the instance had
    joined it: a hash or two per version rolled out by a plan, on the event loop, for each request. A store with a
    plan rolls every version out, so the cost grew with its history. The newest one it joined is the answer."""
    count = 10_000
    rollouts = [_rollout(n, [(p, NOW - 9e5 + n) for p in (5, 25, 100)], "done") for n in range(2, count)]
    servable = tuple(Published(n, NOW - 9e5 + n) for n in range(count, 0, -1))
    view = View(servable=servable, published=servable, selection=_selection(count, rollouts))
    started = time.process_time()
    for i in range(20):
        assert view.named(PREVIOUS, f"web-{i}:1".encode()) == count - 1
    assert time.process_time() - started < 0.05  # 20 requests; each hashed ~20,000 times before
