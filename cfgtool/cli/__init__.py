"""The `cfgtool` command line: argument handling and rendering only.

Every command is a thin call into the library.
"""

from __future__ import annotations

import gc

from cfgtool.cli import app


def main() -> int:
    """The `cfgtool` program (`cfgtool.cli.app.main` on the process arguments).

    As the process ends, the interpreter collects every object still tracked, one last full pass of the
    cyclic GC (about 50 ms after a compile of 10,000 nodes); frozen first, they are skipped. Only the
    program does this: `app.main` may run many times in one process.
    """
    status = app.main()
    gc.freeze()
    return status


__all__ = ["main"]
