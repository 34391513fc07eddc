"""The gate's own files (docs/security.md#what-guards-the-gate): a change to a file that decides how CI runs is
reported by `cfgtool compile --base` (W_GATE_CHANGED), from a merge commit as `config-pr.yml` checks it and from a
working tree, since cfgtool cannot take such files from the base as it takes the rules."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]

GATE = {
    ".github/workflows/config-pr.yml": "on: pull_request\n",
    ".github/CODEOWNERS": "/store/ @org/platform\n",
    "requirements.txt": "cfgtool @ git+https://example.invalid/cfgtool@v1\n",
    ".pre-commit-config.yaml": "repos: []\n",
}


def _repo(repo: GitRepo) -> GitRepo:
    repo.write({"store/_CONFIG_STORE": "name: demo\n", "store/data/a/main.conf": "a = 1\n", **GATE})
    repo.write({"docs/guide.md": "how to\n", ".gitignore": "build/\n"})
    repo.commit("base")
    return repo


def _gate(run_cfgtool: Run, repo: GitRepo, *args: str) -> tuple[int, dict[str, str]]:
    """(exit status, {file: message} of the W_GATE_CHANGED diagnostics) of a real `compile --base` run."""
    proc = run_cfgtool("compile", "--base", *args, "--format", "json", cwd=repo.root)
    assert proc.returncode in (0, 1), proc.stderr
    diags = json.loads(proc.stdout)["diagnostics"]
    return proc.returncode, {d["file"]: d["message"] for d in diags if d["code"] == "W_GATE_CHANGED"}


def test_gate_a_pr_that_edits_ci_files_is_flagged_for_each_file(store_repo: GitRepo, run_cfgtool: Run) -> None:
    repo = _repo(store_repo)
    repo.git("checkout", "-q", "-b", "pr")
    repo.write({".github/workflows/config-pr.yml": "on: push\n", "requirements.txt": "cfgtool\n"})
    repo.write({"pyproject.toml": "[project]\nname = 'x'\n", ".pre-commit-config.yaml": None})
    repo.write({"docs/guide.md": "how to, again\n", "store/data/a/main.conf": "a = 2\n"})  # not the gate's
    repo.commit("the pull request")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge pull request", "pr")
    status, gate = _gate(run_cfgtool, repo, "HEAD^1", "--ref", "HEAD")
    assert status == 0  # a warning, for the reviewers
    assert sorted(gate) == [
        ".github/workflows/config-pr.yml",
        ".pre-commit-config.yaml",
        "pyproject.toml",
        "requirements.txt",
    ]
    assert gate["pyproject.toml"].startswith("this change added pyproject.toml, a file that decides how CI runs")
    assert gate[".pre-commit-config.yaml"].startswith("this change deleted .pre-commit-config.yaml")
    assert gate["requirements.txt"].startswith("this change changed requirements.txt")
    text = run_cfgtool("compile", "--base", "HEAD^1", "--ref", "HEAD", cwd=repo.root)
    assert "requirements.txt: W_GATE_CHANGED this change changed requirements.txt" in text.stdout
    assert "note: reviewers: only branch protection with code-owner review guards this file" in text.stdout
    strict = run_cfgtool("compile", "--base", "HEAD^1", "--ref", "HEAD", "--strict", cwd=repo.root)
    assert strict.returncode == 1


def test_gate_a_working_tree_change_is_flagged_and_ignored_files_are_not(store_repo: GitRepo, run_cfgtool: Run) -> None:
    repo = _repo(store_repo)
    assert _gate(run_cfgtool, repo, "HEAD") == (0, {})  # nothing changed
    repo.write({".github/CODEOWNERS": "/store/ @someone-else\n", "build/requirements.txt": "x\n"})
    repo.write({"requirements-dev.txt": "pytest\n", "docs/CODEOWNERS": "* @me\n"})  # untracked, not ignored
    status, gate = _gate(run_cfgtool, repo, "HEAD")
    assert status == 0
    assert sorted(gate) == [".github/CODEOWNERS", "docs/CODEOWNERS", "requirements-dev.txt"]
    assert "W_GATE_CHANGED" not in run_cfgtool("compile", cwd=repo.root).stdout  # only against a base
