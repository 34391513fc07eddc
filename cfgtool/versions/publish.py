"""`publish`: compile and validate a ref and release it as the next numbered version tag (docs/versions.md,
docs/security.md).

compile + validate REF (refuse on errors) -> fetch the remote's version tags -> nothing to do when the snapshot
digest equals the current version's -> N = 1 + the highest version known -> write the tag object -> push it by object
id without force -> write the local tag. The fetch refuses when this repository has version tags the remote lacks:
pushing past them would leave a gap. The local tag is written only after the remote accepted the push. So a kill at
any instant leaves either nothing, or a version on the remote that the next fetch brings here. The remote may reject
the push because it already has that name: a concurrent publisher took N. Publish then fetches, recomputes and tries
again (bounded, with jitter). Any other rejection is a `RemoteError` naming what the remote said.
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cfgtool._version import __version__
from cfgtool.access.enforce import require
from cfgtool.compile.compiler import CompileResult, compile_store
from cfgtool.diagnostics import TEXT_CAUSES, Diagnostic, bounded, plural
from cfgtool.errors import CfgtoolError
from cfgtool.snapshot.model import Snapshot
from cfgtool.store import git
from cfgtool.store.rollout_plan import RolloutPlan
from cfgtool.store.urls import redact
from cfgtool.versions.diff import ABSENT
from cfgtool.versions.messages import check_text, format_message
from cfgtool.versions.names import VERSION_NAMES
from cfgtool.versions.refs import (
    RemoteError,
    checked_remote,
    clear_stale_locks,
    fetch_tags,
    identity,
    make_tag,
    push_tags,
    remote_tags,
    require_pushed,
    write_tags,
)
from cfgtool.versions.rollout import selection
from cfgtool.versions.sticky import Watch, published_after, relapses, watches
from cfgtool.versions.tags import History, StoreTags, TagScheme, history, read_history

MAX_ATTEMPTS = 20  # 12 concurrent publishers need at most 12; jitter spreads the retries
METADATA_SCHEMA = 1


class PublishRefused(CfgtoolError):
    """The ref does not compile or validate cleanly: nothing was published (exit 1). `result` holds the report."""

    def __init__(self, message: str, result: CompileResult, *, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.result = result

    @property
    def diagnostics(self) -> tuple[Diagnostic, ...]:
        return self.result.diagnostics

    def to_json(self) -> dict[str, Any]:
        """docs/versions.md's `publish` object of a refusal, with every problem found."""
        result = self.result
        return {
            "published": False,
            "version": None,
            "tag": None,
            "commit": result.snapshot.source.commit,
            "reason": self.message,
            "errors": result.errors,
            "warnings": result.warnings,
            "diagnostics": [d.to_json() for d in result.diagnostics],
        }


class RolledBackContent(CfgtoolError):
    """The ref still holds values a rolled-back version introduced, or is that version's snapshot. Publishing it
    would silently undo the rollback (exit 1). `--allow-rolled-back` publishes it on purpose. `relapses` lists the
    values (`cfgtool.versions.sticky`); the message names the first `TEXT_CAUSES` of them, `listing` every one."""

    def __init__(self, message: str, *, hint: str | None = None, relapses: Sequence[Watch] = (),
                 listing: str | None = None) -> None:  # fmt: skip
        super().__init__(message, hint=hint)
        self.relapses = tuple(relapses)
        self.listing = message if listing is None else listing

    def to_json(self) -> dict[str, Any]:
        """docs/versions.md's `publish` object of this refusal, with every rolled-back value the ref holds."""
        return {"published": False, "version": None, "tag": None, "reason": self.message,
                "rolled_back_values": [w.to_json() for w in self.relapses]}  # fmt: skip


class StoreDirty(CfgtoolError):
    """Publishing HEAD while the working tree's store has uncommitted changes, which would not be in the version
    (exit 1). Commit them, or name the ref with --ref."""


class PublishRaceLost(CfgtoolError):
    """Other publishers kept taking the next version number; nothing was published (exit 1)."""


