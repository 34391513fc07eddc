from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from cfgtool.errors import SourceError
from cfgtool.store.git import NotAGitRepoError, UnknownRefError, cat_blobs, git_env
from cfgtool.store.sources import (
    GitSource,
    StoreNotFoundError,
    WorkTreeSource,
    blob_id,
    open_source,
    settings_at,
)

if TYPE_CHECKING:
    from tests.conftest import GitRepo

FILES = {
    "_CONFIG_STORE": "name: demo\n",
    "main.conf": "a = 1\n",
    "data/main.conf": "b = 2\n",
    "data/x/includes": "/tags/t\n",
    "tags/t/main.conf": "c = 3\n",
    "_shared/common.conf": "d = 4\n",
}


def test_git_source_reads_a_ref_without_checkout(store_repo: GitRepo) -> None:
    store_repo.write(FILES, under="store/")
    store_repo.write({"README.md": "outside the store\n"})
    first = store_repo.commit("first")
    store_repo.write({"data/main.conf": "b = 20\n"}, under="store/")
    store_repo.commit("second")
    store_repo.git("tag", "-a", "-m", "v1", "config/v1", first)

    source = GitSource(store_repo.root, "config/v1")
    assert source.commit == first
    assert source.ref == "config/v1"
    assert source.dirty is False
    assert source.files() == sorted(f"store/{p}" for p in FILES)
    blobs = source.load(["store/data/main.conf", "store/main.conf", "store/nope"])
    assert set(blobs) == {"store/data/main.conf", "store/main.conf"}
    assert blobs["store/data/main.conf"].text() == "b = 2\n"
    assert blobs["store/data/main.conf"].oid == store_repo.git("rev-parse", f"{first}:store/data/main.conf")
    assert source.read("store/_shared/common.conf") is not None
    assert source.read("store/missing") is None
    assert source.oid("store/main.conf") == blob_id(b"a = 1\n")
    assert source.describe() == f"ref config/v1 (commit {first[:7]})"


def test_git_source_same_content_in_many_files_is_read_once(store_repo: GitRepo) -> None:
    store_repo.write({f"n{i}/main.conf": "same = 1\n" for i in range(5)}, under="store/")
    store_repo.commit()
    source = GitSource(store_repo.root, "HEAD")
    blobs = source.load(source.files())
    assert {b.oid for p, b in blobs.items() if p.endswith("main.conf")} == {blob_id(b"same = 1\n")}
    assert all(blobs[f"store/n{i}/main.conf"].data == b"same = 1\n" for i in range(5))


def test_worktree_source_includes_uncommitted_and_untracked_but_not_ignored(store_repo: GitRepo) -> None:
    store_repo.write(FILES, under="store/")
    store_repo.write({".gitignore": "*.tmp\n"})
    head = store_repo.commit()
    source = WorkTreeSource(store_repo.root)
    assert source.commit == head
    assert source.dirty is False
    store_repo.write({"new/main.conf": "n = 1\n", "junk.tmp": "x", "main.conf": None}, under="store/")
    source = WorkTreeSource(store_repo.root)
    assert "store/new/main.conf" in source.files()
    assert "store/junk.tmp" not in source.files()
    assert "store/main.conf" not in source.files()
    assert source.dirty is True
    blob = source.read("store/new/main.conf")
    assert blob is not None and blob.oid == blob_id(b"n = 1\n") and blob.text() == "n = 1\n"
    assert source.describe() == "the working tree"


