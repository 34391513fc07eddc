"""One published version in the server's memory: its key answers prebuilt as bytes, its queries on demand.

A version is read through `ConfigClient(repo, store, version=N)`, so it is compiled once and then read from
the client's snapshot cache (a restarted server recompiles nothing). The key answers of every node are built
at load (canonical JSON and its ETag), and the Snapshot itself is dropped: a 10,000-node snapshot takes
about 85 MB, its prebuilt answers about a tenth of that. Keys without a node (DESIGN 5.4) are answered from
their nearest node's config; their answers live in a bounded cache, since any name may be asked for. The
few reads that need the whole snapshot (queries, explain, a key without a node under a node that uses the
`cfgtool.key` intrinsics) reload it through a small shared cache.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from cfgtool.client import ConfigClient
from cfgtool.errors import CfgtoolError
from cfgtool.hocon import split_path
from cfgtool.serve.answers import Answer, Bounded, answer, prebuilt
from cfgtool.snapshot import Snapshot, canonical_json, node_hash
from cfgtool.store.keys import ROOT, parent


class LoadedVersion:
    """The answers of version N of one store. `keys[key]` is the prebuilt answer of each node."""

    def __init__(self, store: str, client: ConfigClient, snapshots: Callable[[int], Snapshot]) -> None:
        snapshot = client.snapshot
        self.store = store
        self.version = client.version
        self.commit = client.commit
        self.name = snapshot.name
        self.hashes = {key: node_hash(node) for key, node in snapshot.nodes.items()}
        self._snapshots = snapshots
        self._head = f'{{"commit":{json.dumps(self.commit)},"config":'.encode()
        self._tail = f',"store":{json.dumps(store)},"version":{self.version}}}'.encode()
        self.configs: dict[str, bytes] = {}  # canonical JSON of each node's config (None: did not resolve)
        self.failed: set[str] = set()
        self.intrinsic: set[str] = set()
        self.secrets: Mapping[str, Mapping[str, str | None]] = snapshot.secrets
        self.keys: dict[str, Answer] = {}
        for key, node in snapshot.nodes.items():
            if node.config is None:
                self.failed.add(key)
                continue
            if node.intrinsic:
                self.intrinsic.add(key)
            config = canonical_json(node.config).encode("utf-8")
            self.configs[key] = config
            self.keys[key] = self._build(key, True, config)
        self._phantoms: Bounded[str, Answer] = Bounded(4096)
        self._other: Bounded[tuple[Any, ...], Answer] = Bounded(1024)

    def _build(self, key: str, exists: bool, config: bytes) -> Answer:
        """`{"commit", "config", "exists", "key", "store", "version"}` in canonical (sorted) order."""
        flag = b"true" if exists else b"false"
        body = b"".join((self._head, config, b',"exists":', flag, b',"key":', json.dumps(key).encode(), self._tail))
        return answer(json.loads(body)) if not body.isascii() else prebuilt(body)

    def nearest(self, key: str) -> str:
        """`key` if it has a node, else its nearest ancestor that has one."""
        while key not in self.hashes:
            key = parent(key) or ROOT
        return key

    def key_answer(self, key: str) -> Answer:
        """The answer for `key` (normalized), a node or not; CfgtoolError when its node did not resolve."""
        found = self.keys.get(key)
        if found is not None:
            return found
        cached = self._phantoms.get(key)
        if cached is not None:
            return cached
        node = self.nearest(key)
        if node in self.failed:
            raise CfgtoolError(f"{node} did not compile, so {key} cannot be read")
        if node in self.intrinsic and node != key:  # the intrinsics make the config depend on the key itself
            config = canonical_json(self._snapshots(self.version).lookup(key).config).encode("utf-8")
        else:
            config = self.configs[node]
        return self._phantoms.put(key, self._build(key, node == key, config))

    def slow(self, key: str) -> bool:
        """Whether answering `key` needs the whole snapshot (call `key_answer` off the event loop then)."""
        if key in self.keys:
            return False
        node = self.nearest(key)
        return node in self.intrinsic and self._phantoms.get(key) is None

    def sealed_answer(self, key: str, plain: Answer) -> Answer:
        """`plain` (the key answer) with its sealed envelopes instead of `[hidden]` (`?secrets=sealed`)."""
        sealed = self.secrets.get(self.nearest(key))
        if not sealed:
            return plain
        body = json.loads(plain.body)
        for path, envelope in sealed.items():
            if envelope is not None:
                _set(body["config"], split_path(path), envelope)
        return answer(body)

    def cached(self, what: tuple[Any, ...], build: Callable[[], Any]) -> Answer:
        """A query's answer from the bounded cache, else built (from `build()`'s JSON value) and cached."""
        return self._other.get_or_build(what, lambda: answer(build()))

    def snapshot(self) -> Snapshot:
        """The whole snapshot (queries, explain), through the shared cache."""
        return self._snapshots(self.version)


def _set(config: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    node: Any = config
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and path and path[-1] in node:
        node[path[-1]] = value

