"""Shell completion candidates from a store's working tree: keys, tags and variable values.

A completion runs at every Tab, so it reads only what it needs and never compiles. A key is completed one segment at
a time. The candidates come from the directory of its complete part: a group's children, however large the store. Tag
roots and variable values come from `_CONFIG_STORE` alone. A store that cannot be read gives no candidates;
completion never fails.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SEGMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~-]*")  # a key segment (docs/store-format.md)
DEFAULT_TAG_ROOTS = ("/tags",)


def complete_key(store_dir: Path, incomplete: str, under: Iterable[str] = ("/",)) -> list[str]:
    """Keys that complete `incomplete` by one segment. Only keys under (or leading to) one of `under` count. They are
    written as `incomplete` is: with the store's scheme, without the leading `/`. A single candidate with nodes below
    it comes twice, bare and with a trailing `/`. The shell then stops there for the next segment instead of ending
    the word."""
    scheme, sep, path = incomplete.rpartition(":") if ":" in incomplete else ("", "", incomplete)
    bare = bool(path) and not path.startswith("/")  # `data/x` is the key /data/x: written the same way
    if bare:
        path = "/" + path
    parent, _, prefix = path.rpartition("/")
    directory = store_dir / parent.lstrip("/")
    roots = tuple(under)
    found = []
    for name in _children(directory):
        key = f"{parent}/{name}"
        if name.startswith(prefix) and any(_related(key, root) for root in roots):
            found.append(key)
    found.sort()
    if len(found) == 1 and _children(store_dir / found[0].lstrip("/")):
        found.append(found[0] + "/")
    head = f"{scheme}{sep}"
    return [head + (key[1:] if bare else key) for key in found]


def complete_tag(store_dir: Path, incomplete: str) -> list[str]:
    """`complete_key` limited to the store's tags (and the tag roots that lead to them)."""
    return complete_key(store_dir, incomplete, tag_roots(read_settings(store_dir)))


def complete_variable(store_dir: Path, incomplete: str) -> list[str]:
    """`NAME=VALUE` for every value of every variable declared in `_CONFIG_STORE` that starts with
    `incomplete`."""
    declared = read_settings(store_dir).get("variables")
    if not isinstance(declared, Mapping):
        return []
    found = []
    for name, spec in declared.items():
        values = spec.get("values") if isinstance(spec, Mapping) else None
        for value in values if isinstance(values, list) else ():
            item = f"{name}={value}"
            if item.startswith(incomplete):
                found.append(item)
    return found


def read_settings(store_dir: Path) -> Mapping[str, Any]:
    """`_CONFIG_STORE` as plain YAML ({} when it is missing or unreadable). Completion needs two settings and no
    validation; `cfgtool compile` validates."""
    import yaml

    try:
        data = yaml.safe_load((store_dir / "_CONFIG_STORE").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, Mapping) else {}


def tag_roots(settings: Mapping[str, Any]) -> tuple[str, ...]:
    roots = settings.get("tag_roots")
    if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
        return DEFAULT_TAG_ROOTS
    return tuple("/" + r.strip("/") for r in roots)


def _related(key: str, root: str) -> bool:
    """Whether `key` is `root`, lies under it, or is an ancestor of it."""
    if root == "/":
        return True
    return key == root or key.startswith(root + "/") or root.startswith(key + "/")


def _children(directory: Path) -> list[str]:
    """The names of the node directories in `directory` (none when it cannot be read)."""
    try:
        with os.scandir(directory) as entries:
            return [e.name for e in entries if SEGMENT.fullmatch(e.name) and e.is_dir()]
    except OSError:
        return []


def working_store(repo: Path | None, store: str | Path, cache: Path) -> Path:
    """The store directory in the working tree of `repo`. None means the repository containing the current directory.
    It is found through the ref memo in `cache`: no git process once the memo holds it."""
    from cfgtool.store.refmemo import RefMemo

    memo = RefMemo(repo if repo is not None else Path.cwd(), cache)
    root = memo.repo.root
    memo.save()
    return root / store