@pytest.mark.parametrize(
    ("change", "dirty"),
    [
        ({}, False),
        ({"new/main.conf": "n = 1\n"}, True),  # untracked
        ({"junk.tmp": "x"}, False),  # ignored
        ({"main.conf": "changed = 1\n"}, True),
        ({"main.conf": None}, True),  # deleted
    ],
)
def test_worktree_source_dirty_is_any_difference_from_head(
    store_repo: GitRepo, change: dict[str, str | None], dirty: bool
) -> None:
    store_repo.write(FILES, under="store/")
    store_repo.write({".gitignore": "*.tmp\n", "outside.conf": "x = 1\n"})
    store_repo.commit()
    store_repo.write({"outside.conf": "x = 2\n"})  # outside the store: not its business
    store_repo.write(change, under="store/")
    assert WorkTreeSource(store_repo.root).dirty is dirty
    assert WorkTreeSource(store_repo.root, listed=False).dirty is dirty  # asked before a listing: git status


def test_worktree_source_a_staged_change_is_dirty(store_repo: GitRepo) -> None:
    store_repo.write(FILES, under="store/")
    store_repo.commit()
    store_repo.write({"main.conf": "staged = 1\n"}, under="store/")
    store_repo.git("add", "store/main.conf")
    assert WorkTreeSource(store_repo.root).dirty is True


def test_worktree_source_before_first_commit_is_dirty(store_repo: GitRepo) -> None:
    source = WorkTreeSource(store_repo.root)
    assert source.commit is None
    assert source.dirty is True


def test_worktree_source_skips_symlinks_like_git(store_repo: GitRepo) -> None:
    store_repo.write({"real/main.conf": "a = 1\n"}, under="store/")
    os.symlink("../real/main.conf", store_repo.root / "store" / "linked.conf")
    store_repo.commit()
    assert "store/linked.conf" not in WorkTreeSource(store_repo.root).files()
    assert "store/linked.conf" not in GitSource(store_repo.root, "HEAD").files()


def test_source_blob_ids_agree_between_worktree_and_git(store_repo: GitRepo) -> None:
    store_repo.write(FILES, under="store/")
    store_repo.commit()
    tree = WorkTreeSource(store_repo.root)
    ref = GitSource(store_repo.root, "main")
    assert tree.files() == ref.files()
    assert {p: b.oid for p, b in tree.load(tree.files()).items()} == {
        p: b.oid for p, b in ref.load(ref.files()).items()
    }


def test_source_store_at_repo_root_and_absolute_store_path(repo: GitRepo) -> None:
    repo.write({"_CONFIG_STORE": "", "data/main.conf": "a = 1\n"})
    repo.commit()
    source = GitSource(repo.root, "HEAD", store=".")
    assert source.store == ""
    assert source.files() == ["_CONFIG_STORE", "data/main.conf"]
    assert source.path("data/main.conf") == "data/main.conf"
    nested = WorkTreeSource(repo.root / "data", store=repo.root)
    assert nested.repo_root == repo.root and nested.store == ""


def test_settings_at_reads_the_one_file_at_a_commit(repo: GitRepo) -> None:
    repo.write({"store/_CONFIG_STORE": "schemas: ../schemas\n", "store/data/main.conf": "a = 1\n"})
    first = repo.commit()
    repo.write({"store/_CONFIG_STORE": "name: demo\n"})
    repo.commit()
    assert settings_at(repo.root, "store", first) == ("store", "store/_CONFIG_STORE", "schemas: ../schemas\n")
    assert settings_at(repo.root / "store", repo.root / "store", "HEAD")[2] == "name: demo\n"
    repo.write({"_CONFIG_STORE/x": "a directory, not the file\n"})
    repo.commit()
    assert settings_at(repo.root, ".", "HEAD") == ("", "_CONFIG_STORE", "")  # no such file at the root


def test_source_found_from_a_subdirectory(store_repo: GitRepo) -> None:
    store_repo.write({"data/x/main.conf": "a = 1\n"}, under="store/")
    source = open_source(store_repo.root / "store" / "data")
    assert source.repo_root == store_repo.root
    assert source.store == "store"


def test_source_line_reader_reads_lines_for_renderers(store_repo: GitRepo) -> None:
    store_repo.write({"main.conf": "a = 1\nb = 2\n"}, under="store/")
    read_line = WorkTreeSource(store_repo.root).line_reader()
    assert read_line("store/main.conf", 2) == "b = 2"
    assert read_line("store/main.conf", 3) is None
    assert read_line("store/nope", 1) is None


