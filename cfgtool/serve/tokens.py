"""Bearer tokens of the server (docs/access.md). `cfgtool token add PRINCIPAL --tokens FILE` prints a new token once
and stores only its SHA-256 hash. `cfgtool token list` and `cfgtool token revoke ID` manage the file.

A token reads `cfgtool_<id>_<secret>`: the id (public, 64 random bits) finds the entry, the secret is 256
random bits. A slow password hash protects nothing more for a random 256-bit secret, and lets anyone make the server
burn CPU. So a new entry holds the SHA-256 of the whole token. It is checked on the event loop with one hash and a
constant-time comparison (`hmac.compare_digest`). An unknown id is compared against a random digest, so it costs
exactly what a known id with a wrong secret costs.

Older files hold salted scrypt hashes: entries without `"kind"`, or `"kind": "scrypt"`. They keep working and are
never rewritten behind the operator's back. `cfgtool token list` shows their kind: replace them with new tokens and
revoke the old ones. While a file holds any scrypt entry, every token that does not match a SHA-256 entry costs one
scrypt run. It runs against its scrypt entry or a stand-in with the same parameters. So an unknown id still answers
as slowly as a wrong secret. Those runs happen on one dedicated low-priority thread. They never run on the event loop
or the shared thread pool. At most `MAX_PENDING` wait; beyond that, `TooManyChecks` makes the server answer 429. A
token that passed is remembered by its SHA-256 until its entry goes, so it costs one scrypt run. The server answers a
refused token only after `REFUSED_DELAY`, on the event loop's timer, with no thread held. So a client trying tokens
on one connection costs the server a few requests a second, however fast it sends.

The file is JSON, written atomically with mode 0600::

    {"tokens": [{"id", "principal", "kind": "sha256", "hash", "created"}
                | {"id", "principal", "salt", "hash", "n", "r", "p", "created"}]}
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from base64 import b64decode, b64encode
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cfgtool._util.atomic import write_atomic_bytes
from cfgtool.access.acl import checked_principal
from cfgtool.access.acl import principal as as_principal
from cfgtool.errors import SourceError, UsageError
from cfgtool.serve.answers import Bounded

SHA256, SCRYPT = "sha256", "scrypt"
MAX_PENDING = 16  # scrypt checks queued at once; more are refused (429) rather than queued without end
REFUSED_DELAY = 0.25  # seconds before a refused token's 401: a client trying tokens sends 4 a second per connection
_N, _R, _P = 2**14, 8, 1
_TOKEN = re.compile(r"cfgtool_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")


@dataclass(frozen=True)
class Entry:
    """One stored token: its id, principal, hash kind (`sha256`, or `scrypt` for older files) and hash."""

    id: str
    principal: str
    kind: str
    hash: bytes
    created: str | None = None
    salt: bytes = b""
    n: int = _N
    r: int = _R
    p: int = _P

    def to_json(self) -> dict[str, Any]:
        """The entry as the tokens file holds it."""
        out: dict[str, Any] = {"id": self.id, "principal": self.principal, "kind": self.kind}
        if self.kind == SCRYPT:
            out.update(salt=b64encode(self.salt).decode(), n=self.n, r=self.r, p=self.p)
        out.update(hash=b64encode(self.hash).decode(), created=self.created)
        return out

    def summary(self) -> dict[str, Any]:
        """What `cfgtool token list` shows: never the hash."""
        return {"id": self.id, "principal": self.principal, "created": self.created, "kind": self.kind}


class TooManyChecks(Exception):
    """More scrypt checks are waiting than `MAX_PENDING`: the request is refused (429), not queued."""


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


def token_id(token: str) -> str | None:
    """The id of the entry a token names (public: it is no secret), None when it is not a token's shape."""
    match = _TOKEN.fullmatch(token)
    return match.group(1) if match else None


def _scrypt(secret: str, entry: Entry) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=entry.salt, n=entry.n, r=entry.r, p=entry.p, dklen=32)


def _entry(e: dict[str, Any]) -> Entry:
    kind = e.get("kind", SCRYPT)
    who, ident, digest = as_principal(e["principal"]), str(e["id"]), b64decode(e["hash"])
    if kind == SHA256:
        return Entry(ident, who, SHA256, digest, e.get("created"))
    if kind == SCRYPT:
        n, r, p = int(e["n"]), int(e["r"]), int(e["p"])
        return Entry(ident, who, SCRYPT, digest, e.get("created"), b64decode(e["salt"]), n, r, p)
    raise ValueError(f"token {ident}: unknown hash kind {kind!r}")


def read_tokens(path: Path) -> dict[str, Entry]:
    """The entries of a tokens file by id ({} when it does not exist). SourceError (exit 2) when it cannot be read or
    is malformed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {entry.id: entry for entry in map(_entry, data["tokens"])}
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SourceError(f"cannot read the tokens file {path}: {exc.strerror or exc}", hint="check it") from exc
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SourceError(
            f"{path} is not a cfgtool tokens file ({exc})",
            hint="create it with `cfgtool token add PRINCIPAL --tokens FILE`",
        ) from exc


def _write_tokens(path: Path, entries: dict[str, Entry]) -> None:
    """Write the file atomically with mode 0600 (a running server reads the new one at its next fetch round)."""
    doc = {"tokens": [e.to_json() for e in entries.values()]}
    old = os.umask(0o077)
    try:
        write_atomic_bytes(path, (json.dumps(doc, indent=1) + "\n").encode())
        os.chmod(path, 0o600)
    except OSError as exc:
        raise SourceError(f"cannot write {path}: {exc.strerror or exc}", hint="check the directory") from exc
    finally:
        os.umask(old)


@contextlib.contextmanager
def _editing(path: Path) -> Iterator[dict[str, Entry]]:
    """The entries of `path`, written back atomically when the block ends without an error. Two commands editing the
    same file at once take turns (a lock on `FILE.lock`). So neither loses the other's change."""
    try:
        lock = open(path.with_name(path.name + ".lock"), "a")  # noqa: SIM115 (held for the block)
    except OSError as exc:
        raise SourceError(f"cannot lock {path}: {exc.strerror or exc}", hint="check the directory") from exc
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        entries = read_tokens(path)
        yield entries
        _write_tokens(path, entries)


