"""`cfgtool init`: scaffold a config repository that compiles cleanly out of the box.

The files come from `files/` beside this module. They are a store with `_CONFIG_STORE`, an example dataset and tag,
and a schema. Also the three config workflows, a pre-commit hook and a README. A path part spelled `dot-x` is written
as `.x`. So the templates are no hidden files in the package. `requirements.txt`, which tells CI and pre-commit how
to install cfgtool, is written from the running installation. Existing files are never overwritten. Each file is
written whole to a temporary file and hard-linked into place. Linking fails instead of replacing anything.

`.github/CODEOWNERS` is written last, from the store's ACL (`cfgtool acl codeowners`), when it is missing.

Around an existing store (`--add-missing`), only the repository's plumbing is added: workflows, hook, requirements,
README. Nothing goes under the store, and none of the scaffold's schemas. They would change the store's configs, its
rules and so its digest. A dataset the user deleted must stay deleted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from cfgtool._util.atomic import write_atomic_bytes
from cfgtool.errors import SourceError, UsageError
from cfgtool.store import git

TEMPLATES = Path(__file__).parent / "files"
STORE_DIR = "store"
SCHEMAS_DIR = "schemas"  # the scaffold store's schemas (its `schemas: ../schemas`): rules of that store
REQUIREMENTS = "requirements.txt"
PUBLISH_BRANCH = "main"  # the branch config-publish.yml publishes from
UNSET_REQUIREMENT = "<set-how-ci-installs-cfgtool>"  # not a valid requirement: pip stops and shows this line
_REQUIREMENTS_HEAD = """\
# How the config workflows (.github/workflows/config-*.yml) and pre-commit's users install cfgtool.
# Point it at where your team gets cfgtool: its git URL (cfgtool @ git+https://example.com/your-org/cfgtool@v0.1.0)
# or your own package index. Not `cfgtool==X.Y.Z` from PyPI: the PyPI project named cfgtool is a different one.
"""


_INSTALL_LINE = "pip install -r requirements.txt"  # the README's install step, once requirements.txt says how
_SET_REQUIREMENT_FIRST = f"""\
# First say where CI gets cfgtool: replace the last line of requirements.txt, {UNSET_REQUIREMENT},
# with its git URL (cfgtool @ git+https://example.com/your-org/cfgtool@v0.1.0) or your index's name. Then:
"""


@dataclass(frozen=True)
class InitResult:
    """What `init_repository` did: files created and skipped (relative paths), and whether it ran `git init`. Also
    the requirement it wrote (UNSET_REQUIREMENT when the user must set one) and the repository's current branch. Also
    the scaffold's store and schema files left out because a store exists (`--add-missing`)."""

    root: Path
    created: tuple[str, ...]
    skipped: tuple[str, ...]
    git_initialized: bool
    requirement: str
    branch: str | None
    left_out: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "created": list(self.created),
            "skipped": list(self.skipped),
            "git_initialized": self.git_initialized,
            "requirement": self.requirement,
            "branch": self.branch,
            "left_out": list(self.left_out),
        }


