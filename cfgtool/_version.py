"""The cfgtool version: the one place it is written (pyproject.toml reads it from here), so that printing it
needs no package metadata lookup (`cfgtool --version` is paid by every script that checks it)."""

__version__ = "0.1.0"
