"""`cfgtool agent`: put published configs on disk, as files, for programs that read files (docs/agent.md).

The agent reads the `current` answer of each key it writes. The server's Keystone freshness says which version each
key sees now. So a fleet of agents switches spread over the store's checkpoints, and a rollback reaches every agent
at once. The version it applies is the oldest that its keys see: all its files are one version, never a mix. It reads
that version's configs through a client pinned to it (`HttpConfigClient`, with its disk cache). It renders the files,
runs `--check` on them, swaps them in (`layout`) and reloads the program.

Following: a long poll of the change feed wakes it on every publish or rollback. A key may still show an older
version than the store's current one. Then it asks again when that key's checkpoint passes (the answer's `max-age`).
Errors (the server down or restarting) are retried with backoff and jitter (1 to 120 s). The files on disk stay as
they are meanwhile. A version whose check fails, or that cannot be rendered, is not applied. The agent goes on with
the next one.
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfgtool.agent import layout
from cfgtool.agent.actions import CheckFailed, Reload, check
from cfgtool.agent.files import FileSpec, RenderError, contents, replace_at, sealed_paths
from cfgtool.client.client import HttpConfigClient
from cfgtool.client.feed import ChangeFeed
from cfgtool.client.http import (
    MAX_BYTES,
    Check,
    Connection,
    OfflineWarning,
    ServerUnavailable,
    current_key,
    report_applied,
    request_headers,
)
from cfgtool.errors import CfgtoolError
from cfgtool.snapshot.model import KeyNotFound
from cfgtool.store.keys import ancestors

log = logging.getLogger("cfgtool.agent")

_LATE = 0.05  # seconds after a checkpoint to ask again, so that it has surely passed


class NothingToWrite(CfgtoolError):
    """`--once` could write no version: the server is unreachable and nothing is cached or on disk."""


NO_NODE_HINT = "check the key of --file or --template; --nearest writes a key without a node as its nearest ancestor's"


@dataclass(frozen=True)
class Options:
    """What an agent writes where, and how it tells the program (the options of `cfgtool agent`)."""

    server: str
    store: str
    directory: Path
    files: list[FileSpec]
    token: str | None = None
    identity: Path | None = None
    secrets_from: tuple[str, ...] = ()
    env_prefix: str = ""
    check: str | None = None
    reload: Reload = field(default_factory=Reload)
    settle: float = 2.0
    cache_dir: Path | None = None
    instance: str | None = None
    timeout: float = 10.0
    wait: float = 30.0
    nearest: bool = False  # a key without a node is written as its nearest ancestor's config (else refused)


@dataclass
class _Seen:
    """A key's last `current` answer: its ETag and version, and when its checkpoint passes (monotonic time)."""

    etag: str | None
    version: int
    until: float


