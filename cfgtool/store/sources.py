"""Sources: where a store's files come from. That is the working tree, or a git ref read straight from git objects.

Both list the store's files as repo-relative POSIX paths and read them in bulk as `Blob`s. Each carries a git blob
id; for the working tree it is computed the way git does. So parsed files can be cached by content. A git ref is read
without a checkout: one `git ls-tree -r -z` and one `git cat-file --batch` per `load`.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import stat
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from cfgtool.errors import SourceError
from cfgtool.store import git
from cfgtool.store.settings import SETTINGS_FILE
from cfgtool.store.statcache import StatCache

DEFAULT_STORE = "store"


class StoreNotFoundError(SourceError):
    """The store directory or its `_CONFIG_STORE` does not exist in the source (exit 2)."""


@dataclass(frozen=True)
class Blob:
    """A file's content: repo-relative `path`, git blob id `oid`, raw `data`."""

    path: str
    oid: str
    data: bytes

    def text(self) -> str:
        """The content decoded as UTF-8 (a BOM is dropped); raises UnicodeDecodeError."""
        return self.data.decode("utf-8-sig")


def blob_id(data: bytes) -> str:
    """The id git gives a blob with this content (sha1 of `blob <size>\\0<data>`)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


class Source(ABC):
    """A store at one state. `store` is its directory relative to the repository root ('' = the root)."""

    repo_root: Path
    store: str
    ref: str | None  # None: the working tree
    commit: str | None  # the commit read (for the working tree: HEAD, None before the first commit)

    def __init__(self) -> None:
        self._cache: dict[str, Blob] = {}
        self.reads = 0  # files read so far (a working tree's are hashed as they are read)
        self.unsafe: list[str] = []  # symbolic links in the store: never read or followed (E_UNSAFE_PATH)

    @abstractmethod
    def files(self) -> list[str]:
        """Repo-relative paths of every file under the store directory, sorted."""

    @abstractmethod
    def _read(self, paths: list[str]) -> dict[str, Blob]:
        """Read existing files among `paths` (not cached yet) in one batch."""

    @property
    @abstractmethod
    def dirty(self) -> bool:
        """Whether the content differs from `commit` (always False for a ref)."""

    def load(self, paths: Iterable[str]) -> dict[str, Blob]:
        """`{path: Blob}` for the files among `paths` that exist, read in one batch; results are cached."""
        wanted = list(dict.fromkeys(paths))
        missing = [p for p in wanted if p not in self._cache]
        if missing:
            found = self._read(missing)
            self.reads += len(found)
            self._cache.update(found)
        return {p: self._cache[p] for p in wanted if p in self._cache}

    @abstractmethod
    def flush(self) -> None:
        """Write what this source learned about its files for the next one (a compile calls it once)."""

    def read(self, path: str) -> Blob | None:
        """One file (cached), None when it does not exist. Prefer `load` for many files."""
        return self.load([path]).get(path)

    def oids(self, paths: Iterable[str]) -> dict[str, str]:
        """`{path: blob id}` for the files among `paths` that exist (a git ref answers without reading them)."""
        return {p: blob.oid for p, blob in self.load(paths).items()}

    def texts(self, paths: Iterable[str]) -> Mapping[str, str]:
        """The text of each of `paths`, read only when asked for (a Snapshot keeps these for later)."""
        return _Texts(self, tuple(dict.fromkeys(paths)))

    def path(self, rel: str) -> str:
        """The repo-relative path of `rel`, a path relative to the store root."""
        return f"{self.store}/{rel}" if self.store else rel

    def rel(self, path: str) -> str:
        """The store-relative form of a repo-relative path under the store."""
        return path[len(self.store) + 1 :] if self.store else path

    def describe(self) -> str:
        """For messages: `the working tree` or `ref config/v3 (commit 1a2b3c4)`."""
        if self.ref is None:
            return "the working tree"
        return f"ref {self.ref} (commit {(self.commit or '')[:7]})"

    def line_reader(self) -> Callable[[str, int], str | None]:
        """A `read_line(file, line)` for diagnostic renderers, over this source's files."""
        split: dict[str, list[str]] = {}

        def read_line(file: str, line: int) -> str | None:
            if file not in split:
                blob = self.read(file)
                split[file] = blob.data.decode("utf-8-sig", "replace").splitlines() if blob else []
            lines = split[file]
            return lines[line - 1] if 1 <= line <= len(lines) else None

        return read_line

    def check_store(self, files: list[str]) -> None:
        """StoreNotFoundError unless the store directory exists and has `_CONFIG_STORE`."""
        where = f"in {self.describe()} of {self.repo_root}"
        shown = self.store or "."
        if not files:
            raise StoreNotFoundError(
                f"no store directory '{shown}' {where}",
                hint="pass --store DIR to name the store directory (relative to the repository root)",
            )
        if self.path(SETTINGS_FILE) not in files:
            raise StoreNotFoundError(
                f"'{shown}' {where} is not a cfgtool store: it has no {SETTINGS_FILE} file",
                hint=f"create an empty {self.path(SETTINGS_FILE)} to make it one, or pass --store DIR",
            )


