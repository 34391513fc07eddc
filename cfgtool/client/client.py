"""`ConfigClient` (docs/client.md): read one pinned version of a store, for the whole life of the client.

A client holds a backend (`cfgtool.client.backend.Backend`), as an HTTP client holds a transport, and owns what
programs call: the reads, the errors of a key without a node or a path without a value, the older `strict=` spelling.
A server URL (`is_server_url`: `http://host:8750`, no path) makes an `HttpConfigClient`, the client with the server
backend (at any URL: a server behind a path prefix too), which names the server's options in its signature and adds
its counters. Any other location is git. `open_backend` makes the backend: every option reaches it there.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from cfgtool._util.plain import MISSING
from cfgtool.client.http import MAX_BYTES, Offline, ServerBackend, is_server_url
from cfgtool.client.local import GitBackend
from cfgtool.errors import UsageError
from cfgtool.snapshot.model import KeyNotFound, Lookup
from cfgtool.store.keys import ROOT

if TYPE_CHECKING:
    from cfgtool.client.backend import Backend
    from cfgtool.snapshot.explain import Explanation
    from cfgtool.snapshot.model import Snapshot


def open_backend(
    location: str | Path,
    store: str,
    *,
    server: bool,
    variables: Mapping[str, str] | None = None,
    identity: str | Path | None = None,
    **options: Any,
) -> Backend:
    """The backend a client reads through: a server's (`server`) or git's. Every option of the client reaches its
    backend here and only here, so an option one backend adds (`offline=`, `token=`, ...) needs no other change.
    A server applies no caller variables and opens no secrets: it refuses both, saying where they work."""
    if not server:
        return GitBackend(location, store, variables=variables, identity=identity, **options)
    if variables:
        raise UsageError(
            "a server serves each version as published, with its variables' defaults",
            hint="read with variables from the git repository: ConfigClient(<repository path or git URL>, ...)",
        )
    if identity is not None:
        raise UsageError(
            "a server serves secrets as [hidden] and holds no key to open them",
            hint="open secrets with a git-backed ConfigClient(<repository>, identity=...)",
        )
    return ServerBackend(str(location), store, **options)


class ConfigClient:
    """Reads one version of a store: `client.version`, `client.commit`, and the queries of
    docs/queries.md#the-queries. `ConfigClient(url)` of a server is an `HttpConfigClient`."""

    _server: ClassVar[bool] = False  # whether this class reads through a server, whatever its location

    def __new__(cls, location: str | Path, *args: Any, **kwargs: Any) -> ConfigClient:
        """A server URL (`is_server_url`) makes an `HttpConfigClient`, which also takes offline=, token=,
        timeout=, max_bytes= and kind=. Any other location is git. Both take instance=: the reader's id, whose
        `current` a staged rollout decides (docs/rollout.md)."""
        if cls is ConfigClient and is_server_url(location):
            cls = HttpConfigClient
        return super().__new__(cls)

    def __init__(
        self,
        location: str | Path,
        store: str = "store",
        *,
        variables: Mapping[str, str] | None = None,
        version: int | str | None = None,
        cache_dir: str | Path | None = None,
        identity: str | Path | None = None,
        instance: str | None = None,
        **options: Any,
    ) -> None:
        self._backend: Backend = open_backend(
            location, store, server=self._server, variables=variables, version=version, cache_dir=cache_dir,
            identity=identity, instance=instance, **options,
        )  # fmt: skip
        self.location = self._backend.location
        self.store = store
        self.variables = dict(self._backend.variables)

    @property
    def version(self) -> int:
        """The version pinned at construction; it never changes."""
        return self._backend.version

    @property
    def commit(self) -> str:
        """The commit of the pinned version."""
        return self._backend.commit

    @property
    def snapshot(self) -> Snapshot:
        """The whole pinned version. A git-backed client holds one; a server answers key by key."""
        return self._git().snapshot

    @property
    def repo(self) -> Path:
        """The git repository read (a URL's clone in the cache). A git-backed client only."""
        return self._git().repo

    def _git(self) -> GitBackend:
        if not isinstance(self._backend, GitBackend):
            raise AttributeError(f"{self!r} reads through a server: it holds no repository or snapshot")
        return self._backend

    # -- reads -------------------------------------------------------------------------------------------
    def lookup(self, key: str, strict: bool = False) -> Lookup:
        """The config of `key` and whether it has a node (a key without one reads as its nearest ancestor's).
        Its secrets are `Secret` values: `[hidden]` as text, `.reveal()` opens them given an identity (git)."""
        return self._backend.lookup(self._key(key), strict)

    def exists(self, key: str) -> bool:
        """Whether `key` has a node of its own (else it reads as its nearest ancestor)."""
        return self.lookup(key).exists

    def get(self, key: str, strict: bool | None = None, *, nearest: bool = False) -> Mapping[str, Any]:
        """The resolved config of `key`. A key without a node raises KeyNotFound, naming a node with a close key.
        With `nearest`, it reads as its nearest ancestor's instead (docs/resolution.md#keys-without-a-node). `strict`
        is the older spelling, kept so existing programs run (see `_nearest`)."""
        return self._lookup(key, _nearest(strict, nearest)).config

    def get_value(
        self, key: str, path: str, default: Any = MISSING, strict: bool | None = None, *, nearest: bool = False
    ) -> Any:
        """The value at `path` (a HOCON path expression) in `key`'s config. KeyNotFound when it is not set, unless
        `default`. KeyNotFound too for a key without a node, unless `nearest` (as `get`)."""
        from cfgtool.hocon import read_path

        config = self._lookup(key, _nearest(strict, nearest)).config
        found = read_path(config, path)
        if not found.found:
            if default is not MISSING:
                return default
            near = found.did_you_mean
            said = f"; did you mean {near}?" if near is not None else ""
            raise KeyNotFound(f"{key} has no value at {path} (version {self.version}){said}", hint="check the path")
        return found.value

    def _lookup(self, key: str, nearest: bool) -> Lookup:
        """`lookup(key)`, or KeyNotFound for a key without a node unless `nearest`."""
        found = self.lookup(key)
        if not found.exists and not nearest:
            raise KeyNotFound.no_node(found.key, self.store, found.node, self._backend.near(found.key))
        return found

    def explain(self, key: str, path: str) -> Explanation:
        """Which file and line set the value, what it overrode, and how each layer was reached
        (docs/resolution.md#provenance)."""
        return self._backend.explain(self._key(key), path)

    def imports(self, key: str, recursive: bool = False) -> list[str]:
        """Explicit imports, highest priority first; `recursive`: L(key) without the key
        (docs/queries.md#the-queries)."""
        return self._backend.imports(self._key(key), recursive)

    def imported_by(self, key: str, recursive: bool = False) -> list[str]:
        """Nodes whose includes name `key`; `recursive`: every node with `key` among its layers."""
        return self._backend.imported_by(self._key(key), recursive)

    def tags(self, key: str) -> list[str]:
        """The tags among the layers of `key`, highest priority first."""
        return self._backend.tags(self._key(key))

    def datasets(self, tag: str) -> list[str]:
        """The non-tag nodes that import `tag`, directly or through their layers."""
        return self._backend.datasets(self._key(tag))

    def children(self, key: str) -> list[str]:
        """The child nodes of `key`."""
        return self._backend.children(self._key(key))

    def keys(self, prefix: str = ROOT) -> list[str]:
        """Every node key at or under `prefix`, sorted."""
        return self._backend.keys(self._key(prefix))

    def config_json(self) -> Mapping[str, str]:
        """Every node's resolved config as compact JSON (`compact_json`), by key. A node that did not resolve is
        absent."""
        return self._backend.config_json()

    def config_values(self, paths: Sequence[tuple[str, ...]]) -> tuple[list[str], list[list[Any]]]:
        """The keys of every node that resolved, sorted. For each path (split, as `hocon.split_path` gives it), the
        value at it in each one's config, None where it has none. Secrets read `[hidden]`."""
        return self._backend.config_values(paths)

    def close(self) -> None:
        """Release what the backend holds open, such as a connection to a server (a later read opens it again)."""
        self._backend.close()

    def __repr__(self) -> str:
        return f"ConfigClient({self._backend.describe()})"

    def _key(self, key: str) -> str:
        return self._backend.normalize(key)


