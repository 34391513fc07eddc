"""The kubelet's layout of a directory of config files (docs/agent.md), swapped atomically.

```
DIR/app.json   -> ..data/app.json        a link per file, made once
DIR/..data     -> ..7_20261128T013000.123456Z
DIR/..7_20261128T013000.123456Z/app.json   the files of version 7
```

A new version is written whole into a new directory `..<version>_<time>` and flushed to disk. Then `..data` is
replaced by a link to it, in one `rename` of a link. A reader that resolves `..data` once sees every file of one
version, or every file of the one before, never a mix. After the swap, the directories older than the one before are
removed. The one before stays for readers still inside it. Links of files no longer written are removed. Nothing here
ever empties or deletes the files of the current version.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cfgtool.errors import CfgtoolError
from cfgtool.versions.names import version_number

DATA = "..data"
_STAGING = "..data_tmp"
_VERSION_DIR = re.compile(r"\.\.([0-9]+)_([0-9]{8}T[0-9]{6}\.[0-9]{6}Z)")
SECRET_MODE = 0o600
FILE_MODE = 0o644


class LayoutError(CfgtoolError):
    """The directory cannot take a new version: full disk, no permission. The files it has stay as they are."""


@dataclass(frozen=True)
class Content:
    """One file of a version: its bytes and whether it holds opened secrets. Then it is mode 0600."""

    data: bytes
    secret: bool = False


def applied(root: Path) -> int | None:
    """The version the files of `root` hold now (the target of `..data`), None when there is none."""
    try:
        target = os.readlink(root / DATA)
    except OSError:
        return None
    found = _VERSION_DIR.fullmatch(target)
    number = version_number(found.group(1)) if found else None
    return number if number is not None and (root / target).is_dir() else None


def current_dir(root: Path) -> Path | None:
    """The directory `..data` points at now (what a reader wanting a consistent set opens its files in)."""
    try:
        return root / os.readlink(root / DATA)
    except OSError:
        return None


def holds(root: Path, files: Mapping[str, Content]) -> bool:
    """Whether the version on disk is exactly `files`: the same names, bytes and modes (nothing to swap)."""
    here = current_dir(root)
    try:
        if here is None or sorted(os.listdir(here)) != sorted(files):
            return False
        for name, content in files.items():
            mode = SECRET_MODE if content.secret else FILE_MODE
            if stat.S_IMODE(os.stat(here / name).st_mode) != mode or (here / name).read_bytes() != content.data:
                return False
    except OSError:
        return False
    return all(_foreign(root, name) is None and os.path.islink(root / name) for name in files)


def _foreign(root: Path, name: str) -> str | None:
    """What stands at `root/name` that is not the agent's own link through `..data` (None: its link, or nothing).
    That is a file of its own, or a link elsewhere, planted or left by another tool. Through it, the path would go on
    reading something else, whatever version `..data` holds."""
    path = root / name
    if path.is_symlink():
        target = os.readlink(path)
        return None if target == f"{DATA}/{name}" else f"a link to {target}"
    return "a file of its own" if path.exists() else None


def stage(root: Path, version: int, files: Mapping[str, Content]) -> Path:
    """Write `files` into a new version directory of `root` and flush them. Returns the directory, not yet visible
    through `..data`. On any failure the partial directory is removed and LayoutError says why."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f".{time.time_ns() // 1000 % 1_000_000:06d}Z"
    new = root / f"..{version}_{stamp}"
    for name in files:
        found = _foreign(root, name)
        if found is not None:
            raise LayoutError(
                f"{root / name} is {found}, not the agent's link through {DATA}: the agent does not replace it",
                hint="remove it, or give the agent a directory of its own",
            )
    try:
        root.mkdir(parents=True, exist_ok=True)
        new.mkdir(mode=0o755)
        for name, content in files.items():
            fd = os.open(new / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SECRET_MODE)
            try:
                os.fchmod(fd, SECRET_MODE if content.secret else FILE_MODE)
                view = memoryview(content.data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        _sync_dir(new)
    except OSError as exc:
        shutil.rmtree(new, ignore_errors=True)
        raise LayoutError(
            f"cannot write version {version} into {root}: {exc.strerror or exc}",
            hint="free space or fix the permissions; the files of the version applied before stay as they are",
        ) from exc
    return new


def swap(root: Path, new: Path, names: list[str]) -> None:
    """Make `new` (from `stage`) the files of `root`. `..data` is replaced in one rename, and the per-file links are
    made. Then what is older than the directory before goes, and so do the links of files no longer written."""
    before = os.readlink(root / DATA) if (root / DATA).is_symlink() else None
    staging = root / _STAGING
    try:
        with contextlib.suppress(FileNotFoundError):
            staging.unlink()
        staging.symlink_to(new.name)
        os.rename(staging, root / DATA)
        _sync_dir(root)
        for name in names:
            link = root / name
            if not link.is_symlink():
                link.symlink_to(f"{DATA}/{name}")
    except OSError as exc:
        raise LayoutError(
            f"cannot switch {root} to {new.name}: {exc.strerror or exc}",
            hint="fix the directory's permissions; the files of the version applied before stay as they are",
        ) from exc
    _tidy(root, keep={new.name, before}, names=set(names))


def discard(new: Path) -> None:
    """Remove a staged directory that will not be swapped in (its check failed)."""
    shutil.rmtree(new, ignore_errors=True)


def _tidy(root: Path, keep: set[str | None], names: set[str]) -> None:
    """Remove the version directories other than `keep` and links to files of `..data` not in `names`."""
    for entry in os.scandir(root):
        if _VERSION_DIR.fullmatch(entry.name) and entry.name not in keep:
            shutil.rmtree(entry.path, ignore_errors=True)
        elif entry.is_symlink() and entry.name not in names and os.readlink(entry.path) == f"{DATA}/{entry.name}":
            with contextlib.suppress(OSError):
                os.unlink(entry.path)


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["DATA", "Content", "LayoutError", "applied", "current_dir", "discard", "holds", "stage", "swap"]
