"""Writing version tags safely: create without overwriting, push without force, fetch without clobbering.

Every write here is create-only and ordered so that a kill at any instant leaves the versions intact
(docs/security.md). A tag object is made with `git mktag` (no ref yet). With a remote, it is pushed by object id
(`<oid>:refs/tags/<name>`, `git push --porcelain`, no force). The local tag is written only once the remote has it.
So a local tag never exists that the remote lacks. The local write is `git update-ref --stdin` `create`. It fails
when the name exists, so two local publishers cannot overwrite each other. Tags are fetched with a non-forcing
refspec, so a tag that differs between here and the remote is reported, never replaced. Nothing here deletes a tag;
`clear_stale_locks` removes the lock files a killed git left behind.
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cfgtool.errors import CfgtoolError, SourceError, UsageError
from cfgtool.store import git
from cfgtool.store.urls import fetch_env, stall_bound
from cfgtool.versions.names import version_number
from cfgtool.versions.tags import StoreTags, TagScheme


class RemoteError(CfgtoolError):
    """The remote refused a tag, or a local tag conflicts with the remote's (exit 1)."""


class RemoteUnavailable(SourceError):
    """The remote cannot be read: unknown name, unreachable, no access (exit 2)."""


class RemoteStalled(RemoteUnavailable):
    """The remote stopped answering, and git was stopped (exit 2); a push stopped so may have landed."""


@dataclass(frozen=True)
class Identity:
    """Who runs the command: for the tagger line and the `publisher` / `by` metadata."""

    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


@dataclass(frozen=True)
class PushOutcome:
    """Per ref: `ok` (created or already identical), else the status git printed and the remote's messages."""

    ok: bool
    rejected: Mapping[str, str]  # ref -> reason, e.g. "[rejected] (already exists)"
    remote_said: str  # the `remote:` lines of stderr (a hook's message), joined
    stalled: RemoteStalled | None = None  # the push was stopped: whether it landed, only the remote can say


def identity(root: Path) -> Identity:
    """git's user.name and user.email, else GIT_COMMITTER_NAME/EMAIL, else $USER at this host."""
    name = email = ""
    out = git.run_git(root, "config", "--get-regexp", r"^user\.(name|email)$", check=False).stdout.decode()
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key == "user.name":
            name = value.strip()
        elif key == "user.email":
            email = value.strip()
    user = os.environ.get("USER") or os.environ.get("USERNAME") or "unknown"
    name = name or os.environ.get("GIT_COMMITTER_NAME", "") or user
    email = email or os.environ.get("GIT_COMMITTER_EMAIL", "") or f"{user}@{socket.gethostname() or 'localhost'}"
    return Identity(name, email)


def make_tag(root: Path, name: str, commit: str, message: str, tagger: Identity) -> str:
    """Write the annotated tag object `name` on `commit` (no ref points at it yet); its object id."""
    now = time.time()
    offset = time.localtime(now).tm_gmtoff // 60
    sign = "+" if offset >= 0 else "-"
    zone = f"{sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    person = f"{_clean(tagger.name)} <{_clean(tagger.email).strip('<>')}>"
    text = f"object {commit}\ntype commit\ntag {name}\ntagger {person} {int(now)} {zone}\n\n{message}"
    return git.run_git(root, "mktag", input=text.encode("utf-8")).stdout.decode().strip()


def write_tags(root: Path, tags: Mapping[str, str]) -> bool:
    """Point each local `refs/tags/<name>` at its tag object, all or none, never moving an existing tag.

    True when every tag now points where asked: created, or already there because a fetch brought it. False when a
    name is held by another object; nothing is written then.
    """
    existing = local_tags(root, list(tags))
    todo = {name: oid for name, oid in tags.items() if existing.get(name) != oid}
    if any(name in existing for name in todo):
        return False
    if not todo:
        return True
    script = "".join(f"create refs/tags/{name} {oid}\n" for name, oid in todo.items())
    proc = git.run_git(root, "update-ref", "--stdin", input=script.encode(), check=False)
    if proc.returncode == 0:
        return True
    if local_tags(root, list(todo)):
        return False  # another process in this repository was faster
    raise git.GitError(f"could not create {', '.join(todo)}: {proc.stderr.decode(errors='replace').strip()}")


def create_tag(root: Path, name: str, commit: str, message: str, tagger: Identity) -> str:
    """Create the local annotated tag `name` on `commit` (only if no tag of that name exists); its object id.

    Returns "" when the name is already taken locally (another local publisher was faster).
    """
    oid = make_tag(root, name, commit, message, tagger)
    return oid if write_tags(root, {name: oid}) else ""


