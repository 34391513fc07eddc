"""cfgtool's own HOCON engine: Lightbend semantics, hermetic resolution, an origin on every value.

Knows nothing about stores or git. Typical use::

    from cfgtool import hocon
    doc = hocon.parse(text, "store/data/main.conf")
    resolved = hocon.resolve([doc, parent_doc], extra={"cfgtool": {"key": "/data"}})
    resolved.value, resolved.origin("retention.ms"), resolved.sources("path")
"""

import typing as _typing

from cfgtool._lazy import make_lazy as _make_lazy

if _typing.TYPE_CHECKING:
    from cfgtool.hocon.api import PathLike as PathLike
    from cfgtool.hocon.api import PathRead as PathRead
    from cfgtool.hocon.api import Resolved as Resolved
    from cfgtool.hocon.api import bulk as bulk
    from cfgtool.hocon.api import describe as describe
    from cfgtool.hocon.api import find as find
    from cfgtool.hocon.api import from_plain as from_plain
    from cfgtool.hocon.api import loads as loads
    from cfgtool.hocon.api import merge as merge
    from cfgtool.hocon.api import parse as parse
    from cfgtool.hocon.api import parse_file as parse_file
    from cfgtool.hocon.api import parse_value as parse_value
    from cfgtool.hocon.api import quoted_path as quoted_path
    from cfgtool.hocon.api import read_file as read_file
    from cfgtool.hocon.api import read_path as read_path
    from cfgtool.hocon.api import resolve as resolve
    from cfgtool.hocon.api import split_path as split_path
    from cfgtool.hocon.api import to_plain as to_plain
    from cfgtool.hocon.errors import HoconError as HoconError
    from cfgtool.hocon.origin import Origin as Origin
    from cfgtool.hocon.parser import Reader as Reader

__all__ = [
    "HoconError",
    "Origin",
    "PathLike",
    "PathRead",
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
    "quoted_path",
    "read_file",
    "read_path",
    "resolve",
    "split_path",
    "to_plain",
]

_make_lazy(
    __name__,
    {
        "HoconError": ("cfgtool.hocon.errors", "HoconError"),
        "Origin": ("cfgtool.hocon.origin", "Origin"),
        "PathLike": ("cfgtool.hocon.api", "PathLike"),
        "Reader": ("cfgtool.hocon.parser", "Reader"),
        "Resolved": ("cfgtool.hocon.api", "Resolved"),
        "bulk": ("cfgtool.hocon.api", "bulk"),
        "describe": ("cfgtool.hocon.api", "describe"),
        "find": ("cfgtool.hocon.api", "find"),
        "from_plain": ("cfgtool.hocon.api", "from_plain"),
        "loads": ("cfgtool.hocon.api", "loads"),
        "merge": ("cfgtool.hocon.api", "merge"),
        "parse": ("cfgtool.hocon.api", "parse"),
        "parse_file": ("cfgtool.hocon.api", "parse_file"),
        "parse_value": ("cfgtool.hocon.api", "parse_value"),
        "PathRead": ("cfgtool.hocon.api", "PathRead"),
        "quoted_path": ("cfgtool.hocon.api", "quoted_path"),
        "read_path": ("cfgtool.hocon.api", "read_path"),
        "read_file": ("cfgtool.hocon.api", "read_file"),
        "resolve": ("cfgtool.hocon.api", "resolve"),
        "split_path": ("cfgtool.hocon.api", "split_path"),
        "to_plain": ("cfgtool.hocon.api", "to_plain"),
    },
)
