"""Fixtures of the client tests that need a real `cfgtool serve`: the server tests' own."""

from __future__ import annotations

from tests.serve.conftest import small, start_server

__all__ = ["small", "start_server"]  # the server tests' fixtures, used here