@dataclass(frozen=True)
class PublishResult:
    """What publish did. `published` is False for a dry run and when nothing changed (`reason` says which)."""

    published: bool
    version: int | None  # the version created (or, in a dry run, the one that would be)
    tag: str | None
    commit: str
    reason: str | None
    ref: str
    store: str
    digest: str
    nodes: int
    publisher: str
    remote: str | None = None
    principal: str | None = None  # who releases (--principal), next to the git identity `publisher`
    allowed: tuple[int, ...] = ()  # rolled-back versions whose values --allow-rolled-back re-released
    dry_run: bool = False
    same_as: int | None = None  # nothing published: the current version that has the same digest
    attempts: int = 0  # tags created before one stuck (more than 1: concurrent publishers were met)
    rollout: Mapping[str, Any] | None = None  # the tag's `rollout` record: {plan, salt} or {skipped}; None: no plan
    waits_for: int | None = None  # published while this version rolls out: it starts once that one ends
    at_once: bool = False  # published with a plan, yet out to everyone at once: no earlier version to fall back to
    diagnostics: tuple[Diagnostic, ...] = field(default=(), repr=False)  # warnings

    def to_json(self) -> dict[str, Any]:
        """docs/versions.md's `publish` object plus the details (digest, store, dry_run, ...)."""
        return {
            "published": self.published,
            "version": self.version,
            "tag": self.tag,
            "commit": self.commit,
            "reason": self.reason,
            "ref": self.ref,
            "store": self.store,
            "digest": self.digest,
            "nodes": self.nodes,
            "publisher": self.publisher,
            "principal": self.principal,
            "allow_rolled_back": list(self.allowed),
            "remote": self.remote,
            "dry_run": self.dry_run,
            "same_as": self.same_as,
            "attempts": self.attempts,
            "rollout": None if self.rollout is None else dict(self.rollout),
            "waits_for": self.waits_for,
            "at_once": self.at_once,
            "warnings": sum(1 for d in self.diagnostics if d.severity == "warning"),
        }


