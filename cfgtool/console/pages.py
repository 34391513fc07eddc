"""The console's pages under /ui/ (docs/console.md) and its routes. Pages are rendered on the server with Jinja2,
from the versions the server already holds in memory (no second compile). Each is filtered by `Visibility`, the JSON
API's own filter.

Every response carries the console's security headers: `Content-Security-Policy: default-src 'self'`, no inline
script or style anywhere. A page asked for by htmx (`HX-Request`) answers only its fragment. Adding a page:

1. Write its handler as `async def name(ctx: Context) -> Response`, in any module that imports `context` (never
   `pages`).
2. Render with `ctx.render(template, **values)`.
3. Judge every key it shows with `ctx.seen` (`describes`, `keys`, `verdict`).
4. Add a `Route` with `page(...)` in `routes()` here.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from cfgtool.console import changes, rights
from cfgtool.console import history as histories
from cfgtool.console import rollouts as staged
from cfgtool.console import search as searching
from cfgtool.console import tree as trees
from cfgtool.console.context import SECURITY_HEADERS, TIMELINE_SHOWN, Console, Context
from cfgtool.console.graph import import_graph
from cfgtool.errors import CfgtoolError
from cfgtool.hocon import HoconError, split_path
from cfgtool.serve.answers import Denied, error, not_found, url_version
from cfgtool.serve.loaded import LoadedVersion
from cfgtool.serve.routes import explain_answer, query_answer
from cfgtool.serve.visibility import Visibility
from cfgtool.snapshot.provenance import path_name

if TYPE_CHECKING:
    from cfgtool.serve.app import Api
    from cfgtool.serve.service import Service
    from cfgtool.versions.audit import KeyHistory
    from cfgtool.versions.readers import StepKind
    from cfgtool.versions.tags import Restored, RolledBack

LISTED = 100  # keys listed at once on a key page (imports, imported-by, tags, a tag's datasets); the rest counted
CONSUMERS_SHOWN = 500  # instances listed (in the fair order of the JSON API's listing); the rest counted
READS = ("candidate", "stable")  # the consumers page's filter: the candidate's cohort, or the others
MORE_PRINCIPALS = 10  # principals named, with their counts, among the instances not listed
LIVE_WAIT = 25.0  # seconds a live-update request waits for the change feed
IDLE = "cfgtool-timeline-idle"  # the event a live-update request without news fires on the timeline: ask again
COHORT_POLL = 5.0  # seconds between two looks at a rolling version's cohort while a live-update request waits


# -- pages ------------------------------------------------------------------------------------------------------
async def stores(ctx: Context) -> Response:
    """`/ui/`: the stores the principal may describe (as `/v1/stores` lists them)."""
    service = ctx.console.service
    listed = [
        {"name": s.name, "path": s.path, "current": s.view.current, "seq": service.feeds[s.name].seq}
        for s in ctx.console.api.listed_stores(ctx.who, ctx.host)
    ]
    return ctx.render("stores.html", stores=listed)


async def timeline(ctx: Context) -> Response:
    """`/ui/{store}/`: publishes and rollbacks, newest first, with the current version and rolled-back ones marked,
    and each staged rollout's progress."""
    return ctx.render("timeline.html", **_timeline(ctx, await _rollouts(ctx)))


async def timeline_live(ctx: Context) -> Response:
    """The timeline section again, once the change feed has an event after `since`, or the rolling version's state,
    percent or cohort is no longer `rollout` (`Rollouts.mark`). htmx swaps it in and asks again, so the page follows
    the feed. After `LIVE_WAIT` seconds without news, `204 No Content`. htmx swaps nothing and asks again on `IDLE`.
    A swap would take the keyboard's focus off a link of the timeline."""
    assert ctx.state is not None
    state = ctx.state
    try:
        since = int(ctx.request.query_params.get("since", "0"))
    except ValueError as exc:
        raise Denied(error(400, "bad_request", "since is an integer")) from exc
    shown = ctx.request.query_params.get("rollout", "")
    feed, consumers = ctx.console.service.feeds[state.name], ctx.console.service.consumers[state.name]

    async def news() -> bool:
        ctx.view = state.view  # the view after the event
        return feed.seq > since or feed.closed or (await _rollouts(ctx)).mark(consumers) != shown

    if not await news():
        with ctx.console.api.long_poll(ctx.who, ctx.request.scope):
            deadline = time.monotonic() + LIVE_WAIT
            while (left := deadline - time.monotonic()) > 0 and not await news():
                await feed.wait(since, min(left, COHORT_POLL))
        if not await news():
            headers = {"hx-trigger": IDLE, "cache-control": "no-store", **SECURITY_HEADERS}
            return Response(status_code=204, headers=headers)
    return ctx.render("timeline_section.html", **_timeline(ctx, await _rollouts(ctx)))


