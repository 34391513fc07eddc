"""Signing in to the console (docs/console.md): a person pastes a token once; the browser then holds only a random
session id in an `HttpOnly`, `SameSite=Strict` cookie (`Secure` behind https) that lasts 12 hours.

The server keeps each session's token in memory and checks it again on every request, through the same token
check as the JSON API, so a revoked token ends its sessions at the server's next reading of the tokens file. The
cookie names no principal and no token; sessions end with the server (signing in again is one paste).
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from cfgtool.serve.answers import Bounded

COOKIE = "cfgtool_session"
LIFETIME = 12 * 3600  # seconds a session lasts from sign-in
MAX_SESSIONS = 10_000  # the oldest session ends beyond this many (each one costs a few hundred bytes)
MAX_TOKEN = 512  # characters of a pasted token read at most (a token is 81)


@dataclass(frozen=True)
class Session:
    """A signed-in browser: the token it pasted and when the session ends (time.time())."""

    token: str
    expires: float


class Sessions:
    """The console's sessions by id."""

    def __init__(self) -> None:
        self._items: Bounded[str, Session] = Bounded(MAX_SESSIONS)

    def start(self, token: str) -> str:
        """A new session for `token`: its id, the cookie's value (256 random bits)."""
        ident = secrets.token_urlsafe(32)
        self._items.put(ident, Session(token, time.time() + LIFETIME))
        return ident

    def get(self, ident: str | None) -> Session | None:
        """The live session `ident` names, or None (unknown or expired)."""
        if not ident or len(ident) > 64:
            return None
        found = self._items.get(ident)
        if found is None or found.expires <= time.time():
            return None
        return found

    def end(self, ident: str | None) -> None:
        """Forget the session `ident` (signing out; a revoked token)."""
        if ident:
            self._items.pop(ident)