def publish(
    repo: Path | None = None,
    store: str | Path = "store",
    ref: str | None = None,
    remote: str | None = None,
    message: str | None = None,
    dry_run: bool = False,
    publisher: str | None = None,
    principal: str | None = None,
    allow_rolled_back: bool = False,
    all_at_once: bool = False,
) -> PublishResult:
    """Publish the store at `ref` as the next version; see the module docstring.

    `ref` None is HEAD, refused (StoreDirty) while the working tree's store has uncommitted changes: they
    would not be in the version. `publisher` is recorded in the tag (default: the git identity). `principal` is who
    releases (default: the publisher), e.g. the same login a pull-request check passed. It is recorded in the tag
    next to it, checked against the ACL, and seen by the policies. When the ref's own `_CONFIG_STORE` has a rollout
    plan, the tag records it with a fresh salt, unless `all_at_once` or the ref is a good version's commit (a restore):
    then it records why the plan is skipped (docs/versions.md#staged-rollout).

    Raises PublishRefused when the ref has compile or validation errors. Raises RolledBackContent when it still holds
    a value a rolled-back version introduced (unless `allow_rolled_back`). Raises RemoteError when the remote refuses
    for another reason than a concurrent publisher. Raises PublishRaceLost after MAX_ATTEMPTS lost races.
    """
    root = git.locate(repo if repo is not None else Path.cwd()).root
    check_text(message, "message")
    if ref in VERSION_NAMES:  # restoring `previous` (or re-checking `current`) publishes that version's tag
        ref = history(root, store).named(ref).tag
    if ref is None or ref == "HEAD":
        _require_first_commit(root, store)
    if ref is None:
        ref = "HEAD"
        _require_clean(root, store)
    if remote is not None:
        remote = checked_remote(root, remote)
    tagger = identity(root)
    who = publisher or str(tagger)
    acl_principal = principal  # only an explicit principal is checked against the ACL: CI passes the pusher
    result = compile_store(root, store, ref, None, check_variables=True, validate=True, principal=principal or who)
    snap = result.snapshot
    commit = snap.source.commit or ""
    if not result.ok():
        raise PublishRefused(
            f"{ref} (commit {commit[:7]}) has {plural(result.errors, 'error')}: nothing was published",
            result,
            hint=f"fix them (cfgtool compile --ref {ref} shows them again), commit, and publish again",
        )
    scheme = StoreTags.of(result.store.settings, snap.store)
    base = PublishResult(
        published=False,
        version=None,
        tag=None,
        commit=commit,
        reason=None,
        ref=ref,
        store=snap.store,
        digest=snap.digest,
        nodes=len(snap.nodes),
        publisher=who,
        principal=principal,
        remote=redact(remote) if remote is not None else None,  # shown: no URL's credentials
        dry_run=dry_run,
        diagnostics=tuple(d for d in result.diagnostics if d.severity == "warning"),
    )
    meta: dict[str, Any] = {
        "kind": "version",
        "schema": METADATA_SCHEMA,
        "commit": commit,
        "ref": ref,
        "store": snap.store,
        "name": snap.name,
        "digest": snap.digest,
        "nodes": len(snap.nodes),
        "variables": dict(sorted(snap.variables.items())),
        "cfgtool_version": __version__,
        "publisher": who,
        "principal": principal,
        "message": message,
    }
    clear_stale_locks(root, scheme)
    for attempt in range(1, MAX_ATTEMPTS + 1):
        if remote is not None:
            fetch_tags(root, remote, scheme)
        known = read_history(root, scheme)
        if remote is not None and attempt == 1:
            require_pushed(root, remote, known.scheme)
        if attempt == 1 and acl_principal is not None:  # the current version's ACL decides (docs/access.md#the-acl)
            current = known.current
            require(root, store, current.commit if current is not None else commit, acl_principal, "publish")
        unchanged = _unchanged(root, known, base)
        if unchanged is not None:
            return unchanged
        held = _rolled_back_values(root, store, known, base, snap)
        if held and not allow_rolled_back:
            _refuse_rolled_back(base, held, known)
        allowed = tuple(sorted({w.version for w in held}))
        n = known.highest + 1
        name = known.scheme.version_tag(n)
        rollout = rollout_record(result.store.settings.rollout, known, commit, all_at_once=all_at_once)
        if dry_run:
            return _dry_run(base, known, name, commit, remote, version=n, allowed=allowed, rollout=rollout)
        text = message or f"config version {n}: {snap.store or '.'}/ at {commit[:12]}"
        extra: dict[str, Any] = {"allow_rolled_back": list(allowed)} if allowed else {}
        extra |= {"rollout": rollout} if rollout is not None else {}
        oid = make_tag(root, name, commit, format_message(text, {**meta, **extra, "version": n}), tagger)
        if (remote is None or _pushed(root, remote, name, oid)) and _written(root, name, oid, remote):
            waits, at_once = (
                _start(root, known.scheme, n) if rollout is not None and "plan" in rollout else (None, False)
            )
            done = {"published": True, "version": n, "tag": name, "attempts": attempt, "rollout": rollout}
            return _with(base, allowed=allowed, waits_for=waits, at_once=at_once, **done)
        _back_off(attempt)  # another publisher took N (here or on the remote): recompute
    raise PublishRaceLost(
        f"gave up after {MAX_ATTEMPTS} attempts: other publishers kept taking the next version number",
        hint="run publish again; it publishes nothing if one of them published the same snapshot",
    )


def rollout_record(
    plan: RolloutPlan | None, known: History, commit: str, *, all_at_once: bool = False
) -> dict[str, Any] | None:
    """The `rollout` record of a new version's tag metadata: `{"plan", "salt"}` when the version goes out by its
    plan, `{"skipped": "restore" | "all-at-once"}` when it has one but skips it, None when it has none. A restore
    (the commit of a good version published again) always skips it: going back is never slowed down."""
    if plan is None:
        return None
    if any(tag.commit == commit and not known.is_rolled_back(n) for n, tag in known.tags.items()):
        return {"skipped": "restore"}
    if all_at_once:
        return {"skipped": "all-at-once"}
    return {"plan": plan.to_json(), "salt": secrets.token_hex(8)}