def add_token(path: Path, principal: str) -> tuple[str, str]:
    """Create a token for `principal` (`User:x`; a bare name is a User) and store its SHA-256 in `path`
    (created if missing). Returns (the principal, the token), which is shown once and never stored."""
    who = checked_principal(principal)  # a name no ACL entry could name would be a token for no one
    ident = secrets.token_hex(8)
    token = f"cfgtool_{ident}_{secrets.token_urlsafe(32)}"
    created = datetime.now(UTC).isoformat(timespec="seconds")
    with _editing(path) as entries:
        entries[ident] = Entry(ident, who, SHA256, _digest(token), created)
    return who, token


def revoke_token(path: Path, ident: str) -> Entry:
    """Remove the token `ident` from `path` (rewritten atomically); the removed entry. UsageError when the
    file holds no such id."""
    with _editing(path) as entries:
        gone = entries.pop(ident, None)
        if gone is None:
            raise UsageError(
                f"{path} holds no token with id {ident!r}",
                hint=f"list the ids with `cfgtool token list --tokens {path}`",
            )
    return gone


def _low_priority() -> None:
    """Run the scrypt thread at the lowest CPU priority; Linux sets a nice value per thread. So hostile wrong secrets
    slow first the checks of older tokens, not the answers."""
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


class _State:
    """One reading of the tokens file: its entries, and the stand-ins an unknown id is checked against. A stand-in is
    a random digest. With scrypt entries, it is also a random scrypt entry with their parameters; no token matches
    it."""

    def __init__(self, entries: dict[str, Entry]) -> None:
        self.entries = entries
        self.stand_in = secrets.token_bytes(32)
        first = next((e for e in entries.values() if e.kind == SCRYPT), None)
        self.legacy = (
            None
            if first is None
            else Entry("", "", SCRYPT, self.stand_in, None, secrets.token_bytes(16), first.n, first.r, first.p)
        )


class Tokens:
    """The server's view of a tokens file: `await check(token)` is the token's principal, or None."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._state = _State({})
        self._passed: Bounded[bytes, str] = Bounded(4096)  # SHA-256 of a token that passed scrypt -> its id
        self._scrypt: ThreadPoolExecutor | None = None
        self._pending = 0
        self.reload()

    def reload(self) -> None:
        """Re-read the file when it changed (a token added or revoked applies without a restart)."""
        try:
            info = self.path.stat()
            stamp = (info.st_mtime_ns, info.st_ino, info.st_size)
        except OSError:
            stamp = (0, 0, 0)
        if stamp != self._stamp:
            self._state = _State(read_tokens(self.path))  # one assignment: a check sees one reading
            self._stamp = stamp

    def entry(self, ident: str) -> Entry | None:
        """The entry with id `ident` in the file as last read (None: unknown, or revoked since)."""
        return self._state.entries.get(ident)

    def _fast(self, token: str) -> tuple[bytes, str | None, Entry | None]:
        """(the token's SHA-256, its principal if a SHA-256 entry matches, the entry an scrypt run must check it
        against when one is needed). It costs one hash and one constant-time comparison, whatever the id."""
        state = self._state
        digest = _digest(token)
        match = _TOKEN.fullmatch(token)
        entry = state.entries.get(match.group(1)) if match else None
        stored = entry.hash if entry is not None and entry.kind == SHA256 else state.stand_in
        if hmac.compare_digest(digest, stored) and entry is not None:
            return digest, entry.principal, None
        if state.legacy is None:
            return digest, None, None
        passed = self._passed.get(digest)
        if passed is not None and entry is not None and passed == entry.id:
            return digest, entry.principal, None
        return digest, None, entry if entry is not None and entry.kind == SCRYPT else state.legacy

    async def check(self, token: str) -> str | None:
        """The token's principal, or None, without blocking the event loop. A SHA-256 entry is checked at once. An
        scrypt run waits for the dedicated thread. TooManyChecks when `MAX_PENDING` runs are waiting."""
        digest, who, against = self._fast(token)
        if against is None:
            return who
        if self._pending >= MAX_PENDING:
            raise TooManyChecks
        if self._scrypt is None:
            self._scrypt = ThreadPoolExecutor(1, thread_name_prefix="cfgtool-scrypt", initializer=_low_priority)
        self._pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._scrypt, self._slow, token, digest, against)
        finally:
            self._pending -= 1

    def _slow(self, token: str, digest: bytes, against: Entry) -> str | None:
        """One scrypt run of the token's secret against `against`. That is its own entry, or the stand-in an unknown
        id is checked with, which never matches."""
        match = _TOKEN.fullmatch(token)
        secret = match.group(2) if match else token
        ok = hmac.compare_digest(_scrypt(secret, against), against.hash)
        if not ok or self._state.entries.get(against.id) is not against:
            return None
        self._passed.put(digest, against.id)
        return against.principal

    def close(self) -> None:
        """Stop the scrypt thread (checks in flight finish)."""
        if self._scrypt is not None:
            self._scrypt.shutdown(wait=False, cancel_futures=True)
