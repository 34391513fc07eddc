"""`cfgtool consumers URL --store S` (docs/serving.md "Consumers"): which client instances read which version
of a store, as one server heard them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from cfgtool.cli.query_cmd import QueryFmt, QueryFormat
from cfgtool.errors import UsageError

COLUMNS = ("INSTANCE", "KIND", "VERSION", "PRINCIPAL", "ADDRESS", "LAST CONTACT", "CHECK")


def consumers_command(
    url: Annotated[str, typer.Argument(metavar="URL", help="The server, such as http://configs:8750.")],
    store: Annotated[str, typer.Option("--store", metavar="NAME", help="The store's name on the server.")],
    token_file: Annotated[
        Path | None,
        typer.Option(
            "--token-file",
            metavar="FILE",
            help="A file holding the bearer token (a principal that may describe the store).",
            show_default=False,
        ),
    ] = None,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """List the client instances a server heard from, with the version each reads or applied.

    One row per instance (ConfigClient, watch, agent), most recently heard
    first. Then how many instances run each version: "has every service picked
    up the rollback?". Each server knows its own clients only; sum over
    replicas with Prometheus (the cfgtool_consumers metric). Needs describe on
    the store.

    Examples:
      cfgtool consumers http://configs:8750 --store demo
      cfgtool consumers http://configs:8750 --store demo --token-file ~/.cfgtool-token --format json
    """
    from cfgtool.client.http import consumers

    token = None
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"--token-file {token_file}: {exc.strerror or exc}", hint="check the path") from exc
    found = consumers(url, store, token=token)
    if fmt == QueryFormat.JSON:
        typer.echo(json.dumps(found, indent=2, sort_keys=True))
        return
    typer.echo(render(found))


def _check(check: Any) -> str:
    if not isinstance(check, dict):
        return "-"
    state = "ok" if check.get("ok") else "FAILED"
    message = f": {check['message']}" if check.get("message") else ""
    if check.get("withheld"):
        message = ": (output withheld: it concerns keys you may not read)"
    return f"{state} (version {check.get('version')}){message}"


def render(found: dict[str, Any]) -> str:
    """The table of instances and the count per version."""
    rows = [
        (
            str(i.get("id")),
            str(i.get("kind")),
            "-" if i.get("version") is None else str(i["version"]),
            str(i.get("principal") or "-"),
            str(i.get("address") or "-"),
            str(i.get("last_contact")),
            _check(i.get("last_check")),
        )
        for i in found["instances"]
    ]
    widths = [max(len(c), *(len(r[n]) for r in rows)) for n, c in enumerate(COLUMNS)]
    lines = ["  ".join(text.ljust(w) for text, w in zip(row, widths, strict=True)).rstrip() for row in [COLUMNS, *rows]]
    lines.append("")
    counts = found.get("by_version") or {}
    total = len(rows)
    lines += [f"version {n}: {c} instance{'s' if c != 1 else ''}" for n, c in counts.items()]
    unknown = total - sum(counts.values())
    if unknown:
        lines.append(f"no version known: {unknown} instance{'s' if unknown != 1 else ''}")
    if not rows:
        lines.append("no instance has asked this server yet")
    return "\n".join(lines)
