"""The console's diff pages (docs/console.md). They show what changed between two versions, grouped by cause, and two
keys of one version side by side.

`/ui/{store}/diff/{A}..{B}` is `cfgtool diff A B` itself: `cfgtool.versions.diff.diff`, the one implementation. It is
computed once per pair of commits in a worker process and kept, then filtered for the principal. A page never waits
long for it. The first request of a pair starts its computation. There is one per pair, shared by every request that
asks meanwhile. At most `RUNNING` pairs run at once, each pair independent of the others. The request also starts the
loads of the two versions when they are not in memory. It waits `WAIT` seconds. Then it answers a "being computed"
page (202) that asks again by itself until the diff is there. Some diffs are computed ahead: those the timeline and
the diff form lead to. They are the previous good version against the current one, then each step the timeline shows.
A step is a version against the one readers had before it, newest first, `AHEAD` pairs. They are computed one at a
time at a low priority, as soon as a version loads (`prepare`). They are kept apart from the diffs people asked for,
so computing ahead never drops one of those. What the principal sees: a key it may not describe appears nowhere, not
in a group's count either. That holds under the current ACL or either version's own. A key it may describe but not
read counts as changed without its values. The layer a change came through shows as `[hidden layer]` when the
principal may not describe it. A group's reach (how many keys one change touched) is drawn against the keys of
version B it may see. Long answers are capped, with the totals said.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from starlette.responses import RedirectResponse, Response

from cfgtool.console.context import SECURITY_HEADERS
from cfgtool.errors import CfgtoolError
from cfgtool.serve.answers import Bounded, Denied, error, not_found, unservable, url_version
from cfgtool.serve.visibility import HIDDEN_LAYER, Visibility
from cfgtool.serve.worker import Worker
from cfgtool.snapshot.hidden import HIDDEN
from cfgtool.versions.diff import ABSENT, VIA_OWN, Diff, Group, KeyChange, changed_values, diff
from cfgtool.versions.diff_render import value_text
from cfgtool.versions.names import PREVIOUS

if TYPE_CHECKING:
    from cfgtool.access.authorizer import Authorizer
    from cfgtool.console.context import Context
    from cfgtool.serve.loaded import LoadedVersion
    from cfgtool.serve.store_state import StoreState, View
    from cfgtool.versions.tags import Version

log = logging.getLogger("cfgtool.serve")
T = TypeVar("T")
GROUPS_SHOWN = 50  # causes listed on a diff page (the rest counted)
GROUP_KEYS_SHOWN = 12  # keys named under each cause
KEYS_SHOWN = 50  # keys whose values are listed
VALUES_SHOWN = 20  # values listed per key
WAIT = 0.5  # seconds a diff page waits for its diff before answering the "being computed" page
POLL = 10.0  # seconds the pending page's own request (htmx) waits for it
REFRESH = 3  # seconds after which the pending page reloads without scripts (meta refresh)
RUNNING = 2  # diffs people asked for computed at once (each a worker process: two compiles)
QUEUED = 16  # diffs people asked for waiting to be computed at most (past it, the oldest waiting one is dropped)
AHEAD = 4  # diffs the timeline leads to computed ahead, newest first (the latest pair among them)
KEPT = 16  # diffs people asked for kept ...
KEPT_VALUES = 150_000  # ... holding at most this many changed values in all (3,035 took 1.5 MB at 10,000 datasets)
KEPT_AHEAD = 8  # diffs computed ahead kept (apart: computing ahead never drops a diff someone asked for) ...
KEPT_AHEAD_VALUES = 50_000  # ... holding at most this many changed values
FAILED_KEPT = 64  # failures kept ...
FAILED_FOR = 60.0  # ... for this many seconds (a pair of commits that does not compile never will; a repository
# that could not be read may be readable again)

Ident = tuple[str, str, str, str]  # (repo, store, commit A, commit B): a version's commit never changes


@dataclass(frozen=True)
class Cause:
    """One group of the diff as the principal sees it. It holds the change, the layer it came through and the keys it
    reached, `shown` of them named."""

    path: str
    old: str | None  # value_text, None when unset
    new: str | None
    via: str | None
    file: str | None  # the included file that set it, when not the layer's main.conf
    reach: int
    shown: tuple[str, ...]


async def diff_page(ctx: Context) -> Response:
    """`/ui/{store}/diff/{A}..{B}`: the resolved diff of versions A and B, changes only, grouped by cause. The "being
    computed" page while it is computed; htmx's request for the update waits longer."""
    state, view = ctx.state, ctx.view
    assert state is not None and view is not None
    span = ctx.request.path_params["span"]
    first, sep, second = span.partition("..")
    if not sep:
        raise not_found(f"{span[:40]!r} names no two versions: write A..B, such as 3..5")
    a, b = url_version(first), url_version(second)
    for n in (a, b):  # as `api.version` judges them, before loading anything
        if n not in view.versions:
            raise not_found(f"store {state.name} has no version {n}")
        if n in view.unservable:
            raise unservable(n)
    computing = DIFFS.ask(state, view.versions[a], view.versions[b])
    loading = [DIFFS.version(state, n) for n in (a, b)]  # beside the diff: the versions' ACLs and keys
    waited: list[Future[Any]] = [computing, *loading]
    await within_wait(ctx, lambda: all(f.done() for f in waited))
    failed = computing.done() and not computing.cancelled() and computing.exception() is not None
    if not failed and (not all(f.done() for f in waited) or any(f.cancelled() for f in waited)):
        return ctx.render("diff_pending.html", 202, a=a, b=b, refresh=REFRESH)
    try:
        found = computing.result()
    except CfgtoolError as exc:
        again = [(b"hx-refresh", b"true")] if ctx.fragment else None  # htmx swaps no 409: the page again shows it
        raise Denied(error(409, "unresolved", exc.message), again) from exc
    try:
        older, newer = (f.result() for f in loading)
    except CfgtoolError as exc:  # as `api.version` answers it
        raise unservable(b if loading[0].exception() is None else a) from exc
    seen = _rights(ctx, older, newer)
    shown = _filtered(found, seen)
    visible = len(newer.nodes) if seen.sees_everything else sum(1 for k in newer.nodes if seen.describes(k))
    readable = {c.key for c in shown.changes if _reads(seen, c.key)}
    causes = [_cause(g, readable, seen) for g in shown.groups]
    causes = [c for c in causes if c.reach]
    changes = [c for c in shown.changes if c.key in readable]
    return ctx.render(
        "diff.html",
        a=a,
        b=b,
        a_version=view.versions.get(a),
        b_version=view.versions.get(b),
        summary={kind: shown.count(kind) for kind in ("added", "removed", "changed")},
        values=shown.values,
        total=visible,
        causes=causes[:GROUPS_SHOWN],
        more_causes=max(0, len(causes) - GROUPS_SHOWN),
        changes=[_key_change(c) for c in changes[:KEYS_SHOWN]],
        more_changes=max(0, len(changes) - KEYS_SHOWN),
        unreadable=sorted(c.key for c in shown.changes if c.key not in readable),
        unresolved=list(shown.unresolved),
        rules=_rules(ctx, found),
        group_keys_shown=GROUP_KEYS_SHOWN,
    )


