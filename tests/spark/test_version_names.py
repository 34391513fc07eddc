"""ConfigLoader(version="current" | "previous"): the number the name stands for when the loader is made,
pinned for the application like any explicit version."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.spark import ConfigLoader, PinConflict, pin_keys

pytestmark = pytest.mark.xdist_group("spark")

if TYPE_CHECKING:
    from tests.conftest import GitRepo


def test_loader_reads_previous_and_current(spark: Any, published: GitRepo, cache: Path) -> None:
    previous = ConfigLoader(spark, published.root, version="previous", cache_dir=cache)
    assert previous.version == 1 and spark.conf.get(pin_keys("store")[1]) == "1"
    assert ConfigLoader(spark, published.root, version="v1", cache_dir=cache).version == 1
    with pytest.raises(PinConflict, match="not version 2"):
        ConfigLoader(spark, published.root, version="current", cache_dir=cache)
    assert ConfigLoader(spark, published.root, version="current", repin=True, cache_dir=cache).version == 2
