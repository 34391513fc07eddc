"""cfgtool: Git-backed config-as-code for thousands of datasets.

The public API is exactly the names in `__all__`; everything else is internal and may change.
"""

from cfgtool._version import __version__
from cfgtool.errors import CfgtoolError

__all__ = [
    "CfgtoolError",
    "__version__",
]
