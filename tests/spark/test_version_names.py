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


def test_the_application_reads_what_its_id_reads_during_a_rollout(spark: Any, repo: GitRepo, cache: Path) -> None:
    from cfgtool.client import ConfigClient
    from cfgtool.versions.rollout import admitted
    from tests.versions.conftest import commit_at
    from tests.versions.test_rollout import PLAN, Tags

    app = spark.sparkContext.applicationId  # one instance: salt chosen so that it is in version 2's first 5%
    salt = next(s for s in (f"{i:016x}" for i in range(100_000)) if admitted("store", 2, s, app, 5))
    tags = Tags(repo)
    for n in (1, 2):
        repo.write({"store/data/a/main.conf": f"size = {n}\n"})
        tags.commit = commit_at(repo, f"2026-01-01T1{n}:00:00+00:00", f"size {n}")
        tags.version(n, PLAN if n == 2 else None, salt=salt)
    assert ConfigClient(repo.root, cache_dir=cache).version == 1  # a reader without an id: the stable version
    loader = ConfigLoader(spark, repo.root, cache_dir=cache)
    assert loader.version == 2 and spark.conf.get(pin_keys("store")[1]) == "2"
    assert ConfigLoader(spark, repo.root, version="current", cache_dir=cache).version == 2
