"""The compiled model every consumer reads: `Snapshot` and `NodeSnapshot` (`model`). Also where each value came from
(`provenance`, `explain`) and the one place secrets are hidden (`hidden`). Also resolving a key from its layers
(`layers`) and the output formats (`formats`).

`from cfgtool.snapshot import Snapshot, KeyNotFound, ...` keeps working: the names are imported on first use.
"""

import typing as _typing

from cfgtool._lazy import make_lazy as _make_lazy

if _typing.TYPE_CHECKING:
    from cfgtool.snapshot.model import KeyNotFound as KeyNotFound
    from cfgtool.snapshot.model import Lookup as Lookup
    from cfgtool.snapshot.model import NodeSnapshot as NodeSnapshot
    from cfgtool.snapshot.model import Snapshot as Snapshot
    from cfgtool.snapshot.model import SourceInfo as SourceInfo

__all__ = ["KeyNotFound", "Lookup", "NodeSnapshot", "Snapshot", "SourceInfo"]

_make_lazy(__name__, {name: ("cfgtool.snapshot.model", name) for name in __all__})
