"""The installed cfgtool version, read from package metadata (a source tree that is not installed says so)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cfgtool")
except PackageNotFoundError:  # running from a source tree that was never pip-installed
    __version__ = "0+unknown"
