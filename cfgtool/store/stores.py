"""Which directories are the stores of a repository, and what each is called.

A store is a directory holding a `_CONFIG_STORE` file, unless it lies inside a Python package. A package is a
directory that holds an `__init__.py`, or lies below one that does. A package ships templates and test fixtures, such
as the store that `cfgtool init` copies. None of them is a store of the repository that contains it.

A store's name is the `name` of its `_CONFIG_STORE`, else its directory's name ("store" for the root).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from cfgtool.errors import SourceError
from cfgtool.store.settings import SETTINGS_FILE

DEFAULT_STORE_DIR = "store"  # where `cfgtool init` puts the store, and the CLI's default --store
_PACKAGE_MARK = "__init__.py"
# A name fit for one component of a tag name (`config/<name>/v3`): git's ref rules, kept plain, and not a
# word the default markers use (`config/rolledback/v3` is a rollback marker of `config/v3`, `config/restored/v3`
# cancels it).
_REF_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_+-]*(?:\.[A-Za-z0-9_+-]+)*")
_RESERVED = frozenset({"rolledback", "restored", "rollout"})


def store_name(name: str | None, path: str) -> str:
    """The store's name: its `_CONFIG_STORE` `name`, else the last part of its directory ('' = the root)."""
    return name or posixpath.basename(path) or "store"


def store_dirs(files: Iterable[str]) -> list[str]:
    """The store directories among repo-relative `files` (sorted; '' = the root), packages left out."""
    paths = list(files)
    packages = {posixpath.dirname(f) for f in paths if posixpath.basename(f) == _PACKAGE_MARK}
    found = []
    for f in paths:
        if posixpath.basename(f) != SETTINGS_FILE:
            continue
        folder = posixpath.dirname(f)
        if not any(d in packages for d in _self_and_parents(folder)):
            found.append(folder)
    return sorted(found)


def tag_name_part(name: str, path: str) -> str:
    """`name` when it can stand in a tag name (`config/<name>/vN`), else SourceError saying how to fix it."""
    if _REF_NAME.fullmatch(name) and not name.endswith(".lock") and name not in _RESERVED:
        return name
    where = posixpath.join(path, SETTINGS_FILE) if path else SETTINGS_FILE
    raise SourceError(
        f"the store {path or '.'}/ is named {name!r}, which cannot be part of its version tags (config/{name}/vN)",
        hint=f"set `name:` in {where} to letters, digits, '-', '_', '+' or single dots (not 'rolledback',"
        " 'restored' or 'rollout')",
    )


def _self_and_parents(folder: str) -> Iterable[str]:
    while True:
        yield folder
        if not folder:
            return
        folder = posixpath.dirname(folder)
