"""Reading a store at a git ref or a published version. A cached version artifact serves it. Else it is compiled once
and the artifact written, so the next read of the same commit opens it instead.

Which commit a ref or version names comes from a `RefMemo`, while the refs stay as they were. So a cached read starts
no git process and imports no GitPython. Answers, messages and exit codes are the ones a compile gives. On any miss
the compile runs exactly as before. An artifact holds the same snapshot and diagnostics.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cfgtool._util.cachedir import budget_bytes, cache_root, mark_used, private_dir, prune
from cfgtool.diagnostics import Diagnostic
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.snapshot.model import Reading, Snapshot
from cfgtool.store.assignments import parse_assignments
from cfgtool.store.refmemo import RefMemo, memoizable
from cfgtool.versions.artifact import Artifact, artifact_path, open_artifact, write_artifact

if TYPE_CHECKING:
    from cfgtool.build.builder import Progress

SETTINGS_FILE = "_CONFIG_STORE"
VERSIONS_BUDGET_VARIABLE = "CFGTOOL_VERSIONS_CACHE_MB"  # the compiled versions' share of the cache
VERSIONS_BUDGET_MB = 5120  # least recently read versions beyond it are removed (about 10 of 100k datasets)


def read_at(
    repo: Path | None,
    store: str | Path,
    *,
    ref: str | None = None,
    version: int | str | None = None,
    variables: Mapping[str, str] | None = None,
    cache: Path | None = None,
    progress: Progress | None = None,
) -> Reading:
    """The store in `repo` (None: the repository containing the current directory) under the given `variables`. It is
    read at `ref`, at published version N (rolled back or not), or at the one `current` / `previous` names. It is
    compiled as a query compiles: no other variable values, no validation. The version artifact in `cache` serves it
    when there is one."""
    variables = dict(variables or {})
    cache = cache if cache is not None else cache_root()
    memo = RefMemo(repo if repo is not None else Path.cwd(), cache)
    root = memo.repo.root
    memo.add_file(root / store / SETTINGS_FILE)  # version tag prefixes come from it before a first commit
    if version is not None:
        commit: str | None = version_commit(memo, store, version)
        label = commit
        found = store_dir(memo, store)
    else:
        assert ref is not None
        found = store_dir(memo, store)
        commit = ref_commit(memo, ref)
        label = ref
    memo.save()
    if commit is not None and label is not None:
        artifact = open_version(cache, commit, found, variables)
        if artifact is not None:
            return artifact.reading(label, lambda: compile_at(repo, store, commit, variables, cache).snapshot)
    return compile_at(repo, store, label, variables, cache, progress)


def read_for_query(
    repo: Path | None,
    store: str | Path,
    *,
    ref: str | None = None,
    version: str | None = None,
    variables: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> Reading:
    """The store at `ref` or at `version` (as people write them: `--ref current` names a version too) as a query
    reads it (`read_at`). `variables` are `NAME=VALUE` texts. As a compile does, an unknown version is reported
    before a bad variable text. A version tagged without `publish`'s checks is refused (`refuse_invalid`)."""
    from cfgtool.versions.names import split_ref, version_spec

    ref, version = split_ref(ref, version)
    number = version_spec(version) if version is not None else None
    try:
        given = parse_assignments(variables)
    except UsageError:
        if number is not None:
            from cfgtool.versions.current import resolve_version

            resolve_version(repo, number, store)
        raise
    reading = read_at(repo, store, ref=ref, version=number, variables=given, progress=progress)
    if number is not None:
        refuse_invalid(repo, store, reading, number, given)
    return reading


def refuse_invalid(
    repo: Path | None, store: str | Path, reading: Reading, version: int | str, variables: Mapping[str, str]
) -> None:
    """CfgtoolError (exit 1) naming the first schema or policy error of a published version. A version made by hand
    without `publish`'s checks is never applied: the server and `ConfigClient` skip it. So its values are not printed
    as if it were. The check is the one they run, cached per commit."""
    commit = reading.snapshot.source.commit
    if commit is None:
        return
    cache = cache_root()
    root = RefMemo(repo if repo is not None else Path.cwd(), cache).repo.root  # git-free, memoized
    problem = validation_error(root, commit, reading.snapshot, cache, variables)
    if problem is None:
        return
    if isinstance(version, str):  # `current` / `previous`: name it by its number
        from cfgtool.versions.current import named
        from cfgtool.versions.tags import history

        version = named(history(root, store), version).version
    raise CfgtoolError(
        f"version {version} ({commit[:7]}) has errors, so no application reads it: {problem}",
        hint=f"it was tagged without `cfgtool publish`'s checks: roll it back (`cfgtool rollback {version} -m"
        " REASON`) and publish a fixed version",
    )


