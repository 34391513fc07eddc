"""`cfgtool serve` and `cfgtool token add|list|revoke` (docs/serving.md, docs/access.md). They serve published
versions over HTTP, and manage the bearer tokens it accepts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from cfgtool.cli.context import CliContext
from cfgtool.cli.query_cmd import QueryFmt, QueryFormat
from cfgtool.console import console_parts
from cfgtool.errors import UsageError
from cfgtool.serve.options import Options
from cfgtool.serve.start import serve

token_app = typer.Typer(
    name="token",
    help="Manage the bearer tokens of `cfgtool serve --tokens FILE` (stored as SHA-256 hashes, never in clear).",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

Tokens = Annotated[
    Path | None,
    typer.Option(
        "--tokens",
        metavar="FILE",
        help="The tokens file (JSON of token hashes, `cfgtool token add`). With it every request needs a token.",
        show_default=False,
    ),
]


Repo = Annotated[
    str | None,
    typer.Option(
        "--repo",
        metavar="PATH|URL",
        help="The config repository: a local path, or a git URL mirrored into the cache (default: the global "
        "--repo, else the repository containing the current directory).",
        show_default=False,
    ),
]

Stores = Annotated[
    list[str] | None,
    typer.Option(
        "--store",
        metavar="DIR",
        help="A store directory to serve (repeatable; default: every store at HEAD).",
        show_default=False,
    ),
]

Host = Annotated[str, typer.Option("--host", metavar="ADDRESS", help="The address to listen on.")]

Port = Annotated[int, typer.Option("--port", min=0, max=65535, help="The port (0: any free port).")]

CacheTime = Annotated[
    int,
    typer.Option(
        "--cache-time",
        metavar="SECONDS",
        min=0,
        help="Keystone cache time T: a publish reaches each key at its own checkpoint within T seconds; "
        "0 serves the current version at once.",
    ),
]

FetchInterval = Annotated[
    float,
    typer.Option("--fetch-interval", metavar="SECONDS", min=0.1, help="How often to fetch and re-read the tags."),
]

Remote = Annotated[
    str | None,
    typer.Option(
        "--remote",
        metavar="NAME",
        help="Mirror this remote of the local repository and fetch from it.",
        show_default=False,
    ),
]

InsecureOpen = Annotated[
    bool,
    typer.Option("--insecure-open", help="Without --tokens, allow listening on a non-loopback address."),
]

ForwardedAllowIps = Annotated[
    str | None,
    typer.Option(
        "--forwarded-allow-ips",
        metavar="ADDRESSES",
        help="Proxies (addresses or networks, comma-separated) whose X-Forwarded-For names the client for "
        "the ACL's host; from anyone else the header is ignored (default: none).",
        show_default=False,
    ),
]

AccessLog = Annotated[
    Path | None,
    typer.Option(
        "--access-log",
        metavar="FILE",
        help="Append the access log (one JSON line per request) to FILE instead of stderr.",
        show_default=False,
    ),
]

MaxConnections = Annotated[
    int,
    typer.Option("--max-connections", metavar="N", min=1, help="Open connections at most; more are refused (429)."),
]

MaxClientConnections = Annotated[
    int,
    typer.Option(
        "--max-client-connections",
        metavar="N",
        min=1,
        help="Open connections of one client address at most; more are refused (429). The proxies named by "
        "--forwarded-allow-ips are not capped.",
    ),
]

PublicCache = Annotated[
    bool,
    typer.Option(
        "--public-cache",
        help="Send Cache-Control: public so a reverse proxy (nginx, Varnish) may keep answers for everyone; "
        "refused with --tokens or when a store's ACL does not let User:* read every key.",
    ),
]

PublicMetrics = Annotated[
    bool,
    typer.Option(
        "--public-metrics",
        help="With --tokens, let /metrics answer without a token (for a scraper inside a trusted network); "
        "otherwise a token sees the series of the stores its principal may describe.",
    ),
]


def serve_command(
    ctx: typer.Context,
    repo: Repo = None,
    stores: Stores = None,
    host: Host = "127.0.0.1",
    port: Port = 8750,
    cache_time: CacheTime = 60,
    fetch_interval: FetchInterval = 5.0,
    remote: Remote = None,
    tokens: Tokens = None,
    insecure_open: InsecureOpen = False,
    forwarded_allow_ips: ForwardedAllowIps = None,
    access_log: AccessLog = None,
    max_connections: MaxConnections = 10_000,
    max_client_connections: MaxClientConnections = 500,
    public_cache: PublicCache = False,
    public_metrics: PublicMetrics = False,
) -> None:
    """Serve published versions of the repository's stores over HTTP/JSON.

    Only version tags are served, never a working tree. Each version is
    compiled once (the client's snapshot cache) and answered from memory.
    `current` reads follow Keystone freshness (--cache-time); a rollback
    applies at once. Stop it with SIGTERM or Ctrl-C: waiting long polls are
    answered first. Without --tokens it listens on loopback only. With
    --tokens, /metrics needs a token too and shows the stores its principal
    may describe. --public-metrics opens it to a trusted scraper.

    A read-only browser console is at /ui/ (docs/console.md); with --tokens,
    people sign in by pasting a token once.

    Every request is logged as one JSON line (stderr, or --access-log FILE).
    Limits: 16 KB of request line and headers (431). 10 s for a request to
    arrive (408). --max-connections open connections; when all are taken, a
    newcomer takes the place of one never answered. --max-client-connections
    of one address, and 100 waiting long polls per principal (429).
    1,024-character keys (414).

    Examples:
      cfgtool serve
      cfgtool serve --repo https://git.example.com/configs.git --port 8750
      cfgtool serve --host 0.0.0.0 --tokens /etc/cfgtool/tokens.json --cache-time 30
      cfgtool serve --tokens tokens.json --forwarded-allow-ips 10.0.0.5 --access-log /var/log/cfgtool.jsonl
      cfgtool serve --public-cache --port 8751    # behind nginx (docs/serving.md)
      cfgtool serve --tokens tokens.json --public-metrics    # Prometheus scrapes without a token
      curl -H "Authorization: Bearer $SCRAPER_TOKEN" localhost:8750/metrics
      curl -s localhost:8750/v1/demo/current/keys/data/tracking/PageViewEvent
    """
    cli: CliContext = ctx.obj
    location = repo if repo is not None else str(cli.repo if cli.repo is not None else Path.cwd())
    proxies = tuple(part.strip() for part in (forwarded_allow_ips or "").split(",") if part.strip())
    options = Options(
        location=location,
        stores=tuple(stores or ()),
        remote=remote,
        host=host,
        port=port,
        cache_time=cache_time,
        fetch_interval=fetch_interval,
        tokens=tokens,
        forwarded_allow_ips=proxies,
        access_log=access_log,
        max_connections=max_connections,
        max_client_connections=max_client_connections,
        public_cache=public_cache,
        public_metrics=public_metrics,
    )
    serve(options, insecure_open, console_parts)


TokensFile = Annotated[Path, typer.Option("--tokens", metavar="FILE", help="The tokens file.")]


@token_app.command("add")
def token_add(
    principal: Annotated[str, typer.Argument(metavar="PRINCIPAL", help="User:name (a bare name is a User).")],
    tokens: Annotated[Path, typer.Option("--tokens", metavar="FILE", help="The tokens file (created when missing).")],
) -> None:
    """Create a bearer token for PRINCIPAL and print it (once: only its SHA-256 is kept).

    The token is 256 random bits. The token's principal is checked against
    each store's ACL: read for configs and explain, describe for the other
    queries. A running server reads the changed file within its
    --fetch-interval.

    Example:
      cfgtool token add User:dashboard --tokens /etc/cfgtool/tokens.json
      curl -H "Authorization: Bearer $TOKEN" http://configs:8750/v1/stores
    """
    from cfgtool.serve.tokens import add_token

    who, token = add_token(tokens, principal)
    typer.echo(token)
    typer.echo(f"cfgtool: note: a token for {who} was added to {tokens}; it is shown only this once", err=True)


@token_app.command("list")
def token_list(tokens: TokensFile, fmt: QueryFmt = QueryFormat.TEXT) -> None:
    """List the tokens of FILE: id, principal, created, hash kind (never a secret or a hash).

    Kind `scrypt` marks a token made by an older cfgtool. It still works, but
    each new connection's first check costs an scrypt run. Replace it with
    `token add` and revoke it.

    Examples:
      cfgtool token list --tokens /etc/cfgtool/tokens.json
      cfgtool token list --tokens /etc/cfgtool/tokens.json --format json
    """
    from cfgtool.serve.tokens import read_tokens

    if not tokens.is_file():
        hint = f"create it with `cfgtool token add USER --tokens {tokens}`"
        raise UsageError(f"--tokens {tokens}: no such file", hint=hint)
    entries = [e.summary() for e in read_tokens(tokens).values()]
    if fmt is QueryFormat.JSON:
        typer.echo(json.dumps(entries, indent=2))
        return
    for e in entries:
        typer.echo(f"{e['id']}  {e['principal']}  {e['created'] or '-'}  {e['kind']}")
    if not entries:
        typer.echo("no tokens")


@token_app.command("revoke")
def token_revoke(
    ident: Annotated[str, typer.Argument(metavar="ID", help="The token's id (`cfgtool token list`).")],
    tokens: TokensFile,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """Revoke the token ID: remove it from FILE (rewritten atomically).

    A running server reads the changed file within its --fetch-interval (5 s by
    default) and refuses the token from then on (401).

    Examples:
      cfgtool token revoke 3f9c2a7d41b0e855 --tokens /etc/cfgtool/tokens.json
      cfgtool token revoke 3f9c2a7d41b0e855 --tokens /etc/cfgtool/tokens.json --format json
    """
    from cfgtool.serve.tokens import revoke_token

    gone = revoke_token(tokens, ident)
    if fmt is QueryFormat.JSON:
        typer.echo(json.dumps({"revoked": gone.summary()}, indent=2))
        return
    typer.echo(f"revoked token {gone.id} of {gone.principal}")
