"""Variable values as people give them: `NAME=VALUE` texts (`--var`). Kept free of heavy imports, since the CLI
parses them before it loads the compiler."""

from __future__ import annotations

from collections.abc import Sequence

from cfgtool.errors import UsageError


def parse_assignments(items: Sequence[str] | None) -> dict[str, str]:
    """`NAME=VALUE` texts as a mapping. UsageError (exit 2) for anything else or a name given twice."""
    out: dict[str, str] = {}
    for item in items or ():
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(
                f"--var {item!r} is not NAME=VALUE",
                hint="write the variable's name, '=' and its value, e.g. --var local_cluster.name=lva1",
            )
        if name in out and out[name] != value:
            raise UsageError(f"--var {name} is given twice ({out[name]!r} and {value!r})", hint="give it once")
        out[name] = value
    return out
