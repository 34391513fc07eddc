"""The git backend of `ConfigClient` (docs/client.md): one pinned version of a store in a git repository.

The version is fixed at construction (the latest non-rolled-back one, or `version=N`) and never moves. So a rollback
or a new publish never changes what a running process reads. While a version rolls out under a plan, `current` is
what the client's `instance` reads, computed from the tags as the server computes it (`cfgtool.versions.current`).
Compiled versions are cached on disk as version artifacts, read key by key. An artifact (`cfgtool.versions.artifact`)
is SQLite, by (commit, store, variables, cfgtool version), written atomically. So a second process on the same version
starts without compiling or loading the whole snapshot. It starts no git either, while the repository's refs stay as
they were (`RefMemo`). A git URL is cloned into the cache directory and fetched once per client.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cfgtool._util.cachedir import cache_root, checked_root, private_dir
from cfgtool.errors import CfgtoolError, SourceError
from cfgtool.snapshot.model import KeyNotFound, Lookup, Snapshot
from cfgtool.store.keys import normalize_key
from cfgtool.store.refmemo import RefMemo
from cfgtool.store.urls import FETCH, fetch_env, redact, split_credentials
from cfgtool.versions.artifact import Artifact, compact_json
from cfgtool.versions.artifact_rows import values_at
from cfgtool.versions.names import CURRENT, version_spec
from cfgtool.versions.reading import (
    SETTINGS_FILE,
    open_version,
    save_artifact,
    store_dir,
    validation_error,
    version_commit,
)

if TYPE_CHECKING:
    from cfgtool.compile.compiler import CompileResult
    from cfgtool.diagnostics import Diagnostic
    from cfgtool.snapshot.explain import Explanation
    from cfgtool.versions import VersionNotFound as VersionNotFound

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[^/\s]+@[^/\s]+:")  # https://..., ssh://..., git@host:path


class StoreNotFound(SourceError):
    """The location is not a repository, or the repository has no published version of the store."""


class VersionHasErrors(CfgtoolError):
    """The version's compile, schemas or policies report an error: an application never reads it."""


class SkippedVersionWarning(UserWarning):
    """The current (or previous) version has errors: the client pinned the newest good version below it."""


