"""The structure cache: a compile that finds its store's shape cached reads no includes file and builds no
graph, and gives exactly what a cold compile gives; a damaged entry, or any change to what it depends on, is
a miss."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cfgtool._util.cacheauth import seal, unseal
from cfgtool._util.codec import pack, unpack
from cfgtool.build import structure
from cfgtool.compile.compiler import CompileResult, compile_source, compile_store
from cfgtool.store.sources import open_source
from tests.conftest import GitRepo

SETTINGS = "tag_roots: [/tags]\nvariables:\n  cl: {values: [a1, b1], default: a1}\n  env: {values: [p, s]}\n"

# Every kind of problem discovery and the graphs report, several of them only under some variable values.
FILES = {
    "_CONFIG_STORE": SETTINGS,
    "main.conf": "owner = root\n",
    "data/main.conf": "retention = 7\n",
    "tags/u/main.conf": "u = 1\n",
    "tags/t/a1/main.conf": "cluster = a1\n",
    "tags/t/a1/includes": "/tags/u\n",
    "tags/t/b1/main.conf": "cluster = b1\n",
    "tags/e/p/main.conf": "env = p\n",
    "data/x/main.conf": "x = 1\n",
    "data/x/includes": "/tags/t/${cl}   # the cluster's tag\n/tags/u\n/tags/u\n",
    "data/w/includes": "/tags/t/${cl}\n/tags/u\n",
    "data/y/includes": "/tags/nope\n",
    "data/z/includes": "/data\n",
    "data/c1/includes": "/data/c2\n",
    "data/c2/includes": "/data/c1\n",
    "data/v/includes": "/tags/${?nodecl}/x\n/tags/${cl\n/tags/e/${env}\n",
    "data/d/includes": "/tags/u\n",
    "data/d/includes.conf": "/tags/t/a1\n",
    "data/bad name/main.conf": "a = 1\n",
    "data/o/main.conf": "o = ${u}\n",
    "data/o/includes": "/tags/t/${cl}\n/tags/u\n",
}


def shaped_store(repo: GitRepo) -> None:
    repo.write(FILES, under="store/")
    repo.commit()


def compiled(repo: GitRepo, cache: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> CompileResult:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(cache))
    return compile_store(repo.root, ref="HEAD", validate=False, **options)


def answers(result: CompileResult) -> tuple[Any, ...]:
    """Everything a compile answers: the snapshot with provenance (how each layer was reached), every
    diagnostic with its notes, the assignments checked."""
    diags = [(d.to_json(), d.notes) for d in result.diagnostics]
    return result.snapshot.to_json(), diags, [dict(c) for c in result.checked], result.snapshot.digest


def entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("structure-*/*.msgpack"))


def test_structure_cache_warm_compile_equals_cold(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shaped_store(repo)
    cache = tmp_path / "cache"
    first = compiled(repo, cache, monkeypatch)
    assert first.stats["graphs_reused"] == 0 and len(entries(cache)) == 1
    codes = {d.code for d in first.diagnostics}
    assert {"E_CYCLE", "E_MISSING_IMPORT", "W_DUPLICATE_IMPORT", "W_REDUNDANT_IMPORT", "E_SYNTAX",
            "E_DUPLICATE_INCLUDES", "E_BAD_KEY", "W_IMPORT_ORDER"} <= codes  # fmt: skip
    assert len(first.checked) == 4
    second = compiled(repo, cache, monkeypatch)
    assert second.stats["graphs_reused"] == 1
    assert answers(second) == answers(first)

    repo.write({"data/x/main.conf": "x = 2\n", "tags/u/main.conf": "u = 2\n"}, under="store/")  # main.conf only
    repo.commit()
    warm = compiled(repo, cache, monkeypatch)
    assert warm.stats["graphs_reused"] == 1 and warm.stats["resolved"] > 0
    assert answers(warm) == answers(compiled(repo, tmp_path / "cold", monkeypatch))


def test_structure_cache_reads_no_includes_file_when_warm(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shaped_store(repo)
    cache = tmp_path / "cache"
    compiled(repo, cache, monkeypatch)
    source = open_source(repo.root, "store", "HEAD")
    result = compile_source(source, validate=False)
    assert result.stats["graphs_reused"] == 1
    read = {path.rpartition("/")[2] for path in source._cache}
    assert not read & {"includes", "includes.conf"}


@pytest.mark.parametrize(
    "damage",
    [
        lambda d, p: d[: len(d) // 2],  # truncated
        lambda d, p: b"\xc1 not msgpack",
        lambda d, p: pack([1, 2, 3]),  # well-formed, not an entry (nor sealed)
        lambda d, p: _reframe(d, p, lambda x: x[:-3] + b"\x00\x00\x00"),  # the tag does not match
        lambda d, p: _rewrite(d, p, lambda e: {**e, "keys": e["keys"][::-1]}),  # another store
        lambda d, p: _rewrite(d, p, lambda e: {**e, "main": [1, 2]}),  # a damaged field, sealed again
        # sealed again by a cfgtool that got it wrong: nodes that cannot be the store's
        lambda d, p: _rewrite(d, p, lambda e: {**e, "keys": [*e["keys"], "/zzz/r"]}),  # no parent node
        lambda d, p: _rewrite(d, p, lambda e: {**e, "keys": [*e["keys"], "/zzz"]}),  # no such directory
        lambda d, p: _rewrite(d, p, lambda e: {**e, "keys": [*e["keys"], "/~"]}),  # no key
        lambda d, p: _rewrite(d, p, lambda e: {**e, "keys": ["/0", *e["keys"][1:]]}),  # no root
        lambda d, p: _rewrite(d, p, lambda e: {**e, "includes": _moved(e["includes"])}),  # elsewhere
    ],
)
def test_structure_cache_damaged_entry_is_a_miss(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: Any
) -> None:
    shaped_store(repo)
    cache = tmp_path / "cache"
    cold = answers(compiled(repo, cache, monkeypatch))
    (entry,) = entries(cache)
    entry.write_bytes(damage(entry.read_bytes(), f"{entry.parent.name}/{entry.stem}"))
    missed = compiled(repo, cache, monkeypatch)
    assert missed.stats["graphs_reused"] == 0
    assert answers(missed) == cold
    again = compiled(repo, cache, monkeypatch)  # the miss wrote the entry afresh
    assert again.stats["graphs_reused"] == 1 and answers(again) == cold


def _moved(includes: list[Any]) -> list[Any]:
    """The includes columns of an entry with the first file's path in another directory."""
    paths = list(includes[1])
    paths[0] = "store/elsewhere/includes"
    return [includes[0], paths, *includes[2:]]


