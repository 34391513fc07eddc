"""The rules of a compile (docs/security.md): the settings, schemas, policy code, ACL and recipients it checks with.

A pull request must not be able to weaken the checks it is checked by. So with `--base REF` every rule comes from
REF: the target branch as the PR was merged against. The change's own versions are only compared with them
(W_RULES_CHANGED). Without a base the rules are the compiled source's own. Repository-local policy code of a git ref
is imported from that ref's objects, never from a working tree. They are materialized into a cache directory keyed by
the ids of its files. Only a working-tree compile imports the working tree's policies.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from cfgtool._util.cachedir import cache_root
from cfgtool.diagnostics import Diagnostic
from cfgtool.store import git
from cfgtool.store.settings import RECIPIENTS_FILE, Settings
from cfgtool.store.sources import Containment, Source, blob_id
from cfgtool.validate.documents import SCHEMA_SUFFIXES, read_schema_files

if TYPE_CHECKING:
    from cfgtool.validate.schemas import SchemaSpec

CODE_DIR = "policy-code"  # under the cache root: one directory per materialized set of policy files


@dataclass(frozen=True)
class Rules:
    """What a compile checks with, and the source it is read from. That is a `--base` ref's, or the compiled one."""

    source: Source
    settings: Settings
    settings_file: str
    settings_text: str | None

    @property
    def schemas_dir(self) -> str | None:
        """The schemas directory (repo-relative), None when the settings name none."""
        return self.settings.schemas_dir(self.source.store)

    @property
    def acl_file(self) -> str:
        """The ACL file's repo-relative path (it may not exist)."""
        return self.settings.acl_file(self.source.store)

    @property
    def recipients_file(self) -> str:
        """The recipients file's repo-relative path (it may not exist)."""
        return self.source.path(RECIPIENTS_FILE)

    @cached_property
    def schema_files(self) -> tuple[dict[str, str | None], list[str]]:
        """(`{path: text}` of the schema files, the symbolic links found among them, never read)."""
        if self.schemas_dir is None:
            return {}, []
        links: list[str] = []
        source = self.source
        commit = source.commit if source.ref is not None else None
        return read_schema_files(source.repo_root, self.schemas_dir, commit, links), links

    @cached_property
    def schemas(self) -> tuple[list[SchemaSpec], list[Diagnostic]]:
        """The compiled schemas, and the problems of the schema files (compiled once per compile)."""
        from cfgtool.validate.schemas import load_schemas  # jsonschema: only when schemas are needed

        return load_schemas(self.schema_files[0], self.settings.name)

    @property
    def uses_secrets(self) -> bool:
        """Whether the store may hold secrets (docs/access.md#secrets): it has recipients, or a schema marks a path
        writeOnly. Stores without either skip the secret checks."""
        if self.text(self.recipients_file) is not None:
            return True
        return any(text and "writeOnly" in text for text in self.schema_files[0].values())

    def text(self, path: str) -> str | None:
        """The text of a rule file inside the store (the ACL, the recipients), None when absent."""
        blob = self.source.read(path)
        return None if blob is None else blob.data.decode("utf-8-sig", "replace")

    def packages(self) -> list[str]:
        """The top-level modules the policies are imported from that the repository itself could provide. cfgtool is
        never one: policies share the running cfgtool's classes."""
        tops = (spec.class_path.partition(":")[0].split(".")[0] for spec in self.settings.policies)
        return sorted({t for t in tops if t.isidentifier() and t != "cfgtool"})

    def files(self, packages: Iterable[str] | None = None) -> dict[str, str]:
        """`{repo-relative path: blob id}` of every rule file that exists: the settings, the schemas, the ACL and the
        recipients. Also the files of the policy `packages`; by default, those the policies name."""
        listing = _Listing(self.source)
        found = listing.files([self.settings_file, self.acl_file, self.recipients_file])
        if self.schemas_dir is not None:
            found |= {p: o for p, o in listing.tree(self.schemas_dir).items() if p.endswith(SCHEMA_SUFFIXES)}
        tops = self.packages() if packages is None else packages
        return dict(sorted((found | listing.code(tops)).items()))

    @cached_property
    def code_files(self) -> dict[str, str]:
        """`{path: blob id}` of the files of the policy packages (`policies/...` or `policies.py`)."""
        return _Listing(self.source).code(self.packages())

    def paths(self) -> list[str]:
        """Repo-relative paths a working-tree compile reads rules from (for `dirty`)."""
        paths = [self.settings_file, self.acl_file, self.recipients_file]
        if self.schemas_dir is not None:
            paths.append(self.schemas_dir)
        for top in self.packages():
            paths += [top, f"{top}.py"]
        return paths

    def policy_root(self) -> Path:
        """The directory repository-local policies are imported from. It is the working tree for a working-tree
        compile. Else it holds the ref's own policy files, materialized in the cache."""
        if self.source.ref is None:
            return self.source.repo_root
        return materialize(self.source.repo_root, self.code_files)

    def changes(self, new: Rules) -> list[Diagnostic]:
        """W_RULES_CHANGED for each rule file that differs between these rules and `new` (a change's own)."""
        packages = sorted({*self.packages(), *new.packages()})  # code a change stops naming counts too
        return rule_changes(self.files(packages), new.files(packages), self.source.describe())


