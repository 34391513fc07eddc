"""cfgtool's own HOCON engine: Lightbend semantics, hermetic resolution, an origin on every value.

Knows nothing about stores or git. Typical use::

    from cfgtool import hocon
    doc = hocon.parse(text, "store/data/main.conf")
    resolved = hocon.resolve([doc, parent_doc], extra={"cfgtool": {"key": "/data"}})
    resolved.value, resolved.origin("retention.ms"), resolved.sources("path")
"""

from cfgtool.hocon.api import (
    PathLike,
    Resolved,
    bulk,
    describe,
    find,
    from_plain,
    loads,
    merge,
    parse,
    parse_file,
    parse_value,
    read_file,
    resolve,
    split_path,
    to_plain,
)
from cfgtool.hocon.errors import HoconError
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.parser import Reader

__all__ = [
    "HoconError",
    "Origin",
    "PathLike",
    "Reader",
    "Resolved",
    "bulk",
    "describe",
    "find",
    "from_plain",
    "loads",
    "merge",
    "parse",
    "parse_file",
    "parse_value",
    "read_file",
    "resolve",
    "split_path",
    "to_plain",
]
