"""`serve`: check `cfgtool serve`'s settings and run the server. It imports the optional extra only once it is
known to be installed, and says which part is missing otherwise."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cfgtool.errors import UsageError
from cfgtool.serve.options import Options


def serve(options: Options, insecure_open: bool = False, parts: Callable[[], Sequence[Any]] = tuple) -> None:
    """Check `options` (`Options.check`), then serve until stopped. `parts` builds the optional parts (the console's
    routes). It is called once the extra is known to be installed. UsageError when the extra 'serve' is not installed
    or an option breaks a rule."""
    missing = _missing_extra()
    if missing is not None:
        raise UsageError(
            f"cfgtool serve needs the optional extra 'serve' ({missing} is not installed)",
            hint="in your cfgtool checkout: pip install -e '.[serve]'",
        )
    options.check(insecure_open)
    from cfgtool.serve.server import run

    run(options, parts())


def _missing_extra() -> str | None:
    """The first module of the extra 'serve' that is not installed (None: all are)."""
    try:
        import prometheus_client  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        return exc.name or str(exc)
    return None