def test_structure_cache_settings_problems_are_found_afresh(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shaped_store(repo)
    repo.write({"_CONFIG_STORE": SETTINGS + "unknown_setting: 1\n"}, under="store/")
    repo.commit()
    cache = tmp_path / "cache"
    cold = answers(compiled(repo, cache, monkeypatch))
    (entry,) = entries(cache)

    def reworded(entry: dict[str, Any]) -> dict[str, Any]:
        words = "an older cfgtool's words"
        diags = [[*d[:6], words, d[7]] if d[0] == "E_SETTINGS" else d for d in entry["diagnostics"]]
        assert diags != entry["diagnostics"]  # the settings' problem is in the entry
        return {**entry, "diagnostics": diags}

    entry.write_bytes(_rewrite(entry.read_bytes(), f"{entry.parent.name}/{entry.stem}", reworded))
    warm = compiled(repo, cache, monkeypatch)
    assert warm.stats["graphs_reused"] == 1 and answers(warm) == cold


def _reframe(data: bytes, purpose: str, change: Any) -> bytes:
    """The entry with its bytes changed after sealing: its tag no longer matches."""
    return data[:32] + change(data[32:])


def _rewrite(data: bytes, purpose: str, change: Any) -> bytes:
    """The entry rewritten and sealed again with the user's key, as a cfgtool with another idea of it would."""
    found = unseal(purpose, data)
    assert found is not None
    sealed = seal(purpose, pack(change(unpack(found))))
    assert sealed is not None
    return sealed


@pytest.mark.parametrize(
    ("change", "options"),
    [
        ({"data/x/includes": "/tags/u\n/tags/t/${cl}\n"}, {}),  # an includes file's content
        ({"data/w/includes.conf": "/tags/u\n"}, {}),  # a second includes file (E_DUPLICATE_INCLUDES)
        ({"data/new/notes.txt": "a node without config files\n"}, {}),  # a new node
        ({"data/y/includes": None}, {}),  # an includes file removed
        ({"_CONFIG_STORE": SETTINGS.replace("default: a1", "default: b1")}, {}),  # the settings
        ({}, {"variables": {"cl": "b1"}}),  # the values asked for
        ({}, {"check_variables": False}),
    ],
)
def test_structure_cache_any_input_change_is_a_miss_with_the_cold_answer(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: dict[str, str | None], options: Any
) -> None:
    shaped_store(repo)
    cache = tmp_path / "cache"
    compiled(repo, cache, monkeypatch)
    if change:
        repo.write(change, under="store/")
        repo.commit()
    after = compiled(repo, cache, monkeypatch, **options)
    assert after.stats["graphs_reused"] == 0
    assert answers(after) == answers(compiled(repo, tmp_path / "cold", monkeypatch, **options))


def test_structure_key_names_cfgtool_version_and_code(repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    shaped_store(repo)
    source = open_source(repo.root, "store", "HEAD")
    key = structure.shape_key(source, None, True)
    assert structure.shape_key(source, None, True) == key
    monkeypatch.setattr(structure, "__version__", "99.0")
    assert structure.shape_key(source, None, True) != key
    monkeypatch.undo()
    monkeypatch.setattr(structure, "_code_digest", lambda: "another")
    assert structure.shape_key(source, None, True) != key


def test_structure_cache_keeps_the_newest_entries(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(structure, "KEEP", 2)
    shaped_store(repo)
    cache = tmp_path / "cache"
    for n in range(4):
        repo.write({f"data/n{n}/includes": "/tags/u\n"}, under="store/")
        repo.commit()
        compiled(repo, cache, monkeypatch)
    assert len(entries(cache)) == 2
    assert compiled(repo, cache, monkeypatch).stats["graphs_reused"] == 1  # the newest is among them


def test_the_code_the_cache_hashes_is_where_it_says() -> None:
    """The cache starts afresh when the modules that decide an entry change; a listed file that moved away would
    silently drop out of that hash, and an old entry would outlive a change to the code that made it."""
    package = Path(structure.__file__).parent.parent
    missing = [name for name in structure._CODE if not (package / name).is_file()]
    assert not missing, f"structure._CODE names files that do not exist: {missing}"
    assert "build/structure.py" in structure._CODE and "compile/compiler.py" in structure._CODE
