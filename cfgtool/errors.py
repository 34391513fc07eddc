"""Exceptions for operations that cannot continue. Problems in config files are Diagnostics, not these.

Every cfgtool exception derives from one root, and its message tells the user how to fix the problem::

    CfgtoolError        something the user must fix; exit 1 unless a subclass says otherwise
    ├── UsageError      bad arguments or options; exit 2
    └── SourceError     a file, store, repository or ref cannot be read; exit 2

`cfgtool.hocon.HoconError` is the HOCON engine's own error (it knows nothing of this module); the CLI
maps both. Foreign exceptions (OSError, GitPython, YAML, jsonschema) are translated into these at the
boundary, chained with `from`.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_CONFIG_ERROR = 1
EXIT_USAGE_ERROR = 2


class CfgtoolError(Exception):
    """A problem the user must fix: `message` says what is wrong, `hint` (optional) how to fix it.

    `exit_code` is the exit status the CLI uses. It is 1 for config errors, 2 for usage or environment errors.
    """

    exit_code: ClassVar[int] = EXIT_CONFIG_ERROR

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})" if self.hint else self.message


class UsageError(CfgtoolError):
    """The command line is wrong: an unknown value, a missing argument, options that cannot go together."""

    exit_code: ClassVar[int] = EXIT_USAGE_ERROR


class SourceError(CfgtoolError):
    """An input cannot be read: a missing or unreadable file, no store, no repository, an unknown ref."""

    exit_code: ClassVar[int] = EXIT_USAGE_ERROR