def settings_at(repo: Path, store: str | Path, commit: str) -> tuple[str, str, str]:
    """(the store's repo-relative directory, its settings file's repo-relative path, that file's text, '' when
    absent) at `commit`. It reads that one file; a `GitSource` lists the whole store first."""
    root = git.locate(repo).root
    store_dir = _store_dir(root, store)
    path = f"{store_dir}/{SETTINGS_FILE}" if store_dir else SETTINGS_FILE
    data = git.read_file(root, commit, path)
    return store_dir, path, data.decode("utf-8-sig", "replace") if data is not None else ""


def _store_dir(root: Path, store: str | Path) -> str:
    """The store directory relative to the repository root, as a normalized POSIX path ('' = the root)."""
    path = Path(store)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(root.resolve())
        except ValueError as err:
            raise StoreNotFoundError(
                f"store {store} is outside the repository {root}",
                hint="pass --store DIR inside the repository",
            ) from err
    rel = posixpath.normpath(path.as_posix())
    if rel == ".." or rel.startswith("../"):
        raise StoreNotFoundError(f"store {store} is outside the repository {root}", hint="pass --store DIR")
    return "" if rel == "." else rel


class WorkTreeSource(Source):
    """The store as it is on disk, restricted to files git would commit. Ignored files are left out.

    Nothing is read through a symbolic link (docs/security.md). A link in the store is listed in `unsafe` instead. So
    is a file with a link among the directories on its way. `load` only reads files inside the repository.
    """

    def __init__(self, repo: Path, store: str | Path = DEFAULT_STORE, *, listed: bool = True) -> None:
        """`listed` False leaves the listing, and the check that the store exists, to the first `files()`. A query
        about one key (`cfgtool.store.scope`) looks at a few directories instead."""
        super().__init__()
        located = git.locate(repo)
        if located.bare:
            raise git.NotAGitRepoError(
                f"{located.root} is a bare repository and has no working tree", hint="pass --ref REF"
            )
        self.repo_root = located.root
        self._root = str(located.root)  # for the paths of every file: a store may have 200,000
        self.store = _store_dir(self.repo_root, store)
        self._links = Containment(self.repo_root)
        link = self._links.link_of(self.store) if self.store else None
        if link is not None:
            raise StoreNotFoundError(
                f"the store directory {self.store} is reached through the symbolic link {link}",
                hint="cfgtool never follows links out of the repository: pass --store with the real directory",
            )
        self.ref = None
        self.commit = git.resolve_commit(self.repo_root, "HEAD")
        self._files: list[str] | None = None
        self._stats: dict[str, os.stat_result] = {}  # lstat of each listed file, as listed
        self._promised: dict[str, str] = {}  # blob ids answered from the stat cache: what a read must find
        self.stat_cache: StatCache | None = None  # once listed
        self._untracked: bool | None = None  # once listed: whether untracked files are among the listed ones
        if listed:
            self.files()

    @property
    def is_listed(self) -> bool:
        """Whether the whole store has been listed (at construction, or by a call to `files()`)."""
        return self._files is not None

    def files(self) -> list[str]:
        if self._files is None:
            stats: dict[str, os.stat_result] = {}
            unsafe: set[str] = set()
            listed = git.ls_files_tracked(self.repo_root, self.store)
            self._untracked = not all(listed.values())
            for p in listed:
                link, info = self._links.inspect(p)
                if link is not None:
                    unsafe.add(link)
                elif info is not None:
                    stats[p] = info
            self.unsafe = sorted(unsafe)
            files = sorted(stats)
            self.check_store(files)
            self._files, self._stats = files, stats
            self.stat_cache = StatCache(self.repo_root, self.store)
        return list(self._files)

    def oids(self, paths: Iterable[str]) -> dict[str, str]:
        """`{path: blob id}` for the files among `paths` that exist. Once the store is listed (a compile), some files
        are not read. Those are files whose `lstat` the stat cache knows (`cfgtool.store.statcache`)."""
        if self.stat_cache is None:
            return super().oids(paths)
        out: dict[str, str] = {}
        missing: list[str] = []
        for p in paths:
            blob = self._cache.get(p)
            info = self._stats.get(p) if blob is None else None
            oid = self.stat_cache.get(p, info) if info is not None else None
            if blob is not None:
                out[p] = blob.oid
            elif oid is not None:
                out[p] = self._promised[p] = oid
            else:
                missing.append(p)
        for p, blob in self.load(missing).items():
            out[p] = blob.oid
        return out

    def flush(self) -> None:
        """Write the stat cache, when this source's answers changed it."""
        if self.stat_cache is not None:
            self.stat_cache.save()

    def _read(self, paths: list[str]) -> dict[str, Blob]:
        out: dict[str, Blob] = {}
        read_at = time.time_ns()  # before any content is read: the stat cache's racy rule
        for p in paths:
            link, info = self._links.inspect(p)
            if link is not None or info is None:
                continue
            try:
                with open(f"{self._root}/{p}", "rb") as handle:  # a string path: pathlib costs more than the read
                    data = handle.read()
            except OSError as err:
                raise SourceError(f"cannot read {p}: {err.strerror}", hint="check the file's permissions") from err
            oid = blob_id(data)
            if self._promised.get(p, oid) != oid:
                raise SourceError(
                    f"{p} changed while it was being compiled", hint="run the command again once the file is saved"
                )
            if self.stat_cache is not None:
                self.stat_cache.put(p, info, oid, read_at)
            out[p] = Blob(p, oid, data)
        return out

    @cached_property
    def dirty(self) -> bool:
        """Whether the store's content differs from HEAD (modified, added, deleted or untracked files); True with
        no commit. A listed store already knows its untracked files: git only compares the tracked ones."""
        if self.commit is None:
            return True
        if self._untracked is None:
            return git.is_dirty(self.repo_root, self.store)
        return self._untracked or git.differs_from_head(self.repo_root, self.store)


