"""The one place a resolved config loses its secrets (docs/access.md#secrets). Every value at a secret path becomes
`[hidden]` before anything reads the config. So does every sealed envelope, wherever `${}` copied it.

`hide` walks a config once and returns a copy with those values replaced. The original is left alone. It also returns
what it found: `{path: envelope | None}`. None is for a value that was not sealed. Everything downstream reads the
hidden copy, so no output has to remember to redact. That is get, explain, diff, audit, the JSON formats, the
snapshot's JSON document, caches, the client, the server and Spark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any

HIDDEN = "[hidden]"
PREFIX = "ENC[cfgtool:"
ENVELOPE = re.compile(r"ENC\[cfgtool:v1,age,for=([0-9a-f]{16}),([A-Za-z0-9+/]+={0,2})\]")

# Called for a string that holds an envelope but is not one (a secret concatenated into a string).
OnConcat = Callable[[tuple[str, ...]], None]


def hide(
    config: Mapping[str, Any],
    paths: Collection[tuple[str, ...]] = (),
    on_concat: OnConcat | None = None,
) -> tuple[Mapping[str, Any], dict[str, str | None]]:
    """`config` with its secrets hidden: values at `paths` and envelopes anywhere. Returns the (possibly
    same) config and `{rendered path: envelope or None}` for every value hidden."""
    from cfgtool.hocon.resolver import render_path  # here: reading HIDDEN and PREFIX needs no HOCON engine

    found: dict[str, str | None] = {}
    prefixes = {p[:i] for p in paths for i in range(1, len(p))}

    def walk(value: Any, path: tuple[str, ...]) -> Any:
        if path in paths and value is not None:
            found[render_path(path)] = value if isinstance(value, str) and ENVELOPE.fullmatch(value) else None
            return HIDDEN
        if isinstance(value, str):
            if PREFIX not in value:
                return value
            if ENVELOPE.fullmatch(value):
                found[render_path(path)] = value
            elif on_concat is not None:
                on_concat(path)
            return HIDDEN
        if isinstance(value, Mapping):
            changed = {}
            for k, v in value.items():
                sub = (*path, k)
                if sub in paths or sub in prefixes or isinstance(v, (str, Mapping, list)):
                    new = walk(v, sub)
                    if new is not v:
                        changed[k] = new
            return {k: changed.get(k, v) for k, v in value.items()} if changed else value
        if isinstance(value, list):
            items = [walk(v, (*path, str(i))) for i, v in enumerate(value)]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        return value

    result = walk(config, ())
    return result, found