def _dry_run(
    base: PublishResult, known: History, name: str, commit: str, remote: str | None, **done: Any
) -> PublishResult:
    """What a dry run says it would publish. With a plan and no good version before it (a store's first), the
    version would go to everyone at once, as `_start` then finds: nothing to fall back to."""
    where = f" and push it to {redact(remote)}" if remote else ""
    reason = f"dry run: would create {name} on commit {commit[:7]}{where}; every check passed"
    rollout = done.get("rollout")
    at_once = rollout is not None and "plan" in rollout and known.current is None
    return _with(base, tag=name, reason=reason, attempts=0, at_once=at_once, **done)


def _start(root: Path, scheme: TagScheme, n: int) -> tuple[int | None, bool]:
    """How version N, just published with a plan, starts: the version rolling out that it waits for (None: N starts
    now), and whether it went to everyone at once instead (no good version before it to fall back to)."""
    chosen = selection(read_history(root, scheme))
    rollout = chosen.rollouts.get(n)
    if rollout is None:
        return None, chosen.stable == n
    if rollout.state != "waiting" or chosen.candidate is None:
        return None, False
    return chosen.candidate.version, False


def _unchanged(root: Path, known: History, base: PublishResult) -> PublishResult | None:
    """A 'nothing to publish' result when the current version has the same snapshot digest."""
    current = known.current
    if current is None or current.digest != base.digest:
        return None
    head = f"nothing to publish: {base.ref} (commit {base.commit[:7]})"
    if current.commit == base.commit:
        reason = f"{head} already is the current version {current.version} ({current.tag})"
    else:
        reason = (
            f"{head} has the same snapshot (digest {base.digest[:19]}...) as the current version"
            f" {current.version} ({current.tag}, commit {current.commit[:7]})"
        )
    return _with(base, reason=reason, same_as=current.version)


def _require_first_commit(root: Path, store: str | Path) -> None:
    """UnknownRefError (exit 2) saying what to do when HEAD names no commit yet. A new repository has nothing a
    version could be made of until the store is committed."""
    if git.resolve_commit(root, "HEAD") is not None:
        return
    from cfgtool.versions.tags import store_path

    path = store_path(root, store) or "."
    raise git.UnknownRefError(
        f"the repository {root} has no commit yet, and a version is made of a commit's store: nothing to publish",
        hint=f"commit the store first (git add {path} && git commit -m 'first config'), then run cfgtool publish again",
    )


def _require_clean(root: Path, store: str | Path) -> None:
    """StoreDirty when the working tree's store differs from HEAD: publishing HEAD would leave it out."""
    from cfgtool.versions.tags import store_path

    path = store_path(root, store)
    if git.is_dirty(root, path or "."):
        shown = f"{path}/" if path else "the store (the repository root)"
        raise StoreDirty(
            f"{shown} has uncommitted changes; commit them or publish --ref: a version is made of committed"
            " state only, so publishing HEAD now would leave them out",
            hint=f"git status -- {path or '.'} shows them; `cfgtool publish --ref HEAD` publishes the last commit"
            " without them",
        )


def _rolled_back_values(
    root: Path, store: str | Path, known: History, base: PublishResult, snap: Snapshot
) -> list[Watch]:
    """The values a rolled-back version introduced that the candidate still holds. When there are none, one case
    remains: a rolled-back version with the candidate's very snapshot, and no good version published since its
    rollback. That is a change to the rules only, one relapse without a path."""
    if not known.markers:
        return []
    held = relapses(watches(root, store, known), snap)
    if held:
        return held
    for v in known.listing(all=True):
        rb = v.rolled_back
        if rb is not None and v.digest == base.digest and not published_after(known, v.version):
            return [Watch("", "", ABSENT, ABSENT, v.version, rb.reason, rb.by)]
    return []