def local_tags(root: Path, names: Sequence[str]) -> dict[str, str]:
    """`{name: object id}` of those of `names` that exist as local tags."""
    refs = [f"refs/tags/{name}" for name in names]
    out = git.run_git(root, "for-each-ref", "--format=%(objectname) %(refname)", "--end-of-options", *refs).stdout
    found = {}
    for line in out.decode().splitlines():
        oid, _, ref = line.partition(" ")
        found[ref.removeprefix("refs/tags/")] = oid
    return {name: found[name] for name in names if name in found}


def local_only(root: Path, remote: str, scheme: TagScheme) -> list[str]:
    """The version tags and rollback and restored markers of `scheme` in this repository that `remote` lacks. Run it
    after a fetch. Another store's `config/<name>/vN` is not counted, though the plain pattern also matches it."""
    out = git.run_git(root, "for-each-ref", "--format=%(refname)", *scheme.patterns()).stdout.decode()
    prefixes = scheme.prefixes
    local = [
        name
        for name in (ref.removeprefix("refs/tags/") for ref in out.split())
        # a version number (docs/versions.md), so not config/<other>/vN nor a hand-made tag that is no version
        if any(name.startswith(p) and version_number(name[len(p) :]) is not None for p in prefixes)
    ]
    if not local:
        return []
    theirs = remote_tags(root, remote, [p.removeprefix("refs/tags/") for p in scheme.patterns()])
    return sorted(set(local) - set(theirs))


def require_pushed(root: Path, remote: str, scheme: TagScheme) -> None:
    """RemoteError, saying exactly what to run, when this repository has version tags or rollback markers that
    `remote` lacks. Such a version was published here without `--remote`. Publishing past it would leave a gap in the
    remote's versions, rolling back would skip it."""
    missing = local_only(root, remote, scheme)
    if not missing:
        return
    names = ", ".join(missing)
    refs = " ".join(f"refs/tags/{name}" for name in missing)
    raise RemoteError(
        f"{names} exist{'s' if len(missing) == 1 else ''} only in this repository, not on {remote!r} (published"
        " or rolled back here without --remote): nothing was done",
        hint=f"publish them as they are (git push {remote} {refs}), or drop them if they must not be published"
        f" (git tag -d {' '.join(missing)}); then run the command again",
    )


def clear_stale_locks(root: Path, scheme: TagScheme | StoreTags, older_than: float = 10.0) -> list[str]:
    """Remove the ref locks a killed git left under the version tags. git holds one for milliseconds. A leftover
    `config/vN.lock` makes every later write of that tag fail. Returns what was removed."""
    gitdir = git.git_dir(root)
    now = time.time()
    candidates = [gitdir / "packed-refs.lock"]
    for pattern in scheme.patterns():
        folder = gitdir / pattern.rsplit("/", 1)[0]
        if folder.is_dir():
            candidates += folder.glob("*.lock")
    removed = []
    for lock in candidates:
        try:
            if lock.is_file() and not lock.is_symlink() and now - lock.stat().st_mtime > older_than:
                lock.unlink()
                removed.append(str(lock.relative_to(gitdir)))
        except OSError:
            continue
    return removed


# The URLs a remote may be given as (git's own transports; `ext::` and other helpers are refused), and the
# scp-like `user@host:path` form.
_URL = re.compile(r"(?:https?|ssh|git|file)://[^\s]+|[\w.+-]+@[\w.-]+:[^\s]*")


def checked_remote(root: Path, remote: str) -> str:
    """`remote` when it is a URL, an absolute path, or the name of a remote configured in the repository. UsageError
    otherwise.

    User text reaches git only as data (docs/security.md): `--remote '--upload-pack=...'` or `ext::sh ...` must never
    become an option or a command.
    """
    if not remote.startswith("-"):
        names = git.run_git(root, "remote").stdout.decode(errors="replace").split()
        if remote in names or _URL.fullmatch(remote) or Path(remote).is_absolute():
            return remote
    raise UsageError(
        f"--remote {remote!r} is neither a remote of this repository nor a URL",
        hint="name a configured remote (git remote -v lists them), or give an https://, ssh://, git:// or file://"
        " URL, or an absolute path",
    )


def _remote_url(root: Path, remote: str, push: bool) -> str:
    """The URL git fetches `remote` from (its first), or pushes to. Of several push URLs, git pushes to each; this is
    the first whose transfers `stall_bound` watches. It is `remote` itself unless that names a configured remote."""
    if remote not in git.run_git(root, "remote").stdout.decode(errors="replace").split():
        return remote
    args = ["remote", "get-url", *(["--all", "--push"] if push else []), "--", remote]
    urls = git.run_git(root, *args).stdout.decode(errors="surrogateescape").splitlines()
    return next((u for u in urls if stall_bound(u) is not None), urls[0] if urls else remote)


