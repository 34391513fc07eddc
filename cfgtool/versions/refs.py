"""Writing version tags safely: create without overwriting, push without force, fetch without clobbering.

Every write here is create-only. A local tag is made with `git mktag` + `git update-ref --stdin` `create`
(fails when the name exists, so two local publishers cannot overwrite each other); it is pushed with
`git push --porcelain` and no force; tags are fetched with a non-forcing refspec, so a tag that differs between
here and the remote is reported, never replaced. The only deletion is of a LOCAL tag this process just created
and that never reached the remote (`drop_local_tag` checks its target first).
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cfgtool.errors import CfgtoolError, SourceError
from cfgtool.store import git
from cfgtool.versions.tags import TagScheme


class RemoteError(CfgtoolError):
    """The remote refused a tag, or a local tag conflicts with the remote's (exit 1)."""


class RemoteUnavailable(SourceError):
    """The remote cannot be read: unknown name, unreachable, no access (exit 2)."""


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


def create_tag(root: Path, name: str, commit: str, message: str, tagger: Identity) -> str:
    """Create the annotated tag `name` on `commit` (only if no tag of that name exists); its object id.

    Returns "" when the name is already taken locally (another local publisher was faster).
    """
    now = time.time()
    offset = time.localtime(now).tm_gmtoff // 60
    sign = "+" if offset >= 0 else "-"
    zone = f"{sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
    person = f"{_clean(tagger.name)} <{_clean(tagger.email).strip('<>')}>"
    text = f"object {commit}\ntype commit\ntag {name}\ntagger {person} {int(now)} {zone}\n\n{message}"
    oid = git.run_git(root, "mktag", input=text.encode("utf-8")).stdout.decode().strip()
    proc = git.run_git(root, "update-ref", "--stdin", input=f"create refs/tags/{name} {oid}\n".encode(), check=False)
    if proc.returncode != 0:
        if git.resolve_commit(root, f"refs/tags/{name}") is not None:
            return ""
        raise git.GitError(f"could not create tag {name}: {proc.stderr.decode(errors='replace').strip()}")
    return oid


def drop_local_tag(root: Path, name: str, oid: str) -> None:
    """Delete the local tag `name` only while it still is the tag object `oid` this process created."""
    git.run_git(root, "update-ref", "--stdin", input=f"delete refs/tags/{name} {oid}\n".encode(), check=False)


def fetch_tags(root: Path, remote: str, scheme: TagScheme) -> None:
    """Fetch every version tag and rollback marker from `remote`, never overwriting a local tag."""
    specs = [f"{p}:{p}" for p in scheme.patterns()]
    proc = git.run_git(root, "fetch", "--no-tags", "--no-write-fetch-head", remote, *specs, check=False)
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


def push_tags(root: Path, remote: str, names: Sequence[str]) -> PushOutcome:
    """Push tags without force, atomically when there are several; read each ref's status line."""
    refs = [f"refs/tags/{n}:refs/tags/{n}" for n in names]
    atomic = ["--atomic"] if len(refs) > 1 else []
    proc = git.run_git(root, "push", "--porcelain", "--no-verify", *atomic, remote, *refs, check=False)
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
    proc = git.run_git(root, "ls-remote", "--tags", remote, *(f"refs/tags/{n}" for n in names), check=False)
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