def _refuse_rolled_back(base: PublishResult, held: Sequence[Watch], known: History) -> None:
    """RolledBackContent listing every rolled-back value the ref still holds. This is the rollback trap: a merge of
    main that still holds the bad change would re-release it as the next version."""
    versions = sorted({w.version for w in held})
    named = ("version " if len(versions) == 1 else "versions ") + ", ".join(
        f"{n} ({known.tag(n).name})" for n in versions
    )
    values = [w for w in held if w.key]
    listing = None
    if values:
        what = f"{base.ref} (commit {base.commit[:7]}) still holds {plural(len(values), 'value')} that rolled-back"
        head = f"{what} {named} introduced:"
        message = "\n".join([head, *relapse_lines(values, TEXT_CAUSES), "Nothing was published"])
        listing = "\n".join([head, *relapse_lines(values, None), "Nothing was published"])
    else:
        w = held[0]
        message = (
            f"{base.ref} (commit {base.commit[:7]}) has the same snapshot as {named}, which {w.by} rolled"
            f" back: {w.reason}. Nothing was published"
        )
    raise RolledBackContent(
        message,
        hint="revert the bad change on the branch (git revert) and publish that; to publish these values on"
        " purpose, publish again with --allow-rolled-back",
        relapses=values,
        listing=listing,
    )


def relapse_lines(values: Sequence[Watch], limit: int | None) -> list[str]:
    """The values grouped by cause, each value on a line of its own. A cause (the rolled-back version, who rolled it
    back and why) is said once. The first `limit` values show, then how many more (None: every one)."""
    by_cause: dict[tuple[int, str, str], list[Watch]] = {}
    for w in values:
        by_cause.setdefault((w.version, w.by, w.reason), []).append(w)
    lines: list[str] = []
    left = len(values) if limit is None else limit
    for (version, by, reason), watched in sorted(by_cause.items(), key=lambda item: item[0][0]):
        if left <= 0:
            break
        lines.append(f"  introduced by version {version}, rolled back by {by}: {reason}")
        lines += [f"    {w.value_line()}" for w in watched[:left]]
        left -= len(watched)
    return bounded(lines, len(values), limit, "value")


def _pushed(root: Path, remote: str, name: str, oid: str) -> bool:
    """Push the new tag object. True when the remote has it; False when another publisher took the name;
    RemoteError for any other refusal. Nothing local exists yet, so nothing needs undoing."""
    outcome = push_tags(root, remote, {name: oid})
    if outcome.ok:
        return True
    theirs = remote_tags(root, remote, [name]).get(name)
    if theirs == oid:  # the push landed although its report did not say so
        return True
    if theirs is not None:
        return False
    if outcome.stalled is not None:
        raise outcome.stalled
    status = outcome.rejected.get(name, "rejected")
    said = f"; the remote said: {outcome.remote_said}" if outcome.remote_said else ""
    raise RemoteError(
        f"the remote {remote!r} refused the version tag {name}: {status}{said}. Nothing was published",
        hint="ask the remote's administrators whether this repository accepts tag pushes from you",
    )


def _written(root: Path, name: str, oid: str, remote: str | None) -> bool:
    """Write the local tag. Without a remote, False when another local publisher took the name: try the next number.
    After a push, the remote has the version whatever happens here, so a local clash is an error."""
    if write_tags(root, {name: oid}):
        return True
    if remote is None:
        return False
    raise RemoteError(
        f"published {name} on {remote!r}, but this repository has another tag of that name",
        hint=f"delete the local copy (git tag -d {name}) and fetch: git fetch {remote} 'refs/tags/*:refs/tags/*'",
    )


def _back_off(attempt: int) -> None:
    time.sleep(random.uniform(0.05, 0.3) * min(attempt, 5))


def _with(base: PublishResult, **changes: Any) -> PublishResult:
    return replace(base, **changes)
