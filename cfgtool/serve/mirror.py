"""Where the server reads tags: a local repository, or a bare mirror of a URL kept in the cache.

With a URL (or `--remote NAME`, whose URL is used), the server never touches the user's repository. It clones a bare
mirror into the cache once. It fetches branches and tags into it every `--fetch-interval`. Tags are fetched without
force, so a tag moved upstream is a fetch failure, never a silent change of a published version. With a local path,
nothing is fetched: the tags are re-read as often.

A URL's credentials (`https://user:token@host/...`) never reach the disk. The mirror's git config holds the URL
without them. Each clone or fetch hands them to git through a credential helper named in the git process's
environment. The helper answers for that URL's host only and stores nothing. A mirror written by an older cfgtool
with the credentials in its config is rewritten on start. git never prompts, and a clone or fetch that stalls over
any transport fails (`cfgtool.store.urls.stall_bound`).

Stores are found at HEAD, or named by `--store DIR`. At HEAD, a store is every directory holding a `_CONFIG_STORE`,
none inside a Python package. A package's templates are no stores of the repository. Each store is addressed by the
`name` in its `_CONFIG_STORE`, else by its directory name.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from cfgtool._util.cachedir import private_dir
from cfgtool.errors import CfgtoolError, SourceError, UsageError
from cfgtool.store import git
from cfgtool.store.settings import SETTINGS_FILE, parse_settings
from cfgtool.store.stores import store_dirs, store_name
from cfgtool.store.urls import FETCH, fetch_env, redact, split_credentials

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://|^[^/\s]+@[^/\s]+:")  # https://..., ssh://..., file://, git@host:path


def is_url(location: str) -> bool:
    return _URL.match(location) is not None


def _cache_dir(cache: Path, url: str) -> Path:
    return cache / "serve" / hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class StoreRef:
    """A store of the repository: its name in URLs and its directory relative to the root ('' = the root)."""

    name: str
    path: str


class Repository:
    """The repository the server reads: `root` (a work tree or a bare mirror) and, for a mirror, its URL. The URL
    holds no credentials; they live in `_env`, in memory only."""

    def __init__(self, location: str, remote: str | None, cache: Path) -> None:
        self.location = redact(location)  # for messages: without credentials
        self.url: str | None = None
        self._env: dict[str, str] = {}
        self._legacy: Path | None = None  # where an older cfgtool kept this mirror (its key had the credentials)
        self._closed = threading.Event()
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
        """Clone the mirror if it is missing, else fetch it. SourceError when the remote cannot be read; its message
        holds no credentials."""
        if self.url is None:
            return
        try:
            self._fetch(self.url)
        except CfgtoolError as exc:
            raise SourceError(redact(exc.message), hint=exc.hint and redact(exc.hint)) from None

    def close(self) -> None:
        """Stop a clone or fetch under way at once, and any later one. The server is stopping: it must not wait up to
        the stall bound for a remote that stopped answering."""
        self._closed.set()

    def _fetch(self, url: str) -> None:
        if self._legacy is not None:
            self._scrub(url, self._legacy)
            self._legacy = None
        if (self.root / "HEAD").exists():
            git.transfer(self.root, *FETCH, url=url, env=self._env, cancel=self._closed)
            self._point_head()
            return
        private_dir(self.root.parent)
        tmp = self.root.with_name(self.root.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)  # a clone cut short last time
        clone = ("clone", "--quiet", "--bare", "--", url, str(tmp))
        git.transfer(self.root.parent, *clone, url=url, env=self._env, cancel=self._closed)
        tmp.rename(self.root)
        self._point_head()

    def _scrub(self, url: str, legacy: Path) -> None:
        """An older cfgtool kept this mirror under a name derived from the URL with its credentials. It also kept
        that URL in the mirror's config. The mirror moves to its new place with the URL rewritten. When the new place
        is taken, it goes. A clone it left cut short goes too."""
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
        """A mirror of a repository whose HEAD names no branch (a bare `git init` pushed to with `main`). It points
        its HEAD at `main`, `master` or its only branch. The stores and tag prefixes are read there."""
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
