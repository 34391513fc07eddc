"""The one encoding of cache files: msgpack for plain data. Also what decoding a damaged file can raise."""

from __future__ import annotations

from typing import Any

import msgpack  # type: ignore[import-untyped]

# What a damaged or hostile cache file can raise while it is read and decoded: all of it is a miss.
DAMAGED = (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError, msgpack.UnpackException)


def pack(value: Any) -> bytes:
    """`value` (plain data: dicts, lists, tuples, str, bytes, numbers, bools, None) as msgpack bytes."""
    data: bytes = msgpack.packb(value, use_bin_type=True)
    return data


def unpack(data: bytes) -> Any:
    """What `pack` packed (arrays come back as lists); raises one of DAMAGED for anything else."""
    return msgpack.unpackb(data, raw=False, strict_map_key=True)