async def diff_form(ctx: Context) -> Response:
    """`/ui/{store}/diff?a=A&b=B` is the form of the diff page, which works without scripts. It redirects to the
    permalink `/ui/{store}/diff/A..B`. Without both, it compares the previous version against the current one."""
    view, state = ctx.view, ctx.state
    assert view is not None and state is not None
    query = ctx.request.query_params
    if query.get("a") and query.get("b"):
        a, b = url_version(query["a"].strip().lstrip("v")), url_version(query["b"].strip().lstrip("v"))
    else:
        pair = latest_pair(view)
        if pair is None:
            if view.current is None:
                raise not_found(f"store {state.name} has no current version")
            return ctx.render("diff_form.html", only=view.current)  # one version: nothing changed yet
        a, b = pair
    return RedirectResponse(f"/ui/{quote(state.name)}/diff/{a}..{b}", status_code=303, headers=SECURITY_HEADERS)


async def compare_page(ctx: Context) -> Response:
    """`/ui/{store}/v/{N}/compare?a=K&b=L`: two keys of version N side by side, the values that differ."""
    loaded, state = ctx.loaded, ctx.state
    assert loaded is not None and state is not None
    query = ctx.request.query_params
    texts = (query.get("a", "").strip(), query.get("b", "").strip())
    if not all(texts):
        return ctx.render("compare.html", a=texts[0], b=texts[1], rows=None)
    keys = [ctx.console.api.key(text.lstrip("/")) for text in texts]  # as in a URL: /ui/.../key/data/a
    configs = []
    for key in keys:
        status = ctx.seen.verdict(key, "read")
        if status == 404:
            raise not_found(f"store {loaded.store} has no key {key} in version {loaded.version}")
        if status == 403:
            raise Denied(error(403, "forbidden", f"{ctx.who} may not read {key}"))
        found = await ctx.console.api.key_answer(state, loaded, key, ctx.who, ctx.host)
        configs.append(json.loads(found.body)["config"])  # secrets [hidden], as the API
    rows = [{"path": path, "a": _text(a), "b": _text(b)} for path, a, b in changed_values(configs[0], configs[1])]
    return ctx.render("compare.html", a=keys[0], b=keys[1], rows=rows)


