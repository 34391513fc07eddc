"""Several stores in one repository, served: each with its own versions; only real stores of the repository
(never a template inside a Python package); the stores found named at start."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import httpx

from tests.conftest import GitRepo
from tests.serve.conftest import SMALL, StartServer

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
