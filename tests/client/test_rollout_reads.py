"""Readers outside the server during a staged rollout (docs/rollout.md): each reads what its instance reads, the
candidate inside the cohort and the stable version outside, and follows the steps and the abort."""

from __future__ import annotations

import queue
import time
from pathlib import Path

import pytest

import cfgtool
from cfgtool import ConfigClient, HttpConfigClient
from cfgtool.rollout.manual import abort, promote
from cfgtool.store.refmemo import SETTLED_NS
from cfgtool.versions import history
from cfgtool.versions.rollout import admitted
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change, small, start_server  # noqa: F401 (fixtures)

RULES = "name: small\nrollout: {steps: [5, 25, 100], step_time: 10m, bake: 1h}\n"
HOSTS = [f"web-{i}" for i in range(400)]
FAST = ("--cache-time", "0", "--fetch-interval", "0.2")


@pytest.fixture
def rolling(small: GitRepo) -> GitRepo:  # noqa: F811
    """`small` (version 1, /data/a size 1) with version 2 (size 3) published under a plan: at 5%."""
    assert publish_change(small, {"store/_CONFIG_STORE": RULES, "store/data/a/main.conf": "size = 3\n"}, "v2") == 2
    return small


def cohort(repo: GitRepo, percent: int) -> set[str]:
    """The hosts in version 2's cohort at `percent`, by the published formula and the salt its tag records."""
    salt = history(repo.root, "store").tag(2).metadata["rollout"]["salt"]
    return {h for h in HOSTS if admitted("small", 2, salt, h, percent)}


def read(repo: GitRepo, cache: Path, instance: str | None, version: str | None = None) -> tuple[int, object]:
    """(version, /data/a's size) of a fresh git-backed client."""
    client = ConfigClient(repo.root, "store", instance=instance, version=version, cache_dir=cache)
    return client.version, client.get_value("/data/a", "size")


def test_the_git_client_reads_what_its_instance_reads(rolling: GitRepo, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    early = cohort(rolling, 5)
    inside, outside = sorted(early)[0], sorted(set(HOSTS) - cohort(rolling, 25))[0]
    time.sleep(SETTLED_NS / 1e9 + 0.1)  # the refs settled: the first pin is remembered (`RefMemo`) ...
    assert read(rolling, cache, None) == (1, 1)
    assert read(rolling, cache, f"{inside}:4242") == (2, 3)  # ... for readers without an id only
    assert read(rolling, cache, outside) == (1, 1) and read(rolling, cache, f"{inside}:7") == (2, 3)
    assert read(rolling, cache, inside, "current") == (2, 3) and read(rolling, cache, inside, "previous")[0] == 1
    assert ConfigClient(rolling.root, "store", instance=outside, version=2, cache_dir=cache).version == 2
    promote(rolling.root, "store", 2, reason="canary fine")  # 25%
    later = sorted(cohort(rolling, 25) - early)[0]
    assert read(rolling, cache, later) == (2, 3) and read(rolling, cache, outside) == (1, 1)
    assert read(rolling, cache, None) == (1, 1)  # a reader without an id: only at 100%
    promote(rolling.root, "store", 2)  # 100%: baking
    assert read(rolling, cache, None) == (2, 3) and read(rolling, cache, outside) == (2, 3)


def test_an_abort_sends_the_git_clients_of_the_cohort_back(rolling: GitRepo, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    inside = sorted(cohort(rolling, 5))[0]
    assert read(rolling, cache, inside) == (2, 3)
    abort(rolling.root, "store", 2, reason="errors")
    assert read(rolling, cache, inside) == (1, 1)


def test_a_watch_outside_the_cohort_switches_at_the_step_that_takes_it_in(
    rolling: GitRepo,
    start_server: StartServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    server = start_server(rolling.root, *FAST)
    later = sorted(cohort(rolling, 25) - cohort(rolling, 5))[0]
    delivered: queue.Queue[HttpConfigClient] = queue.Queue()
    with cfgtool.watch(server.url, "small", delivered.put, wait=5, cache_dir=tmp_path / "c", instance=f"{later}:7"):
        assert delivered.get(timeout=60).version == 1
        promote(rolling.root, "store", 2, reason="canary fine")
        switched = delivered.get(timeout=60)
        assert switched.version == 2 and switched.get_value("/data/a", "size") == 3
        abort(rolling.root, "store", 2, reason="errors")
        assert delivered.get(timeout=60).version == 1
