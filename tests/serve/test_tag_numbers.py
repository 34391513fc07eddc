"""Which tags are versions: `<prefix>N` with N 1 to 9 ASCII digits without a leading zero (docs/versions.md).
A tag pushed by hand with any other suffix is not a version: the CLI, publish and the readers ignore it."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable

import httpx
import pytest

from cfgtool.client.client import ConfigClient
from cfgtool.versions import history
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change

Run = Callable[..., subprocess.CompletedProcess[str]]

BAD_NUMBERS = ["99999999999999999999", "1234567890", "007", "0", "1e3", "١٢"]


@pytest.mark.parametrize("suffix", BAD_NUMBERS)
def test_a_tag_that_is_not_a_version_number_is_ignored_everywhere(
    suffix: str, small: GitRepo, run_cfgtool: Run
) -> None:
    publish_change(small, {"store/data/a/main.conf": "size = 6\n"}, "v2")
    small.git("tag", "-a", f"config/v{suffix}", "-m", "made by hand")
    assert history(small.root).numbers == [1, 2]
    listed = run_cfgtool("versions", "--format", "json", cwd=small.root)
    assert listed.returncode == 0, listed.stderr
    assert [(v["version"], v["status"]) for v in json.loads(listed.stdout)] == [(2, "current"), (1, "good")]
    dry = run_cfgtool("publish", "--dry-run", "--format", "json", cwd=small.root)
    assert "Traceback" not in dry.stderr
    if dry.stdout.strip():
        assert json.loads(dry.stdout)["version"] in (None, 3)
    got = run_cfgtool("get", "/data/a", "size", "--version", "current", cwd=small.root)
    assert got.returncode == 0 and got.stdout.strip() == "6", got.stderr
    assert ConfigClient(small.root).version == 2


def test_publish_after_a_ten_digit_tag_numbers_from_the_real_versions(small: GitRepo, run_cfgtool: Run) -> None:
    small.git("tag", "-a", "config/v1234567890", "-m", "made by hand")
    small.write({"store/data/a/main.conf": "size = 6\n"})
    small.commit("v2")
    dry = run_cfgtool("publish", "--dry-run", "--format", "json", cwd=small.root)
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["tag"] == "config/v2"


@pytest.mark.parametrize("suffix", ["99999999999999999999", "1234567890"])
def test_the_server_ignores_a_tag_that_is_not_a_version_number(
    suffix: str, small: GitRepo, start_server: StartServer
) -> None:
    publish_change(small, {"store/data/a/main.conf": "size = 6\n"}, "v2")
    small.git("tag", "-a", f"config/v{suffix}", "-m", "made by hand")
    server = start_server(small.root, "--cache-time", "0", "--fetch-interval", "0.2")
    assert httpx.get(f"{server.url}/v1/small/current/keys/data/a").json()["version"] == 2
    [store] = httpx.get(f"{server.url}/v1/stores").json()
    assert store["current"] == 2
    moved = httpx.get(f"{server.url}/v1/small/versions/current/keys/data/a", follow_redirects=True)
    assert moved.status_code == 200 and moved.json()["version"] == 2
    listed = httpx.get(f"{server.url}/v1/small/versions").json()
    assert [v["version"] for v in listed] == [2, 1]
    time.sleep(1)  # a few fetches
    assert "Traceback" not in server.log() and "failed" not in server.log()


def test_a_version_number_with_a_leading_zero_is_no_url_of_that_version(
    small: GitRepo, start_server: StartServer
) -> None:
    server = start_server(small.root)
    assert httpx.get(f"{server.url}/v1/small/versions/1/keys/data/a").status_code == 200
    for path in ("versions/01/keys/data/a", "versions/001/keys/", "versions/01/explain/data/a?path=size"):
        got = httpx.get(f"{server.url}/v1/small/{path}")
        assert got.status_code == 404, path
        assert got.json()["error"] == "not_found" and "leading zero" in got.json()["message"], path
    assert httpx.get(f"{server.url}/ui/small/v/01/tree/").status_code == 404
    assert "Traceback" not in server.log()