def ref_commit(memo: RefMemo, ref: str) -> str | None:
    """The commit `ref` names, None when it names none."""
    root = memo.repo.root

    def resolve() -> str | None:
        from cfgtool.store import git

        return git.resolve_commit(root, ref)

    return memo.answer(f"ref {ref}", resolve) if memoizable(ref) else resolve()


def version_commit(memo: RefMemo, store: str | Path, version: int | str) -> str:
    """The commit of published version N, or of the one `current` / `previous` names (VersionNotFound when
    there is none)."""
    root = memo.repo.root

    def resolve() -> str:
        from cfgtool.versions.current import resolve_version

        return resolve_version(root, version, store)

    commit: str = memo.answer(f"version {store} {version}", resolve)
    return commit


def store_dir(memo: RefMemo, store: str | Path) -> str:
    """The store directory relative to the repository root (StoreNotFoundError when it is outside)."""
    root = memo.repo.root

    def normalize() -> str:
        from cfgtool.store.sources import _store_dir

        return _store_dir(root, store)

    if Path(store).is_absolute():  # resolving it reads links outside the repository: not remembered
        return normalize()
    found: str = memo.answer(f"store {store}", normalize)
    return found


def open_version(cache: Path, commit: str, store: str, variables: Mapping[str, str]) -> Artifact | None:
    """The cached artifact of `commit`'s `store` (repo-relative) under `variables`, None when there is none. One that
    is found is marked as read. So the pruning that follows each new artifact removes it last."""
    path = artifact_path(cache, commit, store, variables)
    artifact = open_artifact(path, commit=commit, store=store, variables=variables)
    if artifact is not None:
        mark_used(path)
    return artifact


def validation_error(
    repo: Path, commit: str, snapshot: Snapshot, cache: Path, variables: Mapping[str, str]
) -> str | None:
    """The first error of the schemas and policies of `commit`'s compiled `snapshot`, None when they pass.

    A query reads a version without validating it. But a tag made by hand never went through `publish`'s checks. The
    server never serves such a version, and `ConfigClient` never pins it. This is the one check both use, run once
    per (commit, store, variables). The verdict is kept in the cache beside the version's artifact. It is sealed
    (`cacheauth`), since it decides what is served and pinned. A damaged or forged one is a miss.
    """
    from cfgtool._util.cacheauth import seal, unseal

    verdict = artifact_path(cache, commit, snapshot.store, variables).with_suffix(".validated")
    purpose = f"validated {verdict.name}"
    with contextlib.suppress(OSError, UnicodeDecodeError):
        found = unseal(purpose, verdict.read_bytes())
        if found is not None:
            return found.decode("utf-8", "surrogatepass") or None
    from cfgtool._util.atomic import write_atomic_bytes
    from cfgtool.compile.compiler import validate_snapshot
    from cfgtool.store.nodes import discover
    from cfgtool.store.sources import open_source
    from cfgtool.validate.rules import rules_of

    source = open_source(repo, snapshot.store or ".", commit)
    store = discover(source, None)
    rules = rules_of(source, store.settings, store.settings_file)
    errors = [d for d in validate_snapshot(store, snapshot, rules) if d.severity == "error"]
    error = f"{errors[0].location}: {errors[0].code} {errors[0].message}" if errors else ""
    sealed = seal(purpose, error.encode("utf-8", "surrogatepass"))
    if sealed is not None:
        with contextlib.suppress(OSError):
            write_atomic_bytes(verdict, sealed)
    return error or None


def compile_at(
    repo: Path | None,
    store: str | Path,
    ref: str | None,
    variables: Mapping[str, str],
    cache: Path,
    progress: Progress | None = None,
) -> Reading:
    """Compile the store at `ref` as a query does (reporting to `progress`), and write its artifact."""
    from cfgtool.compile.compiler import compile_store

    result = compile_store(repo, store, ref, variables, check_variables=False, validate=False, progress=progress)
    save_artifact(cache, result.snapshot, result.diagnostics, variables)
    return Reading(result.snapshot, result.diagnostics)


def save_artifact(
    cache: Path, snapshot: Snapshot, diagnostics: Sequence[Diagnostic], variables: Mapping[str, str]
) -> bool:
    """Write the artifact of a compiled commit. False when there is none to write (a working tree). False too when
    the cache cannot be written; that only costs the next read a compile."""
    commit = snapshot.source.commit
    if commit is None or snapshot.source.ref is None:
        return False
    path = artifact_path(cache, commit, snapshot.store, variables)
    budget = budget_bytes(VERSIONS_BUDGET_VARIABLE, VERSIONS_BUDGET_MB)
    with contextlib.suppress(OSError, ValueError, TypeError, OverflowError):
        private_dir(path.parent)
        write_artifact(path, snapshot, diagnostics, variables)
        prune(path.parent, path.suffix, keep=path, budget=budget)
        return True
    return False
