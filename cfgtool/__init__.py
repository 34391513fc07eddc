"""cfgtool: Git-backed config-as-code for thousands of datasets.

The public API is exactly the names in `__all__`; everything else is internal and may change.
`compile` is `cfgtool.compile.compiler.compile_store`: the one path from a store (working tree or git ref) to a
`Snapshot` and its `Diagnostic`s.

The names are imported when first used (PEP 562). So `import cfgtool.<module>`, which every CLI command does, does
not pay for the client, the compiler and jsonschema.
"""

import typing as _typing

from cfgtool._lazy import make_lazy as _make_lazy

if _typing.TYPE_CHECKING:
    from cfgtool._version import __version__ as __version__
    from cfgtool.client.client import ConfigClient as ConfigClient
    from cfgtool.client.client import HttpConfigClient as HttpConfigClient
    from cfgtool.client.local import StoreNotFound as StoreNotFound
    from cfgtool.client.watch import Watcher as Watcher
    from cfgtool.client.watch import watch as watch
    from cfgtool.compile.compiler import CompileResult as CompileResult
    from cfgtool.compile.compiler import compile_store as compile
    from cfgtool.diagnostics import Diagnostic as Diagnostic
    from cfgtool.errors import CfgtoolError as CfgtoolError
    from cfgtool.snapshot.model import KeyNotFound as KeyNotFound
    from cfgtool.snapshot.model import Snapshot as Snapshot

__all__ = [
    "CfgtoolError",
    "CompileResult",
    "ConfigClient",
    "Diagnostic",
    "HttpConfigClient",
    "KeyNotFound",
    "Snapshot",
    "StoreNotFound",
    "Watcher",
    "__version__",
    "compile",
    "watch",
]

_make_lazy(
    __name__,
    {
        "CfgtoolError": ("cfgtool.errors", "CfgtoolError"),
        "CompileResult": ("cfgtool.compile.compiler", "CompileResult"),
        "ConfigClient": ("cfgtool.client.client", "ConfigClient"),
        "Diagnostic": ("cfgtool.diagnostics", "Diagnostic"),
        "HttpConfigClient": ("cfgtool.client.client", "HttpConfigClient"),
        "KeyNotFound": ("cfgtool.snapshot.model", "KeyNotFound"),
        "Snapshot": ("cfgtool.snapshot.model", "Snapshot"),
        "StoreNotFound": ("cfgtool.client.local", "StoreNotFound"),
        "Watcher": ("cfgtool.client.watch", "Watcher"),
        "__version__": ("cfgtool._version", "__version__"),
        "compile": ("cfgtool.compile.compiler", "compile_store"),
        "watch": ("cfgtool.client.watch", "watch"),
    },
)