async def _rollouts(ctx: Context) -> staged.Rollouts:
    """The store's staged rollouts as of the request's view (its tags read off the event loop)."""
    assert ctx.state is not None and ctx.view is not None
    return await asyncio.to_thread(staged.rollouts, ctx.state, ctx.view)


def _timeline(ctx: Context, staging: staged.Rollouts) -> dict[str, Any]:
    """Every publish, rollback and cancelled rollback, newest first, each with what it changed for readers. That is
    the version they had before and after (`readers.steps`, as the change feed counts it). A version under a plan
    comes with its rollout's status."""
    assert ctx.state is not None and ctx.view is not None
    view = ctx.view
    feed = ctx.console.service.feeds[ctx.state.name]
    consumers = ctx.console.service.consumers[ctx.state.name]
    events = {(e.kind, e.version): e for e in feed.events}
    moves = {(s.kind, s.version): s for s in view.steps}
    entries: list[dict[str, Any]] = []
    for v in view.versions.values():
        servable = v.version not in view.unservable
        event, step = events.get(("publish", v.version)), moves.get(("publish", v.version))
        entries.append({
            "kind": "publish", "version": v, "date": v.date, "servable": servable,
            "changed": ctx.seen.count(event.changed_keys) if event is not None else None,
            "effective_by": event.effective_by if event is not None else None,
            "since": step.before if step is not None else None,
        })  # fmt: skip
        undone = v.rolled_back or (v.restored.rolled_back if v.restored is not None else None)
        markers: list[tuple[StepKind, RolledBack | Restored | None]] = [("rollback", undone), ("restore", v.restored)]
        for kind, marker in markers:
            if marker is None:
                continue
            event, step = events.get((kind, v.version)), moves.get((kind, v.version))
            entries.append({
                "kind": kind, "version": v, "date": marker.date, "by": marker.by, "reason": marker.reason,
                "servable": servable, "changed": ctx.seen.count(event.changed_keys) if event is not None else None,
                "from": step.before if step is not None else None, "to": step.after if step is not None else None,
            })  # fmt: skip
    order = {"publish": 0, "rollback": 1, "restore": 2}
    entries.sort(key=lambda e: (e["date"], order[e["kind"]], e["version"].version), reverse=True)
    shown = entries[:TIMELINE_SHOWN]
    statuses = staging.statuses(consumers, [e["version"].version for e in shown if e["kind"] == "publish"])
    for e in shown:
        e["rollout"] = statuses.get(e["version"].version) if e["kind"] == "publish" else None
    return {
        "entries": shown,
        "more": max(0, len(entries) - TIMELINE_SHOWN),
        "current": view.current,
        "stable": staging.chosen.stable,
        "candidate": staging.candidate.version if staging.candidate is not None else None,
        "rollout": staged.mark(statuses.get(staging.candidate.version) if staging.candidate else None),
        "seq": feed.seq,
        "idle": IDLE,
    }


async def tree(ctx: Context) -> Response:
    """`/ui/{store}/v/{N}/tree/{key}`: the key's place in the node tree, with its resolved config beside it. The tree
    shows its ancestors and one level of children, expanded on demand."""
    loaded, key = _loaded(ctx), ctx.console.key(ctx.request)
    if ctx.seen.verdict(key, "describe") != 200:
        raise not_found(f"{key} has no node in version {loaded.version} of store {_store(ctx)}")
    index = await trees.INDEXES.get(loaded)
    children = trees.children(index, loaded, key, ctx.seen, ctx.request.query_params.get("after"))
    if ctx.fragment:
        return ctx.render("tree_children.html", parent=key, children=children)
    config = await _config(ctx, key) if ctx.seen.verdict(key, "read") == 200 else None
    return ctx.render(
        "tree.html",
        key=key,
        parent=key,
        ancestors=[a for a in trees.ancestors(key) if ctx.seen.describes(a) or a not in loaded.nodes],
        children=children,
        config=config,
        kind=trees.kind(loaded, index, key, ctx.seen),
    )


async def key_page(ctx: Context) -> Response:
    """`/ui/{store}/v/{N}/key/{key}`: the resolved config as a folding tree, where each value opens its explain. Also
    its tags, imports and imported-by, with a graph of them, and the datasets of a tag."""
    loaded, key = _loaded(ctx), ctx.console.key(ctx.request)
    _require(ctx, key, "read")
    config = await _config(ctx, key)
    exists = key in loaded.nodes
    found = await asyncio.to_thread(_neighbours, ctx, key, exists)  # one hop off the event loop for all of them
    return ctx.render(
        "key.html",
        key=key,
        exists=exists,
        node=loaded.nearest(key),
        near=None if exists else await asyncio.to_thread(ctx.seen.near_node, loaded, key),
        config=config,
        **found,
    )


