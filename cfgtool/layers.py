"""Resolving one key from the own configs of its layers, with the intrinsic values (DESIGN 5.2).

Used by compile for every node and by a Snapshot for keys without a node whose inherited config uses the
intrinsics (`${cfgtool.name}` must be the phantom key's own name, not its ancestor's).
"""

from __future__ import annotations

from collections.abc import Sequence

from cfgtool.hocon import Resolved, resolve
from cfgtool.hocon.values import Node
from cfgtool.store.keys import last_segment

INTRINSIC = "cfgtool"  # `${cfgtool.key}`, `${cfgtool.name}`: visible to substitutions, never in the output


def resolve_layers(docs: Sequence[Node], key: str) -> Resolved:
    """Merge the layers' documents (highest priority first) and resolve them as the config of `key`."""
    return resolve(docs, extra={INTRINSIC: {"key": key, "name": last_segment(key)}})
