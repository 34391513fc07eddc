"""Shell completion candidates for versions: `current`, `previous` and every version of a store, by number or
by tag.

The numbers come from the ref memo (`cfgtool.store.refmemo`). git is asked once, and again only after a ref changed.
So a Tab costs no git process.
"""

from __future__ import annotations

from pathlib import Path

from cfgtool.store.refmemo import RefMemo
from cfgtool.store.settings import SETTINGS_FILE
from cfgtool.versions.names import VERSION_NAMES


def version_candidates(
    repo: Path | None, store: str | Path, cache: Path, incomplete: str, *, tags: bool = False
) -> list[str]:
    """`current`, `previous` and the store's versions, newest first, that start with `incomplete`. They are numbers,
    as `--version` and `diff` take. With `tags`, they are tags, as `--ref` takes."""
    memo = RefMemo(repo if repo is not None else Path.cwd(), cache)
    root = memo.repo.root
    memo.add_file(root / store / SETTINGS_FILE)  # version tag prefixes come from it before a first commit

    def listed() -> list[list[int | str]]:
        from cfgtool.versions.tags import history

        return [[v.version, v.tag] for v in history(root, store).listing(all=True)]

    found: list[list[int | str]] = memo.answer(f"version tags {store}", listed)
    memo.save()
    names = [*(VERSION_NAMES if found else ()), *(str(tag if tags else n) for n, tag in found)]
    return [name for name in names if name.startswith(incomplete)]