# -- the diff, once per pair of commits ------------------------------------------------------------------------
def latest_pair(view: View) -> tuple[int, int] | None:
    """The versions the diff form compares by default: the store's last change. That is the previous good version
    against the current one. When the current one has none below it, it is the newest rolled-back version above it
    against it: what that rollback changed back. None without a current version, or when it is the only version."""
    current = view.current
    if current is None:
        return None
    before = view.named(PREVIOUS)
    if before is not None:
        return before, current
    undone = (p.version for p in view.published if p.rolled_back_at is not None and p.version > current)
    after = max(undone, default=None)
    return None if after is None else (after, current)


def timeline_pairs(view: View) -> list[tuple[int, int]]:
    """The pairs of versions the timeline and the diff form lead to, the most asked first. The latest pair comes
    first, then each step readers took, newest first. A step is a version against the one they had before it, or a
    rollback's way back. At most `AHEAD` pairs, of versions that compile only."""
    pairs: list[tuple[int, int]] = []
    latest = latest_pair(view)
    if latest is not None:
        pairs.append(latest)
    for step in reversed(view.steps):
        if len(pairs) >= AHEAD:
            break
        pair = (step.before, step.after if step.kind != "publish" else step.version)
        if pair[0] is not None and pair[1] is not None and pair[0] != pair[1] and pair not in pairs:
            pairs.append((pair[0], pair[1]))
    return pairs


def _settled(found: T | None, failed: CfgtoolError | None) -> Future[T] | None:
    """A future already done with `found`, or without it, failed with `failed`. None when neither is known."""
    if found is None and failed is None:
        return None
    done: Future[T] = Future()
    if found is not None:
        done.set_result(found)
    else:
        done.set_exception(failed)
    return done


def prepare(state: StoreState) -> None:
    """Compute ahead the diffs the timeline leads to (`timeline_pairs`), unless known or under way. It is called on
    the loader thread after each refresh, so their first views find them ready."""
    view = state.view
    for a, b in timeline_pairs(view):
        DIFFS.ahead(state, view.versions[a], view.versions[b])