def init_repository(directory: Path, *, add_missing: bool = False, requirement: str | None = None) -> InitResult:
    """Scaffold a config repository in `directory` (created if needed; `git init` when it is in no repository).

    It raises UsageError, before anything is written, in three cases. One: the directory is not a repository's root.
    GitHub and pre-commit read the workflows and the hook only there. Two: a scaffold path is blocked by a file.
    Three: the store exists, unless `add_missing`. Even then only missing files are written. None goes under the
    store or the scaffold's schemas, so the store's configs and rules stay as they are. `requirement` is the pip
    requirement for cfgtool. It defaults to this installation's git URL, else a placeholder the user must replace.
    """
    root = directory.resolve()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{directory} is a file, not a directory", hint="pass a new or existing directory")
    top = _work_tree_root(root)
    if top is not None and top != root:
        raise UsageError(
            f"{root} is inside the git repository {top}: the workflows and the pre-commit hook work only at a"
            " repository's root",
            hint=f"run `cfgtool init {top} --add-missing`, or pass a directory outside any repository",
        )
    existing = (root / STORE_DIR / "_CONFIG_STORE").exists()
    if existing and not add_missing:
        raise UsageError(
            f"{root} already holds a store ({STORE_DIR}/_CONFIG_STORE)",
            hint="pass --add-missing to add only the workflows, hook and requirements it lacks (the store is left"
            " as it is)",
        )
    spec = requirement or installed_requirement()
    files = list(scaffold_files(spec))
    left_out = [rel for rel, _ in files if existing and rel.startswith((f"{STORE_DIR}/", f"{SCHEMAS_DIR}/"))]
    files = [(rel, text) for rel, text in files if rel not in left_out]
    for rel, _ in files:
        blocked = next((p for p in (root / rel).parents if p.is_relative_to(root) and p.is_file()), None)
        if blocked is not None:
            raise UsageError(
                f"{blocked} is a file, so {rel} cannot be created", hint="move it away, or scaffold another directory"
            )
    created: list[str] = []
    skipped: list[str] = []
    try:
        root.mkdir(parents=True, exist_ok=True)
        for rel, text in files:
            (created if _create_new(root / rel, text) else skipped).append(rel)
    except OSError as err:
        raise SourceError(f"cannot write {err.filename or root}: {err.strerror or err}") from err
    git_initialized = top is None
    if git_initialized:
        git.run_git(root, "init", "-q", "-b", PUBLISH_BRANCH)
    from cfgtool.access.codeowners import CODEOWNERS  # the ACL machinery: only once files are written

    owners = _codeowners(root)
    if owners is not None:
        (created if owners else skipped).append(CODEOWNERS)
    else:
        left_out.append(CODEOWNERS)
    created.sort()
    skipped.sort()
    branch = git.run_git(root, "symbolic-ref", "--short", "-q", "HEAD", check=False).stdout.decode().strip() or None
    return InitResult(root, tuple(created), tuple(skipped), git_initialized, spec, branch, tuple(left_out))


def _codeowners(root: Path) -> bool | None:
    """Write `.github/CODEOWNERS` from the store's ACL unless it exists (False). None when the ACL has errors;
    `cfgtool acl codeowners` writes it once they are fixed."""
    from cfgtool.access.codeowners import AclBroken, codeowners_at

    try:
        found, path, _ = codeowners_at(root, STORE_DIR)
    except AclBroken:
        return None
    try:
        return _create_new(path, found.text)
    except OSError as err:
        raise SourceError(f"cannot write {err.filename or path}: {err.strerror or err}") from err


def scaffold_files(requirement: str) -> Iterator[tuple[str, str]]:
    """(relative path, text) of every scaffold file, sorted by path."""
    files = {
        "/".join(_output_name(part) for part in path.relative_to(TEMPLATES).parts): path.read_text(encoding="utf-8")
        for path in TEMPLATES.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    files[REQUIREMENTS] = f"{_REQUIREMENTS_HEAD}{requirement}\n"
    if requirement == UNSET_REQUIREMENT:  # the README's `pip install -r` would stop at the placeholder
        files["README.md"] = files["README.md"].replace(_INSTALL_LINE, _SET_REQUIREMENT_FIRST + _INSTALL_LINE, 1)
    yield from sorted(files.items())


def installed_requirement() -> str:
    """A pip requirement for the running cfgtool: its git URL and commit when installed from a git remote. Else
    UNSET_REQUIREMENT: a version pin would fetch the unrelated PyPI project of the same name."""
    try:
        text = distribution("cfgtool").read_text("direct_url.json")
    except PackageNotFoundError:
        text = None
    if text:
        origin = json.loads(text)
        vcs = origin.get("vcs_info")
        if vcs and vcs.get("vcs") == "git" and not origin["url"].startswith("file:"):
            return f"cfgtool @ git+{origin['url']}@{vcs['commit_id']}"
    return UNSET_REQUIREMENT


def _output_name(part: str) -> str:
    return "." + part.removeprefix("dot-") if part.startswith("dot-") else part


def _create_new(path: Path, text: str) -> bool:
    """Write `path` atomically unless it exists (False)."""
    if path.exists() or path.is_symlink():
        return False
    return write_atomic_bytes(path, text.encode("utf-8"), replace=False)


def _work_tree_root(path: Path) -> Path | None:
    """The root of the git work tree holding `path` (or its nearest existing ancestor), or None."""
    existing = next(p for p in (path, *path.parents) if p.exists())
    proc = git.run_git(existing, "rev-parse", "--show-toplevel", check=False)
    return Path(proc.stdout.decode().strip()).resolve() if proc.returncode == 0 else None
