"""Where a value came from: every parsed value carries one, and so does every error."""

from __future__ import annotations

from typing import NamedTuple


class Origin(NamedTuple):
    """A position in a source: file name (as the caller named it), 1-based line and column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"