class Diffs:
    """The diffs of pairs of versions: kept, under way, and failed. Those people asked for are kept apart from those
    computed ahead. There is one computation per pair, shared. A failed one is a `CfgtoolError`: the pair does not
    compile. Also the loads of the versions a diff page reads that the server does not hold (one per version,
    shared)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked: Bounded[Ident, Diff] = Bounded(KEPT, _weight, KEPT_VALUES)
        self._ahead: Bounded[Ident, Diff] = Bounded(KEPT_AHEAD, _weight, KEPT_AHEAD_VALUES)
        self._failed: Bounded[tuple[str, ...], tuple[CfgtoolError, float]] = Bounded(FAILED_KEPT)  # diffs, loads
        self._running: dict[Ident, Future[Diff]] = {}  # asked for or ahead, oldest first
        self._ahead_running: set[Ident] = set()  # of those, the ones computed ahead
        self._pool = _Threads(RUNNING, "cfgtool-console-diff")
        self._ahead_pool = _Threads(1, "cfgtool-console-diff-ahead")
        self._worker = Worker()
        self._loading: dict[tuple[str, str, str], Future[LoadedVersion]] = {}  # (repo, store, commit) being loaded
        self._versions: Bounded[tuple[str, str, str], weakref.ref[LoadedVersion]] = Bounded(64)  # those loaded
        self._loads = _Threads(1, "cfgtool-console-load")  # one at a time: the store loads one at a time anyway

    def get(self, ident: Ident, keep: bool = True) -> Diff | None:
        """The diff of `ident` when it is known (with `keep`, one computed ahead now counts as asked for)."""
        with self._lock:
            return self._known(ident, keep)

    def ask(self, state: StoreState, a: Version, b: Version) -> Future[Diff]:
        """The diff of versions A and B of the store: done when known, or known to fail. Else its computation,
        started now unless under way. One computed ahead but not started yet is started now at the page's priority."""
        ident = _ident(state, a, b)
        with self._lock:
            done = _settled(self._known(ident), self._failure(ident))
            if done is not None:
                return done
            running = self._running.get(ident)
            if running is not None and (ident not in self._ahead_running or not running.cancel()):
                return running
            self._ahead_running.discard(ident)
            self._drop_oldest_waiting()
            started = self._running[ident] = self._pool.submit(self._compute, ident, state, a, b, False)
            return started

    def version(self, state: StoreState, number: int) -> Future[LoadedVersion]:
        """Version N of the store in memory; the page reads its ACL and keys. When it is not in memory, it is loaded
        on a thread of its own (one load per version at a time, shared). CfgtoolError when it cannot be served."""
        key = (str(state.root), state.path or ".", state.view.versions[number].commit)
        with self._lock:
            held = self._versions.get(key)
            found = state.view.pinned.get(number) or (held() if held is not None else None)
            done = _settled(found, self._failure(key))
            if done is not None:
                return done
            running = self._loading.get(key)
            if running is None:
                running = self._loading[key] = self._loads.submit(self._load, key, state, number)
            return running

    def _load(self, key: tuple[str, str, str], state: StoreState, number: int) -> LoadedVersion:
        try:
            found = state.loaded(number)
            with self._lock:
                self._versions.put(key, weakref.ref(found))  # not kept alive: the server's own bound decides
            return found
        except CfgtoolError as exc:
            with self._lock:
                self._failed.put(key, (exc, time.monotonic()))
            raise
        finally:
            with self._lock:
                self._loading.pop(key, None)

    def ahead(self, state: StoreState, a: Version, b: Version) -> None:
        """Compute the diff of versions A and B ahead of any request, unless it is known, failed or under way."""
        ident = _ident(state, a, b)
        with self._lock:
            if self._known(ident, keep=False) is not None or self._failure(ident) or ident in self._running:
                return
            if len(self._ahead_running) >= AHEAD:
                return
            self._ahead_running.add(ident)
            self._running[ident] = self._ahead_pool.submit(self._compute, ident, state, a, b, True)

    def _known(self, ident: Ident, keep: bool = True) -> Diff | None:
        found = self._asked.get(ident)
        if found is None:
            found = self._ahead.get(ident)
            if found is not None and keep:  # someone asked: kept as those are
                self._ahead.pop(ident)
                self._asked.put(ident, found)
        return found

    def _failure(self, ident: tuple[str, ...]) -> CfgtoolError | None:
        found = self._failed.get(ident)
        if found is None or time.monotonic() - found[1] > FAILED_FOR:
            return None
        return found[0]

    def _drop_oldest_waiting(self) -> None:
        """Past `QUEUED` diffs asked for and waiting, cancel the oldest waiting one; asked again, it starts again. So
        a person asking for every pair of versions cannot queue hours of work."""
        waiting = [i for i, f in self._running.items() if i not in self._ahead_running and not f.running()]
        for ident in waiting[: max(0, len(waiting) - QUEUED + 1)]:
            if self._running[ident].cancel():
                del self._running[ident]

    def _compute(self, ident: Ident, state: StoreState, a: Version, b: Version, ahead: bool) -> Diff:
        """`cfgtool diff` of the pair in a worker process, kept. It is two whole compiles, so their memory and CPU
        stay out of the server. Computed ahead, it runs at a low priority."""
        root, store = state.root, state.path or "."
        try:
            found: Diff = self._worker.run(_diff_ahead if ahead else diff, root, a.tag, b.tag, store)
        except CfgtoolError as exc:
            log.info("the diff of versions %s and %s of store %s: %s", a.version, b.version, state.name, exc.message)
            with self._lock:
                self._failed.put(ident, (exc, time.monotonic()))
                self._forget(ident)
            raise
        except BaseException:
            log.exception(
                "computing the diff of versions %s and %s of store %s failed", a.version, b.version, state.name
            )
            with self._lock:
                self._forget(ident)
            raise
        kept = self._ahead if ahead else self._asked
        with self._lock:
            if _weight(found) <= kept.max_weight:  # a larger one is shown, not kept: it would drop all the others
                kept.put(ident, found)
            self._forget(ident)
        return found

    def _forget(self, ident: Ident) -> None:
        self._running.pop(ident, None)
        self._ahead_running.discard(ident)


