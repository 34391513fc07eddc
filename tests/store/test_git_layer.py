"""GitPython is the one way cfgtool reaches git (ARCHITECTURE.md): no other module starts a process, and the layer in
`cfgtool/store/git.py` behaves as git does, on real repositories."""

from __future__ import annotations

import ast
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cfgtool.store import git
from tests.conftest import CHECKOUT, GitRepo

PACKAGE = CHECKOUT / "cfgtool"
LAYER = PACKAGE / "store" / "git.py"
# Calls that run another program. (`os.fork`, which build.py uses for its workers, runs this same code.)
_PROCESS_CALLS = {("os", name) for name in ("system", "popen", "posix_spawn", "posix_spawnp")}


def _starts_processes(path: Path, root: Path = CHECKOUT) -> list[str]:
    """What in a module can start a process: imports of subprocess/pty/multiprocessing.popen_*, os.system and
    friends, os.exec* and os.spawn*."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            found += [f"import {n}" for n in names if n.split(".")[0] in {"subprocess", "pty"}]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and (("os", node.attr) in _PROCESS_CALLS or node.attr.startswith(("exec", "spawn")))
        ):
            found.append(f"os.{node.attr}")
    return [f"{path.relative_to(root)}:{f}" for f in found]


# Modules that run other programs by design, never git: the agent runs the commands its user gave it, and a
# rollout's command gate the command of the store's reviewed plan.
USER_COMMANDS = {
    "cfgtool/agent/actions.py": "runs the --check and --reload commands of `cfgtool agent`",
    "cfgtool/rollout/gates.py": "runs the `command` gate of a rollout plan",
}


def test_no_module_but_the_git_layer_starts_a_process() -> None:
    for name in USER_COMMANDS:
        assert not re.search(r"\bgit\b", (CHECKOUT / name).read_text(encoding="utf-8")), f"{name} must not run git"
    modules = [p for p in PACKAGE.rglob("*.py") if p != LAYER and str(p.relative_to(CHECKOUT)) not in USER_COMMANDS]
    assert len(modules) > 50
    offenders = [hit for p in modules for hit in _starts_processes(p)]
    assert not offenders, f"only cfgtool/store/git.py may start processes: {offenders}"
    tree = ast.parse(LAYER.read_text(encoding="utf-8"))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "git" in imported, "the git layer runs git through GitPython (`import git as gitpython`)"


def test_the_scan_catches_a_process_call(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("import os\nimport subprocess\n\nos.system('git status')\nos.execvp('git', [])\n")
    assert _starts_processes(planted, tmp_path) == ["planted.py:import subprocess", "planted.py:os.system",
                                                    "planted.py:os.execvp"]  # fmt: skip


def test_run_git_returns_the_status_and_raw_output(repo: GitRepo) -> None:
    repo.write({"a.txt": "one\n"})
    head = repo.commit("first")
    done = git.run_git(repo.root, "rev-parse", "HEAD")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{head}\n".encode(), b"")
    failed = git.run_git(repo.root, "rev-parse", "--verify", "nosuchref", check=False)
    assert failed.returncode != 0
    with pytest.raises(git.GitError, match="git rev-parse failed"):
        git.run_git(repo.root, "rev-parse", "--verify", "nosuchref")
    oid = git.run_git(repo.root, "hash-object", "-w", "--stdin", input=b"from stdin\n").stdout.decode().strip()
    assert git.cat_blobs(repo.root, [oid]) == {oid: b"from stdin\n"}


def test_cat_blobs_reads_thousands_of_blobs_as_git_has_them(repo: GitRepo) -> None:
    files: dict[str, str | bytes] = {f"d{i % 37}/f{i}.conf": f"value = {i}\n" * (i % 5) for i in range(2000)}
    files["empty"] = ""
    files["binary"] = bytes(range(256)) * 40
    repo.write(files)
    commit = repo.commit("many")
    listed = git.ls_tree(repo.root, commit, "")
    assert len(listed) == 2002
    blobs = git.cat_blobs(repo.root, listed.values())
    for path, oid in listed.items():
        expected = files[path]
        assert blobs[oid] == (expected.encode() if isinstance(expected, str) else expected), path


def test_a_missing_git_is_an_environment_error(repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(git.GitError, match="git is not installed") as err:
        git.run_git(repo.root, "status")
    assert err.value.exit_code == 2
    with pytest.raises(git.GitError, match="git is not installed"):
        git.cat_blobs(repo.root, ["0" * 40])


def test_a_missing_directory_never_runs_git_elsewhere(tmp_path: Path) -> None:
    with pytest.raises(git.NotAGitRepoError, match="not a directory"):
        git.run_git(tmp_path / "gone", "status")


def test_inherited_git_variables_do_not_redirect_git(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo.write({"mine.txt": "mine\n"})
    mine = repo.commit("mine")
    other = GitRepo(tmp_path / "other")
    other.write({"theirs.txt": "theirs\n"})
    other.commit("theirs")
    # what a git hook of the other repository would have set
    monkeypatch.setenv("GIT_DIR", str(other.root / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other.root))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other.root / ".git" / "index"))
    assert git.run_git(repo.root, "rev-parse", "HEAD").stdout.decode().strip() == mine
    assert git.locate(repo.root).root == repo.root.resolve()
    assert os.environ["GIT_DIR"] == str(other.root / ".git")  # put back for the rest of the process
    raw = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo.root, capture_output=True, text=True)
    assert raw.stdout.strip() != mine  # git itself would have been redirected: the layer is what kept it home


def test_no_git_on_path_at_all_is_exit_2_not_a_crash(embedded_repo: GitRepo, run_cfgtool: Callable[..., Any],
                                                      tmp_path: Path) -> None:  # fmt: skip
    """GitPython looks for git when it is first imported (an ImportError): a fresh process must still say exit 2."""
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    proc = run_cfgtool("get", "/data/tracking/PageViewEvent", "owner", cwd=embedded_repo.root, env={"PATH": str(empty)})
    assert proc.returncode == 2, proc.stderr
    assert "git is not installed or not on PATH" in proc.stderr and "internal error" not in proc.stderr
