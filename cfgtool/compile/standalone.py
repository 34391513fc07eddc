"""Standalone HOCON files, outside any store: parse several files and resolve them as one config.

This is what `cfgtool hocon FILE...` runs. It is hermetic like everything else: no environment fallback.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from cfgtool.errors import SourceError
from cfgtool.hocon import Resolved, parse_file, read_file, resolve
from cfgtool.hocon.values import Obj


def resolve_files(paths: Sequence[str | os.PathLike[str]]) -> Resolved:
    """Parse each file (HOCON; `.properties` by extension) and resolve them together. The first file has the highest
    priority, like `a.withFallback(b)`.

    Raises SourceError when a named file cannot be read. Raises `cfgtool.hocon.HoconError` when one is not valid
    HOCON or one of its includes is missing. Also when the result does not resolve.
    """
    return resolve([_parse(os.fspath(path)) for path in paths])


def _parse(path: str) -> Obj:
    # Origins name the file as the user wrote it, so errors point at what they typed. A named file that
    # cannot be read is an environment problem (SourceError, exit 2); includes stay the engine's business.
    def reader(name: str) -> str | None:
        return _read_named_file(name) if name == path else read_file(name)

    return parse_file(path, reader=reader)


def _read_named_file(path: str) -> str:
    try:
        return Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError as exc:
        raise SourceError(f"{path}: no such file", hint="check the path and its spelling") from exc
    except IsADirectoryError as exc:
        raise SourceError(f"{path}: is a directory", hint="name a HOCON file, not a directory") from exc
    except PermissionError as exc:
        raise SourceError(f"{path}: permission denied", hint="make the file readable by you") from exc
    except OSError as exc:
        raise SourceError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise SourceError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})",
            hint="HOCON files must be UTF-8; convert it, e.g. with iconv",
        ) from exc
