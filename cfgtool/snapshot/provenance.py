"""Where each resolved value came from (docs/resolution.md#provenance), per node: computed from the resolved tree on
first use.

A plain `compile` never needs it, since the digest covers values, not positions. So it costs nothing there.
`explain`, `--output` and the client cache ask for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the HOCON engine is imported when provenance is first computed: reading configs needs none
    from cfgtool.hocon import Origin, Resolved
    from cfgtool.hocon.values import Node


@dataclass(frozen=True)
class OwnValue:
    """One assignment in a node's own main.conf, as written (`${base}"/x"`), for `explain`."""

    text: str
    origin: Origin


@lru_cache(maxsize=65536)
def path_name(path: tuple[str, ...]) -> str:
    """A path as a HOCON path expression. It is memoized, since the same paths recur in every node. The memo is
    bounded: a long-lived process meets new paths in every version it reads."""
    from cfgtool.hocon.resolver import render_path

    return render_path(path)


class Provenance:
    """`origins` (leaf path -> winning assignment) and `sources` (built values -> their inputs), given or computed
    lazily. So are `own` (leaf path -> the node's own assignment) and `reached` (how each layer was reached)."""

    __slots__ = ("_compute", "_origins", "_own", "_own_doc", "_reach", "_reached", "_resolved", "_sources")

    def __init__(
        self,
        resolved: Resolved | None = None,
        own_doc: Node | None = None,
        *,
        compute: Callable[[], tuple[Resolved | None, Node | None]] | None = None,
        reach: Callable[[], tuple[str, ...]] | None = None,
        reached: tuple[str, ...] | None = None,
        origins: Mapping[str, Origin] | None = None,
        sources: Mapping[str, tuple[Origin, ...]] | None = None,
        own: Mapping[str, OwnValue] | None = None,
    ) -> None:
        self._resolved = resolved
        self._own_doc = own_doc
        self._compute = compute  # for a node taken from the cache: resolve it again when asked
        self._reach = reach  # how each layer was reached, described when first asked
        self._reached = reached
        self._origins = origins
        self._sources = sources
        self._own = own

    def _trees(self) -> None:
        if self._compute is not None:
            self._resolved, self._own_doc = self._compute()
            self._compute = None

    @property
    def reached(self) -> tuple[str, ...] | None:
        """How each layer of L(K) was reached, parallel to the layers (None when unknown)."""
        if self._reached is None and self._reach is not None:
            self._reached, self._reach = self._reach(), None
        return self._reached

    @property
    def origins(self) -> Mapping[str, Origin]:
        if self._origins is None:
            self._leaves()
        assert self._origins is not None
        return self._origins

    @property
    def sources(self) -> Mapping[str, tuple[Origin, ...]]:
        if self._sources is None:
            self._leaves()
        assert self._sources is not None
        return self._sources

    @property
    def own(self) -> Mapping[str, OwnValue]:
        if self._own is None:
            self._trees()
            from cfgtool.hocon import describe

            doc = self._own_doc
            leaves = own_leaves(doc) if doc is not None else iter(())
            self._own = {path_name(p): OwnValue(describe(n), n.origin) for p, n in leaves}
            self._own_doc = None
        return self._own

    def _leaves(self) -> None:
        from cfgtool.hocon.values import Joined, JoinedLst

        self._trees()
        origins: dict[str, Origin] = {}
        sources: dict[str, tuple[Origin, ...]] = {}
        if self._resolved is not None:
            for path, leaf in self._resolved.leaves():
                if not path:
                    continue
                name = path_name(path)
                origins[name] = leaf.origin
                if isinstance(leaf, (Joined, JoinedLst)):
                    sources[name] = leaf.sources
        self._origins, self._sources, self._resolved = origins, sources, None


def own_leaves(doc: Node, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Node]]:
    """Every assignment in one unresolved document: non-object values with their paths."""
    from cfgtool.hocon.values import Merge, Obj

    if isinstance(doc, Merge):
        doc = doc.stack[0]
    if isinstance(doc, Obj):
        for key, value in doc.fields.items():
            yield from own_leaves(value, (*path, key))
    elif path:
        yield path, doc
