"""Keystone freshness (docs/serving.md): which version a key sees at time `t`, and for how long that answer holds.

With cache time `T`, every key `k` of store `s` has its own checkpoints, spread by a hash so that clients do
not all refresh at once::

    offset(s, k) = int.from_bytes(sha256(f"{s}:{k}".encode()).digest()[:8], "big") % T
    last_cp(t)   = offset + T * floor((t - offset) / T)

At `t` a key sees the newest version good at `t` published at or before `last_cp(t)`. Good at `t` means no rollback
marker dated at or before `t`. Else it sees the oldest version good at `t`. A rollback therefore applies at once. The
answer holds until the key's next checkpoint: `max-age = ceil(last_cp(t) + T - t)`. With `T = 0`: the current
version, `max-age = 0`.

Everything here is a pure function of its arguments; the clock is an argument. So replicas that see the same tags
give the same answers. And the tests compute the expected switch instants by hand.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple


@dataclass(frozen=True)
class Published:
    """A version as the timeline sees it: its number, tagger date and rollback marker date (Unix seconds)."""

    version: int
    date: float
    rolled_back_at: float | None = None

    def good_at(self, t: float) -> bool:
        """No rollback marker dated at or before `t`."""
        return self.rolled_back_at is None or self.rolled_back_at > t


class Visible(NamedTuple):
    """The version `key` sees now (None: no version is good) and how many seconds that answer holds. It is a tuple,
    since one is made per `current` read."""

    version: int | None
    max_age: int


@lru_cache(maxsize=65536)  # bounded: a hot key's offset costs a dictionary lookup, a cold one a sha256
def offset(store: str, key: str, cache_time: int) -> int:
    """The key's checkpoint offset in [0, T) (`key` normalized, e.g. `/data/x`); 0 when T is 0."""
    if cache_time <= 0:
        return 0
    digest = hashlib.sha256(f"{store}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % cache_time


def last_checkpoint(store: str, key: str, t: float, cache_time: int) -> int:
    """The key's latest checkpoint at or before `t` (`t` itself when T is 0 is not meaningful: T > 0)."""
    off = offset(store, key, cache_time)
    return off + cache_time * math.floor((t - off) / cache_time)


def visible(versions: Sequence[Published], now: float, cache_time: int, store: str, key: str) -> Visible:
    """The version of `store` that `key` sees at `now` with cache time `cache_time` (docs/serving.md).

    `versions` come newest (highest number) first, so the answer is usually the first or second one."""
    if cache_time <= 0:
        return Visible(next((v.version for v in versions if v.good_at(now)), None), 0)
    cp = last_checkpoint(store, key, now, cache_time)
    oldest = None
    for v in versions:
        if v.rolled_back_at is not None and v.rolled_back_at <= now:
            continue  # not good at `now`: a rollback applies at once
        if v.date <= cp:
            return Visible(v.version, math.ceil(cp + cache_time - now))
        oldest = v.version  # published after the checkpoint; the oldest good one is the fallback
    return Visible(oldest, 0 if oldest is None else math.ceil(cp + cache_time - now))


def effective_by(date: float, cache_time: int) -> float:
    """When every key has passed a checkpoint at or after `date`. A publish at `date` is then visible everywhere.
    Checkpoints fall on whole seconds, one per key in every window of T seconds."""
    if cache_time <= 0:
        return date
    return math.ceil(date) + cache_time - 1


def window(versions: Sequence[Published], now: float, cache_time: int) -> list[int]:
    """Every version some key can see from `now` until `now + T`, as far as the tags known now go. That is the newest
    good one published at or before `now - T`: every key's checkpoint is past it. Then each good one published after
    that. And the oldest good one, which keys see before their first checkpoint."""
    good = [v for v in versions if v.good_at(now)]
    if not good:
        return []
    if cache_time <= 0:
        return [max(v.version for v in good)]
    settled = [v.version for v in good if v.date <= now - cache_time]
    found = {v.version for v in good if v.date > now - cache_time}
    found.add(max(settled) if settled else min(v.version for v in good))
    return sorted(found)