class Containment:
    """Which repo-relative paths of a working tree can be read without leaving it. None is absolute or climbs with
    `..`. None is, or passes through, a symbolic link. Directories are checked once."""

    def __init__(self, root: Path) -> None:
        self._root = str(root)  # paths as strings: asked for every file of a store
        self._dirs: dict[str, str | None] = {"": None}  # directory -> the link on its way (None: safe)

    def link_of(self, rel: str) -> str | None:
        """The first part of `rel` that is a symbolic link, or `rel` itself when it is not a plain relative path.
        None when `rel` can be read safely (it need not exist)."""
        return self.examine(rel)[0]

    def examine(self, rel: str) -> tuple[str | None, bool]:
        """`link_of(rel)`, and whether `rel` is a regular file that can be read."""
        link, info = self.inspect(rel)
        return link, info is not None

    def inspect(self, rel: str) -> tuple[str | None, os.stat_result | None]:
        """`link_of(rel)`, and the `lstat` of `rel` when it is a regular file that can be read (else None). It costs
        one lstat of the file, for every file of a store. Its directories are checked once."""
        if not rel or rel.startswith("/") or ".." in rel.split("/") or "\0" in rel:
            return rel or None, None
        found = self._dir(rel.rpartition("/")[0])
        if found is not None:
            return found, None
        try:
            info = os.lstat(f"{self._root}/{rel}")
        except OSError:
            return None, None
        mode = info.st_mode
        return (rel, None) if stat.S_ISLNK(mode) else (None, info if stat.S_ISREG(mode) else None)

    def _dir(self, directory: str) -> str | None:
        if directory in self._dirs:
            return self._dirs[directory]
        parent, _, _ = directory.rpartition("/")
        found = self._dir(parent)
        if found is None and _is_link(f"{self._root}/{directory}"):
            found = directory
        self._dirs[directory] = found
        return found


