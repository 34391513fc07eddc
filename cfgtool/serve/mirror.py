"""Where the server reads tags: a local repository, or a bare mirror of a URL kept in the cache.

With a URL (or `--remote NAME`, whose URL is used), the server never touches the user's repository: it
clones a bare mirror into the cache once and fetches branches and tags into it every `--fetch-interval`.
Tags are fetched without force, so a tag moved upstream is a fetch failure, never a silent change of a
published version. With a local path, nothing is fetched: the tags are re-read as often.

A URL's credentials (`https://user:token@host/...`) never reach the disk: the mirror's git config holds the URL
without them, and each clone or fetch hands them to git through a credential helper named in the git process's
environment, which answers for that URL's host only and stores nothing. A mirror written by an older cfgtool
with the credentials in its config is rewritten on start. git never prompts, and a stalled HTTP transfer
fails (`fetch_env`).

Stores are found at HEAD (every directory holding a `_CONFIG_STORE`, none inside a Python package: a
package's templates are no stores of the repository), or named by `--store DIR`; each is addressed by the
`name` in its `_CONFIG_STORE`, else by its directory name.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from cfgtool._util.cachedir import private_dir
from cfgtool.errors import CfgtoolError, SourceError, UsageError
from cfgtool.store import git
from cfgtool.store.found import store_dirs, store_name
from cfgtool.store.settings import SETTINGS_FILE, parse_settings

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[^/\s]+@[^/\s]+:")  # https://..., ssh://..., file://, git@host:path
_USERINFO = re.compile(r"([a-z][a-z0-9+.-]*://)[^/?#\s]*@", re.IGNORECASE)  # scheme://user:token@
_AUTHORITY = re.compile(r"^([a-z][a-z0-9+.-]*)://([^/?#\s]*)@([^/?#\s]*)(.*)$", re.IGNORECASE | re.DOTALL)
_ORIGIN = re.compile(r"^[a-z][a-z0-9+.-]*://[^/?#\s]*", re.IGNORECASE)  # scheme://host:port
STALL_BYTES, STALL_S = 1000, 30  # an HTTP transfer slower than this many bytes a second for this long fails
_FETCH = ("fetch", "--quiet", "origin", "+refs/heads/*:refs/heads/*", "refs/tags/*:refs/tags/*")
_HTTP = {"http", "https", "ftp", "ftps"}  # the schemes git sends a URL's user name and password over
# A credential helper (git runs it with sh): answers `get` with the credential its environment holds and
# ignores `store` and `erase`, so neither it nor a helper the user configured keeps the credential anywhere.
_HELPER = '!f() { cat >/dev/null; test "$1" = get && printf \'%s\' "$CFGTOOL_GIT_CREDENTIAL"; }; f'


def is_url(location: str) -> bool:
    return _URL.match(location) is not None


def redact(text: str) -> str:
    """`text` with the user information of every URL in it dropped (`https://user:token@host/x` ->
    `https://host/x`): a URL's credentials are never printed, logged, measured or answered."""
    return _USERINFO.sub(r"\1", text)


def split_credentials(url: str) -> tuple[str, str | None]:
    """(`url` as written to disk, the credential it held in git's credential-helper format, or None).

    An http(s) or ftp(s) URL loses its user information, which becomes the credential. Any other URL only
    loses a password, which git never uses there (an ssh user name is a login, not a secret).
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


def fetch_env(url: str, credential: str | None) -> dict[str, str]:
    """The environment of the git processes that clone or fetch `url` (without credentials).

    git never prompts (the server has no one to answer), and an HTTP transfer slower than `STALL_BYTES` a second
    for `STALL_S` seconds fails, so a remote that stops answering is a fetch failure `/healthz` reports, never a
    loader stuck for good. A `credential` is handed to git through `_HELPER` for the URL's scheme and host alone
    (a redirect elsewhere gets nothing), after emptying the list of helpers configured (which could store it).
    The entries come after any `GIT_CONFIG_COUNT` entries the server was started with.
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


def _cache_dir(cache: Path, url: str) -> Path:
    return cache / "serve" / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class StoreRef:
    """A store of the repository: its name in URLs and its directory relative to the root ('' = the root)."""

    name: str
    path: str


