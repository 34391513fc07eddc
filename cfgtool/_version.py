"""The cfgtool version, in the one place it is written; pyproject.toml reads it from here. So printing it needs no
package metadata lookup. Every script that checks `cfgtool --version` pays for it."""

__version__ = "0.1.0"
