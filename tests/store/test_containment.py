"""Nothing outside the repository is read (docs/security.md): symbolic links in a store are E_UNSAFE_PATH and never
followed, a linked store directory is a usage error, and a HOCON include cannot name a file outside the store.
Each case asserts on the diagnostics AND that the outside file's content appears in no output of any format."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]
SECRET = "TOPSECRET-4f1c9"
FORMATS = ("text", "json", "github", "markdown")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Files outside the repository that a link could lead to."""
    root = tmp_path / "outside"
    (root / "node").mkdir(parents=True)
    (root / "secret.conf").write_text(f'leak = "{SECRET}"\n', encoding="utf-8")
    (root / "node/main.conf").write_text(f'leak = "{SECRET}"\n', encoding="utf-8")
    return root


@pytest.fixture
def small(store_repo: GitRepo) -> GitRepo:
    store_repo.write({"store/main.conf": "a = 1\n", "store/data/main.conf": "b = 2\n"})
    store_repo.commit("a small store")
    return store_repo


def link(repo: GitRepo, rel: str, target: Path | str) -> None:
    path = repo.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def everything(run_cfgtool: Run, repo: GitRepo, tmp_path: Path, *extra: str) -> tuple[list[str], list[dict[str, str]]]:
    """Every output of compile (each format, and --output) and of get; and the JSON diagnostics."""
    outputs = []
    for fmt in FORMATS:
        proc = run_cfgtool("compile", *extra, "--format", fmt, cwd=repo.root)
        assert proc.returncode == 1, (fmt, proc.stdout, proc.stderr)
        outputs += [proc.stdout, proc.stderr]
        if fmt == "json":
            diags = json.loads(proc.stdout)["diagnostics"]
    snapshot = tmp_path / "snapshot.json"
    proc = run_cfgtool("compile", *extra, "--output", str(snapshot), cwd=repo.root)
    outputs += [proc.stdout, proc.stderr, snapshot.read_text(encoding="utf-8") if snapshot.exists() else ""]
    for key in ("/data", "/data/x", "/data/linked", "/data/etc"):
        proc = run_cfgtool("get", key, *extra, "--format", "json", cwd=repo.root)
        outputs += [proc.stdout, proc.stderr]
    return outputs, diags


@pytest.mark.parametrize("ref", [False, True], ids=["working-tree", "ref"])
@pytest.mark.parametrize(
    "case",
    ["file", "relative-file", "directory", "etc"],
)
def test_containment_a_committed_symlink_is_E_UNSAFE_PATH_and_never_read(
    small: GitRepo, outside: Path, run_cfgtool: Run, tmp_path: Path, case: str, ref: bool
) -> None:
    rel, target = {
        "file": ("store/data/x/main.conf", outside / "secret.conf"),
        "relative-file": ("store/data/x/main.conf", Path("../../../../outside/secret.conf")),
        "directory": ("store/data/linked", outside / "node"),
        "etc": ("store/data/etc", Path("/etc")),
    }[case]
    link(small, rel, target)
    small.commit("a link")
    outputs, diags = everything(run_cfgtool, small, tmp_path, *(["--ref", "HEAD"] if ref else []))
    unsafe = [d for d in diags if d["code"] == "E_UNSAFE_PATH"]
    assert [d["file"] for d in unsafe] == [rel]
    assert not any(SECRET in text for text in outputs)
    assert not any("root:x:0:0" in text for text in outputs)  # /etc/passwd


def test_containment_a_tracked_directory_replaced_by_a_link(
    small: GitRepo, outside: Path, run_cfgtool: Run, tmp_path: Path
) -> None:
    small.write({"store/data/x/main.conf": "c = 3\n"})
    small.commit("x")
    (small.root / "store/data/x/main.conf").unlink()
    (small.root / "store/data/x").rmdir()
    link(small, "store/data/x", outside / "node")
    outputs, diags = everything(run_cfgtool, small, tmp_path)
    assert [d["file"] for d in diags if d["code"] == "E_UNSAFE_PATH"] == ["store/data/x"]
    assert not any(SECRET in text for text in outputs)


def test_containment_a_linked_store_directory_is_a_usage_error(small: GitRepo, outside: Path, run_cfgtool: Run) -> None:
    (outside / "_CONFIG_STORE").write_text("", encoding="utf-8")
    link(small, "linked", outside)
    proc = run_cfgtool("--store", "linked", "compile", cwd=small.root)
    assert proc.returncode == 2
    assert "symbolic link" in proc.stderr and SECRET not in proc.stdout + proc.stderr
    nested = run_cfgtool("--store", "linked/node", "compile", cwd=small.root)
    assert nested.returncode == 2 and SECRET not in nested.stdout + nested.stderr


@pytest.mark.parametrize("ref", [False, True], ids=["working-tree", "ref"])
def test_containment_an_absolute_include_under_store_dot_reads_nothing_outside(
    repo: GitRepo, outside: Path, run_cfgtool: Run, tmp_path: Path, ref: bool
) -> None:
    repo.write({"_CONFIG_STORE": "", "main.conf": f'include required(file("{outside / "secret.conf"}"))\na = 1\n'})
    repo.commit("store at the root")
    extra = ["--ref", "HEAD"] if ref else []
    texts = []
    for fmt in FORMATS:
        proc = run_cfgtool("--store", ".", "compile", *extra, "--format", fmt, cwd=repo.root)
        assert proc.returncode == 1
        texts += [proc.stdout, proc.stderr]
        if fmt == "json":
            assert [d["code"] for d in json.loads(proc.stdout)["diagnostics"]] == ["E_UNSUPPORTED_INCLUDE"]
    assert not any(SECRET in text for text in texts)


@pytest.mark.parametrize("ref", [False, True], ids=["working-tree", "ref"])
def test_containment_a_linked_schema_is_E_UNSAFE_PATH_not_silently_skipped(
    work: GitRepo, outside: Path, run_cfgtool: Run, ref: bool
) -> None:
    schema = work.root / "schemas/partitions.yaml"
    copy = outside / "partitions.yaml"
    copy.write_text(schema.read_text(encoding="utf-8") + f"description: {SECRET}\n", encoding="utf-8")
    schema.unlink()
    os.symlink(copy, schema)
    work.commit("a linked schema")
    proc = run_cfgtool("compile", *(["--ref", "HEAD"] if ref else []), "--format", "json", cwd=work.root)
    assert proc.returncode == 1
    diags = json.loads(proc.stdout)["diagnostics"]
    assert [d["file"] for d in diags if d["code"] == "E_UNSAFE_PATH"] == ["schemas/partitions.yaml"]
    assert SECRET not in proc.stdout + proc.stderr


def test_containment_examine_tells_links_and_regular_files_apart(tmp_path: Path) -> None:
    from cfgtool.store.sources import Containment

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "file").write_text("x")
    (tmp_path / "outside").mkdir()
    (tmp_path / "d" / "link").symlink_to(tmp_path / "d" / "file")
    (tmp_path / "linked").symlink_to(tmp_path / "outside")
    (tmp_path / "outside" / "f").write_text("y")
    here = Containment(tmp_path)
    assert here.examine("d/file") == (None, True)
    assert here.examine("d/link") == ("d/link", False)
    assert here.examine("linked/f") == ("linked", False)  # a directory on the way is a link
    assert here.examine("d") == (None, False)  # a directory is no file to read
    assert here.examine("d/missing") == (None, False)
    assert here.examine("../d/file") == ("../d/file", False) and here.examine("/etc/passwd")[1] is False
    assert [here.link_of(p) for p in ("d/file", "d/link", "linked/f")] == [None, "d/link", "linked"]