@dataclass(frozen=True)
class Capped:
    """The first `LISTED` keys of a list, and how many it holds."""

    keys: list[str]
    total: int


def _capped(keys: list[str]) -> Capped:
    return Capped(keys[:LISTED], len(keys))


def _neighbours(ctx: Context, key: str, exists: bool) -> dict[str, Any]:
    """The key page's tags, imports, imported-by, a tag's datasets and the import graph, filtered. The first queries
    of a version index its import relations, so it is called off the event loop."""
    loaded = _loaded(ctx)
    imports = _query(ctx, key, "imports") if exists else []
    imported_by = _query(ctx, key, "imported-by") if exists else []

    def neighbour(k: str, kind: str) -> list[str]:
        return _query(ctx, k, kind) if k in loaded.nodes and ctx.seen.describes(k) else []

    return {
        "tags": _capped(_query(ctx, key, "tags")),
        "imports": _capped(imports),
        "imported_by": _capped(imported_by),
        "datasets": _capped(_query(ctx, key, "datasets")) if exists and trees.is_tag(loaded, key) else None,
        "graph": import_graph(key, imports, imported_by, neighbour),
    }


def _query(ctx: Context, key: str, kind: str) -> list[str]:
    """The keys a query (`tags`, `imports`, `imported-by`, `datasets`) answers about `key`, as the JSON API
    answers it to the principal."""
    found = query_answer(_loaded(ctx), kind, key, False)
    return ctx.seen.keys(json.loads(found.body)["imported_by" if kind == "imported-by" else kind])


async def explain(ctx: Context) -> Response:
    """`/ui/{store}/v/{N}/explain/{key}?path=P`: where the value came from (as `cfgtool explain`), with the layers
    the principal may not describe hidden."""
    loaded, key = _loaded(ctx), ctx.console.key(ctx.request)
    _require(ctx, key, "read")
    path = ctx.request.query_params.get("path", "")
    try:
        split_path(path)
    except HoconError as exc:
        raise Denied(error(400, "bad_path", f"{path!r} is not a HOCON path: {exc.message}")) from exc
    assert ctx.state is not None
    found = await explain_answer(ctx.console.api, ctx.state, loaded, key, path, ctx.who, ctx.host)
    doc = ctx.seen.explain(json.loads(found.body), ctx.state.path)
    near = None if key in loaded.nodes else await asyncio.to_thread(ctx.seen.near_node, loaded, key)
    return ctx.render("explain.html", key=key, explained=doc, near=near)


async def history(ctx: Context) -> Response:
    """`/ui/{store}/history/{key}?path=P`: each version that changed the key's config (or the value at P). It shows
    who, when and why. A version whose own ACL does not let the principal read the key is left out. From the store's
    history index (brought up to date first when a version loaded since)."""
    state, view, key = ctx.state, ctx.view, ctx.console.key(ctx.request)
    assert state is not None and view is not None
    _require(ctx, key, "read")
    path = ctx.request.query_params.get("path") or None
    try:
        parts = split_path(path) if path is not None else ()
    except HoconError as exc:
        raise Denied(error(400, "bad_path", f"{path!r} is not a HOCON path: {exc.message}")) from exc
    index = histories.index_of(state)
    if not index.covers(view):  # versions loaded since: indexed on a thread of their own, waited for a little
        histories.prepare(state, ctx.console.service.options.cache)
        if not await changes.within_wait(ctx, lambda: index.covers(view)):
            return ctx.render("history.html", 202, key=key, value_path=path, pending=True, refresh=changes.REFRESH)
    asked = ("index", state.name, key, path, len(index.indexed))  # a version indexed since: a new history
    found = ctx.console.histories.get(asked)
    if found is None:
        found = index.history(key, parts, path_name(parts) if parts else None, view)
        if found is not None:
            ctx.console.histories.put(asked, found)
    if found is None:  # it never had a node: `cfgtool audit` says so (and what is close)
        found = await _audit(ctx, key, path)
    events = []
    for event in found.history:
        if ctx.who is not None:
            own = state.acl(event.commit)[0]
            judges = [a for a in (view.authorizer, own) if a is not None]
            if Visibility(judges, ctx.who, ctx.host, ctx.seen.nearest).verdict(key, "read") != 200:
                continue
        events.append({"event": event, "version": view.versions.get(event.version)})
    shown = events[:TIMELINE_SHOWN]
    return ctx.render("history.html", key=key, value_path=path, events=shown, more=len(events) - len(shown))


