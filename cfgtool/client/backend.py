"""What a `ConfigClient` needs of the place it reads from: the `Backend` protocol.

A client holds one backend, as an HTTP client holds a transport: the client owns the surface programs call (the
reads, the did-you-mean of a missing key, the older `strict=` spelling), and the backend only answers for one pinned
version. `cfgtool.client.local.GitBackend` reads a git repository; `cfgtool.client.http.ServerBackend` reads through
`cfgtool serve`. A backend pins its version at construction and never moves it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from cfgtool.snapshot.explain import Explanation
    from cfgtool.snapshot.model import Lookup


class Backend(Protocol):
    """One pinned version of one store. Every key a client passes in is normalized first (`normalize`)."""

    @property
    def location(self) -> str:
        """Where it reads from, as given (a URL's credentials are never shown: `describe`)."""

    @property
    def variables(self) -> Mapping[str, str]:
        """The includes variables it resolves with (a server: none)."""

    @property
    def version(self) -> int:
        """The version pinned at construction."""

    @property
    def commit(self) -> str:
        """The commit of that version."""

    def normalize(self, key: str) -> str:
        """`key` in its one spelling (`/data/x`), whichever way it was written."""

    def lookup(self, key: str, strict: bool) -> Lookup:
        """The config of `key` and whether it has a node; `strict`: KeyNotFound for a key without one."""

    def near(self, key: str) -> str | None:
        """A node whose key is close to `key` (which has no node), for the did-you-mean of KeyNotFound."""

    def explain(self, key: str, path: str) -> Explanation:
        """Which file and line set the value at `path`, what it overrode, and how each layer was reached."""

    def imports(self, key: str, recursive: bool) -> list[str]:
        """Explicit imports, highest priority first; `recursive`: L(key) without the key."""

    def imported_by(self, key: str, recursive: bool) -> list[str]:
        """Nodes whose includes name `key`; `recursive`: every node with `key` among its layers."""

    def tags(self, key: str) -> list[str]:
        """The tags among the layers of `key`, highest priority first."""

    def datasets(self, tag: str) -> list[str]:
        """The non-tag nodes that import `tag`, directly or through their layers."""

    def children(self, key: str) -> list[str]:
        """The child nodes of `key`."""

    def keys(self, prefix: str) -> list[str]:
        """Every node key at or under `prefix`, sorted."""

    def config_json(self) -> Mapping[str, str]:
        """Every node's resolved config as compact JSON, by key; a node that did not resolve is absent."""

    def config_values(self, paths: Sequence[tuple[str, ...]]) -> tuple[list[str], list[list[Any]]]:
        """The keys of every node that resolved, sorted, and for each path the value at it in each one's config."""

    def close(self) -> None:
        """Release what the backend holds open (a later read may open it again)."""

    def describe(self) -> str:
        """The inside of the client's repr: location, store, version and what else tells this one apart."""
