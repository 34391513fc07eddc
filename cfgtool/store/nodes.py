"""Node discovery (docs/store-format.md#nodes-and-keys): every directory under the store root is a node, except `_x` and
`.x` names.

`discover` lists a source once. It reads `_CONFIG_STORE` and every node's `main.conf` and includes file in one batch.
It returns the nodes with their files and the problems found. Those are E_BAD_KEY, E_DUPLICATE_INCLUDES, E_SETTINGS,
E_SYNTAX (includes files, undecodable text) and E_UNDECLARED_VARIABLE. HOCON is not parsed here. `main.conf` text and
blob id are handed on, so the compile step can parse (and cache by blob id).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from types import MappingProxyType
from typing import NamedTuple

from cfgtool.diagnostics import Diagnostic
from cfgtool.store import keys
from cfgtool.store.includes import INCLUDES_FILES, IncludeLine, parse_includes, undeclared
from cfgtool.store.settings import SETTINGS_FILE, Settings, parse_settings
from cfgtool.store.sources import Blob, Source

MAIN_FILE = "main.conf"
_NODE_FILES = frozenset((MAIN_FILE, *INCLUDES_FILES))


class NodeFile(NamedTuple):
    """A node's `main.conf`: repo-relative `path` and blob id `oid`. Its text is read only when the file is not in
    the parse cache (`Source.load`). So an unchanged store is compiled without reading it again. A named tuple, as
    `Node`."""

    path: str
    oid: str


class IncludesFile(NamedTuple):
    """A node's includes file and its parsed lines (variables not applied)."""

    path: str
    oid: str
    lines: tuple[IncludeLine, ...]


class Node(NamedTuple):
    """A config node: its key, its repo-relative directory, its own config and its includes (None: absent). A named
    tuple, immutable and made in one C call. Each compile makes one for every node of the store."""

    key: str
    dir: str
    main: NodeFile | None
    includes: IncludesFile | None


@dataclass(frozen=True)
class Store:
    """A discovered store: settings, nodes by key (sorted, always containing `/`) and discovery problems."""

    source: Source
    settings: Settings
    settings_file: str
    nodes: Mapping[str, Node]
    diagnostics: tuple[Diagnostic, ...]
    # each node's includes file as discovery read it, with the problems it found there (kept by the structure
    # cache, `relaid`)
    includes_read: Mapping[str, KnownIncludes] = field(default_factory=lambda: MappingProxyType({}))


# A node's includes file as read, and the problems found reading it (E_DUPLICATE_INCLUDES, E_SYNTAX,
# E_UNDECLARED_VARIABLE): what `discover` would find again in a file with the same path and blob id.
KnownIncludes = tuple[IncludesFile, tuple[Diagnostic, ...]]


def discover(
    source: Source,
    rules: tuple[Settings, str] | None = None,
    *,
    mains: bool = True,
) -> Store:
    """The nodes of the store in `source`, with every discovery problem as a diagnostic.

    `rules`: the settings to compile with and their file, when they come from elsewhere (a `--base` ref,
    docs/security.md). The source's own `_CONFIG_STORE` is still checked, and its problems reported. `mains` False
    serves the import graph alone (`imported-by`, `datasets`): no `main.conf` is read, every `main` is None.
    """
    diags: list[Diagnostic] = []
    dirs: dict[str, str] = {"": keys.ROOT}  # store-relative dir -> key, for every node
    rejected: set[str] = set()  # store-relative dirs that are not nodes (so neither is anything under them)
    files_of: dict[str, set[str]] = {}  # store-relative dir -> the node files it has
    cut = len(source.store) + 1 if source.store else 0  # `source.rel`, inline: a store may have 200,000 files
    for path in source.files():
        directory, _, name = path[cut:].rpartition("/")
        if (directory in dirs or _node_dir(directory, dirs, rejected, source, diags)) and name in _NODE_FILES:
            files_of.setdefault(directory, set()).add(name)

    settings_path = source.path(SETTINGS_FILE)
    wanted = [settings_path]
    main_paths: list[str] = []
    for directory, names in files_of.items():
        node_dir = _dir_path(source, directory)
        for n in names:
            (main_paths if n == MAIN_FILE else wanted).append(_join(node_dir, n))
    blobs = source.load(wanted)
    oids = source.oids(main_paths) if mains else {}

    settings, settings_diags = _settings(blobs.get(settings_path), settings_path)
    diags += settings_diags
    if rules is not None:
        settings, settings_path = rules
    diags += _unsafe(source, dirs)
    nodes: dict[str, Node] = {}
    read: dict[str, KnownIncludes] = {}
    none: set[str] = set()
    for directory, key in sorted(dirs.items(), key=itemgetter(1)):
        names = files_of.get(directory, none)
        node_dir = _dir_path(source, directory)
        main_path = _join(node_dir, MAIN_FILE)
        main = NodeFile(main_path, oids[main_path]) if MAIN_FILE in names and main_path in oids else None
        problems: list[Diagnostic] = []
        includes = _includes(names, node_dir, key, blobs, settings, problems)
        if includes is not None:
            read[key] = (includes, tuple(problems))
        diags += problems
        nodes[key] = Node(key, node_dir, main, includes)
    return Store(source, settings, settings_path, MappingProxyType(nodes), tuple(diags), MappingProxyType(read))


