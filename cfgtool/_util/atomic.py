"""Files written whole or not at all. Readers never see half a file, and a crash leaves the old one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` atomically."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: Path, data: bytes, *, replace: bool = True) -> bool:
    """Write `data` to `path` through a temporary file, so readers never see half a file. True when written.

    The temporary file is renamed over `path`. With `replace=False` it is hard-linked to it instead. That fails
    (False, nothing written) when `path` exists, so it never overwrites, even against a concurrent writer.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp makes it private; the result is an ordinary file
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if replace:
            os.replace(tmp, path)
            return True
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError:  # no hard links on this file system: exclusive create, written whole at once
            try:
                with open(path, "xb") as handle:
                    handle.write(data)
            except FileExistsError:
                return False
        finally:
            os.unlink(tmp)
        return True
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