async def _audit(ctx: Context, key: str, path: str | None) -> KeyHistory:
    """`cfgtool audit --key KEY [--path P]` of the store, off the event loop, cached until the store's next event."""
    from cfgtool.versions.audit import audit_key

    state = ctx.state
    assert state is not None
    asked = ("audit", state.name, key, path, ctx.console.service.feeds[state.name].seq)  # a new event: a new one
    found = ctx.console.histories.get(asked)
    if found is None:
        try:
            found = await asyncio.to_thread(audit_key, state.root, key, path, None, state.path or ".")
        except CfgtoolError as exc:
            raise Denied(error(400, "bad_request", exc.message)) from exc
        ctx.console.histories.put(asked, found)
    return found


async def search(ctx: Context) -> Response:
    """`/ui/{store}/v/{N}/search?q=`: keys, paths and values of the version matching `q`. They come from the
    version's search index, shared by every principal. Each hit is judged by the principal's filter."""
    loaded = _loaded(ctx)
    q = searching.query_text(ctx.request.query_params.get("q", ""))
    if not q:
        return ctx.render("search.html", q=q, found=None, max_query=searching.MAX_QUERY)
    assert ctx.state is not None
    building = searching.INDEXES.ask(ctx.state, loaded, ctx.console.service.options.cache)
    if not await changes.within_wait(ctx, building.done):
        return ctx.render("search.html", 202, q=q, pending=True, refresh=changes.REFRESH, max_query=searching.MAX_QUERY)
    found = searching.search(building.result(), loaded, q, ctx.seen)
    return ctx.render("search.html", q=q, found=found, max_query=searching.MAX_QUERY)


async def consumers(ctx: Context) -> Response:
    """`/ui/{store}/consumers`: which instances read which version, as this server heard them. It is what
    `/v1/{store}/consumers` answers, to the same principals: those that may describe the store. While a version rolls
    out, each instance is marked as in its cohort (it reads the candidate) or not (the stable version), and
    `?reads=candidate|stable` lists only those."""
    assert ctx.state is not None
    staging = await _rollouts(ctx)
    instances, counts = ctx.console.service.consumers[ctx.state.name].summary(time.time())
    reads = ctx.request.query_params.get("reads", "")
    if staging.candidate is None or reads not in READS:
        reads = ""
    listed = [(i, staging.reads(i)) for i in instances]
    reading = Counter(mark for _, mark in listed)
    if reads:
        listed = [(i, mark) for i, mark in listed if mark == reads]
    return ctx.render(
        "consumers.html",
        # only the rows shown are converted
        instances=[{**i.to_json(ctx.seen), "reads": mark} for i, mark in listed[:CONSUMERS_SHOWN]],
        more=max(len(listed) - CONSUMERS_SHOWN, 0),
        more_of=Counter(i.principal for i, _ in listed[CONSUMERS_SHOWN:]).most_common(MORE_PRINCIPALS),
        by_version=sorted(counts.items(), reverse=True),
        total=len(listed),
        widest=max(counts.values(), default=0),
        candidate=staging.candidate.version if staging.candidate is not None else None,
        stable=staging.chosen.stable,
        reads=reads,
        reading=reading,
    )


async def switch(ctx: Context) -> Response:
    """The header's version switcher without scripts: `?v=N&page=P` redirects to the same page of version N."""
    query = ctx.request.query_params
    number = url_version(query.get("v", ""))
    path, _, asked = query.get("page", "tree/").partition("?")
    if path.split("/", 1)[0] not in ("tree", "key", "search", "explain", "access", "compare"):
        path, asked = "tree/", ""
    target = f"/ui/{quote(_store(ctx))}/v/{number}/{quote(path)}" + (f"?{asked}" if asked else "")
    return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)


async def current(ctx: Context) -> Response:
    """`/ui/{store}/v/current/...`: the same page of the current version (a permalink names its number)."""
    assert ctx.view is not None
    if ctx.view.current is None:
        raise not_found(f"store {_store(ctx)} has no current version")
    rest = ctx.request.path_params.get("rest", "")
    query = f"?{ctx.request.url.query}" if ctx.request.url.query else ""
    target = f"/ui/{quote(_store(ctx))}/v/{ctx.view.current}/{quote(rest)}{query}"
    return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)


