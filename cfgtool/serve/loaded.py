"""One published version in the server's memory: its key answers prebuilt as bytes, its queries on demand.

The answers come from a worker (`worker.load`). Every node's answer (canonical JSON and its ETag) is built once. They
take about a tenth of the memory of the version's Snapshot, which the server never holds for key reads. Keys without
a node (docs/resolution.md#keys-without-a-node) are answered from their nearest node's config. Their answers live in
a bounded cache, since any name may be asked for. A key without a node under a node that uses the `cfgtool.key`
intrinsics has its own config. The store's resolver process (`worker.Resolver`) resolves it and hands it to
`resolved`. The queries read the version's import relations (`relations`, shipped by the worker). The resolver
process answers explain. Both answers are kept in a bounded cache.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from cfgtool.errors import CfgtoolError
from cfgtool.hocon import split_path
from cfgtool.serve.answers import Answer, Bounded, answer
from cfgtool.serve.worker import VersionAnswers, build_body, etag
from cfgtool.store.keys import depth, near_node, nearest
from cfgtool.store.queries import Relations

if TYPE_CHECKING:
    from cfgtool.access.authorizer import Authorizer

# bytes of answers kept per version in each cache built on demand: a key without a node repeats its nearest
# node's whole config, so made-up names under a large config would otherwise hold 4,096 copies of it
CACHED_BYTES = 32 * 1024 * 1024


def _size(found: Answer) -> int:
    return len(found.body)


class LoadedVersion:
    """The answers of version N of one store. `keys[key]` is the prebuilt answer of each resolved node;
    `authorizer` judges under N's own ACL (None without access control)."""

    def __init__(
        self,
        store: str,
        version: int,
        answers: VersionAnswers,
        authorizer: Authorizer | None = None,
    ) -> None:
        self.store = store
        self.version = version
        self.authorizer = authorizer
        self.commit = answers.commit
        self.name = answers.name
        self._head = answers.head
        self._tail = answers.tail
        self.configs = answers.configs  # canonical JSON of each resolved node's config
        self.failed = frozenset(answers.failed)
        self.intrinsic = frozenset(answers.intrinsic)
        self.nodes = frozenset(self.configs) | self.failed
        self._depth = max(map(depth, self.nodes), default=0)
        self.secrets: Mapping[str, Mapping[str, str | None]] = answers.secrets
        self.tag_roots = tuple(answers.tag_roots)
        self.relations = Relations(answers.relations)  # the queries: L and explicit imports of each node
        self.keys = {key: Answer(200, body, tag) for key, (body, tag) in answers.bodies.items()}
        self._phantoms: Bounded[str, Answer] = Bounded(4096, _size, CACHED_BYTES)
        self._other: Bounded[tuple[Any, ...], Answer] = Bounded(1024, _size, CACHED_BYTES)
        self._near: Bounded[str, tuple[str | None]] = Bounded(4096)  # key without a node -> (did-you-mean,)

    def _build(self, key: str, exists: bool, config: bytes) -> Answer:
        body = build_body(self._head, self._tail, key, exists, config)
        return Answer(200, body, etag(body))

    def nearest(self, key: str) -> str:
        """`key` if it has a node, else its nearest ancestor that has one (linear in the key's length)."""
        return nearest(key, self.nodes, self._depth)

    def near_known(self, key: str) -> bool:
        """Whether the did-you-mean of `key` is kept (`near_node` answers it at once)."""
        return self._near.get(key) is not None

    def near_node(self, key: str) -> str | None:
        """A node whose key is close to `key` (which has no node), for a did-you-mean (`keys.near_node`; kept)."""
        found = self._near.get(key)
        if found is None:
            found = self._near.put(key, (near_node(key, self.nearest, self.relations.child_names),))
        return found[0]

    def key_answer(self, key: str) -> Answer | None:
        """The answer for `key` (normalized), a node or not. None when it must be resolved for its own name first
        (then `resolved`). CfgtoolError when its node did not resolve."""
        found = self.keys.get(key) or self._phantoms.get(key)
        if found is not None:
            return found
        node = self.nearest(key)
        if node in self.failed:
            raise CfgtoolError(f"{node} did not compile, so {key} cannot be read")
        if node in self.intrinsic:  # the intrinsics make the config depend on the key itself
            return None
        return self._phantoms.put(key, self._build(key, False, self.configs[node]))

    def resolved(self, key: str, config: bytes) -> Answer:
        """The answer for `key`, which has no node, from its config resolved for its own name (canonical JSON)."""
        return self._phantoms.put(key, self._build(key, False, config))

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

    async def cached_async(self, what: tuple[Any, ...], build: Callable[[], Awaitable[Any]]) -> Answer:
        """`cached`, for a JSON value built by awaiting `build()` (explain, from the resolver process)."""
        found = self._other.get(what)
        return found if found is not None else self._other.put(what, answer(await build()))


def _set(config: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    node: Any = config
    for part in path[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict) and path and path[-1] in node:
        node[path[-1]] = value
