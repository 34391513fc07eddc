"""SnapshotView: the plain configs of one version, broadcast to executors for use inside UDFs.

It imports nothing but plain helpers. So a Python worker that unpickles it loads no git layer, client or Spark code.
Executors never touch git or the repository (docs/spark.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cfgtool.hocon import read_path
from cfgtool.store.keys import ROOT, Siblings, near_node, siblings


class SnapshotView:
    """Plain configs of one version for executors: `get(key)` and `get_value(key, path)`. A key without a node is an
    error: KeyNotFound, naming a node with a close key. `nearest=True` reads its nearest ancestor's config on purpose
    instead. Or its own, when the driver resolved it (`phantoms`). Picklable; holds no git, repository or Spark
    state."""

    def __init__(
        self,
        configs: Mapping[str, Mapping[str, Any]],
        name: str | None,
        version: int,
        commit: str,
        phantoms: Iterable[str] = (),
    ) -> None:
        self.configs = dict(configs)
        self.name = name
        self.version = version
        self.commit = commit
        self.phantoms = frozenset(phantoms)  # keys of `configs` that have no node: resolved on the driver
        self._names: dict[str, Siblings] | None = None  # node -> its children's names, for a did-you-mean

    def key(self, key: str) -> str:
        """The canonical form of `key` (scheme stripped, leading `/`, no trailing `/`)."""
        if self.name is not None and key.startswith(f"{self.name}:"):
            key = key[len(self.name) + 1 :]
        return "/" + key.strip("/")

    def nearest(self, key: str) -> str | None:
        """`key` if it has a node, else its nearest ancestor that has one."""
        key = self.key(key)
        while key not in self.configs or key in self.phantoms:
            if key == ROOT:
                return None
            key = key.rsplit("/", 1)[0] or ROOT
        return key

    def exists(self, key: str) -> bool:
        """Whether `key` has a node of its own."""
        key = self.key(key)
        return key in self.configs and key not in self.phantoms

    def get(self, key: str, *, nearest: bool = False) -> Mapping[str, Any] | None:
        """The config of `key`. KeyNotFound for a key without a node unless `nearest`. Then it is its nearest
        ancestor's, or its own when the driver resolved it."""
        node, key = self.nearest(key), self.key(key)
        if node != key and not nearest:
            from cfgtool.snapshot.model import KeyNotFound

            near = near_node(key, lambda k: self.nearest(k) or ROOT, self._child_names)
            raise KeyNotFound.no_node(key, self.name or "(unnamed)", node or ROOT, near)
        found = self.configs.get(key) if key in self.phantoms else None
        return found if found is not None else self.configs[node] if node is not None else None

    def get_value(self, key: str, path: str, default: Any = None, *, nearest: bool = False) -> Any:
        """The value at the dotted `path` in `key`'s config, or `default`; quote segments containing dots. A key
        without a node reads as with `get`."""
        found = read_path(self.get(key, nearest=nearest), path)
        return found.value if found.found else default

    def _child_names(self, key: str) -> Siblings:
        if self._names is None:  # built on the first miss only: most jobs never make one
            found: dict[str, list[str]] = {}
            for node in (k for k in self.configs if k not in self.phantoms and k != ROOT):
                found.setdefault(node.rsplit("/", 1)[0] or ROOT, []).append(node.rsplit("/", 1)[1])
            self._names = {k: siblings(names) for k, names in found.items()}
        return self._names.get(key, Siblings(()))

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_names": None}  # rebuilt where needed, not shipped to every executor

    def __repr__(self) -> str:
        return f"SnapshotView({len(self.configs)} keys, version={self.version}, commit={self.commit[:7]})"