class GitBackend:
    """A `ConfigClient`'s backend over a git repository (`cfgtool.client.backend.Backend`): one version, pinned and
    checked at construction, read from its artifact or a compile. `snapshot` is the whole version.

    `instance` is the reader's instance id for a staged rollout (docs/rollout.md): with it, `current` (and the
    default pin) is the version that instance reads, the candidate when it is in the cohort; without it, the stable
    version, as for a server's reader that sends no id."""

    _artifact: Artifact | None = None  # the version artifact read from (none: compiled in this process)

    def __init__(
        self,
        location: str | Path,
        store: str,
        *,
        variables: Mapping[str, str] | None = None,
        version: int | str | None = None,
        cache_dir: str | Path | None = None,
        identity: str | Path | None = None,
        instance: str | None = None,
    ) -> None:
        self.location = str(location)
        self.instance = instance
        # secrets (docs/access.md#secrets) read as Secret values; with an identity they open lazily, in this process
        # only
        self._identities: list[Any] | None = None
        if identity is not None:
            from cfgtool.access.secrets import load_identities

            self._identities = load_identities(identity)
        self.store = store
        self.variables = dict(variables or {})
        self._cache = checked_root(Path(cache_dir)) if cache_dir is not None else cache_root()
        memo = self._refs()
        self.repo = memo.repo.root
        self.version, self.commit = self._pin(memo, version)
        try:
            self.snapshot: Snapshot = self._checked(memo)
        except VersionHasErrors as exc:
            if isinstance(version, int) or (version is not None and isinstance(version_spec(version), int)):
                raise  # a version asked for by number is that one or none
            self.snapshot = self._fall_back(memo, exc)

    # -- reads -------------------------------------------------------------------------------------------
    def normalize(self, key: str) -> str:
        return normalize_key(key, self.snapshot.name)

    def lookup(self, key: str, strict: bool) -> Lookup:
        """The config of `key`, its secrets as `Secret` values: `[hidden]` as text, `.reveal()` opens them given an
        identity."""
        found = self.snapshot.lookup(key, strict)
        sealed = self.snapshot.secrets.get(found.node)
        if not sealed:
            return found
        from cfgtool.access.secrets import with_secrets

        return replace(found, config=with_secrets(found.config, sealed, partial(self._open, found.node)))

    def _open(self, node: str, envelope: str) -> str:
        """Open a secret read from `node`, whatever its clear binding says. It opens only if sealed for a (layer,
        path) of `node` where this very value is assigned. That is its own main.conf, an ancestor's, an import's, or
        a file one of them includes."""
        from cfgtool.access.secrets import SecretError, open_envelope, sealed_in, store_label

        if self._identities is None:
            raise SecretError(
                "this secret is sealed: the client has no identity to open it",
                hint="create the client with ConfigClient(..., identity=PATH_TO_AGE_IDENTITY)",
            )
        snapshot = self.snapshot
        label = store_label(snapshot.name, snapshot.store)
        layers = snapshot.nodes[node].layers if node in snapshot.nodes else ()
        places = {
            (layer, name)
            for layer in layers
            if layer in snapshot.nodes
            for name, value, _ in sealed_in(snapshot.texts, snapshot.nodes[layer].file)
            if value == envelope
        }
        return open_envelope(envelope, self._identities, label, places).value

    def near(self, key: str) -> str | None:
        return self.snapshot.near_node(key)

    def explain(self, key: str, path: str) -> Explanation:
        """Only the provenance of the layers of `key` is computed, from their files, when first asked for."""
        from cfgtool.snapshot.explain import explain

        return explain(self.snapshot, key, path)

    def imports(self, key: str, recursive: bool) -> list[str]:
        return self.snapshot.imports(key, recursive)

    def imported_by(self, key: str, recursive: bool) -> list[str]:
        return self.snapshot.imported_by(key, recursive)

    def tags(self, key: str) -> list[str]:
        return self.snapshot.tags(key)

    def datasets(self, tag: str) -> list[str]:
        return self.snapshot.datasets(tag)

    def children(self, key: str) -> list[str]:
        return self.snapshot.children(key)

    def keys(self, prefix: str) -> list[str]:
        return self.snapshot.keys(prefix)

    def config_json(self) -> Mapping[str, str]:
        """Read as stored in the version artifact (encoded once, when the version was compiled)."""
        if not hasattr(self, "_config_json"):
            if self._artifact is not None:
                self._config_json: dict[str, str] = self._artifact.config_json()
            else:
                nodes = self.snapshot.nodes
                self._config_json = {k: compact_json(n.config) for k, n in nodes.items() if n.config is not None}
        return self._config_json

    def config_values(self, paths: Sequence[tuple[str, ...]]) -> tuple[list[str], list[list[Any]]]:
        """Only these values are decoded when the version artifact can extract them (`Artifact.config_values`).
        Else every config is, in one pass."""
        if self._artifact is not None:
            found = self._artifact.config_values(paths)
            if found is not None:
                return found
        texts = self.config_json()
        keys = sorted(texts)
        try:
            configs = json.loads("[" + ",".join(texts[k] for k in keys) + "]")  # one decode, not one per node
            if not all(type(config) is dict for config in configs):
                raise ValueError("a config that is no object")
        except (ValueError, RecursionError):  # a row that reads back as no config: compiled again
            assert self._artifact is not None  # configs encoded in this process always decode
            nodes = self._artifact.recovered().nodes
            keys = sorted(k for k, n in nodes.items() if n.config is not None)
            configs = [nodes[k].config for k in keys]
        return keys, [values_at(configs, parts) for parts in paths]

    def close(self) -> None:
        """Nothing to release: a git read holds no connection."""

    def describe(self) -> str:
        return f"{redact(self.location)!r}, store={self.store!r}, version={self.version}, commit={self.commit[:7]}"

    # -- construction ------------------------------------------------------------------------------------
    def _refs(self) -> RefMemo:
        """The local repository's ref answers. It is the location itself, or a clone of a URL in the cache, fetched
        once now."""
        if not _URL.match(self.location):
            path = Path(self.location).expanduser()
            if not path.exists():
                raise StoreNotFound(f"{self.location}: no such directory", hint="pass a repository path or a git URL")
            memo = RefMemo(path, self._cache)
        else:
            import hashlib
            import shutil

            def named(url: str) -> Path:
                return self._cache / "repos" / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]

            url, credential = split_credentials(self.location)  # the credential stays in memory
            env = fetch_env(url, credential)
            clone = named(url)
            if url != self.location:  # a clone an older cfgtool made kept the credential in its config
                shutil.rmtree(named(self.location), ignore_errors=True)
            if (clone / "HEAD").exists():
                self._git(clone, *FETCH, url=url, env=env)  # branches may move; tags never do
            else:
                private_dir(clone.parent)
                self._git(clone.parent, "clone", "--quiet", "--bare", "--", url, str(clone), url=url, env=env)
            memo = RefMemo(clone, self._cache)
        try:
            memo.add_file(memo.repo.root / self.store / SETTINGS_FILE)  # the tag prefixes, before a first commit
        except SourceError as exc:
            raise StoreNotFound(str(exc.message), hint=exc.hint) from exc
        return memo

    def _git(self, cwd: Path, *args: str, url: str, env: Mapping[str, str]) -> None:
        from cfgtool.store import git

        try:
            git.transfer(cwd, *args, url=url, env=env)
        except SourceError as exc:
            what = redact(f"cannot read {self.location}: {exc.message}")
            raise StoreNotFound(what, hint="check the URL and access") from exc

    def _pin(self, memo: RefMemo, version: int | str | None) -> tuple[int, str]:
        """(version, commit): version N, the one `current` / `previous` names, or (None) the current version."""
        if isinstance(version, int):
            return version, version_commit(memo, self.store, version)
        name = version_spec(version) if version is not None else CURRENT
        if isinstance(name, int):
            return name, version_commit(memo, self.store, name)
        question = f"{name} {self.store}"
        if self.instance is not None:  # one answer per cohort: every instance in it reads the same version
            from cfgtool.versions.rollout import cohort_id

            question += f" {cohort_id(self.instance)}"
        current = memo.answer(question, lambda: self._named(name))
        if current is None:
            raise StoreNotFound(
                f"{redact(self.location)} has no published version of store {self.store!r}",
                hint="publish one with `cfgtool publish`, or pass version=N",
            )
        return int(current[0]), str(current[1])

    def _named(self, name: str) -> list[int | str] | None:
        """[N, commit] of the version `name` names; None when nothing is published (the client's own error)."""
        from cfgtool.versions import history
        from cfgtool.versions.current import named, reading

        found = history(self.repo, self.store)
        if reading(found, self.instance) is None and name == CURRENT:
            return None
        chosen = named(found, name, self.instance)
        return [chosen.version, chosen.commit]

    def _snapshot(self, memo: RefMemo) -> Snapshot:
        """The pinned version from its artifact; compiled (and its artifact written) the first time. A
        version that does not compile is refused either way."""
        found = store_dir(memo, self.store)
        memo.save()
        artifact = open_version(self._cache, self.commit, found, self.variables)
        if artifact is None:
            result = self._compile()
            if save_artifact(self._cache, result.snapshot, result.diagnostics, self.variables):
                artifact = open_version(self._cache, self.commit, found, self.variables)
            if artifact is None:  # a cache that cannot be written: read the compiled snapshot
                self._refuse(result.diagnostics)
                return result.snapshot
        self._refuse(artifact.diagnostics)
        self._artifact = artifact
        return artifact.reading(self.commit, lambda: self._compile().snapshot).snapshot

    def _checked(self, memo: RefMemo) -> Snapshot:
        """The pinned version's snapshot. VersionHasErrors when its compile, schemas or policies report an error.
        That is checked once per commit; the verdict is cached beside its artifact (`validation_error`)."""
        snapshot = self._snapshot(memo)
        problem = validation_error(self.repo, self.commit, snapshot, self._cache, self.variables)
        if problem is not None:
            raise VersionHasErrors(
                f"version {self.version} ({self.commit[:7]}) does not validate: {problem}",
                hint="it was tagged without `cfgtool publish`'s checks: roll it back (`cfgtool rollback "
                f"{self.version}`) and publish a fixed version",
            )
        return snapshot

    def _fall_back(self, memo: RefMemo, first: VersionHasErrors) -> Snapshot:
        """The newest good version below the named one that has no errors. It is pinned instead, with a
        `SkippedVersionWarning` naming each version skipped. The first error when there is none."""
        from cfgtool.versions import history

        found = history(self.repo, self.store)
        skipped = [f"{found.tag(self.version).name}: {first.message}"]
        for n in reversed(found.numbers):
            if n >= self.version or found.is_rolled_back(n):
                continue
            self.version, self.commit = n, found.tag(n).commit
            try:
                snapshot = self._checked(memo)
            except VersionHasErrors as exc:
                skipped.append(f"{found.tag(n).name}: {exc.message}")
                continue
            warning = SkippedVersionWarning(f"reading version {n}: skipped {'; '.join(skipped)}")
            warnings.warn(warning, stacklevel=5)  # the ConfigClient(...) call
            return snapshot
        raise first

    def _compile(self) -> CompileResult:
        from cfgtool.compile.compiler import compile_store

        return compile_store(self.repo, self.store, self.commit, self.variables, check_variables=False, validate=False)

    def _refuse(self, diagnostics: Sequence[Diagnostic]) -> None:
        first = next((d for d in diagnostics if d.severity == "error"), None)
        if first is not None:
            raise VersionHasErrors(
                f"version {self.version} ({self.commit[:7]}) does not compile: {first.location}: {first.code} "
                f"{first.message}",
                hint="check the variables you pass; a published version compiled with its defaults",
            )


def __getattr__(name: str) -> Any:
    """`VersionNotFound`, imported when first used (it lives with the version tags)."""
    if name == "VersionNotFound":
        from cfgtool.versions import VersionNotFound

        return VersionNotFound
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "GitBackend",
    "KeyNotFound",
    "SkippedVersionWarning",
    "StoreNotFound",
    "VersionHasErrors",
    "VersionNotFound",
    "compact_json",
]
