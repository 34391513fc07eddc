"""The part of a store that one key needs: its nodes discovered one directory at a time.

A query about key K reads the nodes of L(K). They are K's nearest node, its ancestors and everything their includes
import, transitively. `Scope` discovers exactly those, and leaves every other directory of the store unread. It
reports the discovery problems `discover` reports for them. Those are E_BAD_KEY for a child directory, E_UNSAFE_PATH,
E_DUPLICATE_INCLUDES and includes errors.

Which files a source has comes from a `Listing`, one directory at a time. `FullListing` reads a source's complete
file list; a git ref's tree costs one `ls-tree`. `WorkTreeListing` looks at the working tree with `os.scandir`. Then
git confirms, in one `ls-files` over the exact paths it relied on, that each is a file git would commit (not
ignored). When git disagrees, `verified()` is False and the caller answers from the full listing instead.
"""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from cfgtool.diagnostics import Diagnostic
from cfgtool.store import git, keys
from cfgtool.store.includes import expand
from cfgtool.store.nodes import (
    _NODE_FILES,
    MAIN_FILE,
    Node,
    NodeFile,
    Store,
    _includes,
    _settings,
    bad_directory,
    unsafe_link,
)
from cfgtool.store.settings import SETTINGS_FILE
from cfgtool.store.sources import Source, WorkTreeSource


@dataclass(frozen=True)
class Entries:
    """One directory of a listing: the names of its regular files and symbolic links, and its child directories that
    hold something listed. Each child says whether a regular file is among it; only those can be nodes."""

    files: frozenset[str]
    links: tuple[str, ...]
    dirs: Mapping[str, bool]


class Listing(ABC):
    """The files a source lists (those a compile reads), asked one directory (repo-relative) at a time."""

    @abstractmethod
    def entries(self, directory: str) -> Entries:
        """What `directory` holds directly; empty when it does not exist."""

    @abstractmethod
    def links_under(self, directory: str) -> list[str]:
        """Repo-relative paths of every listed symbolic link at any depth under `directory`."""


class FullListing(Listing):
    """A listing indexed from a source's complete file list (`Source.files()` and `Source.unsafe`)."""

    def __init__(self, source: Source) -> None:
        self._entries: dict[str, tuple[set[str], list[str], dict[str, bool]]] = {}
        self._links = sorted(source.unsafe)
        for path in source.files():
            self._add(path, link=False)
        for path in self._links:
            self._add(path, link=True)

    def _add(self, path: str, *, link: bool) -> None:
        directory, _, name = path.rpartition("/")
        files, links, _ = self._entry(directory)
        (links.append(path) if link else files.add(name))
        while directory:  # mark the way down from the top
            up, _, child = directory.rpartition("/")
            dirs = self._entry(up)[2]
            dirs[child] = dirs.get(child, False) or not link
            directory = up

    def _entry(self, directory: str) -> tuple[set[str], list[str], dict[str, bool]]:
        return self._entries.setdefault(directory, (set(), [], {}))

    def entries(self, directory: str) -> Entries:
        files, links, dirs = self._entries.get(directory, (set(), [], {}))
        return Entries(frozenset(files), tuple(links), MappingProxyType(dirs))

    def links_under(self, directory: str) -> list[str]:
        prefix = directory + "/"
        return [p for p in self._links if p.startswith(prefix)]


