"""The gate's own files (docs/security.md#what-guards-the-gate): the files that decide how CI runs.

Some files decide which checks run on a change, and with which cfgtool. They are the workflows, the requirements CI
installs cfgtool from, the pre-commit hooks and the code owners. cfgtool cannot take them from the base as it takes
the rules. CI runs what the change holds. So `compile --base` reports every one a change adds, edits or deletes
(W_GATE_CHANGED), for the reviewers. What guards them is branch protection with code-owner review
(`cfgtool acl codeowners`).
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

from cfgtool.diagnostics import Diagnostic
from cfgtool.store import git
from cfgtool.store.sources import Containment, blob_id

# Directories at the repository's top whose every file is the gate's (CI definitions, code owners, actions).
GATE_DIRS = (".github", ".gitlab", ".circleci")
# Files at the repository's top (glob patterns) that decide what CI installs and runs.
GATE_FILES = (
    "requirements*.txt",
    "constraints*.txt",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "poetry.lock",
    "uv.lock",
    "Pipfile",
    "Pipfile.lock",
    "tox.ini",
    "noxfile.py",
    "Makefile",
    ".pre-commit-config.yaml",
    ".gitlab-ci.yml",
    "Jenkinsfile",
    "CODEOWNERS",
)
GATE_NESTED = ("docs/CODEOWNERS",)  # GitHub also reads code owners there


def is_gate_file(path: str) -> bool:
    """Whether the repo-relative `path` is one of the gate's files."""
    if path in GATE_NESTED or path.split("/", 1)[0] in GATE_DIRS:
        return True
    return "/" not in path and any(fnmatch.fnmatchcase(path, pattern) for pattern in GATE_FILES)


def gate_files(root: Path, commit: str | None) -> dict[str, str]:
    """`{repo-relative path: blob id}` of the gate's files at `commit`. None is the working tree: there files git
    ignores are left out, and nothing is read through a symbolic link."""
    if commit is not None:
        found: dict[str, str] = {}
        for kind, oid, name in git.tree_entries(root, commit):
            if kind == "blob" and is_gate_file(name):
                found[name] = oid
            elif kind == "tree" and name in (*GATE_DIRS, *(p.split("/")[0] for p in GATE_NESTED)):
                found |= {p: o for p, o in git.ls_tree(root, commit, name).items() if is_gate_file(p)}
        return dict(sorted(found.items()))
    top = [entry.name for entry in root.iterdir() if entry.name not in GATE_DIRS and is_gate_file(entry.name)]
    paths = git.listed(root, [*top, *GATE_NESTED])
    for directory in GATE_DIRS:
        if (root / directory).is_dir():
            paths += git.ls_files(root, directory)
    links = Containment(root)
    out: dict[str, str] = {}
    for path in paths:
        if links.link_of(path) is None:
            try:
                out[path] = blob_id((root / path).read_bytes())
            except OSError:  # not a file (a submodule), or gone meanwhile
                continue
    return dict(sorted(out.items()))


def gate_changes(root: Path, base: str, head: str | None) -> list[Diagnostic]:
    """W_GATE_CHANGED for each gate file that differs between the commit `base` and `head` (None: the working
    tree)."""
    old, new = gate_files(root, base), gate_files(root, head)
    out = []
    for path in sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p)):
        how = "added" if path not in old else "deleted" if path not in new else "changed"
        out.append(
            Diagnostic.of(
                "W_GATE_CHANGED",
                f"this change {how} {path}, a file that decides how CI runs; cfgtool cannot check it, and CI may"
                " already run the changed version",
                file=path,
                notes=("reviewers: only branch protection with code-owner review guards this file",),
            )
        )
    return out