class _Threads:
    """Runs calls in order on at most `size` daemon threads (a server that stops does not wait for a diff)."""

    def __init__(self, size: int, name: str) -> None:
        self._size, self._name, self._started = size, name, 0
        self._todo: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]]] = queue.SimpleQueue()
        self._lock = threading.Lock()

    def submit(self, func: Callable[..., Any], *args: Any) -> Future[Any]:
        """`func(*args)`, on a thread when one is free; returns its future. Cancelled before it starts, it never
        runs."""
        future: Future[Any] = Future()
        self._todo.put((future, func, args))
        with self._lock:
            if self._started < self._size:
                self._started += 1
                threading.Thread(target=self._run, name=self._name, daemon=True).start()
        return future

    def _run(self) -> None:
        while True:
            future, func, args = self._todo.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(func(*args))
            except Exception as exc:  # the future holds it
                future.set_exception(exc)


def _weight(found: Diff) -> int:
    """What a kept diff weighs: its changed values (and one per key), which its memory follows."""
    return found.values + len(found.changes) + 1


def _ident(state: StoreState, a: Version, b: Version) -> Ident:
    return (str(state.root), state.path or ".", a.commit, b.commit)


def _diff_ahead(root: Path, a: str, b: str, store: str) -> Diff:
    """`cfgtool diff` at a low CPU priority (in a worker process only: never the server's own)."""
    if multiprocessing.parent_process() is not None:
        os.nice(10)
    return diff(root, a, b, store)