async def version_home(ctx: Context) -> Response:
    """`/ui/{store}/v/{N}` (or with a slash): version N's tree, the page a version's link opens."""
    store, n = ctx.request.path_params["store"], ctx.request.path_params["n"]  # judged by the tree page
    target = f"/ui/{quote(store, safe='')}/v/{quote(n, safe='')}/tree/"
    return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)


async def unknown(ctx: Context) -> Response:
    """Any other address under /ui/ (a mistyped or cut permalink): a page that says so, as every console error."""
    raise not_found(f"the console has no page {ctx.request.url.path[:200]}")


# -- helpers ----------------------------------------------------------------------------------------------------
def _loaded(ctx: Context) -> LoadedVersion:
    assert ctx.loaded is not None
    return ctx.loaded


def _store(ctx: Context) -> str:
    assert ctx.state is not None
    return ctx.state.name


def _require(ctx: Context, key: str, operation: str) -> None:
    """The JSON API's verdict. Denied 404 when the principal may not describe `key` or its nearest node. Denied 403
    when it may not `operation` it."""
    status = ctx.seen.verdict(key, operation)
    if status == 404:
        version = ctx.loaded.version if ctx.loaded is not None else ""
        raise not_found(f"store {_store(ctx)} has no key {key} in version {version}")
    if status == 403:
        raise Denied(error(403, "forbidden", f"{ctx.who} may not {operation} {key}"))


async def _config(ctx: Context, key: str) -> Any:
    """The resolved config of `key` (secrets `[hidden]`), as the key's JSON answer holds it."""
    assert ctx.state is not None
    found = await ctx.console.api.key_answer(ctx.state, _loaded(ctx), key, ctx.who, ctx.host)
    return json.loads(found.body)["config"]


def prepare(service: Service) -> None:
    """Build what the console reads of each version in memory: its tree, and the current version's search index (in a
    worker process). Start the latest diffs and bring the history index up to date. It runs on the server's loader
    thread after each refresh, so no request pays for them."""
    for state in service.stores.values():
        for loaded in state.view.pinned.values():
            trees.INDEXES.now(loaded)
        searching.prepare(state, service.options.cache)
        changes.prepare(state)
        histories.prepare(state, service.options.cache)


def routes(api: Api) -> Sequence[BaseRoute]:
    """The console's routes (mounted by `cfgtool serve` beside the JSON API)."""
    console = Console(api)
    page = console.page
    api.service.on_refresh.append(lambda: prepare(api.service))
    api.error_pages["/ui"] = console.error_page  # a 431 or 405 under /ui is the console's page, not JSON

    async def to_slash(request: Request) -> Response:
        """`/ui` and `/ui/{store}`: the same address with its slash (the stores, a store's timeline)."""
        return RedirectResponse(f"{request.url.path}/", status_code=308, headers=SECURITY_HEADERS)

    return [
        Route("/ui", to_slash),
        Route("/ui/", page("ui", stores, store=False)),
        Route("/ui/login", console.login_form, methods=["GET", "HEAD"]),
        Route("/ui/login", console.login, methods=["POST"]),
        Route("/ui/logout", console.logout, methods=["POST"]),
        Route("/ui/static/{name}", console.static_file),
        Route("/ui/{store}/", page("ui", timeline)),
        Route("/ui/{store}/live", page("ui", timeline_live)),
        Route("/ui/{store}/switch", page("ui", switch)),
        Route("/ui/{store}/consumers", page("ui", consumers)),
        Route("/ui/{store}/history/{key:anypath}", page("ui", history)),
        Route("/ui/{store}/v/current/{rest:anypath}", page("ui", current)),
        Route("/ui/{store}/v/{n}/tree/{key:anypath}", page("ui", tree, version=True)),
        Route("/ui/{store}/v/{n}/key/{key:anypath}", page("ui", key_page, version=True)),
        Route("/ui/{store}/v/{n}/explain/{key:anypath}", page("ui", explain, version=True)),
        Route("/ui/{store}/v/{n}/search", page("ui", search, version=True)),
        Route("/ui/{store}/v/{n}/compare", page("ui", changes.compare_page, version=True)),
        Route("/ui/{store}/v/{n}/access/{key:anypath}", page("ui", rights.access_page, version=True)),
        Route("/ui/{store}/diff", page("ui", changes.diff_form)),
        Route("/ui/{store}/diff/{span}", page("ui", changes.diff_page)),
        Route("/ui/{store}", to_slash),
        Route("/ui/{store}/v/{n}", page("ui", version_home, store=False)),
        Route("/ui/{store}/v/{n}/", page("ui", version_home, store=False)),
        Route("/ui/{rest:path}", page("ui", unknown, store=False)),  # last: what no route above answers
    ]


__all__ = ["routes"]
