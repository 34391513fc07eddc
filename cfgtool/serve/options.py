"""What `cfgtool serve` is asked to do (docs/serving.md) and the rules those settings obey. This module imports no
optional dependency, so the CLI may build the settings before `start.serve` checks the extra."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from cfgtool._util.cachedir import cache_root
from cfgtool.errors import UsageError


@dataclass(frozen=True)
class Options:
    """`cfgtool serve`'s options (docs/serving.md)."""

    location: str
    stores: tuple[str, ...] = ()
    remote: str | None = None
    host: str = "127.0.0.1"
    port: int = 8750
    cache_time: int = 60
    fetch_interval: float = 5.0
    tokens: Path | None = None
    cache: Path = field(default_factory=cache_root)
    forwarded_allow_ips: tuple[str, ...] = ()  # proxies whose X-Forwarded-For names the client
    access_log: Path | None = None  # the access log's file (None: stderr)
    max_connections: int = 10_000
    max_client_connections: int = 500  # open connections of one client address (proxies named above: no cap)
    public_cache: bool = False  # Cache-Control public: shared caches (nginx, Varnish) may keep answers
    public_metrics: bool = False  # /metrics answers everyone even with tokens (a scraper inside a trusted network)

    @property
    def local_only(self) -> bool:
        """Whether the server answers only this machine's own clients: no tokens, a loopback address, no proxy
        named (`--forwarded-allow-ips`) and no shared cache in front. Then a request naming another site in its
        `Host` is refused. It comes from a page of that site whose name now points at 127.0.0.1 (DNS rebinding). A
        loopback server without tokens would answer it everything."""
        return self.tokens is None and is_loopback(self.host) and not self.forwarded_allow_ips and not self.public_cache

    def check(self, insecure_open: bool = False) -> None:
        """UsageError unless the settings are safe and usable. Without tokens, only a loopback address (or
        `insecure_open`). An existing tokens file. Proxies named by IP address or network (or `*`)."""
        if self.tokens is None and not insecure_open and not is_loopback(self.host):
            raise UsageError(
                f"without --tokens the server serves everyone, so it listens on loopback only, not {self.host}",
                hint="pass --tokens FILE (create tokens with `cfgtool token add`), or --insecure-open if that is "
                "intended",
            )
        if self.tokens is not None and not self.tokens.is_file():
            hint = f"create it with `cfgtool token add USER --tokens {self.tokens}`"
            raise UsageError(f"--tokens {self.tokens}: no such file", hint=hint)
        for part in self.forwarded_allow_ips:
            if part != "*":
                try:
                    ipaddress.ip_network(part) if "/" in part else ipaddress.ip_address(part)
                except ValueError as exc:
                    raise UsageError(
                        f"--forwarded-allow-ips: {part!r} is not an IP address or network (such as 10.0.1.0/24)",
                        hint="name your proxies' addresses, e.g. --forwarded-allow-ips 10.0.0.5,10.0.1.0/24",
                    ) from exc


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or `localhost`) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
