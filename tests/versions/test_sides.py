"""`resolve_side` (`cfgtool/versions/sides.py`): every spelling of a diff side, on a real repository with
annotated version tags (the `versioned` fixture, tests/versions/conftest.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from cfgtool.errors import UsageError
from cfgtool.store.git import UnknownRefError
from cfgtool.versions.names import WORKTREE
from cfgtool.versions.sides import resolve_side
from cfgtool.versions.tags import VersionNotFound

if TYPE_CHECKING:
    from tests.versions.conftest import Versioned


def test_resolve_side_version_spellings_name_the_same_commit(versioned: Versioned) -> None:
    sides = [resolve_side(versioned.root, spec) for spec in ("config/v2", "v2", "2", "refs/tags/config/v2")]
    assert {s.commit for s in sides} == {versioned.c2}
    assert {s.version for s in sides} == {2}
    assert {s.ref for s in sides} == {"config/v2"}


def test_resolve_side_worktree_and_plain_refs(versioned: Versioned) -> None:
    worktree = resolve_side(versioned.root, WORKTREE)
    assert worktree.worktree and worktree.ref is None and worktree.commit == versioned.c4
    head = resolve_side(versioned.root, "HEAD~1")
    assert (head.ref, head.commit, head.version) == ("HEAD~1", versioned.c3, None)


def test_resolve_side_unknown_version_is_VersionNotFound(versioned: Versioned) -> None:
    with pytest.raises(VersionNotFound, match="version 9 does not exist"):
        resolve_side(versioned.root, "v9")


def test_resolve_side_unknown_ref_names_the_spellings(versioned: Versioned) -> None:
    with pytest.raises(UnknownRefError, match="not a version, a git ref or `worktree`"):
        resolve_side(versioned.root, "no-such-branch")


def test_resolve_side_short_form_names_a_ref_when_no_such_version(versioned: Versioned) -> None:
    versioned.repo.git("tag", "v7", versioned.c3)
    side = resolve_side(versioned.root, "v7")
    assert (side.commit, side.version, side.ref) == (versioned.c3, None, "v7")


def test_resolve_side_short_form_naming_a_version_and_another_ref_is_ambiguous(versioned: Versioned) -> None:
    versioned.repo.git("tag", "v1", versioned.c2)  # version 1 is c1
    with pytest.raises(UsageError, match="ambiguous"):
        resolve_side(versioned.root, "v1")
    assert resolve_side(versioned.root, "config/v1").commit == versioned.c1
    assert resolve_side(versioned.root, "refs/tags/v1").commit == versioned.c2
