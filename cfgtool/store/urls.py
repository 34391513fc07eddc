"""The git URLs cfgtool mirrors into its caches (`cfgtool serve`'s mirror, a `ConfigClient` of a URL): a URL's
credentials (`https://user:token@host/...`) never reach the disk or a message.

`split_credentials` gives the URL to write into a mirror's git config and the credential it held. `fetch_env` gives
the environment that hands the credential to the git processes that clone or fetch. It does so through a credential
helper that answers for that host alone and stores nothing. `stall_bound` says how long such a process may receive
nothing. `redact` drops the credentials from any text.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

from cfgtool.errors import UsageError

_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)[^/?#\s]*@", re.IGNORECASE)  # scheme://user:token@
_AUTHORITY = re.compile(r"^([a-z][a-z0-9+.-]*)://([^/?#\s]*)@([^/?#\s]*)(.*)$", re.IGNORECASE | re.DOTALL)
_ORIGIN = re.compile(r"^[a-z][a-z0-9+.-]*://[^/?#\s]*", re.IGNORECASE)  # scheme://host:port
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*)://", re.IGNORECASE)
# A clone or fetch that receives nothing for STALL_S seconds fails; over HTTP, one slower than STALL_BYTES a second.
STALL_BYTES, STALL_S = 1000, 30
# How a cache of a URL (the server's mirror, a client's clone) is fetched: branches as they move, tags never
# moved (a tag moved upstream fails the fetch). Not --quiet: git says which tag it refused only without it.
FETCH = ("fetch", "origin", "+refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*")
_HTTP = {"http", "https", "ftp", "ftps"}  # the schemes git sends a URL's user name and password over
# A credential helper (git runs it with sh): answers `get` with the credential its environment holds and
# ignores `store` and `erase`, so neither it nor a helper the user configured keeps the credential anywhere.
_HELPER = '!f() { cat >/dev/null; test "$1" = get && printf \'%s\' "$CFGTOOL_GIT_CREDENTIAL"; }; f'


def redact(text: str) -> str:
    """`text` with the user information of every URL in it dropped (`https://user:token@host/x` -> `https://host/x`).
    A URL's credentials are never printed, logged, measured or answered."""
    return _USERINFO.sub(r"\1", text)


def split_credentials(url: str) -> tuple[str, str | None]:
    """(`url` as written to disk, the credential it held in git's credential-helper format, or None).

    An http(s) or ftp(s) URL loses its user information, which becomes the credential. Any other URL only loses a
    password, which git never uses there. An ssh user name is a login, not a secret.
    """
    found = _AUTHORITY.match(url)
    if found is None:
        return url, None
    scheme, userinfo, host, rest = found.groups()
    user, colon, password = userinfo.partition(":")
    if scheme.lower() not in _HTTP:
        return (f"{scheme}://{user}@{host}{rest}" if user else f"{scheme}://{host}{rest}"), None
    user, password = unquote(user), unquote(password)
    if any(c in user + password for c in "\n\r\0"):
        raise UsageError(f"{redact(url)}: its user information holds a line break or NUL", hint="check the URL")
    credential = (f"username={user}\n" if user else "") + (f"password={password}\n" if colon else "")
    return f"{scheme}://{host}{rest}", credential or None


def stall_bound(url: str) -> float | None:
    """How long a clone or fetch of `url` may receive nothing before git is stopped (`git.transfer`). None where it
    needs no such watch. Over HTTP, git reports no progress while it downloads a pack from a "dumb" server. So curl's
    own limit bounds it instead, byte by byte: below `STALL_BYTES` a second for `STALL_S` seconds (`fetch_env`). A
    local path has no remote to stop answering. Every other URL is watched: ssh://, git://, file://, the scp-like
    `user@host:path`."""
    scheme = _SCHEME.match(url)
    if scheme is not None:
        return None if scheme.group(1).lower() in _HTTP else STALL_S
    colon, slash = url.find(":"), url.find("/")
    return STALL_S if colon > 0 and (slash < 0 or colon < slash) else None  # git's rule for `host:path`


def fetch_env(url: str, credential: str | None) -> dict[str, str]:
    """The environment of the git processes that clone or fetch `url` (without credentials).

    git never prompts: a server or a library has no one to answer. An HTTP transfer slower than `STALL_BYTES` a
    second for `STALL_S` seconds fails. `stall_bound` covers the other transports. So a remote that stops answering
    is a fetch failure, never a process stuck for good. The server's `/healthz` reports it. A `credential` is handed
    to git through `_HELPER`, for the URL's scheme and host alone; a redirect elsewhere gets nothing. The list of
    configured helpers is emptied first, since they could store it. The entries come after any `GIT_CONFIG_COUNT`
    entries of the process's own environment.
    """
    config = [("http.lowSpeedLimit", str(STALL_BYTES)), ("http.lowSpeedTime", str(STALL_S))]
    env = {"GIT_TERMINAL_PROMPT": "0"}
    origin = _ORIGIN.match(url)
    if credential is not None and origin is not None:
        config += [("credential.helper", ""), (f"credential.{origin.group(0)}.helper", _HELPER)]
        env["CFGTOOL_GIT_CREDENTIAL"] = credential
    try:
        base = int(os.environ.get("GIT_CONFIG_COUNT", "0") or "0")
    except ValueError:
        base = 0
    env["GIT_CONFIG_COUNT"] = str(base + len(config))
    for n, (key, value) in enumerate(config, base):
        env[f"GIT_CONFIG_KEY_{n}"], env[f"GIT_CONFIG_VALUE_{n}"] = key, value
    return env
