"""cfgtool: Git-backed config-as-code for thousands of datasets.

The public API is exactly the names in `__all__`; everything else is internal and may change.
`compile` is `cfgtool.compile.compile_store`: the one path from a store (working tree or git ref) to a
`Snapshot` and its `Diagnostic`s.
"""

from cfgtool._version import __version__
from cfgtool.client import ConfigClient, StoreNotFound
from cfgtool.compile import CompileResult
from cfgtool.compile import compile_store as compile
from cfgtool.diagnostics import Diagnostic
from cfgtool.errors import CfgtoolError
from cfgtool.snapshot import KeyNotFound, Snapshot

__all__ = [
    "CfgtoolError",
    "CompileResult",
    "ConfigClient",
    "Diagnostic",
    "KeyNotFound",
    "Snapshot",
    "StoreNotFound",
    "__version__",
    "compile",
]
