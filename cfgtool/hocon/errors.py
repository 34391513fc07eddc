"""The one exception the HOCON engine raises: a structured, user-facing error with a code and an origin."""

from __future__ import annotations

from cfgtool.hocon.origin import Origin

# Codes raised by the engine. The store layer reuses them as diagnostic codes (docs/compile.md).
E_SYNTAX = "E_SYNTAX"
E_UNRESOLVED_REF = "E_UNRESOLVED_REF"
E_REF_CYCLE = "E_REF_CYCLE"
E_TYPE = "E_TYPE"
E_UNSUPPORTED_INCLUDE = "E_UNSUPPORTED_INCLUDE"
E_INCLUDE = "E_INCLUDE"
E_LIMIT = "E_LIMIT"


class HoconError(Exception):
    """A problem in HOCON input: `code`, `message`, the `origin` it points at, and `notes` (extra lines).

    `str(err)` is `file:line:col: message` so it can be printed as is.
    """

    def __init__(self, code: str, message: str, origin: Origin | None = None, notes: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.origin = origin
        self.notes = notes

    @property
    def file(self) -> str | None:
        return self.origin.file if self.origin else None

    @property
    def line(self) -> int | None:
        return self.origin.line if self.origin else None

    @property
    def col(self) -> int | None:
        return self.origin.col if self.origin else None

    def __str__(self) -> str:
        head = f"{self.origin}: {self.message}" if self.origin else self.message
        return "\n".join((head, *self.notes))