def test_source_not_a_git_repository_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(NotAGitRepoError) as info:
        WorkTreeSource(tmp_path)
    assert info.value.exit_code == 2
    assert f"not a git repository: {tmp_path}" in info.value.message
    assert info.value.hint == "run cfgtool inside a config repository, or pass --repo PATH"
    with pytest.raises(NotAGitRepoError):
        GitSource(tmp_path / "missing", "HEAD")


def test_source_unknown_ref_says_what_to_do(store_repo: GitRepo) -> None:
    store_repo.commit()
    with pytest.raises(UnknownRefError) as info:
        GitSource(store_repo.root, "no-such-ref")
    assert isinstance(info.value, SourceError) and info.value.exit_code == 2
    assert info.value.message.startswith("unknown ref 'no-such-ref' in ")
    assert "git tag" in (info.value.hint or "")
    with pytest.raises(UnknownRefError):
        GitSource(store_repo.root, "--output=/tmp/x")


def test_source_no_store_at_ref(repo: GitRepo) -> None:
    repo.write({"README.md": "x\n"})
    repo.commit()
    with pytest.raises(StoreNotFoundError) as info:
        GitSource(repo.root, "HEAD")
    assert info.value.exit_code == 2
    assert "no store directory 'store' in ref HEAD" in info.value.message
    assert "--store DIR" in (info.value.hint or "")


def test_source_store_without_config_store_file(repo: GitRepo) -> None:
    repo.write({"store/main.conf": "a = 1\n"})
    repo.commit()
    for make in (lambda: GitSource(repo.root, "HEAD"), lambda: WorkTreeSource(repo.root)):
        with pytest.raises(StoreNotFoundError) as info:
            make()
        assert "is not a cfgtool store: it has no _CONFIG_STORE file" in info.value.message
        assert info.value.hint == "create an empty store/_CONFIG_STORE to make it one, or pass --store DIR"


def test_source_store_outside_repository_is_rejected(store_repo: GitRepo) -> None:
    with pytest.raises(StoreNotFoundError, match="outside the repository"):
        WorkTreeSource(store_repo.root, store="../elsewhere")


def test_git_env_strips_inherited_repository_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("GIT_INDEX_FILE", "/elsewhere/index")
    monkeypatch.setenv("GIT_SSH_COMMAND", "ssh -v")
    env = git_env()
    assert "GIT_DIR" not in env and "GIT_INDEX_FILE" not in env
    assert env["GIT_SSH_COMMAND"] == "ssh -v"


def test_git_source_ignores_inherited_git_dir(store_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    store_repo.commit()
    monkeypatch.setenv("GIT_DIR", "/nonexistent")
    assert GitSource(store_repo.root, "HEAD").files() == ["store/_CONFIG_STORE"]


def test_cat_blobs_reads_binary_and_empty_blobs(repo: GitRepo) -> None:
    data = {"a": b"", "b": b"\x00\x01\n\n", "c": b"x" * 200_000}
    oids = {}
    for name, content in data.items():
        (repo.root / name).write_bytes(content)
        oids[name] = repo.git("hash-object", "-w", name)
    blobs = cat_blobs(repo.root, oids.values())
    assert {name: blobs[oid] for name, oid in oids.items()} == data


def test_git_source_reads_a_bare_repository(store_repo: GitRepo, tmp_path: Path) -> None:
    store_repo.write({"data/main.conf": "a = 1\n"}, under="store/")
    head = store_repo.commit()
    bare = tmp_path / "bare.git"
    store_repo.git("clone", "-q", "--bare", str(store_repo.root), str(bare))
    source = GitSource(bare, "main")
    assert source.commit == head
    assert source.read("store/data/main.conf") is not None
    with pytest.raises(NotAGitRepoError, match="bare repository"):
        WorkTreeSource(bare)