def relaid(
    source: Source,
    node_keys: Sequence[str],
    mains: Collection[str],
    includes: Mapping[str, KnownIncludes],
    diagnostics: tuple[Diagnostic, ...],
) -> Store | None:
    """The store `discover` finds in `source`, from what it found in a store of the same shape. That is its
    `node_keys`, those with a `main.conf`, the includes files as read and every problem (`cfgtool.build.structure`).
    Only `_CONFIG_STORE` and the blob ids of the `main.conf` files are read again, no includes file. The settings'
    problems are found afresh. None when they cannot be that store's (a foreign or planted cache entry). To be that
    store's, every key is a node directory of the store under a parent that is a node. And every includes file is in
    its node's directory."""
    dirs = [_dir_path(source, key[1:]) for key in node_keys]  # a node's key is its store-relative directory
    if not _fits(source, node_keys, dirs, includes):
        return None
    settings_path = source.path(SETTINGS_FILE)
    settings, settings_diags = _settings(source.read(settings_path), settings_path)
    oids = source.oids(_join(d, MAIN_FILE) for d, key in zip(dirs, node_keys, strict=True) if key in mains)
    nodes: dict[str, Node] = {}
    for key, node_dir in zip(node_keys, dirs, strict=True):
        main_path = _join(node_dir, MAIN_FILE)
        oid = oids.get(main_path)
        entry = includes.get(key)
        main = None if oid is None else NodeFile(main_path, oid)
        nodes[key] = Node(key, node_dir, main, None if entry is None else entry[0])
    # `discover` reports the directories that are no keys first, then the settings' problems, then the rest
    bad_keys = next((i for i, d in enumerate(diagnostics) if d.code != "E_BAD_KEY"), len(diagnostics))
    rest = next((i for i in range(bad_keys, len(diagnostics)) if diagnostics[i].code != "E_SETTINGS"), len(diagnostics))
    diags = (*diagnostics[:bad_keys], *settings_diags, *diagnostics[rest:])
    return Store(source, settings, settings_path, MappingProxyType(nodes), diags, MappingProxyType(includes))


def _fits(source: Source, node_keys: Sequence[str], dirs: Sequence[str], includes: Mapping[str, KnownIncludes]) -> bool:
    """Whether `node_keys` (their directories `dirs`) and `includes` can be what `discover` finds in `source`."""
    known = set(node_keys)
    if not node_keys or node_keys[0] != keys.ROOT or len(known) != len(node_keys):
        return False
    for key in node_keys[1:]:
        parent, _, name = key.rpartition("/")
        if (parent or keys.ROOT) not in known or not keys.is_valid_segment(name):
            return False
    present = {source.store}  # every directory that holds a file of the store, and their parents
    for path in source.files():
        directory = path.rpartition("/")[0]
        while directory not in present and directory:
            present.add(directory)
            directory = directory.rpartition("/")[0]
    if not present.issuperset(dirs):
        return False
    node_dir = dict(zip(node_keys, dirs, strict=True))
    return all(
        key in node_dir and file.path in (_join(node_dir[key], name) for name in INCLUDES_FILES)
        for key, (file, _) in includes.items()
    )


def _unsafe(source: Source, dirs: Mapping[str, str]) -> list[Diagnostic]:
    """E_UNSAFE_PATH for each symbolic link in the store, against the node whose directory holds it."""
    out = []
    for path in source.unsafe:
        parent = source.rel(path).rpartition("/")[0] if path != source.store else ""
        while parent not in dirs:
            parent = parent.rpartition("/")[0]
        out.append(unsafe_link(path, dirs[parent]))
    return out