async def within_wait(ctx: Context, done: Callable[[], bool]) -> bool:
    """Whether `done()` holds now or within the wait of a page whose answer is built in the background. A page waits
    `WAIT`; htmx's request for the update waits `POLL`. It is checked every 20 ms without holding a thread. The page
    then answers what it has, or that it is being built (202)."""
    if done():
        return True
    if not ctx.fragment:
        await _until(done, WAIT)
        return done()
    try:
        with ctx.console.api.long_poll(ctx.who, ctx.request.scope):
            await _until(done, POLL)
    except Denied:  # too many long polls of this principal at once: the page asks again after its delay
        pass
    return done()


async def _until(done: Callable[[], bool], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)


DIFFS = Diffs()


def _rights(ctx: Context, *versions: LoadedVersion) -> Visibility:
    """What the principal may see of a diff: judged by the current ACL and both versions' own."""
    assert ctx.view is not None
    if ctx.who is None:
        return Visibility((), None, ctx.host)
    judges: list[Authorizer] = []
    for judge in (ctx.view.authorizer, *(v.authorizer for v in versions)):
        if judge is not None and all(judge is not j for j in judges):
            judges.append(judge)
    return Visibility(judges, ctx.who, ctx.host)


def _reads(seen: Visibility, key: str) -> bool:
    return seen.who is None or seen.may("read", key)


def _filtered(found: Diff, seen: Visibility) -> Diff:
    """`found` without the keys the principal may not describe (in changes, groups and unresolved keys)."""
    if seen.sees_everything:
        return found
    changes = tuple(c for c in found.changes if seen.describes(c.key))
    groups = [replace(g, keys=tuple(k for k in g.keys if seen.describes(k))) for g in found.groups]
    unresolved = tuple(k for k in found.unresolved if seen.describes(k))
    return Diff(found.a, found.b, changes, tuple(g for g in groups if g.keys), unresolved, found.rules)


def _cause(group: Group, readable: set[str], seen: Visibility) -> Cause:
    """A group as shown: only the keys whose values the principal may read reveal the change."""
    keys = tuple(k for k in group.keys if k in readable)
    via = _via(group.via, seen)
    return Cause(
        group.path,
        _text(group.old),
        _text(group.new),
        via,
        None if via == HIDDEN_LAYER else group.file,
        len(keys),
        keys[:GROUP_KEYS_SHOWN],
    )


def _via(via: str | None, seen: Visibility) -> str | None:
    if via is None or via == VIA_OWN:
        return via
    return via if seen.describes(via) else HIDDEN_LAYER


def _key_change(change: KeyChange) -> dict[str, Any]:
    values = [
        {
            "path": v.path,
            "old": _text(v.old),
            "new": _text(v.new),
            "kind": _kind(v.old, v.new),
        }
        for v in change.values[:VALUES_SHOWN]
    ]
    return {"key": change.key, "kind": change.kind, "rows": values, "more": max(0, len(change.values) - VALUES_SHOWN)}


def _rules(ctx: Context, found: Diff) -> list[dict[str, Any]]:
    """The rule files that changed. The ACL's statements show only to a principal that may describe the ACL."""
    view = ctx.view
    assert view is not None
    acl_shown = ctx.who is None or (
        view.authorizer is not None and view.authorizer.authorize(ctx.who, "describe_acl", None, ctx.host).allowed
    )
    return [
        {
            "path": r.path,
            "kind": r.kind,
            "added": list(r.acl_added or ()) if acl_shown else [],
            "removed": list(r.acl_removed or ()) if acl_shown else [],
        }
        for r in found.rules
    ]


def _text(value: Any) -> str | None:
    """A value as JSON (`cfgtool diff`'s text), `[hidden]` for a secret, None when unset."""
    if value is ABSENT:
        return None
    return HIDDEN if value == HIDDEN else value_text(value)


def _kind(old: Any, new: Any) -> str:
    return "added" if old is ABSENT else "removed" if new is ABSENT else "changed"
