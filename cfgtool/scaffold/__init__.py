"""`cfgtool init`: scaffold a config repository that compiles cleanly out of the box.

The files come from `files/` beside this module: a store with `_CONFIG_STORE`, an example dataset and tag, a
schema, the three config workflows, a pre-commit hook and a README. A path part spelled `dot-x` is written as
`.x` (so the templates are no hidden files in the package). `requirements.txt`, which tells CI and pre-commit
how to install cfgtool, is written from the running installation. Existing files are never overwritten: each
file is written whole to a temporary file and hard-linked into place, which fails instead of replacing anything.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from cfgtool._version import __version__
from cfgtool.errors import SourceError, UsageError
from cfgtool.snapshot import write_atomic_bytes
from cfgtool.store import git

TEMPLATES = Path(__file__).parent / "files"
STORE_DIR = "store"
REQUIREMENTS = "requirements.txt"
_REQUIREMENTS_HEAD = """\
# How the config workflows (.github/workflows/config-*.yml) and pre-commit's users install cfgtool.
# Point it at where your team gets cfgtool: a package index (cfgtool==X.Y.Z) or a git URL
# (cfgtool @ git+https://example.com/your-org/cfgtool@vX.Y.Z).
"""


@dataclass(frozen=True)
class InitResult:
    """What `init_repository` did: files created and skipped (relative paths), and whether it ran `git init`."""

    root: Path
    created: tuple[str, ...]
    skipped: tuple[str, ...]
    git_initialized: bool
    requirement: str

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "created": list(self.created),
            "skipped": list(self.skipped),
            "git_initialized": self.git_initialized,
            "requirement": self.requirement,
        }


def init_repository(directory: Path, *, add_missing: bool = False, requirement: str | None = None) -> InitResult:
    """Scaffold a config repository in `directory` (created if needed; `git init` when it is in no repository).

    Refuses (UsageError) a directory whose store already exists unless `add_missing`; even then, only missing
    files are written. `requirement` is the pip requirement for cfgtool (default: this installation's).
    """
    root = directory.resolve()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{directory} is a file, not a directory", hint="pass a new or existing directory")
    if (root / STORE_DIR / "_CONFIG_STORE").exists() and not add_missing:
        raise UsageError(
            f"{root} already holds a store ({STORE_DIR}/_CONFIG_STORE)",
            hint="pass --add-missing to add only the scaffold files it lacks (existing files are never overwritten)",
        )
    spec = requirement or installed_requirement()
    created: list[str] = []
    skipped: list[str] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        for rel, text in scaffold_files(spec):
            (created if _create_new(root / rel, text) else skipped).append(rel)
    except OSError as err:
        raise SourceError(f"cannot write the scaffold in {root}: {err.strerror or err}") from err
    git_initialized = not _in_work_tree(root)
    if git_initialized:
        git.run_git(root, "init", "-q", "-b", "main")
    return InitResult(root, tuple(created), tuple(skipped), git_initialized, spec)


def scaffold_files(requirement: str) -> Iterator[tuple[str, str]]:
    """(relative path, text) of every scaffold file, sorted by path."""
    files = {
        "/".join(_output_name(part) for part in path.relative_to(TEMPLATES).parts): path.read_text(encoding="utf-8")
        for path in TEMPLATES.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    files[REQUIREMENTS] = f"{_REQUIREMENTS_HEAD}{requirement}\n"
    yield from sorted(files.items())


def installed_requirement() -> str:
    """A pip requirement for the running cfgtool: its git URL and commit when installed from git, else its version."""
    try:
        text = distribution("cfgtool").read_text("direct_url.json")
    except PackageNotFoundError:
        text = None
    if text:
        origin = json.loads(text)
        vcs = origin.get("vcs_info")
        if vcs and vcs.get("vcs") == "git" and not origin["url"].startswith("file:"):
            return f"cfgtool @ git+{origin['url']}@{vcs['commit_id']}"
    return f"cfgtool=={__version__}"


def _output_name(part: str) -> str:
    return "." + part.removeprefix("dot-") if part.startswith("dot-") else part


def _create_new(path: Path, text: str) -> bool:
    """Write `path` atomically unless it exists (False)."""
    if path.exists() or path.is_symlink():
        return False
    return write_atomic_bytes(path, text.encode("utf-8"), replace=False)


def _in_work_tree(path: Path) -> bool:
    proc = git.run_git(path, "rev-parse", "--is-inside-work-tree", check=False)
    return proc.returncode == 0 and proc.stdout.strip() == b"true"
