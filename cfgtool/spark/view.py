"""SnapshotView: the plain configs of one version, broadcast to executors for use inside UDFs.

It imports nothing but plain helpers, so a Python worker that unpickles it loads no git layer, client or
Spark code: executors never touch git or the repository (docs/spark.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cfgtool._util.plain import MISSING, value_at
from cfgtool.hocon import split_path
from cfgtool.store.keys import ROOT


class SnapshotView:
    """Plain configs of one version for executors: `get(key)` and `get_value(key, path)` read a key
    without a node as its nearest ancestor. Picklable; holds no git, repository or Spark state."""

    def __init__(self, configs: Mapping[str, Mapping[str, Any]], name: str | None, version: int, commit: str) -> None:
        self.configs = dict(configs)
        self.name = name
        self.version = version
        self.commit = commit

    def key(self, key: str) -> str:
        """The canonical form of `key` (scheme stripped, leading `/`, no trailing `/`)."""
        if self.name is not None and key.startswith(f"{self.name}:"):
            key = key[len(self.name) + 1 :]
        return "/" + key.strip("/")

    def nearest(self, key: str) -> str | None:
        """`key` if it has a config, else its nearest ancestor that has one."""
        key = self.key(key)
        while key not in self.configs:
            if key == ROOT:
                return None
            key = key.rsplit("/", 1)[0] or ROOT
        return key

    def exists(self, key: str) -> bool:
        return self.key(key) in self.configs

    def get(self, key: str) -> Mapping[str, Any] | None:
        node = self.nearest(key)
        return self.configs[node] if node is not None else None

    def get_value(self, key: str, path: str, default: Any = None) -> Any:
        """The value at the dotted `path` (quote segments containing dots) in `key`'s config, or `default`."""
        value = value_at(self.get(key), split_path(path))
        return default if value is MISSING else value

    def __repr__(self) -> str:
        return f"SnapshotView({len(self.configs)} keys, version={self.version}, commit={self.commit[:7]})"