class Agent:
    """One agent (see the module's docstring). `applied` is the version on disk. `refused` is the last version its
    check refused, not tried again until another one comes. `swaps` is the number of swaps made."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.location = options.server.rstrip("/")
        self.keys = sorted({spec.key for spec in options.files})
        self.applied: int | None = layout.applied(options.directory)
        self.refused: int | None = None
        self.written = False  # whether this process has rendered its files once (the options may have changed)
        self.swaps = 0
        self._last_swap = float("-inf")
        self._seen: dict[str, _Seen] = {}
        self._headers = request_headers(options.token, options.instance, "agent")
        self.instance = self._headers["Cfgtool-Instance"]
        self._reads = Connection(self.location, options.timeout, MAX_BYTES)
        self._feed = ChangeFeed(
            self.location, options.store, token=options.token, instance=self.instance, kind="agent",
            wait=options.wait, timeout=options.timeout,
        )  # fmt: skip
        self._identities: list[Any] | None = None
        if options.identity is not None:
            from cfgtool.access.secrets import load_identities

            self._identities = load_identities(options.identity)

    # -- the two modes ---------------------------------------------------------------------------------
    def once(self) -> int:
        """Write the version the keys see now and return it (`--once`). With the server unreachable: the newest
        version cached, else the files already on disk. NothingToWrite when there is neither."""
        try:
            target = min(seen.version for seen in self._visible().values())
        except ServerUnavailable as exc:
            return self._offline(exc)
        self._apply(target, strict=True)
        return target

    def follow(self, stop: threading.Event) -> None:
        """Keep the files at the version the keys see, until `stop` is set (see the module's docstring)."""
        for _ in self._feed.follow(stop, wait=self._wait, on_error=self._retrying):
            try:
                self._catch_up(stop)
            except CfgtoolError as exc:
                self._feed.failed(exc)

    def _catch_up(self, stop: threading.Event) -> None:
        """Apply the version the keys see now, once `--settle` allows it (unless its check failed before)."""
        target = min(s.version for s in self._visible().values())
        while (hold := self._hold(target)) > 0:
            if stop.wait(hold):
                return
            target = min(s.version for s in self._visible().values())
        if target != self.refused and (target != self.applied or not self.written):
            self._apply(target, strict=False)

    def _retrying(self, exc: Exception, delay: float) -> None:
        kept = f"{self.options.directory} keeps version {self.applied}" if self.applied else "nothing written yet"
        log.warning("%s (%s); retrying in %.1f s", exc.message if isinstance(exc, CfgtoolError) else exc, kept, delay)

    def interrupt(self) -> None:
        """Cut a long poll in flight and start no other (safe from a signal handler: it takes no lock)."""
        self._feed.interrupt()

    def close(self) -> None:
        """Close the connections."""
        self._feed.close()
        self._reads.close()

    # -- deciding what to apply -------------------------------------------------------------------------
    def _hold(self, target: int) -> float:
        """Seconds to wait before applying `target`: what is left of `--settle` after the last swap, when it moves
        forward. Changes within the window are applied once, at its end. A rollback never waits."""
        if self.applied is None or target <= self.applied or target == self.refused:
            return 0.0
        return max(0.0, self._last_swap + self.options.settle - time.monotonic())

    def _wait(self) -> float:
        """How long the next long poll may hold. A key may still see an older version than the store's current one;
        then until that key's checkpoint. Else the usual `wait`."""
        current = self._feed.current
        now = time.monotonic()
        behind = [s.until - now for s in self._seen.values() if current is not None and s.version < current]
        return min(self.options.wait, max(0.0, min(behind) + _LATE)) if behind else self.options.wait

    def _visible(self) -> dict[str, _Seen]:
        """Each key's `current` answer (conditional: an unchanged one is a 304)."""
        found: dict[str, _Seen] = {}
        for key in self.keys:
            before = self._seen.get(key)
            etag = before.etag if before is not None else None
            now = current_key(self._reads, self.options.store, key, self._headers, etag)
            until = time.monotonic() + now.max_age
            found[key] = self._seen[key] = _Seen(now.etag, now.version, until)
        return found

    # -- applying -----------------------------------------------------------------------------------------
    def _apply(self, version: int, *, strict: bool) -> None:
        """Read, render, check and swap in `version`, then reload. A refusal (check, template, secret) keeps the
        files on disk. It is raised when `strict` (`--once`). Else it is logged and remembered in `refused`."""
        client = HttpConfigClient(
            self.location,
            self.options.store,
            version=version,
            offline="cache" if strict else "error",
            token=self.options.token,
            cache_dir=self.options.cache_dir,
            timeout=self.options.timeout,
            instance=self.instance,
            kind="agent",
        )
        try:
            self._write(client, version)
        except (CheckFailed, RenderError, layout.LayoutError) as exc:
            if not isinstance(exc, layout.LayoutError):
                self._report(Check(version, False, exc.message, tuple(self.keys)))
            if strict or isinstance(exc, layout.LayoutError):
                raise
            self.refused = version
            kept = f"{self.options.directory} keeps version {self.applied}" if self.applied else "nothing written"
            log.error("version %d not applied: %s (%s)", version, exc.message, kept)
        else:
            self._report(Check(version, True, keys=tuple(self.keys)))
        finally:
            client.close()

    def _report(self, check: Check | None) -> None:
        """Tell the server the version on disk and how the last attempt went; `cfgtool consumers` lists it. A report
        that fails costs a log line, never the files."""
        try:
            report_applied(
                self.location,
                self.options.store,
                self.applied,
                check,
                instance=self.instance,
                kind="agent",
                token=self.options.token,
                timeout=self.options.timeout,
            )
        except CfgtoolError as exc:
            log.warning("could not report version %s to the server: %s", self.applied, exc.message)

    def _write(self, client: HttpConfigClient, version: int) -> None:
        configs, opened = self._configs(client)
        files = contents(self.options.files, configs, opened, self.options.env_prefix)
        if version == self.applied and layout.holds(self.options.directory, files):
            self.written, self.refused = True, None
            return  # the files on disk are these already: no swap, no reload
        new = layout.stage(self.options.directory, version, files)
        try:
            if self.options.check is not None:
                check(self.options.check, new, version, secret=bool(opened))
        except CheckFailed:
            layout.discard(new)
            raise
        layout.swap(self.options.directory, new, sorted(files))
        self.applied, self.refused, self.written = version, None, True
        self.swaps += 1
        self._last_swap = time.monotonic()
        log.info("applied version %d to %s (%d files)", version, self.options.directory, len(files))
        self.options.reload(new, version)

    def _configs(self, client: HttpConfigClient) -> tuple[dict[str, Mapping[str, Any]], set[str]]:
        """Each key's config at the client's version, and the keys whose secrets were opened. Secrets open with
        `--identity`; without, they are `[hidden]`."""
        from cfgtool.access.secrets import SecretError

        configs: dict[str, Mapping[str, Any]] = {}
        opened: set[str] = set()
        for key in self.keys:
            try:  # a key without a node (a typo, most likely) is refused unless --nearest asks for its ancestor's
                found = client.lookup(key, not self.options.nearest, sealed=self._identities is not None)
            except KeyNotFound as exc:
                raise RenderError(exc.message, hint=NO_NODE_HINT) from exc
            configs[key] = found.config
            if self._identities is not None:
                try:
                    configs[key], secret = self._open(found.key, found.config)
                except SecretError as exc:
                    raise RenderError(f"{key}: {exc.message}", hint=exc.hint) from exc
                if secret:
                    opened.add(key)
        return configs, opened

    def _open(self, key: str, config: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
        """`config` (`key`'s, read with `?secrets=sealed`) with its secrets opened, and whether it had any.
        Each opens only if sealed for its very path at `key`, an ancestor of `key`, or a node of `--secrets-from`.
        The agent knows those places itself. What the server says `key` imports is never trusted here. So a spoofed
        or compromised server cannot route another node's secret into these files."""
        from cfgtool.access.secrets import open_envelope
        from cfgtool.hocon.resolver import render_path

        sealed = sealed_paths(config)
        if not sealed:
            return dict(config), False
        assert self._identities is not None
        layers = {key, *ancestors(key), *self.options.secrets_from}
        values: dict[tuple[str, ...], str | None] = {}
        for path, envelope in sealed.items():
            places = {(layer, render_path(path)) for layer in layers}
            values[path] = open_envelope(envelope, self._identities, self.options.store, places).value
        return replace_at(config, values), True

    def _offline(self, exc: ServerUnavailable) -> int:
        """`--once` without a server: the cached current version, else the files on disk."""
        try:
            with warnings.catch_warnings():  # said once, below, in the agent's log
                warnings.simplefilter("ignore", OfflineWarning)
                client = HttpConfigClient(
                    self.location,
                    self.options.store,
                    offline="cache",
                    token=self.options.token,
                    cache_dir=self.options.cache_dir,
                    timeout=self.options.timeout,
                    instance=self.instance,
                    kind="agent",
                )
        except CfgtoolError:
            client = None
        if client is not None:
            try:
                self._write(client, client.version)
                log.warning("%s: wrote version %d from the cache", exc.message, client.version)
                return client.version
            except ServerUnavailable:
                pass  # the version is cached, not every key of it
            finally:
                client.close()
        if self.applied is not None:
            log.warning("%s: %s keeps version %d", exc.message, self.options.directory, self.applied)
            return self.applied
        raise NothingToWrite(
            f"{exc.message}; nothing of store {self.options.store!r} is cached or in {self.options.directory}",
            hint="start the server or check --server (the agent caches what it reads once it has connected)",
        ) from exc


__all__ = ["Agent", "NothingToWrite", "Options"]
