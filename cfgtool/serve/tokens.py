"""Bearer tokens of the server (DESIGN 12): `cfgtool token add PRINCIPAL --tokens FILE` prints a new token
once and stores only its salted scrypt hash.

A token reads `cfgtool_<id>_<secret>`: the id (public, random) finds the entry without trying every hash,
and the secret (32 random bytes) is checked with scrypt, whose cost (16 MiB, tens of milliseconds) makes a
stolen tokens file useless for guessing. A token that passed once is remembered by its sha256 in a bounded
cache, so a request costs a dictionary lookup, not an scrypt run; an unknown id costs nothing at all.

The file is JSON, written atomically with mode 0600::

    {"tokens": [{"id", "principal", "salt", "hash", "n", "r", "p", "created"}]}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from base64 import b64decode, b64encode
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cfgtool.access.acl import principal as as_principal
from cfgtool.errors import SourceError
from cfgtool.serve.answers import Bounded
from cfgtool.snapshot import write_atomic_bytes

_N, _R, _P = 2**14, 8, 1
_TOKEN = re.compile(r"cfgtool_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")


@dataclass(frozen=True)
class Entry:
    """One stored token: its id, principal and scrypt hash."""

    id: str
    principal: str
    salt: bytes
    hash: bytes
    n: int = _N
    r: int = _R
    p: int = _P
    created: str | None = None


def _scrypt(secret: str, entry: Entry) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=entry.salt, n=entry.n, r=entry.r, p=entry.p, dklen=32)


def read_tokens(path: Path) -> dict[str, Entry]:
    """The entries of a tokens file by id; SourceError (exit 2) when it cannot be read or is malformed."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {
            e["id"]: Entry(
                e["id"], as_principal(e["principal"]), b64decode(e["salt"]), b64decode(e["hash"]),
                int(e["n"]), int(e["r"]), int(e["p"]), e.get("created"),
            )
            for e in data["tokens"]
        }
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SourceError(f"cannot read the tokens file {path}: {exc.strerror or exc}", hint="check it") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise SourceError(
            f"{path} is not a cfgtool tokens file ({exc!r})",
            hint="create it with `cfgtool token add PRINCIPAL --tokens FILE`",
        ) from exc


def add_token(path: Path, principal: str) -> tuple[str, str]:
    """Create a token for `principal` (`User:x`; a bare name is a User) and store its hash in `path`
    (created if missing). Returns (the principal, the token), which is shown once and never stored."""
    who = as_principal(principal)
    entries = read_tokens(path)
    ident = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    salt = secrets.token_bytes(16)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    entry = Entry(ident, who, salt, _scrypt(secret, Entry(ident, who, salt, b"")), created=created)
    entries[ident] = entry
    doc: dict[str, Any] = {
        "tokens": [
            {
                "id": e.id, "principal": e.principal, "salt": b64encode(e.salt).decode(),
                "hash": b64encode(e.hash).decode(), "n": e.n, "r": e.r, "p": e.p,
                "created": e.created,
            }
            for e in entries.values()
        ]
    }
    old = os.umask(0o077)
    try:
        write_atomic_bytes(path, (json.dumps(doc, indent=1) + "\n").encode())
        os.chmod(path, 0o600)
    except OSError as exc:
        raise SourceError(f"cannot write {path}: {exc.strerror or exc}", hint="check the directory") from exc
    finally:
        os.umask(old)
    return who, f"cfgtool_{ident}_{secret}"


class Tokens:
    """The server's view of a tokens file: `principal(token)` is the token's principal, or None."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mtime = -1.0
        self._entries: dict[str, Entry] = {}
        self._passed: Bounded[bytes, str] = Bounded(4096)
        self.reload()

    def reload(self) -> None:
        """Re-read the file when it changed (a token added or removed applies without a restart)."""
        try:
            mtime = self.path.stat().st_mtime
        except OSError:
            mtime = 0.0
        if mtime != self._mtime:
            self._entries = read_tokens(self.path)
            self._passed = Bounded(4096)
            self._mtime = mtime

    def cached(self, token: str) -> str | None:
        """The principal of a token that passed before (a dictionary lookup), else None."""
        return self._passed.get(hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest())

    def principal(self, token: str) -> str | None:
        """The token's principal, or None; a token not seen before costs an scrypt run (tens of
        milliseconds: call it off the event loop)."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        known = self._passed.get(digest)
        if known is not None:
            return known
        match = _TOKEN.fullmatch(token)
        entry = self._entries.get(match.group(1)) if match else None
        if entry is None or match is None:
            return None
        if not hmac.compare_digest(_scrypt(match.group(2), entry), entry.hash):
            return None
        return self._passed.put(digest, entry.principal)