class HttpConfigClient(ConfigClient):
    """A `ConfigClient` that reads through a cfgtool server (docs/http-client.md), at any http(s) URL: one with a
    path prefix too. Its signature names the server's options; `ConfigClient(url, ...)` passes the same ones. It
    adds the server's counters, `lookup(sealed=)` and `report_error` to the reads, and nothing else."""

    _server = True
    _backend: ServerBackend

    def __init__(
        self,
        location: str | Path,
        store: str = "store",
        *,
        version: int | str | None = None,
        cache_dir: str | Path | None = None,
        offline: Offline = "cache",
        token: str | None = None,
        timeout: float = 10.0,
        max_bytes: int = MAX_BYTES,
        instance: str | None = None,
        kind: str = "client",
        **options: Any,  # variables= and identity= too, which `open_backend` refuses with the reason
    ) -> None:
        super().__init__(
            location, store, version=version, cache_dir=cache_dir, offline=offline, token=token, timeout=timeout,
            max_bytes=max_bytes, instance=instance, kind=kind, **options,
        )  # fmt: skip

    @property
    def requests(self) -> int:
        """The HTTP requests made."""
        return self._backend.requests

    @property
    def not_modified(self) -> int:
        """The 304 answers among them: revalidations that cost no body."""
        return self._backend.not_modified

    @property
    def offline(self) -> bool:
        """Whether the version was pinned from the cache, the server being down."""
        return self._backend.offline

    @property
    def instance(self) -> str:
        """The id given to the server (`Cfgtool-Instance`)."""
        return self._backend.instance

    def report_error(self, message: str) -> None:
        """Tell the server that this instance met an error on the pinned version (`cfgtool.client.http.report_error`).
        A rollout's consumers gate counts it against that version. Raises as `report_applied`: a caller that must go
        on catches CfgtoolError."""
        self._backend.report_error(message)

    def lookup(self, key: str, strict: bool = False, *, sealed: bool = False) -> Lookup:
        """As `ConfigClient.lookup`. `sealed`: its secrets as their sealed envelopes instead of `[hidden]`, for a
        reader that holds an identity and opens them itself (`cfgtool agent --identity`)."""
        return self._backend.lookup(self._key(key), strict, sealed=sealed)


def _nearest(strict: bool | None, nearest: bool) -> bool:
    """Whether a read asks for the nearest ancestor, given the older `strict` argument too.

    `strict=True` is today's default, so it changes nothing. `strict=False` asked for the nearest ancestor's
    config, as `nearest=True` does now: it keeps doing so, with a DeprecationWarning."""
    if strict is None:
        return nearest
    import warnings

    warnings.warn(
        "strict= is replaced by nearest=: a key without a node raises KeyNotFound unless nearest=True",
        DeprecationWarning,
        stacklevel=3,
    )
    return nearest or not strict


__all__ = ["ConfigClient", "HttpConfigClient", "open_backend"]
