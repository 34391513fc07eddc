"""Resolving one key from the own configs of its layers, with the intrinsic values
(docs/resolution.md#merge-and-references).

Compile uses it for every node. A Snapshot uses it for keys without a node whose inherited config uses the
intrinsics. There `${cfgtool.name}` must be the phantom key's own name, not its ancestor's.
"""

from __future__ import annotations

from collections.abc import Sequence

from cfgtool.hocon import Origin, Resolved, resolve
from cfgtool.hocon.values import Node, Obj, Scalar
from cfgtool.store.keys import last_segment

INTRINSIC = "cfgtool"  # `${cfgtool.key}`, `${cfgtool.name}`: visible to substitutions, never in the output
# The origin of an intrinsic value (what a value built from it was built from): no file, so a marker a reader
# can tell from every file path, which names the intrinsic.
_INTRINSIC_FILE = "<intrinsic {}>"
_INTRINSIC_ROOT = Origin(_INTRINSIC_FILE.format(INTRINSIC), 0, 0)


def intrinsic_origin(name: str) -> Origin:
    """The origin of the intrinsic `name` (`cfgtool.key`, `cfgtool.name`)."""
    return Origin(_INTRINSIC_FILE.format(name), 0, 0)


def intrinsic_of(origin: Origin) -> str | None:
    """The intrinsic (`cfgtool.key`, `cfgtool.name`) an origin stands for; None for an assignment in a file."""
    file = origin.file
    if origin.line == 0 and file.startswith("<intrinsic ") and file.endswith(">"):
        return file[len("<intrinsic ") : -1]
    return None


def intrinsic_value(name: str, key: str) -> str | None:
    """The value of the intrinsic `name` while `key` resolves (None: not an intrinsic)."""
    return {f"{INTRINSIC}.key": key, f"{INTRINSIC}.name": last_segment(key)}.get(name)


def resolve_layers(docs: Sequence[Node], key: str) -> Resolved:
    """Merge the layers' documents (highest priority first) and resolve them as the config of `key`."""
    fields: dict[str, Node] = {}
    for field in ("key", "name"):
        name = f"{INTRINSIC}.{field}"
        fields[field] = Scalar(intrinsic_value(name, key), intrinsic_origin(name), True)
    return resolve(docs, extra=Obj({INTRINSIC: Obj(fields, _INTRINSIC_ROOT)}, _INTRINSIC_ROOT))
