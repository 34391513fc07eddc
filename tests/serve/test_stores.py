"""Several stores in one repository, served: each with its own versions; only real stores of the repository
(never a template inside a Python package); the stores found named at start."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable

import httpx
import pytest

from cfgtool import ConfigClient
from cfgtool.versions import VersionNotFound, rollback
from tests.conftest import GitRepo
from tests.serve.conftest import SMALL, StartServer, publish_change

Run = Callable[..., subprocess.CompletedProcess[str]]


def test_two_stores_are_served_each_with_its_own_versions(
    repo: GitRepo, run_cfgtool: Run, start_server: StartServer
) -> None:
    repo.write(
        {
            **SMALL,
            "other/_CONFIG_STORE": "name: other\n",
            "other/main.conf": "who = other\n",
            # a template shipped inside a Python package: not a store of this repository
            "tool/__init__.py": "",
            "tool/files/store/_CONFIG_STORE": "name: example\n",
            "tool/files/store/main.conf": "who = template\n",
        }
    )
    repo.commit("two stores and a packaged template")
    for store in ("store", "other"):
        proc = run_cfgtool("--store", store, "publish", "-m", f"{store} 1", cwd=repo.root)
        assert proc.returncode == 0, proc.stderr
    repo.write({"other/main.conf": "who = again\n"})
    repo.commit("other changes")
    assert run_cfgtool("--store", "other", "publish", cwd=repo.root).returncode == 0
    server = start_server(repo.root, "--cache-time", "0")
    assert "serving other (other/), small (store/) on" in server.log()
    with httpx.Client(base_url=server.url) as http:
        listed = http.get("/v1/stores").json()
        assert [(s["name"], s["path"], s["current"]) for s in listed] == [("other", "other", 2), ("small", "store", 1)]
        assert [v["tag"] for v in http.get("/v1/small/versions").json()] == ["config/v1"]
        assert [v["tag"] for v in http.get("/v1/other/versions").json()] == ["config/other/v2", "config/other/v1"]
        assert http.get("/v1/other/versions/2/keys/").json()["config"] == {"who": "again"}
        assert http.get("/v1/small/versions/2/keys/").status_code == 404
        assert http.get("/v1/example/versions").status_code == 404


def test_versions_current_and_previous_redirect_to_the_version(small: GitRepo, start_server: StartServer) -> None:
    publish_change(small, {"store/data/a/main.conf": "size = 10\n"}, "v2")
    publish_change(small, {"store/data/a/main.conf": "size = 100\n"}, "v3")
    rollback(small.root, reason="100 is too big")
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url) as http:
        moved = http.get("/v1/small/versions/current/keys/data/a", params={"path": "size"})
        assert moved.status_code == 307 and moved.headers["cache-control"] == "no-store"
        assert moved.headers["location"] == "/v1/small/versions/2/keys/data/a?path=size"
        assert moved.json()["version"] == 2
        back = http.get("/v1/small/versions/previous/explain/data/a", params={"path": "size"})
        assert back.headers["location"] == "/v1/small/versions/1/explain/data/a?path=size"
        assert http.get(back.headers["location"]).status_code == 200
        followed = http.get("/v1/small/versions/previous/keys/data/a", follow_redirects=True)
        assert followed.json()["config"]["size"] == 1 and followed.json()["version"] == 1
        visible = http.get("/v1/small/current/keys/data/a")  # the checkpointed visible version, as before
        assert visible.status_code == 200 and visible.headers["cfgtool-version"] == "2"
    assert ConfigClient(server.url, store="small", version="previous").get("/data/a")["size"] == 1
    assert ConfigClient(server.url, store="small", version="current").version == 2
    rollback(small.root, reason="10 is bad too")
    deadline = time.monotonic() + 30
    while httpx.get(f"{server.url}/v1/stores").json()[0]["current"] != 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    gone = httpx.get(f"{server.url}/v1/small/versions/previous/keys/data/a")
    assert gone.status_code == 404 and "has no previous version" in gone.json()["message"]
    with pytest.raises(VersionNotFound, match="no previous version"):
        ConfigClient(server.url, store="small", version="previous")
