"""Several stores in one repository: each has its own version sequence. `config/vN` stays with the store that
already has it (or the only store); every other store's tags are `config/<name>/vN`. Real git, a bare remote
and the CLI in subprocesses."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

from cfgtool.versions import history
from cfgtool.versions.messages import format_message
from tests.conftest import GitRepo
from tests.remotes import add_origin

Run = Callable[..., subprocess.CompletedProcess[str]]

TWO = {
    "store/_CONFIG_STORE": "",
    "store/main.conf": "owner = demo\n",
    "store/data/a/main.conf": "size = 1\n",
    "other/_CONFIG_STORE": "name: other\n",
    "other/main.conf": "owner = other\n",
    "other/data/b/main.conf": "size = 2\n",
}


def _json(proc: subprocess.CompletedProcess[str]) -> object:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _tags(versions: object) -> list[str]:
    assert isinstance(versions, list)
    return [v["tag"] for v in versions]


def test_two_stores_each_have_their_own_versions(repo: GitRepo, tmp_path: Path, run_cfgtool: Run) -> None:
    repo.write(TWO)
    repo.commit("two stores")
    origin = add_origin(repo, tmp_path / "remote.git")

    def cli(*args: str) -> object:
        return _json(run_cfgtool(*args, "--format", "json", cwd=repo.root))

    first = cli("--store", "store", "publish", "--remote", "origin", "-m", "demo 1")
    assert (first["published"], first["tag"]) == (True, "config/v1")  # type: ignore[index]
    second = cli("--store", "other", "publish", "--remote", "origin", "-m", "other 1")
    assert (second["published"], second["version"], second["tag"]) == (True, 1, "config/other/v1")  # type: ignore[index]
    repo.write({"other/main.conf": "owner = other-team\n"})
    repo.commit("other changes")
    third = cli("--store", "other", "publish", "--remote", "origin", "-m", "other 2")
    assert third["tag"] == "config/other/v2"  # type: ignore[index]
    again = cli("--store", "store", "publish", "--remote", "origin")
    assert again["published"] is False and again["same_as"] == 1  # type: ignore[index]

    assert _tags(cli("--store", "store", "versions")) == ["config/v1"]
    assert _tags(cli("--store", "other", "versions")) == ["config/other/v2", "config/other/v1"]
    rolled = cli("--store", "other", "rollback", "--remote", "origin", "-m", "bad")
    assert rolled == {**rolled, "rolled_back": [2], "current": 1}  # type: ignore[dict-item]
    assert origin.tags() == ["config/other/rolledback/v2", "config/other/v1", "config/other/v2", "config/v1"]
    assert [v["status"] for v in cli("--store", "store", "versions")] == ["current"]  # type: ignore[union-attr]
    events = cli("--store", "other", "audit")["events"]  # type: ignore[index]
    assert [(e["kind"], e["version"]) for e in events] == [("rollback", 2), ("publish", 2), ("publish", 1)]
    assert [e["version"] for e in cli("--store", "store", "audit")["events"]] == [1]  # type: ignore[index]
    got = cli("--store", "other", "get", "/data/b", "--version", "1")
    assert got["owner"] == "other"  # type: ignore[index]


def test_an_existing_single_store_repository_keeps_config_vn(repo: GitRepo, run_cfgtool: Run) -> None:
    repo.write({k: v for k, v in TWO.items() if k.startswith("store/")})
    repo.commit("one store")
    assert run_cfgtool("publish", "-m", "one", cwd=repo.root).returncode == 0
    repo.write({k: v for k, v in TWO.items() if k.startswith("other/")})
    repo.write({"store/main.conf": "owner = demo-team\n"})
    repo.commit("a second store, and a change to the first")
    out = _json(run_cfgtool("publish", "--format", "json", cwd=repo.root))
    assert out["tag"] == "config/v2"  # type: ignore[index]
    out = _json(run_cfgtool("--store", "other", "publish", "--format", "json", cwd=repo.root))
    assert out["tag"] == "config/other/v1"  # type: ignore[index]
    assert [v.tag for v in history(repo.root, "store")] == ["config/v2", "config/v1"]


def test_a_tag_naming_another_store_is_never_taken_for_ones_own(repo: GitRepo, run_cfgtool: Run) -> None:
    """Two stores that shared `config/vN` before: each keeps only the tags whose metadata names it."""
    repo.write(TWO)
    commit = repo.commit("two stores")
    for n, store, name in ((1, "store", None), (2, "other", "other")):
        meta = {"kind": "version", "version": n, "store": store, "name": name, "commit": commit}
        repo.git("tag", "-a", f"config/v{n}", commit, "-m", format_message(f"{store} {n}", meta))
    assert [v.tag for v in history(repo.root, "store")] == ["config/v1"]
    assert list(history(repo.root, "other")) == []
    out = _json(run_cfgtool("--store", "other", "publish", "--format", "json", cwd=repo.root))
    assert out["tag"] == "config/other/v1"  # type: ignore[index]
    repo.write({"store/main.conf": "owner = demo-team\n"})
    repo.commit("change")
    out = _json(run_cfgtool("publish", "--format", "json", cwd=repo.root))
    assert out["tag"] == "config/v3"  # type: ignore[index]  (config/v2 is taken, by the other store)


def test_before_any_tag_the_store_at_store_owns_config_vn(repo: GitRepo, run_cfgtool: Run) -> None:
    repo.write({"a/_CONFIG_STORE": "", "a/main.conf": "x = 1\n", **TWO})
    repo.commit("three stores")
    out = _json(run_cfgtool("--store", "a", "publish", "--format", "json", cwd=repo.root))
    assert out["tag"] == "config/a/v1"  # type: ignore[index]
    out = _json(run_cfgtool("--store", "store", "publish", "--format", "json", cwd=repo.root))
    assert out["tag"] == "config/v1"  # type: ignore[index]


def test_a_store_name_that_cannot_be_in_a_tag_name_is_refused(repo: GitRepo, run_cfgtool: Run) -> None:
    repo.write({**TWO, "rolledback/_CONFIG_STORE": "", "rolledback/main.conf": "x = 1\n"})
    repo.commit("a store whose directory name is taken by the rollback markers")
    proc = run_cfgtool("--store", "rolledback", "publish", cwd=repo.root)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot be part of its version tags" in proc.stderr and "Traceback" not in proc.stderr
    assert repo.git("tag") == ""


def test_another_store_s_restored_markers_are_its_own(repo: GitRepo, tmp_path: Path, run_cfgtool: Run) -> None:
    repo.write(TWO)
    repo.commit("two stores")
    origin = add_origin(repo, tmp_path / "remote.git")
    for n in (1, 2):
        repo.write({"other/main.conf": f"owner = other-{n}\n", "store/main.conf": f"owner = demo-{n}\n"})
        repo.commit(f"both change {n}")
        for store in ("store", "other"):
            assert run_cfgtool("--store", store, "publish", "--remote", "origin", cwd=repo.root).returncode == 0
    for store in ("store", "other"):
        assert (
            run_cfgtool("--store", store, "rollback", "--remote", "origin", "-m", "bad", cwd=repo.root).returncode == 0
        )
    cancel = ("--store", "other", "rollback", "--cancel", "2", "--remote", "origin", "-m", "fine", "--format", "json")
    assert _json(run_cfgtool(*cancel, cwd=repo.root))["tags"] == ["config/other/restored/v2"]  # type: ignore[index]
    assert "config/other/restored/v2" in origin.tags() and not any(
        t.startswith("config/restored/") for t in origin.tags()
    )
    statuses = [
        (v["version"], v["status"])
        for v in _json(run_cfgtool("--store", "other", "versions", "--format", "json", cwd=repo.root))
    ]  # type: ignore[index, union-attr]
    assert statuses == [(2, "current"), (1, "good")]
    plain = _json(run_cfgtool("--store", "store", "versions", "--format", "json", cwd=repo.root))
    assert [(v["version"], v["status"]) for v in plain] == [(2, "rolled_back"), (1, "current")]  # type: ignore[index, union-attr]


def test_a_store_named_like_the_restored_markers_is_refused(repo: GitRepo, run_cfgtool: Run) -> None:
    repo.write({**TWO, "restored/_CONFIG_STORE": "", "restored/main.conf": "x = 1\n"})
    repo.commit("a store whose directory name is taken by the restored markers")
    proc = run_cfgtool("--store", "restored", "publish", cwd=repo.root)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "cannot be part of its version tags" in proc.stderr and "Traceback" not in proc.stderr