class GitSource(Source):
    """The store at a git ref, read from git objects without touching the working tree."""

    def __init__(self, repo: Path, ref: str, store: str | Path = DEFAULT_STORE) -> None:
        super().__init__()
        self.repo_root = git.locate(repo).root
        self.store = _store_dir(self.repo_root, store)
        self.ref = ref
        commit = git.resolve_commit(self.repo_root, ref)
        if commit is None:
            raise git.UnknownRefError(
                f"unknown ref '{ref}' in {self.repo_root}: it names no branch, tag or commit",
                hint="check the name with `git tag` or `git branch -a`, or fetch it first",
            )
        self.commit = commit
        self._entries, self.unsafe = git.tree_files(self.repo_root, commit, self.store)
        self._files = sorted(self._entries)
        self.check_store(self._files)

    def files(self) -> list[str]:
        return list(self._files)

    def oid(self, path: str) -> str | None:
        """The blob id of a file without reading it (None when it does not exist)."""
        return self._entries.get(path)

    def oids(self, paths: Iterable[str]) -> dict[str, str]:
        return {p: self._entries[p] for p in paths if p in self._entries}

    def _read(self, paths: list[str]) -> dict[str, Blob]:
        present = [p for p in paths if p in self._entries]
        data = git.cat_blobs(self.repo_root, (self._entries[p] for p in present))
        return {p: Blob(p, self._entries[p], data[self._entries[p]]) for p in present}

    @property
    def dirty(self) -> bool:
        return False

    def flush(self) -> None:
        """Nothing to keep: a ref's blob ids come from git."""


class _Texts(Mapping[str, str]):
    """Texts of a source's files, decoded on first access (undecodable bytes replaced)."""

    def __init__(self, source: Source, paths: tuple[str, ...]) -> None:
        self._source = source
        self._paths = paths
        self._known = frozenset(paths)
        self._blobs: dict[str, Blob] | None = None

    def __getitem__(self, path: str) -> str:
        if path not in self._known:
            raise KeyError(path)
        if self._blobs is None:  # the first read fetches all of them in one batch
            self._blobs = self._source.load(self._paths)
        blob = self._blobs.get(path)
        if blob is None:
            raise KeyError(path)
        return blob.data.decode("utf-8-sig", "replace")

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)


def _is_link(path: str) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def open_source(repo: Path | None = None, store: str | Path = DEFAULT_STORE, ref: str | None = None) -> Source:
    """The store in `repo` (default: the repository containing the current directory) at `ref`, or the working
    tree when `ref` is None."""
    where = repo if repo is not None else Path.cwd()
    return WorkTreeSource(where, store) if ref is None else GitSource(where, ref, store)
