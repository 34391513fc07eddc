"""The `cfgtool` command line: argument handling and rendering only.

Every command is a thin call into the library.
"""

from __future__ import annotations

from cfgtool.cli.app import main

__all__ = ["main"]
