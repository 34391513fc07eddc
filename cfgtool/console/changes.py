"""The console's diff pages (docs/console.md): what changed between two versions, grouped by cause, and two keys of
one version side by side.

`/ui/{store}/diff/{A}..{B}` is `cfgtool diff A B` itself (`cfgtool.versions.diff.diff`, the one implementation),
computed once per pair of commits off the event loop and kept, then filtered for the principal. The diff the timeline
and the diff form lead to first, the previous good version against the current one, is computed as soon as the
current version loads (`prepare`, on a background thread), so its first view does not wait for two compiles.
What the principal sees: a key it may not
describe under the current ACL or either version's own appears nowhere, not in a group's count either; a key it may
describe but not read counts as changed without its values; the layer a change came through shows as
`[hidden layer]` when the principal may not describe it. A group's reach (how many keys one change touched) is drawn
against the keys of version B it may see. Long answers are capped, with the totals said.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.responses import RedirectResponse, Response

from cfgtool.errors import CfgtoolError
from cfgtool.serve.answers import Bounded, Denied, error, not_found, version_number
from cfgtool.serve.visibility import HIDDEN_LAYER, Visibility
from cfgtool.serve.worker import Worker
from cfgtool.snapshot.hidden import HIDDEN
from cfgtool.versions.diff import ABSENT, VIA_OWN, Diff, Group, KeyChange, changed_values, diff
from cfgtool.versions.diff_render import value_text

if TYPE_CHECKING:
    from cfgtool.access.authorizer import Authorizer
    from cfgtool.console.context import Context
    from cfgtool.serve.loaded import LoadedVersion
    from cfgtool.serve.served import StoreState, View
    from cfgtool.versions.tags import Version

log = logging.getLogger("cfgtool.serve")
GROUPS_SHOWN = 50  # causes listed on a diff page (the rest counted)
GROUP_KEYS_SHOWN = 12  # keys named under each cause
KEYS_SHOWN = 50  # keys whose values are listed
VALUES_SHOWN = 20  # values listed per key
_DIFFS: Bounded[tuple[str, str, str, str], Diff] = Bounded(8)  # (repo, store, commit A, commit B) -> its diff
_DIFFS_LOCK = threading.Lock()
_WORKER = Worker()
_QUEUED: set[tuple[str, str, str, str]] = set()  # diffs being computed ahead of any request
_QUEUED_LOCK = threading.Lock()


@dataclass(frozen=True)
class Cause:
    """One group of the diff as the principal sees it: the change, the layer it came through and the keys it
    reached (`shown` of them named)."""

    path: str
    old: str | None  # value_text, None when unset
    new: str | None
    via: str | None
    file: str | None  # the included file that set it, when not the layer's main.conf
    reach: int
    shown: tuple[str, ...]


async def diff_page(ctx: Context) -> Response:
    """`/ui/{store}/diff/{A}..{B}`: the resolved diff of versions A and B, changes only, grouped by cause."""
    state, view = ctx.state, ctx.view
    assert state is not None and view is not None
    span = ctx.request.path_params["span"]
    first, sep, second = span.partition("..")
    if not sep:
        raise not_found(f"{span[:40]!r} names no two versions: write A..B, such as 3..5")
    a, b = version_number(first), version_number(second)
    api = ctx.console.api
    older, newer = await api.version(state, a), await api.version(state, b)
    seen = _rights(ctx, older, newer)
    try:
        found = await asyncio.to_thread(_diff, state.root, state.path or ".", view.versions[a], view.versions[b])
    except CfgtoolError as exc:
        raise Denied(error(409, "unresolved", exc.message)) from exc
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
    """`/ui/{store}/diff?a=A&b=B` (the form of the diff page, which works without scripts): redirect to the
    permalink `/ui/{store}/diff/A..B`; without both, the previous version against the current one."""
    view, state = ctx.view, ctx.state
    assert view is not None and state is not None
    query = ctx.request.query_params
    if query.get("a") and query.get("b"):
        a, b = version_number(query["a"].strip().lstrip("v")), version_number(query["b"].strip().lstrip("v"))
    else:
        pair = latest_pair(view)
        if pair is None:
            raise not_found(f"store {state.name} has no current version")
        a, b = pair
    return RedirectResponse(f"/ui/{quote(state.name)}/diff/{a}..{b}", status_code=303)


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
    rows = [
        {"path": path, "a": _text(old), "b": _text(new), "kind": _kind(old, new)}
        for path, old, new in changed_values(configs[0], configs[1])
    ]
    return ctx.render("compare.html", a=keys[0], b=keys[1], rows=rows)


# -- the diff, once per pair of commits ------------------------------------------------------------------------
def latest_pair(view: View) -> tuple[int, int] | None:
    """The versions the diff form compares by default: the good version below the current one, and the current
    one (the current one twice when it is the first); None without a current version."""
    if view.current is None:
        return None
    good = [p.version for p in view.published if p.rolled_back_at is None]
    b = view.current
    return max((n for n in good if n < b), default=b), b


def prepare(state: StoreState) -> None:
    """Start computing the store's latest diff (`latest_pair`) on a background thread, unless it is known or under
    way: called on the loader thread after each refresh, so the first view of that diff finds it ready."""
    view = state.view
    pair = latest_pair(view)
    if pair is None or pair[0] == pair[1]:
        return
    a, b = view.versions[pair[0]], view.versions[pair[1]]
    ident = (str(state.root), state.path or ".", a.commit, b.commit)
    with _QUEUED_LOCK:  # not _DIFFS_LOCK, which a computation holds for its whole run
        if ident in _QUEUED or _DIFFS.get(ident) is not None:
            return
        _QUEUED.add(ident)

    def run() -> None:
        try:
            _diff(state.root, state.path or ".", a, b)
        except CfgtoolError as exc:  # the page says why when asked
            log.info("the diff of versions %s and %s of store %s: %s", a.version, b.version, state.name, exc.message)
        except Exception:  # a bug: logged; the page computes it again when asked
            log.exception(
                "computing the diff of versions %s and %s of store %s failed", a.version, b.version, state.name
            )
        finally:
            with _QUEUED_LOCK:
                _QUEUED.discard(ident)

    threading.Thread(target=run, name="cfgtool-console-diff", daemon=True).start()


def _diff(root: Path, store: str, a: Version, b: Version) -> Diff:
    """`cfgtool diff` of two versions of the store, named by their tags, computed in a worker process (two
    whole compiles: their memory and CPU stay out of the server) and cached by commit (a version's commit never
    changes)."""
    ident = (str(root), store, a.commit, b.commit)
    with _DIFFS_LOCK:  # one computation per pair at a time: a second request for it waits and reads the first's
        return _DIFFS.get_or_build(ident, lambda: _WORKER.run(diff, root, a.tag, b.tag, store))


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
    """The rule files that changed; the ACL's statements only to a principal that may describe the ACL."""
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
