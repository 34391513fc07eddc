"""The console (docs/console.md): a read-only browser view of `cfgtool serve` at /ui/. It is HTML rendered on the
server (Jinja2 templates through Starlette), with htmx for partial updates, vendored in `static/`.

It reads the versions the server holds in memory. It judges every key it shows with the JSON API's own filter
(`cfgtool.serve.visibility.Visibility`). So a page never shows what the API would refuse. The modules:

- `pages`: the routes and every page.
- `context`: a request's context and sign-in.
- `session`: the signed session cookie.
- `tree`: the node tree.
- `search`: a version's search index, built in a worker process.
- `history`: a store's history index.
- `prepared`: what is built once per version, on the loader thread after each refresh.
- `changes`: the diff pages.
- `graph`: the import graph.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cfgtool.serve.app import Api


def console_parts() -> list[Any]:
    """What `cfgtool serve` adds to its application: the console's routes, when Jinja2 is installed (the `serve`
    extra has it). Otherwise nothing, and the JSON API is served alone."""
    if importlib.util.find_spec("jinja2") is None:
        return []
    return [_routes]


def _routes(api: Api) -> Sequence[Any]:
    from cfgtool.console.pages import routes

    return routes(api)


__all__ = ["console_parts"]