def unsafe_link(path: str, key: str) -> Diagnostic:
    """E_UNSAFE_PATH for the symbolic link `path` (repo-relative), against the node `key` whose directory holds it.
    It holds it directly, or under directories that are not nodes."""
    return Diagnostic.of(
        "E_UNSAFE_PATH",
        f"{path} is a symbolic link; cfgtool never reads through links, so it and everything under it are ignored",
        key=key,
        file=path,
        notes=("a link can lead outside the repository: commit the files themselves instead",),
    )


def _dir_path(source: Source, directory: str) -> str:
    """The repo-relative path of a store-relative directory ('' = the store root)."""
    if not directory:
        return source.store
    return f"{source.store}/{directory}" if source.store else directory


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def _node_dir(
    directory: str, dirs: dict[str, str], rejected: set[str], source: Source, diags: list[Diagnostic]
) -> bool:
    """Whether store-relative `directory` is a node; registers it and its ancestors on the way (memoized)."""
    if directory in dirs:
        return True
    if directory in rejected:
        return False
    parent_dir, _, name = directory.rpartition("/")
    if not _node_dir(parent_dir, dirs, rejected, source, diags):
        rejected.add(directory)
        return False
    if name.startswith(("_", ".")):
        rejected.add(directory)
        return False
    parent_key = dirs[parent_dir]
    if not keys.is_valid_segment(name):
        rejected.add(directory)
        diags.append(bad_directory(name, parent_key, source.path(directory)))
        return False
    dirs[directory] = keys.join(parent_key, name)
    return True


def bad_directory(name: str, parent_key: str, path: str) -> Diagnostic:
    """E_BAD_KEY for the directory `path` (repo-relative) under node `parent_key`: `name` is no key segment."""
    return Diagnostic.of(
        "E_BAD_KEY",
        f"directory name {name!r} is not a valid key segment; it and everything under it are ignored",
        key=parent_key,
        file=path,
        notes=(
            "a key segment starts with a letter or digit and has only letters, digits and . _ ~ -;"
            " names starting with _ or . are private directories, not nodes",
        ),
    )


def read_settings(source: Source) -> tuple[Settings, str]:
    """The settings of the store in `source` (invalid ones at their defaults) and their file's path."""
    path = source.path(SETTINGS_FILE)
    return _settings(source.read(path), path)[0], path


def _settings(blob: Blob | None, path: str, checked: bool = False) -> tuple[Settings, list[Diagnostic]]:
    if blob is None:  # sources check that it exists; tolerate a race with the file system
        return Settings(), []
    text, problem = decode(blob, None, "E_SETTINGS")
    if problem is not None:
        return Settings(), [problem]
    return parse_settings(text or "", path, checked=checked)


def _includes(
    names: set[str],
    node_dir: str,
    key: str,
    blobs: Mapping[str, Blob],
    settings: Settings,
    diags: list[Diagnostic],
) -> IncludesFile | None:
    present = [n for n in INCLUDES_FILES if n in names]
    if not present:
        return None
    if len(present) == 2:
        diags.append(
            Diagnostic.of(
                "E_DUPLICATE_INCLUDES",
                f"{key} has both includes and includes.conf; includes.conf is ignored",
                key=key,
                file=_join(node_dir, "includes.conf"),
                notes=("move its lines into includes and delete includes.conf",),
            )
        )
    blob = blobs.get(_join(node_dir, present[0]))
    if blob is None:
        return None
    text, problem = decode(blob, key)
    if problem is not None:
        diags.append(problem)
        return IncludesFile(blob.path, blob.oid, ())
    lines, syntax = parse_includes(text or "", blob.path, key)
    diags += syntax
    diags += undeclared(lines, settings.variables, blob.path, key)
    return IncludesFile(blob.path, blob.oid, tuple(lines))


def decode(blob: Blob, key: str | None, code: str = "E_SYNTAX") -> tuple[str | None, Diagnostic | None]:
    """The blob's text, or None and a diagnostic pointing at the first byte that is not UTF-8."""
    try:
        return blob.text(), None
    except UnicodeDecodeError as err:
        line = blob.data.count(b"\n", 0, err.start) + 1
        col = err.start - (blob.data.rfind(b"\n", 0, err.start) + 1) + 1
        message = f"not valid UTF-8 (byte 0x{blob.data[err.start]:02x}); save the file as UTF-8"
        return None, Diagnostic.of(code, message, key=key, file=blob.path, line=line, col=col)