class WorkTreeListing(Listing):
    """The working tree as `os.scandir` sees it, never through a symbolic link. Every path it relied on is kept as a
    claim. `verified()` asks git, once, that git lists each of them (none is ignored)."""

    def __init__(self, source: WorkTreeSource) -> None:
        self.root = source.repo_root
        self._claims: set[str] = set()
        self._seen: dict[str, Entries] = {}
        self._filled: dict[str, str | None] = {}  # directory -> a regular file under it (None: none)

    def entries(self, directory: str) -> Entries:
        found = self._seen.get(directory)
        if found is not None:
            return found
        files: set[str] = set()
        links: list[str] = []
        dirs: dict[str, bool] = {}
        for entry in _scan(self.root / directory if directory else self.root):
            path = _join(directory, entry.name)
            mode = _mode(entry)
            if stat.S_ISLNK(mode):
                links.append(path)
            elif stat.S_ISREG(mode):
                files.add(entry.name)
            elif stat.S_ISDIR(mode) and entry.name != ".git":
                witness = self._witness(path)
                if witness is not None or self.links_under(path):
                    dirs[entry.name] = witness is not None
        self._claims.update(_join(directory, name) for name in files & _CLAIMED)
        self._claims.update(links)
        found = self._seen[directory] = Entries(frozenset(files), tuple(sorted(links)), MappingProxyType(dirs))
        return found

    def _witness(self, directory: str) -> str | None:
        """A regular file under `directory` (claimed: git must list it), None when there is none."""
        if directory not in self._filled:
            found = None
            todo = [directory]
            while todo and found is None:
                current = todo.pop()
                subdirs, regular = [], []
                for entry in _scan(self.root / current):
                    mode = _mode(entry)
                    if stat.S_ISREG(mode):
                        regular.append(entry.name)
                    elif stat.S_ISDIR(mode):
                        subdirs.append(f"{current}/{entry.name}")
                if regular:  # a node's own file, when there is one: the likeliest to be committed
                    found = f"{current}/{min(regular, key=lambda n: (n not in _NODE_FILES, n))}"
                todo += sorted(subdirs, reverse=True)
            if found is not None:
                self._claims.add(found)
            self._filled[directory] = found
        return self._filled[directory]

    def links_under(self, directory: str) -> list[str]:
        out: list[str] = []
        todo = [directory]
        while todo:
            current = todo.pop()
            for entry in _scan(self.root / current):
                mode = _mode(entry)
                if stat.S_ISLNK(mode):
                    out.append(f"{current}/{entry.name}")
                elif stat.S_ISDIR(mode):
                    todo.append(f"{current}/{entry.name}")
        self._claims.update(out)
        return sorted(out)

    def verified(self) -> bool:
        """Whether git lists every path this listing relied on (one `git ls-files` over exactly those)."""
        claims = sorted(self._claims)
        return not claims or set(git.listed(self.root, claims)) >= set(claims)