class Repository:
    """The repository the server reads: `root` (a work tree or a bare mirror) and, for a mirror, its URL
    (without credentials; they live in `_env`, in memory only)."""

    def __init__(self, location: str, remote: str | None, cache: Path) -> None:
        self.location = redact(location)  # for messages: without credentials
        self.url: str | None = None
        self._env: dict[str, str] = {}
        self._legacy: Path | None = None  # where an older cfgtool kept this mirror (its key had the credentials)
        given: str | None = None
        if is_url(location):
            given = location
        elif remote is not None:
            local = git.locate(Path(location).expanduser()).root
            proc = git.run_git(local, "remote", "get-url", "--", remote, check=False)
            if proc.returncode != 0:
                raise UsageError(f"--remote {remote}: no such remote in {local}", hint="`git remote -v` lists them")
            given = proc.stdout.decode().strip()
        if given is None:
            self.root = git.locate(Path(location).expanduser()).root
            return
        self.url, credential = split_credentials(given)
        self._env = fetch_env(self.url, credential)
        self.root = _cache_dir(cache, self.url)
        if given != self.url:
            self._legacy = _cache_dir(cache, given)

    @property
    def shown_url(self) -> str | None:
        """The remote's URL without its credentials."""
        return None if self.url is None else redact(self.url)

    def fetch(self) -> None:
        """Clone the mirror if it is missing, else fetch it (SourceError, its message without credentials,
        when the remote cannot be read)."""
        if self.url is None:
            return
        try:
            self._fetch(self.url)
        except CfgtoolError as exc:
            raise SourceError(redact(exc.message), hint=exc.hint and redact(exc.hint)) from None

    def _fetch(self, url: str) -> None:
        if self._legacy is not None:
            self._scrub(url, self._legacy)
            self._legacy = None
        if (self.root / "HEAD").exists():
            git.run_git(self.root, *_FETCH, env=self._env)
            self._point_head()
            return
        private_dir(self.root.parent)
        tmp = self.root.with_name(self.root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)  # a clone cut short last time
        git.run_git(self.root.parent, "clone", "--quiet", "--bare", "--", url, str(tmp), env=self._env)
        tmp.rename(self.root)
        self._point_head()

    def _scrub(self, url: str, legacy: Path) -> None:
        """An older cfgtool kept this mirror under a name derived from the URL with its credentials, and that
        URL in the mirror's config: the mirror moves to its new place with the URL rewritten (or, when the new
        place is taken, goes), and a clone it left cut short goes too."""
        shutil.rmtree(legacy.with_name(legacy.name + ".tmp"), ignore_errors=True)
        if not (legacy / "HEAD").exists():
            return
        if (self.root / "HEAD").exists():
            shutil.rmtree(legacy)
            return
        git.run_git(legacy, "config", "--", "remote.origin.url", url)
        legacy.rename(self.root)

    def head(self) -> str | None:
        return git.resolve_commit(self.root, "HEAD")

    def _point_head(self) -> None:
        """A mirror of a repository whose HEAD names no branch (a bare `git init` pushed to with `main`)
        points its HEAD at `main`, `master` or its only branch: the stores and tag prefixes are read there."""
        if self.head() is not None:
            return
        out = git.run_git(self.root, "for-each-ref", "--format=%(refname)", "refs/heads/").stdout.decode().split()
        for name in ("refs/heads/main", "refs/heads/master", *(out if len(out) == 1 else ())):
            if name in out:
                git.run_git(self.root, "symbolic-ref", "HEAD", name)
                return

    def stores(self, dirs: list[str]) -> list[StoreRef]:
        """The stores named by `dirs`, or every store at HEAD; names must be unique."""
        head = self.head()
        if head is None:
            raise SourceError(f"{self.location} has no commit at HEAD", hint="serve a repository with a branch")
        if dirs:
            paths = [_relative(d) for d in dirs]
        else:
            paths = store_dirs(git.ls_tree(self.root, head, ""))
            if not paths:
                raise SourceError(
                    f"{self.location} has no store at HEAD (no {SETTINGS_FILE} file)",
                    hint="pass --store DIR, or commit a store first (`cfgtool init`)",
                )
        found: dict[str, StoreRef] = {}
        for path in paths:
            name = self._name(head, path)
            if name in found:
                raise UsageError(
                    f"stores {found[name].path or '.'} and {path or '.'} are both named {name!r}",
                    hint="give each store its own `name:` in its _CONFIG_STORE, or serve one with --store DIR",
                )
            found[name] = StoreRef(name, path)
        return list(found.values())

    def _name(self, head: str, path: str) -> str:
        file = posixpath.join(path, SETTINGS_FILE) if path else SETTINGS_FILE
        data = git.read_file(self.root, head, file)
        if data is None:
            raise SourceError(f"no store at {path or '.'}/ at HEAD of {self.location}", hint="check --store DIR")
        settings, _ = parse_settings(data.decode("utf-8-sig", "replace"), file)
        return store_name(settings.name, path)


def _relative(directory: str) -> str:
    rel = posixpath.normpath(Path(directory).as_posix())
    if rel.startswith("../") or rel == ".." or rel.startswith("/"):
        raise UsageError(f"--store {directory}: not inside the repository", hint="give a path relative to its root")
    return "" if rel == "." else rel
