"""Store tests: `make_store` writes files into `store_repo` (tests/conftest.py) and discovers the store."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import pytest

from cfgtool.store.nodes import Store, discover
from cfgtool.store.sources import GitSource, WorkTreeSource

if TYPE_CHECKING:
    from tests.conftest import GitRepo


@pytest.fixture
def make_store(store_repo: GitRepo) -> Callable[..., Store]:
    """Write store files (paths relative to `store/`, `_CONFIG_STORE` optional) and discover the store.

    With `commit=True` the files are committed and read from HEAD; otherwise from the working tree.
    """

    def make(files: Mapping[str, str | bytes | None], commit: bool = False) -> Store:
        store_repo.write(files, under="store/")
        if commit:
            store_repo.commit()
            return discover(GitSource(store_repo.root, "HEAD"))
        return discover(WorkTreeSource(store_repo.root))

    return make
