"""The Keystone timeline (docs/serving.md) against hand-computed cases, with the clock passed in.

Offsets (sha256 of "store:key", first 8 bytes, mod T), computed once by hand: demo:/data/x is 33 with T=60 and
3 with T=10; demo:/data/y is 51 with T=60; other:/data/x is 22 with T=60. So /data/x has checkpoints at
..., 993, 1053, 1113, ... and /data/y at ..., 951, 1011, 1071, 1131, ...
"""

from __future__ import annotations

import hashlib
import math
import random

import pytest

from cfgtool.serve.timeline import Published, Visible, effective_by, last_checkpoint, offset, visible, window

# newest first, as the server keeps them; v3 is rolled back at 1100; v4 is published at that same second
HISTORY = (
    Published(4, 1100.0),
    Published(3, 1040.0, rolled_back_at=1100.0),
    Published(2, 1000.0),
    Published(1, 500.0),
)


@pytest.mark.parametrize(
    ("store", "key", "cache_time", "expected"),
    [
        ("demo", "/data/x", 60, 33),
        ("demo", "/data/y", 60, 51),
        ("demo", "/data/x", 10, 3),
        ("other", "/data/x", 60, 22),
    ],
)
def test_offset_is_the_hash_of_store_and_key_mod_T(store: str, key: str, cache_time: int, expected: int) -> None:
    assert offset(store, key, cache_time) == expected
    digest = hashlib.sha256(f"{store}:{key}".encode()).digest()
    assert int.from_bytes(digest[:8], "big") % cache_time == expected


@pytest.mark.parametrize(
    ("key", "now", "expected"),
    [
        # /data/x, checkpoints 993, 1053, 1113
        ("/data/x", 1000.0, Visible(1, 53)),  # v2 (1000) is after the last checkpoint 993
        ("/data/x", 1052.5, Visible(1, 1)),  # still inside the slice that began at 993
        ("/data/x", 1053.0, Visible(3, 60)),  # the checkpoint: v2 and v3 are both published by 1053
        ("/data/x", 1099.0, Visible(3, 14)),
        ("/data/x", 1100.0, Visible(2, 13)),  # v3's rollback applies at once; v4 waits for the checkpoint
        ("/data/x", 1113.0, Visible(4, 60)),
        # /data/y, checkpoints 951, 1011, 1071, 1131
        ("/data/y", 1000.0, Visible(1, 11)),
        ("/data/y", 1011.0, Visible(2, 60)),
        ("/data/y", 1070.9, Visible(2, 1)),
        ("/data/y", 1071.0, Visible(3, 60)),
        ("/data/y", 1100.0, Visible(2, 31)),
        ("/data/y", 1131.0, Visible(4, 60)),
    ],
)
def test_visible_version_and_max_age_at_each_instant(key: str, now: float, expected: Visible) -> None:
    assert visible(HISTORY, now, 60, "demo", key) == expected


def test_visible_agrees_with_the_definition_on_random_histories() -> None:
    """The newest-first scan against docs/serving.md's words, over random histories, keys and instants."""
    rng = random.Random(12)
    for _ in range(2000):
        count = rng.randint(1, 6)
        dates = sorted(rng.uniform(0, 300) for _ in range(count))
        history = [Published(n + 1, d, rng.choice([None, d + rng.uniform(0, 200)])) for n, d in enumerate(dates)]
        now, cache_time, key = rng.uniform(0, 400), rng.choice([0, 1, 7, 60]), f"/k{rng.randint(0, 50)}"
        good = [v for v in history if v.rolled_back_at is None or v.rolled_back_at > now]
        if not good:
            expected = Visible(None, 0)
        elif cache_time == 0:
            expected = Visible(max(v.version for v in good), 0)
        else:
            cp = last_checkpoint("demo", key, now, cache_time)
            published = [v.version for v in good if v.date <= cp]
            chosen = max(published) if published else min(v.version for v in good)
            expected = Visible(chosen, math.ceil(cp + cache_time - now))
        assert visible(tuple(reversed(history)), now, cache_time, "demo", key) == expected


def test_a_smaller_T_moves_the_checkpoints() -> None:
    assert visible(HISTORY, 1000.0, 10, "demo", "/data/x") == Visible(1, 3)  # checkpoint 993, next 1003
    assert visible(HISTORY, 1003.0, 10, "demo", "/data/x") == Visible(2, 10)


def test_T_zero_is_the_current_version_with_max_age_zero() -> None:
    assert visible(HISTORY[1:], 1050.0, 0, "demo", "/data/x") == Visible(3, 0)
    assert visible(HISTORY, 1100.0, 0, "demo", "/data/x") == Visible(4, 0)
    assert visible(HISTORY[1:], 1100.0, 0, "demo", "/data/x") == Visible(2, 0)


def test_before_any_checkpoint_a_key_sees_the_oldest_good_version() -> None:
    young = (Published(3, 1040.0), Published(2, 1000.0))
    assert visible(young, 1045.0, 60, "demo", "/data/x") == Visible(2, 8)  # checkpoint 993 precedes both
    rolled = (Published(3, 1040.0), Published(2, 1000.0, rolled_back_at=1042.0))
    assert visible(rolled, 1045.0, 60, "demo", "/data/x") == Visible(3, 8)


def test_a_rollback_marker_dated_later_than_now_does_not_apply_yet() -> None:
    assert visible(HISTORY[1:], 1099.0, 0, "demo", "/data/x") == Visible(3, 0)
    assert visible(HISTORY[1:], 1099.0, 60, "demo", "/data/x") == Visible(3, 14)


def test_no_good_version_is_none() -> None:
    assert visible((Published(1, 500.0, rolled_back_at=600.0),), 700.0, 60, "demo", "/data/x") == Visible(None, 0)
    assert visible((), 700.0, 60, "demo", "/data/x") == Visible(None, 0)


def test_last_checkpoint_is_at_or_before_now_and_within_T() -> None:
    for now in (993.0, 993.5, 1052.999, 1053.0):
        cp = last_checkpoint("demo", "/data/x", now, 60)
        assert cp <= now < cp + 60
        assert cp % 60 == 33


def test_effective_by_is_when_every_key_has_seen_the_publish() -> None:
    assert effective_by(1000.0, 60) == 1059
    assert effective_by(1000.0, 0) == 1000.0
    versions = (Published(2, 1000.0), Published(1, 500.0))
    keys = [f"/data/k{i}" for i in range(300)]
    seen_at = [visible(versions, 1059.0, 60, "demo", k).version for k in keys]
    assert seen_at == [2] * len(keys)
    before = [visible(versions, 1058.0, 60, "demo", k).version for k in keys]
    assert 1 in before  # some key's checkpoint for 1000 is exactly 1059: the bound is tight


def test_window_holds_every_version_a_key_can_see_until_now_plus_T() -> None:
    assert window(HISTORY, 1050.0, 60) == [1, 2, 3, 4]  # v1 settled by 990; the others younger than T
    assert window(HISTORY, 1100.0, 60) == [2, 4]  # v3 rolled back; every checkpoint is past v2 (1000)
    assert window(HISTORY, 1200.0, 60) == [4]
    assert window(HISTORY, 1200.0, 0) == [4]
    for now in (1000.0, 1030.0, 1060.0, 1100.0, 1130.0):
        hot = set(window(HISTORY, now, 60))
        for key in ("/data/x", "/data/y", "/"):
            for later in range(0, 60, 7):
                found = visible(HISTORY, now + later, 60, "demo", key).version
                assert found in hot or any(v.date > now for v in HISTORY if v.version == found)
