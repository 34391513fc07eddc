"""Reading schema files: YAML or JSON text to data plus the YAML node tree. The tree gives line:col of any path.

Problems are E_SCHEMA diagnostics against the file (PyYAML marks, or JSON's line and column); nothing raises.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from cfgtool._util.yamlmarks import duplicate_keys, mark
from cfgtool.diagnostics import Diagnostic
from cfgtool.store import git
from cfgtool.store.sources import Containment

SCHEMA_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Document:
    """A parsed schema file: its data, and its YAML node tree. The tree is None when only JSON could read it."""

    file: str
    data: Any
    root: yaml.Node | None

    def mark(self, path: Sequence[Any], key: bool = False) -> tuple[int, int]:
        """1-based line and column of the deepest node found along `path` (the key itself when `key`)."""
        return mark(self.root, path, key)

    def error(self, message: str, path: Sequence[Any] = (), key: bool = False) -> Diagnostic:
        """An E_SCHEMA diagnostic at `path` in this file."""
        line, col = self.mark(path, key)
        return Diagnostic.of("E_SCHEMA", message, file=self.file, line=line, col=col)


def read_document(file: str, text: str | None) -> tuple[Document | None, list[Diagnostic]]:
    """Parse one schema file (`text` None: it is not UTF-8). JSON files are read as JSON, others as YAML."""
    if text is None:
        return None, [Diagnostic.of("E_SCHEMA", "the schema file is not UTF-8 text", file=file, line=1, col=1)]
    if file.endswith(".json"):
        try:
            data = json.loads(text)
        except ValueError as err:
            line, col = getattr(err, "lineno", 1), getattr(err, "colno", 1)
            message = f"not valid JSON: {getattr(err, 'msg', str(err))}"
            return None, [Diagnostic.of("E_SCHEMA", message, file=file, line=line, col=col)]
        try:
            root, _ = _load(text)
        except yaml.YAMLError:
            root = None  # valid JSON that PyYAML cannot read: positions fall back to line 1
        doc = Document(file, data, root)
        return doc, list(_duplicate_keys(doc, root)) if root is not None else []
    try:
        root, data = _load(text)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = err.problem or err.context or "invalid YAML"
        return None, [Diagnostic.of("E_SCHEMA", f"not valid YAML: {problem}", file=file, line=line, col=col)]
    except yaml.YAMLError as err:
        return None, [Diagnostic.of("E_SCHEMA", f"not valid YAML: {err}", file=file, line=1, col=1)]
    doc = Document(file, data, root)
    return doc, list(_duplicate_keys(doc, root)) if root is not None else []


def _load(text: str) -> tuple[yaml.Node | None, Any]:
    """The node tree (for positions) and the data of a single YAML document."""
    loader = yaml.SafeLoader(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def _duplicate_keys(doc: Document, node: yaml.Node) -> Iterator[Diagnostic]:
    """YAML and JSON keep the last of duplicate keys silently; in a schema that hides a rule."""
    for path, line, col in duplicate_keys(node):
        message = f"key {path[-1]!r} is set twice in one mapping; only the last one counts"
        yield Diagnostic.of("E_SCHEMA", message, file=doc.file, line=line, col=col)


def read_schema_files(
    repo_root: Path, directory: str, commit: str | None = None, links: list[str] | None = None
) -> dict[str, str | None]:
    """`{repo-relative path: text}` of every schema file (`.yaml`, `.yml`, `.json`) under `directory`. It is read
    from `commit`, or with `commit` None from the working tree (files git would commit). None: not UTF-8. Nothing is
    read through a symbolic link (docs/security.md): the links found are appended to `links`."""
    directory = directory.strip("/")
    if directory in ("", "."):
        directory = ""
    texts: dict[str, str | None] = {}
    found: set[str] = set()
    if commit is None:
        containment = Containment(repo_root)
        for rel in git.ls_files(repo_root, directory):
            path = repo_root / rel
            link = containment.link_of(rel)
            if link is not None:
                found.add(link)
            elif rel.endswith(SCHEMA_SUFFIXES) and path.is_file():
                texts[rel] = _decode(path.read_bytes())
    else:
        files, tree_links = git.tree_files(repo_root, commit, directory)
        found.update(tree_links)
        entries = {p: oid for p, oid in files.items() if p.endswith(SCHEMA_SUFFIXES)}
        blobs = git.cat_blobs(repo_root, entries.values())
        texts = {p: _decode(blobs[oid]) for p, oid in entries.items()}
    if links is not None:
        links += sorted(found)
    return dict(sorted(texts.items()))


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
