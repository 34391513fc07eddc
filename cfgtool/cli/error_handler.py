"""The one place where exceptions become messages on stderr and exit codes.

- `CfgtoolError`: its message and hint; its own exit code (1 config error, 2 usage or environment).
- `HoconError`: `file:line:col: CODE message` and its notes; exit 1.
- Ctrl-C: exit 130.
- Anything else is a bug in cfgtool: "internal error" and how to report it; exit 3.
  The traceback is shown only when the environment sets CFGTOOL_DEBUG=1.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

from cfgtool.errors import EXIT_CONFIG_ERROR, CfgtoolError
from cfgtool.store.urls import redact

if TYPE_CHECKING:
    from cfgtool.hocon.errors import HoconError

EXIT_INTERRUPTED = 130
EXIT_INTERNAL_ERROR = 3
DEBUG_VARIABLE = "CFGTOOL_DEBUG"


def run_handled(func: Callable[[], int]) -> int:
    """Call `func` and return its exit code. Or report the exception it raised and return that one's exit code."""
    try:
        return func()
    except CfgtoolError as exc:
        _report(exc, format_cfgtool_error(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        _report(None, "cfgtool: interrupted")
        return EXIT_INTERRUPTED
    except MemoryError as exc:  # hostile or enormous input (docs/security.md): a diagnostic, not a traceback
        message = (
            "cfgtool: error: E_LIMIT out of memory: the configs need more memory than this process may use\n"
            "  hint: look for a document that many nodes inherit whose substitutions copy arrays or objects"
            " into each other, or for a very large file"
        )
        _report(exc, message)
        return EXIT_CONFIG_ERROR
    except Exception as exc:
        from cfgtool._version import __version__  # here, not at start-up (every command pays what start-up imports)
        from cfgtool.hocon.errors import HoconError

        if isinstance(exc, HoconError):
            _report(exc, format_hocon_error(exc))
            return EXIT_CONFIG_ERROR
        message = (
            f"cfgtool: internal error: {type(exc).__name__}: {exc}\n"
            f"  hint: this is a bug in cfgtool {__version__}, not in your config; rerun with "
            f"{DEBUG_VARIABLE}=1 to see the traceback, and report it with that output"
        )
        _report(exc, message)
        return EXIT_INTERNAL_ERROR


def format_cfgtool_error(exc: CfgtoolError) -> str:
    """The message and hint, without the credentials of any URL in them (a `--remote https://user:token@...`
    a message repeats)."""
    text = f"cfgtool: error: {redact(exc.message)}"
    return f"{text}\n  hint: {redact(exc.hint)}" if exc.hint else text


def format_hocon_error(exc: HoconError) -> str:
    head = f"{exc.origin}: {exc.code} {exc.message}" if exc.origin else f"{exc.code} {exc.message}"
    return "\n".join((head, *exc.notes))


def _report(exc: BaseException | None, message: str) -> None:
    if exc is not None and os.environ.get(DEBUG_VARIABLE) == "1":
        traceback.print_exception(exc, file=sys.stderr)
    print(message, file=sys.stderr)