def rule_changes(old: Mapping[str, str], new: Mapping[str, str], trusted: str | None) -> list[Diagnostic]:
    """W_RULES_CHANGED for each path whose blob id differs between `old` and `new`. `trusted` describes where the
    rules used came from. None: there were none, so the change's own were used."""
    out = []
    for path in sorted(p for p in old.keys() | new.keys() if old.get(p) != new.get(p)):
        how = "added" if path not in old else "deleted" if path not in new else "changed"
        used = f"it was checked with the rules of {trusted}" if trusted else "the base has no store, so its own rules"
        out.append(
            Diagnostic.of(
                "W_RULES_CHANGED",
                f"this change {how} the rule file {path}; {used}"
                + (", and the new rules apply once it is merged" if trusted else " were used"),
                file=path,
                notes=("reviewers: rule files decide what every later change may do",),
            )
        )
    return out


def rules_of(source: Source, settings: Settings, settings_file: str) -> Rules:
    """The rules of `source` under its parsed `settings`."""
    blob = source.read(settings_file)
    text = None if blob is None else blob.data.decode("utf-8-sig", "replace")
    return Rules(source, settings, settings_file, text)


class _Listing:
    """Rule files with their blob ids, from a git ref's tree or a working tree. Never through a link."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.root = source.repo_root
        self._links = Containment(self.root)
        self._top: dict[str, str] | None = None

    def files(self, paths: Iterable[str]) -> dict[str, str]:
        """Blob ids of the regular files among `paths` (inside the store, or at the repository's top)."""
        out: dict[str, str] = {}
        for path in paths:
            oid = self._file(path)
            if oid is not None:
                out[path] = oid
        return out

    def _file(self, path: str) -> str | None:
        if self.source.ref is None:
            return self._worktree_oid(path)
        inside = self.source.oids([path]).get(path)
        if inside is not None or "/" in path:
            return inside
        if self._top is None:  # a top-level module file: one listing of the tree's top
            commit = self.source.commit or ""
            self._top = {name: oid for kind, oid, name in git.tree_entries(self.root, commit) if kind == "blob"}
        return self._top.get(path)

    def code(self, packages: Iterable[str]) -> dict[str, str]:
        """Blob ids of the files of top-level Python modules and packages (`name.py`, `name/...`)."""
        found: dict[str, str] = {}
        for top in packages:
            found |= self.files([f"{top}.py"]) | self.tree(top)
        return dict(sorted(found.items()))

    def tree(self, directory: str) -> dict[str, str]:
        """Blob ids of every regular file under `directory`."""
        if self.source.ref is None:
            oids = {p: self._worktree_oid(p) for p in git.ls_files(self.root, directory)}
            return {p: oid for p, oid in oids.items() if oid is not None}
        return git.tree_files(self.root, self.source.commit or "", directory)[0]

    def _worktree_oid(self, path: str) -> str | None:
        if self._links.link_of(path) is not None:
            return None
        try:
            return blob_id((self.root / path).read_bytes())
        except OSError:
            return None


def materialize(repo_root: Path, files: dict[str, str]) -> Path:
    """A directory holding exactly `files` (`{path: blob id}`) read from git objects. It is reused when a check of
    every file's content finds it intact. Else it is written afresh: private, renamed into place atomically."""
    key = hashlib.sha256("".join(f"{p}\0{o}\n" for p, o in sorted(files.items())).encode()).hexdigest()[:32]
    parent = cache_root() / CODE_DIR
    target = parent / key
    if _intact(target, files):
        return target
    parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".new-", dir=parent))  # mkdtemp makes it 0700
    try:
        blobs = git.cat_blobs(repo_root, files.values())
        for path, oid in files.items():
            dest = staging / path
            dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            dest.write_bytes(blobs[oid])
        if target.exists():  # damaged or foreign: set it aside (a reader may still be using it)
            os.replace(target, Path(tempfile.mkdtemp(prefix=".old-", dir=parent)) / "stale")
        os.replace(staging, target)
    except OSError:
        if _intact(target, files):  # another process materialized the same files meanwhile
            shutil.rmtree(staging, ignore_errors=True)
            return target
        return staging  # unwritable cache: import from the private staging copy
    return target


def _intact(directory: Path, files: dict[str, str]) -> bool:
    """Whether `directory` holds exactly `files` with exactly their content, and nothing else. A stray `__pycache__`
    could carry code that Python would prefer to the sources."""
    try:
        found = {
            str(Path(dirpath, name).relative_to(directory).as_posix())
            for dirpath, _, names in os.walk(directory)
            for name in names
        }
        if found != set(files):
            return False
        return all(
            not (directory / p).is_symlink() and blob_id((directory / p).read_bytes()) == o for p, o in files.items()
        )
    except OSError:
        return False
