"""ConfigClient (DESIGN 10): read one pinned version of a store, for the whole life of the client.

The version is fixed at construction (the latest non-rolled-back one, or `version=N`) and never moves, so
a rollback or a new publish never changes what a running process reads. Compiled snapshots are cached on
disk by (commit, store, variables, cfgtool version) and written atomically: a second process on the same
version starts without compiling. Each node's config as JSON (`config_json()`, which the Spark loader ships)
is cached beside the snapshot the first time it is asked for. A git URL is cloned into the cache directory
and fetched once per client.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from cfgtool._version import __version__
from cfgtool.access.secrets import SecretError, load_identities, open_envelope, store_label, with_secrets
from cfgtool.cache import DAMAGED, cache_root, pack, private_dir, unpack
from cfgtool.compile import CompileResult, compile_store
from cfgtool.errors import CfgtoolError, SourceError
from cfgtool.explain import Explanation, explain
from cfgtool.hocon import bulk, split_path
from cfgtool.plain import MISSING, value_at
from cfgtool.snapshot import KeyNotFound, Lookup, Snapshot, SnapshotFormatError, write_atomic_bytes
from cfgtool.store import git
from cfgtool.store.keys import ROOT, normalize_key
from cfgtool.versions import Version, VersionNotFound, history

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[^/\s]+@[^/\s]+:")  # https://..., ssh://..., git@host:path


class StoreNotFound(SourceError):
    """The location is not a repository, or the repository has no published version of the store."""


class ConfigClient:
    """Reads one version of a store: `client.version`, `client.commit`, and the queries of DESIGN 6."""

    def __new__(cls, location: str | Path, *args: Any, **kwargs: Any) -> ConfigClient:
        """A server URL (`http://host:8750`, no path: `cfgtool.remote.is_server_url`) reads through the server
        (`HttpConfigClient`, which also takes offline=, token=, timeout=); any other location is git."""
        from cfgtool.remote import HttpConfigClient, is_server_url

        return super().__new__(HttpConfigClient if cls is ConfigClient and is_server_url(location) else cls)

    def __init__(
        self,
        location: str | Path,
        store: str = "store",
        *,
        variables: Mapping[str, str] | None = None,
        version: int | None = None,
        cache_dir: str | Path | None = None,
        identity: str | Path | None = None,
    ) -> None:
        self.location = str(location)
        # secrets (DESIGN 14) read as Secret values; with an identity they open lazily, in this process only
        self._identities = load_identities(identity) if identity is not None else None
        self.store = store
        self.variables = dict(variables or {})
        self._cache = Path(cache_dir) if cache_dir is not None else cache_root()
        self.repo = self._repository()
        pinned = self._pin(version)
        self.version: int = pinned.version
        self.commit: str = pinned.commit
        self.snapshot: Snapshot = self._snapshot()

    # -- reads -------------------------------------------------------------------------------------------
    def lookup(self, key: str, strict: bool = False) -> Lookup:
        """The config of `key` and whether it has a node (a key without one reads as its nearest ancestor's).
        Its secrets are `Secret` values: `[hidden]` as text, `.reveal()` opens them given an identity."""
        found = self.snapshot.lookup(self._key(key), strict)
        sealed = self.snapshot.secrets.get(found.node)
        if not sealed:
            return found
        return replace(found, config=with_secrets(found.config, sealed, self._open))

    def _open(self, envelope: str) -> str:
        if self._identities is None:
            raise SecretError(
                "this secret is sealed: the client has no identity to open it",
                hint="create the client with ConfigClient(..., identity=PATH_TO_AGE_IDENTITY)",
            )
        label = store_label(self.snapshot.name, self.snapshot.store)
        return open_envelope(envelope, self._identities, label).value

    def exists(self, key: str) -> bool:
        """Whether `key` has a node of its own (else it reads as its nearest ancestor)."""
        return self.lookup(key).exists

    def get(self, key: str, strict: bool = False) -> Mapping[str, Any]:
        """The resolved config of `key`; `strict` raises KeyNotFound for a key without a node."""
        return self.lookup(key, strict).config

    def get_value(self, key: str, path: str, default: Any = MISSING, strict: bool = False) -> Any:
        """The value at `path` (a HOCON path expression) in `key`'s config; KeyNotFound unless `default`."""
        value = value_at(self.get(key, strict), split_path(path))
        if value is MISSING:
            if default is not MISSING:
                return default
            raise KeyNotFound(f"{key} has no value at {path} (version {self.version})", hint="check the path")
        return value

    def explain(self, key: str, path: str) -> Explanation:
        """Which file and line set the value, what it overrode, how each layer was reached (compiles the
        pinned commit once, since the cached snapshot carries no provenance)."""
        return explain(self._full_snapshot(), self._key(key), path)

    def imports(self, key: str, recursive: bool = False) -> list[str]:
        """Explicit imports, highest priority first; `recursive`: L(key) without the key (DESIGN 6)."""
        return self.snapshot.imports(self._key(key), recursive)

    def imported_by(self, key: str, recursive: bool = False) -> list[str]:
        """Nodes whose includes name `key`; `recursive`: every node with `key` among its layers."""
        return self.snapshot.imported_by(self._key(key), recursive)

    def tags(self, key: str) -> list[str]:
        """The tags among the layers of `key`, highest priority first."""
        return self.snapshot.tags(self._key(key))

    def datasets(self, tag: str) -> list[str]:
        """The non-tag nodes that import `tag`, directly or through their layers."""
        return self.snapshot.datasets(self._key(tag))

    def children(self, key: str) -> list[str]:
        """The child nodes of `key`."""
        return self.snapshot.children(self._key(key))

    def keys(self, prefix: str = ROOT) -> list[str]:
        """Every node key at or under `prefix`, sorted."""
        return self.snapshot.keys(self._key(prefix))

    def config_json(self) -> Mapping[str, str]:
        """Every node's resolved config as compact JSON (`compact_json`), by key; a node that did not resolve
        is absent. Encoded once per version and cached on disk beside the snapshot (written atomically)."""
        if not hasattr(self, "_config_json"):
            self._config_json: dict[str, str] = self._read_config_json()
        return self._config_json

    def __repr__(self) -> str:
        where = f"{self.location!r}, store={self.store!r}"
        return f"ConfigClient({where}, version={self.version}, commit={self.commit[:7]})"

    # -- construction ------------------------------------------------------------------------------------
    def _key(self, key: str) -> str:
        return normalize_key(key, self.snapshot.name if hasattr(self, "snapshot") else None)

    def _repository(self) -> Path:
        """The local repository: the location itself, or a clone of a URL in the cache, fetched once now."""
        if not _URL.match(self.location):
            path = Path(self.location).expanduser()
            if not path.exists():
                raise StoreNotFound(f"{self.location}: no such directory", hint="pass a repository path or a git URL")
            try:
                return git.locate(path).root
            except SourceError as exc:
                raise StoreNotFound(str(exc.message), hint=exc.hint) from exc
        clone = self._cache / "repos" / hashlib.sha256(self.location.encode("utf-8")).hexdigest()[:16]
        if (clone / "HEAD").exists():
            # branches may move; tags never do (a tag that changed upstream is an error, not an update)
            self._git(clone, "fetch", "--quiet", "origin", "+refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*")
        else:
            private_dir(clone.parent)
            self._git(clone.parent, "clone", "--quiet", "--bare", "--", self.location, str(clone))
        return clone

    def _git(self, cwd: Path, *args: str) -> None:
        try:
            git.run_git(cwd, *args)
        except SourceError as exc:
            raise StoreNotFound(f"cannot read {self.location}: {exc.message}", hint="check the URL and access") from exc

    def _pin(self, version: int | None) -> Version:
        versions = history(self.repo, self.store)
        if version is not None:
            return versions.require(version)
        current = versions.current
        if current is None:
            raise StoreNotFound(
                f"{self.location} has no published version of store {self.store!r}",
                hint="publish one with `cfgtool publish`, or pass version=N",
            )
        return current

    def _cache_file(self) -> Path:
        variables = json.dumps(self.variables, sort_keys=True)
        key = hashlib.sha256(f"{self.commit}\0{self.store}\0{variables}\0{__version__}".encode()).hexdigest()
        return self._cache / "snapshots" / f"{key}.msgpack"

    def _snapshot(self) -> Snapshot:
        """The pinned snapshot from the disk cache, else compiled (and cached atomically). The cache holds
        plain data (msgpack, never pickle: DESIGN 15); an entry that is damaged, foreign or of another commit
        is a miss."""
        path = self._cache_file()
        texts_path = path.with_suffix(".texts.msgpack")
        try:
            with bulk():  # thousands of small dicts: keep the cyclic GC from rescanning them while they load
                cached = Snapshot.from_json(unpack(path.read_bytes()), _CachedTexts(texts_path))
            if cached.source.commit == self.commit:
                return cached
        except (OSError, SnapshotFormatError, RecursionError, *DAMAGED):
            pass  # not cached yet, or unreadable: compile
        snapshot = self._compile().snapshot
        with contextlib.suppress(OSError, ValueError, TypeError, OverflowError):  # a read-only cache costs time
            private_dir(path.parent)
            write_atomic_bytes(texts_path, pack(dict(snapshot.texts)))  # the texts first: the snapshot needs them
            write_atomic_bytes(path, pack(snapshot.to_json(provenance=False, texts=False)))
        return snapshot

    def _read_config_json(self) -> dict[str, str]:
        path = self._cache_file().with_suffix(".json.msgpack")
        wanted = {key for key, snap in self.snapshot.nodes.items() if snap.config is not None}
        try:
            cached = unpack(path.read_bytes())
            if isinstance(cached, dict) and cached.keys() == wanted and all(type(v) is str for v in cached.values()):
                return cached
        except (OSError, *DAMAGED):
            pass  # not cached yet, or unreadable: encode
        nodes = self.snapshot.nodes
        encoded = {key: compact_json(nodes[key].config) for key in nodes if key in wanted}
        with contextlib.suppress(OSError, ValueError, TypeError, OverflowError):
            private_dir(path.parent)
            write_atomic_bytes(path, pack(encoded))
        return encoded

    def _compile(self) -> CompileResult:
        result = compile_store(
            self.repo, self.store, self.commit, self.variables, check_variables=False, validate=False
        )
        if result.errors:
            first = next(d for d in result.diagnostics if d.severity == "error")
            raise CfgtoolError(
                f"version {self.version} ({self.commit[:7]}) does not compile: {first.location}: {first.code} "
                f"{first.message}",
                hint="check the variables you pass; a published version compiled with its defaults",
            )
        return result

    def _full_snapshot(self) -> Snapshot:
        if not hasattr(self, "_full"):
            self._full: Snapshot = self._compile().snapshot
        return self._full


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)  # C encoder; config order kept


def compact_json(value: Any) -> str:
    """`value` as JSON without spaces, non-ASCII kept, keys in config order (what `config_json()` holds)."""
    return _ENCODER.encode(value)


class _CachedTexts(Mapping[str, str]):
    """The store's file texts, from their cache file when first needed (a key without a node using the
    intrinsics needs them); a missing file reads as no texts."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._texts: dict[str, str] | None = None

    def _load(self) -> dict[str, str]:
        if self._texts is None:
            try:
                loaded = unpack(self._path.read_bytes())
            except (OSError, *DAMAGED):
                loaded = {}
            ok = isinstance(loaded, dict) and all(type(k) is str and type(v) is str for k, v in loaded.items())
            self._texts = loaded if ok else {}
        return self._texts

    def __getitem__(self, path: str) -> str:
        return self._load()[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


__all__ = ["ConfigClient", "KeyNotFound", "StoreNotFound", "VersionNotFound"]