def _with_remote(root: Path, remote: str, *args: str) -> git.Completed:
    """Run `git args...` (fetch, push or ls-remote of `remote`) in `root`. At a terminal, as any git command:
    git may ask there for a password or an ssh passphrase. Without one (a CI job), it runs through `git.transfer`. So
    a remote that stops answering fails the command within the stall bound (RemoteStalled). It does not hold the job
    until its own timeout. A push stopped so may have landed: `push_tags` returns it as an outcome, and its caller
    asks the remote."""
    if git.has_terminal():
        return git.run_git(root, *args, check=False)
    url = _remote_url(root, remote, push=args[0] == "push")
    try:
        return git.transfer(root, *args, url=url, env=fetch_env(url, None), check=False, own_session=False)
    except git.StalledError as err:
        raise RemoteStalled(
            err.message if url == remote else f"{err.message} (remote {remote!r})",
            hint="check that the remote is up and reachable, then run the command again: a version or a rollback"
            " the remote already has is not made twice",
        ) from err


def fetch_tags(root: Path, remote: str, scheme: TagScheme | StoreTags) -> None:
    """Fetch every version tag and rollback marker from `remote`, never overwriting a local tag. With `StoreTags`, it
    fetches each spelling the store's tags may have. So which one applies is decided on the remote's tags. No
    automatic maintenance after it: a detached gc would outlive a cancelled job, in the user's repository."""
    specs = [f"{p}:{p}" for p in scheme.fetch_patterns()]
    proc = _with_remote(
        root, remote, "fetch", "--no-tags", "--no-write-fetch-head", "--no-auto-gc", "--end-of-options", remote, *specs
    )
    if proc.returncode == 0:
        return
    stderr = proc.stderr.decode(errors="replace")
    clobbered = re.findall(r"\[rejected\]\s+(\S+)\s+->\s+\S+\s+\(would clobber existing tag\)", stderr)
    if clobbered:
        names = ", ".join(clobbered)
        raise RemoteError(
            f"the local tag {names} differs from the one on {remote!r}: it was made here and never published",
            hint=f"delete the local copy (git tag -d {clobbered[0]}) and run the command again",
        )
    raise RemoteUnavailable(
        f"could not fetch version tags from {remote!r}: {_last_lines(stderr)}",
        hint="check the remote's name (git remote -v) and that you can reach it",
    )


def push_tags(root: Path, remote: str, tags: Mapping[str, str]) -> PushOutcome:
    """Push tag objects (`{name: object id}`, no local ref needed) without force, atomically when there are several.
    Read each ref's status line. A push stopped for the remote's silence is an outcome too (`stalled`). It may have
    landed; the caller asks the remote."""
    names = list(tags)
    refs = [f"{oid}:refs/tags/{name}" for name, oid in tags.items()]
    atomic = ["--atomic"] if len(refs) > 1 else []
    try:
        proc = _with_remote(
            root, remote, "push", "--porcelain", "--no-verify", *atomic, "--end-of-options", remote, *refs
        )
    except RemoteStalled as err:
        return PushOutcome(ok=False, rejected=dict.fromkeys(names, "stalled"), remote_said="", stalled=err)
    rejected: dict[str, str] = {}
    seen: set[str] = set()
    for line in proc.stdout.decode(errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or len(parts[0]) != 1:
            continue
        ref = parts[1].partition(":")[2].removeprefix("refs/tags/")
        seen.add(ref)
        if parts[0] not in "*= ":
            rejected[ref] = parts[2]
    stderr = proc.stderr.decode(errors="replace")
    said = "; ".join(
        line.removeprefix("remote:").strip() for line in stderr.splitlines() if line.startswith("remote:")
    ).strip("; ")
    for name in names:
        if name not in seen and proc.returncode != 0:
            rejected.setdefault(name, _last_lines(stderr) or "push failed")
    return PushOutcome(ok=proc.returncode == 0 and not rejected, rejected=rejected, remote_said=said)


def remote_tags(root: Path, remote: str, names: Sequence[str]) -> dict[str, str]:
    """`{name: object id}` of those of `names` that exist on `remote` (one `git ls-remote`)."""
    patterns = (f"refs/tags/{n}" for n in names)
    proc = _with_remote(root, remote, "ls-remote", "--tags", "--end-of-options", remote, *patterns)
    if proc.returncode != 0:
        stderr = proc.stderr.decode(errors="replace")
        raise RemoteUnavailable(f"could not list tags on {remote!r}: {_last_lines(stderr)}")
    found: dict[str, str] = {}
    for line in proc.stdout.decode().splitlines():
        oid, _, ref = line.partition("\t")
        if not ref.endswith("^{}"):
            found[ref.removeprefix("refs/tags/")] = oid
    return found


def _clean(text: str) -> str:
    """A name or email fit for a tagger line (no angle brackets or newlines)."""
    return re.sub(r"[<>\n]", "", text).strip() or "unknown"


def _last_lines(text: str, n: int = 3) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip() and not line.startswith("hint:")]
    return " / ".join(lines[-n:])