_CLAIMED = _NODE_FILES | {SETTINGS_FILE}  # the files of a directory a query reads or relies on


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _scan(directory: os.PathLike[str]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as found:
            return list(found)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _mode(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_mode
    except OSError:  # gone since it was listed
        return 0


def listing_of(source: Source) -> Listing:
    """The listing of `source`: looked at lazily for a working tree that was not listed, else indexed."""
    if isinstance(source, WorkTreeSource) and not source.is_listed:
        return WorkTreeListing(source)
    return FullListing(source)


class Scope:
    """The nodes of a store that some keys need, discovered on demand, with their discovery problems."""

    def __init__(self, source: Source, listing: Listing, checked: Callable[[bytes], bool] = lambda data: False) -> None:
        """`checked(data)`: whether these `_CONFIG_STORE` bytes passed the settings schema before."""
        self.source = source
        self.listing = listing
        self.settings_file = source.path(SETTINGS_FILE)
        top = listing.entries(source.store)
        present = [self.settings_file] if SETTINGS_FILE in top.files else []
        source.check_store(present or ([source.store] if top.files or any(top.dirs.values()) else []))
        blob = source.read(self.settings_file)
        known = blob is not None and checked(blob.data)
        self.settings, settings_diags = _settings(blob, self.settings_file, known)
        self.diagnostics: list[Diagnostic] = list(settings_diags)
        self._nodes: dict[str, Node] = {}
        self._exists: dict[str, bool] = {keys.ROOT: True}

    def directory(self, key: str) -> str:
        """The repo-relative directory of `key`."""
        rel = key.strip("/")
        return self.source.path(rel) if rel else self.source.store

    def exists(self, key: str) -> bool:
        """Whether `key` (a normalized key) has a node: its directory holds a listed regular file. Walks up to the
        nearest known ancestor, then down again. It is a loop, not recursion: keys can be deep."""
        unknown: list[str] = []
        while key not in self._exists:
            unknown.append(key)
            key = keys.parent(key) or keys.ROOT
        found = self._exists[key]
        for below in reversed(unknown):
            up = keys.parent(below) or keys.ROOT
            found = found and bool(self.listing.entries(self.directory(up)).dirs.get(keys.last_segment(below)))
            self._exists[below] = found
        return found

    def nearest(self, key: str) -> str:
        """`key` when it has a node, else its nearest ancestor that has one (docs/resolution.md#keys-without-a-node)."""
        while not self.exists(key):
            key = keys.parent(key) or keys.ROOT
        return key

    def close(self, starts: Iterable[str], values: Mapping[str, str]) -> None:
        """Discover `starts` (nodes) and every node they reach through parents and imports under `values`."""
        todo = [k for k in starts if k not in self._nodes]
        while todo:
            self._discover(todo)
            reached: list[str] = []
            for key in todo:
                up = keys.parent(key)
                targets = [up] if up is not None else []
                includes = self._nodes[key].includes
                if includes is not None:
                    found, _ = expand(
                        includes.lines, values, file=includes.path, key=key,
                        declared=self.settings.variables, store_name=self.settings.name,
                    )  # fmt: skip
                    targets += [imp.key for imp in found if self.exists(imp.key)]
                reached += [t for t in targets if t not in self._nodes and t not in reached]
            todo = reached

    def _discover(self, batch: list[str]) -> None:
        """Build the nodes of `batch`, reading their includes files in one batch (as `discover` does)."""
        names_of = {key: self.listing.entries(self.directory(key)).files & _NODE_FILES for key in batch}
        blobs = self.source.load(
            _join(self.directory(k), n) for k, names in names_of.items() for n in names if n != MAIN_FILE
        )
        for key in batch:
            node_dir, names = self.directory(key), names_of[key]
            diags = self._problems(key, node_dir)
            main_path = _join(node_dir, MAIN_FILE)
            oids = self.source.oids([main_path]) if MAIN_FILE in names else {}
            main = NodeFile(main_path, oids[main_path]) if main_path in oids else None
            includes = _includes(set(names), node_dir, key, blobs, self.settings, diags)
            self._nodes[key] = Node(key, node_dir, main, includes)
            self.diagnostics += diags

    def _problems(self, key: str, node_dir: str) -> list[Diagnostic]:
        """E_BAD_KEY for each child directory that cannot be a node. E_UNSAFE_PATH for each link that belongs to this
        node: directly in it, or under child directories that are not nodes."""
        entries = self.listing.entries(node_dir)
        diags: list[Diagnostic] = []
        links = list(entries.links)
        for name, filled in sorted(entries.dirs.items()):
            path = _join(node_dir, name)
            private = name.startswith(("_", "."))
            if filled and not private and keys.is_valid_segment(name):
                continue  # a child node: what is under it is its own
            if filled and not private:
                diags.append(bad_directory(name, key, path))
            links += self.listing.links_under(path)
        return diags + [unsafe_link(path, key) for path in sorted(links)]

    def store(self) -> Store:
        """The discovered nodes as a `Store` (sorted by key, as `discover` gives them)."""
        nodes = dict(sorted(self._nodes.items()))
        return Store(self.source, self.settings, self.settings_file, MappingProxyType(nodes), tuple(self.diagnostics))

    def children(self, key: str) -> list[str]:
        """The keys of the child nodes of node `key`, sorted."""
        dirs = self.listing.entries(self.directory(key)).dirs
        return sorted(
            keys.join(key, name)
            for name, filled in dirs.items()
            if filled and not name.startswith(("_", ".")) and keys.is_valid_segment(name)
        )
