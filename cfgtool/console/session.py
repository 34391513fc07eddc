"""Signing in to the console (docs/console.md): a person pastes a token once. The browser then holds a signed session
cookie that lasts 12 hours. It is `HttpOnly`, `SameSite=Strict`, and `Secure` behind https.

The cookie reads `<token id>.<expiry>.<nonce>.<signature>`. The token id is the id of the token's entry in the tokens
file. It is public: it is part of the token itself, never its secret. The expiry says when the session ends, and the
nonce is 128 random bits. The signature is an HMAC-SHA256 of those and of the entry's stored hash, under the server's
session key. The key is 256 random bits kept in the server's cache directory. It is `console/session.key`, mode 0600,
written atomically, so sessions outlive a restart. Every request looks the entry up in the tokens file as the server
last read it. A revoked token (its entry gone) ends its sessions at the server's next reading of the file, as it ends
its API access. Signing out records the nonce as ended, under the token id the cookie names. The record is
`console/ended.json`, kept until the session would have expired. So a copied cookie dies too. The record is bounded
per token (`MAX_ENDED_PER_TOKEN`). A token signed in and out again and again forgets only its own oldest sign-outs,
never another token's. Past `MAX_ENDED` in all, the token with the most sign-outs recorded forgets its soonest to
expire. An `ended.json` of an older server (nonces only) is still read. Its nonces end the sessions of every token
until they would have expired.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
import time
from pathlib import Path

from cfgtool._util.atomic import write_atomic_bytes
from cfgtool._util.cachedir import private_dir
from cfgtool.serve.tokens import Entry, Tokens

COOKIE = "cfgtool_session"
LIFETIME = 12 * 3600  # seconds a session lasts from sign-in
MAX_TOKEN = 512  # characters of a pasted token read at most (a token is 81)
MAX_COOKIE = 200  # characters of a session cookie read at most (one is about 100)
MAX_ENDED_PER_TOKEN = 1_000  # signed-out sessions remembered per token; its soonest to expire is forgotten first
MAX_ENDED = 20_000  # in all; beyond it, the token with the most forgets its soonest to expire
ANY_TOKEN = ""  # the record's entry of an older file's nonces (which named no token): they end any token's session
KEY_BYTES = 32
KEY_FILE = "session.key"
ENDED_FILE = "ended.json"

log = logging.getLogger("cfgtool.serve")


class Sessions:
    """The console's sessions: signed cookies under a key kept in `folder` (the server's cache)."""

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        self._key = _session_key(folder)
        self._ended = _read_ended(folder / ENDED_FILE)
        self._lock = threading.Lock()

    def start(self, entry: Entry) -> str:
        """A new session of the token `entry` names: the cookie's value."""
        body = f"{entry.id}.{int(time.time()) + LIFETIME}.{secrets.token_urlsafe(16)}"
        return f"{body}.{self._sign(body, entry)}"

    def principal(self, cookie: str | None, tokens: Tokens) -> str | None:
        """The principal of the live session `cookie` holds. None when it is malformed, forged, expired, signed out,
        or its token revoked (no longer in the tokens file)."""
        parts = cookie.split(".") if cookie and len(cookie) <= MAX_COOKIE else []
        if len(parts) != 4 or not parts[1].isdigit():
            return None
        ident, expires, nonce, signature = parts
        entry = tokens.entry(ident)
        if entry is None:
            return None
        if not hmac.compare_digest(signature, self._sign(f"{ident}.{expires}.{nonce}", entry)):
            return None
        if (
            int(expires) <= time.time()
            or nonce in self._ended.get(ident, ())
            or nonce in self._ended.get(ANY_TOKEN, ())
        ):
            return None
        return entry.principal

    def end(self, cookie: str | None, tokens: Tokens) -> None:
        """End the live session `cookie` holds (signing out), for good. Its nonce is recorded, under its token, until
        it would expire. Anything else is not recorded. Anyone may post a sign-out. Forged cookies would fill the
        record until a signed-out session's copied cookie worked again."""
        if self.principal(cookie, tokens) is None:
            return
        assert cookie is not None
        ident, expires, nonce, _ = cookie.split(".")
        with self._lock:
            ended = _live(self._ended, time.time())
            own = ended.setdefault(ident, {})
            own[nonce] = float(expires)
            if len(own) > MAX_ENDED_PER_TOKEN:
                ended[ident] = _latest(own, MAX_ENDED_PER_TOKEN)
            while sum(len(n) for n in ended.values()) > MAX_ENDED:
                most = max(ended, key=lambda i: len(ended[i]))
                ended[most] = _latest(ended[most], len(ended[most]) - 1)
            self._ended = ended
            _write_private(self._folder / ENDED_FILE, json.dumps({"tokens": ended}).encode())

    def _sign(self, body: str, entry: Entry) -> str:
        """The signature of `body` for the token entry (its stored hash included: a replaced entry signs anew)."""
        mac = hmac.new(self._key, body.encode() + b"." + entry.hash, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def _session_key(folder: Path) -> bytes:
    """The server's session key from `folder`, made the first time. Two servers sharing the cache agree: the second
    reads the first's. When the folder cannot be written, a key only in memory, with a warning."""
    path = folder / KEY_FILE
    try:
        private_dir(folder)
        if not path.exists():
            _write_private(path, secrets.token_bytes(KEY_BYTES), replace=False)
        key = path.read_bytes()
        if len(key) != KEY_BYTES:  # damaged: a new key (the sessions signed with the old one end)
            log.warning("the console's session key %s is damaged: a new one is made", path)
            key = secrets.token_bytes(KEY_BYTES)
            _write_private(path, key)
        return key
    except OSError as exc:
        log.warning("cannot keep the console's session key in %s (%s): sessions end with the server", folder, exc)
        return secrets.token_bytes(KEY_BYTES)


def _write_private(path: Path, data: bytes, replace: bool = True) -> None:
    """Write `data` to `path` atomically, mode 0600."""
    old = os.umask(0o077)
    try:
        write_atomic_bytes(path, data, replace=replace)
    finally:
        os.umask(old)


def _read_ended(path: Path) -> dict[str, dict[str, float]]:
    """The signed-out sessions' nonces by token id, with when they would have expired ({} without a readable
    file). `{"tokens": {id: {nonce: expiry}}}`; an older server's `{nonce: expiry}` is read under `ANY_TOKEN`."""
    try:
        found = json.loads(path.read_bytes())
        if isinstance(found.get("tokens"), dict):
            by_token = {str(i): {str(n): float(t) for n, t in nonces.items()} for i, nonces in found["tokens"].items()}
        else:
            by_token = {ANY_TOKEN: {str(n): float(t) for n, t in found.items()}}
        return _live(by_token, time.time())
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _live(ended: dict[str, dict[str, float]], now: float) -> dict[str, dict[str, float]]:
    """`ended` without the sessions expired by `now` (and the tokens left with none)."""
    found = {i: {n: t for n, t in nonces.items() if t > now} for i, nonces in ended.items()}
    return {i: nonces for i, nonces in found.items() if nonces}


def _latest(nonces: dict[str, float], size: int) -> dict[str, float]:
    """The `size` nonces of `nonces` that expire last."""
    return dict(sorted(nonces.items(), key=lambda item: item[1])[len(nonces) - size :])
