"""The Starlette routes of docs/serving.md other than the hot key reads: stores, versions, queries, readiness, metrics
and the API's OpenAPI document."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from starlette.applications import Starlette
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from cfgtool.errors import CfgtoolError
from cfgtool.hocon import HoconError, split_path
from cfgtool.rollout.gates import ServerReport
from cfgtool.rollout.status import statuses
from cfgtool.serve.answers import (
    Answer,
    Denied,
    answer,
    error,
    etag_matches,
    internal,
    not_found,
    prebuilt,
    url_version,
)
from cfgtool.serve.app import Api, instance_of
from cfgtool.serve.cohorts import INSTANCE
from cfgtool.serve.consumers import CHECK_KEYS, MESSAGE_LIMIT, kind_of
from cfgtool.serve.metrics import CONTENT_TYPE
from cfgtool.serve.openapi import openapi_answer
from cfgtool.serve.visibility import Visibility
from cfgtool.serve.worker import ResolverUnavailable
from cfgtool.store.keys import normalize_key
from cfgtool.versions import History
from cfgtool.versions.rollout import Selection

if TYPE_CHECKING:
    from cfgtool.serve.loaded import LoadedVersion
    from cfgtool.serve.store_state import StoreState, View

QUERIES = ("tags", "datasets", "imports", "imported-by", "explain")

Handler = Callable[[Request], Awaitable[Response]]


class AnyPath(PathConvertor):
    """The rest of the path, newlines included. Starlette's `path` stops at one, so a key holding `%0A` fell through
    every route to a plain-text 404."""

    regex = r"[\s\S]*"


register_url_convertor("anypath", AnyPath())


def immutable(view: View) -> str:
    """The Cache-Control of an answer from a numbered version: public only with `--public-cache`."""
    return f"{'public' if view.public else 'private'}, max-age=31536000, immutable"


STORES_HEADERS = {"cache-control": "no-cache", "vary": "Cfgtool-Instance"}  # `current` is each instance's


def _response(found: Answer, headers: dict[str, str] | None = None, request: Request | None = None) -> Response:
    out = dict(headers or {})
    if found.status == 200:
        out["etag"] = found.etag.decode()
        if request is not None and etag_matches(request.headers.get("if-none-match", "").encode(), found.etag):
            return Response(status_code=304, headers=out)
    else:
        out.setdefault("cache-control", "no-store")
    return Response(found.body, status_code=found.status, headers=out, media_type="application/json")


def starlette_app(api: Api, more: Sequence[BaseRoute] = ()) -> Starlette:
    """The Starlette application behind the fast path; `more` routes come before the catch-all 404."""
    handlers = _Handlers(api)

    def handled(route: str, handler: Handler) -> Handler:
        async def run(request: Request) -> Response:
            try:
                response = await handler(request)
            except Denied as exc:
                response = _response(exc.answer, {k.decode(): v.decode() for k, v in exc.headers})
            api.metrics.count(route, response.status_code)
            return response

        return run

    routes = [
        Route("/v1/stores", handled("stores", handlers.stores)),
        Route("/v1/openapi.json", handled("openapi", handlers.openapi)),
        Route("/v1/{store}/versions", handled("versions", handlers.versions)),
        Route("/v1/{store}/versions/{n}/{query}/{key:anypath}", handled("query", handlers.query)),
        Route("/v1/{store}/consumers", handled("consumers", handlers.consumers)),
        Route("/v1/{store}/consumers/{instance}", handled("report", handlers.report), methods=["POST"]),
        Route("/v1/{store}/rollouts", handled("rollouts", handlers.rollouts)),
        Route("/healthz", handled("healthz", handlers.healthz)),
        Route("/metrics", handled("metrics", handlers.metrics)),
        *more,
        Route("/{rest:anypath}", handled("other", handlers.fallback)),
    ]

    exception_handlers = {HTTPException: handlers.refused, Exception: handlers.crashed}
    return Starlette(routes=routes, exception_handlers=exception_handlers)


def _client(request: Request) -> str | None:
    """The client's address (the ACL's host)."""
    return request.client.host if request.client else None


class _Handlers:
    """The handlers of `starlette_app`'s routes, each a list of steps over `Api`."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.service = api.service
        self.document = openapi_answer()

    async def _described(self, request: Request) -> tuple[str | None, StoreState, View]:
        """The principal and the store the path names, which it may describe (`Api.described_store`)."""
        who = await self.api.principal(request.headers.raw)
        state, view = self.api.described_store(request.path_params["store"], who, _client(request))
        return who, state, view

    async def stores(self, request: Request) -> Response:
        who = await self.api.principal(request.headers.raw)
        ident = instance_of(request.headers.raw)  # each store's `current` is the instance's (a staged rollout)
        found = [
            {
                "name": state.name,
                "path": state.path,
                "current": state.view.current_for(ident),
                "seq": self.service.feeds[state.name].seq,
            }
            for state in self.api.listed_stores(who, _client(request))
        ]
        return _response(answer(found), STORES_HEADERS, request)

    async def versions(self, request: Request) -> Response:
        who, _, view = await self._described(request)
        counted = Visibility.of_store(view, who, _client(request)).counts
        return _response(view.versions_answer if counted else view.versions_uncounted, request=request)

    async def query(self, request: Request) -> Response:
        who = await self.api.principal(request.headers.raw)
        state, view = self.api.store(request.path_params["store"], who)
        kind = request.path_params["query"]
        if kind not in QUERIES:
            raise not_found(f"no query {kind!r} (queries: {', '.join(QUERIES)})")
        loaded = await self.api.version(state, url_version(request.path_params["n"]))
        key = self.api.key(request.path_params["key"])
        missing = f"{key} has no node in version {loaded.version} of store {state.name}"
        seen = self.api.check(
            view, loaded, who, "read" if kind == "explain" else "describe", key, _client(request), missing
        )
        recursive = request.query_params.get("recursive", "0") in ("1", "true")
        path = request.query_params.get("path")
        headers = {"cache-control": immutable(view), **({} if key in loaded.nodes else {"cfgtool-node": "none"})}
        if kind == "explain":
            if path is None:
                raise Denied(error(400, "bad_request", "explain needs ?path=P (a HOCON path)"))
            try:
                split_path(path)
            except HoconError as exc:
                raise Denied(error(400, "bad_path", f"{path!r} is not a HOCON path: {exc.message}")) from exc
            found = await explain_answer(self.api, state, loaded, key, path, who, _client(request))
            if who is not None:
                found = answer(seen.explain(json.loads(found.body), state.path))
            return _response(found, headers, request)
        needs_node = kind in ("datasets", "imported-by") or (kind == "imports" and not recursive)
        if needs_node and key not in loaded.nodes:
            raise not_found(missing)
        found = await asyncio.to_thread(query_answer, loaded, kind, key, recursive)
        if who is not None:  # drop what the principal may not describe
            found = answer(seen.query(json.loads(found.body)))
        return _response(found, headers, request)

    async def consumers(self, request: Request) -> Response:
        """Who reads which version of the store, as this server heard it (`describe` on the store)."""
        who, state, view = await self._described(request)
        seen = None
        if who is not None and view.current is not None:  # a report's text only to who may read its keys
            seen = Visibility.of(view, await self.api.version(state, view.current), who, _client(request))
        listing = self.service.consumers[state.name].listing(time.time(), seen)
        return _response(prebuilt(listing), {"cache-control": "no-store"})

    async def rollouts(self, request: Request) -> Response:
        """Every version with a staged rollout, in `rollout status`'s form; the cohort among this server's clients
        (`describe` on the store). Only counts come from the consumers, never their reports' text."""
        _, state, _ = await self._described(request)
        view = state.view  # the tags every other answer of this view was chosen from
        if view.tags is None or view.selection is None:
            return _response(answer([]), {"cache-control": "no-store"})
        heard = self.service.consumers[state.name].listing(time.time())
        found = await asyncio.to_thread(rollout_statuses, view.tags, view.selection, heard)
        return _response(answer(found), {"cache-control": "no-store"})

    async def report(self, request: Request) -> Response:
        """An instance's report of the version it applied and of its last attempt, or of an error it met on a
        version (`describe` on the store)."""
        who, state, _ = await self._described(request)
        ident = request.path_params["instance"]
        if not INSTANCE.fullmatch(ident.encode("utf-8", "replace")):
            what = "an instance id is 1 to 200 visible ASCII characters but /, the first a letter or digit"
            raise Denied(error(400, "bad_instance", what))
        try:
            posted = _report(await _body(request))
        except BadReport as exc:
            code = "too_large" if exc.status == 413 else "bad_request"
            raise Denied(error(exc.status, code, str(exc))) from None
        agent = kind_of(request.headers.get("user-agent", "").encode("latin-1", "replace"))
        registry, now = self.service.consumers[state.name], time.time()
        if posted.applies:
            found = registry.report(ident, who, agent, _client(request), posted.applied, posted.check, now)
        if posted.error is not None:
            found = registry.error(ident, who, agent, _client(request), *posted.error, now)
        return _response(answer(found.to_json()), {"cache-control": "no-store"})

    async def healthz(self, request: Request) -> Response:
        """Anyone may ask (load balancers send no token); an unknown token only loses the details."""
        try:
            who = await self.api.principal(request.headers.raw) if "authorization" in request.headers else None
        except Denied:
            who = None
        doc = self.service.health(who)
        status = 503 if doc["status"] == "starting" else 200
        return JSONResponse(doc, status_code=status, headers={"cache-control": "no-store"})

    async def metrics(self, request: Request) -> Response:
        """Open without access control or with `--public-metrics`. Else a token's principal sees the series of the
        stores it may describe, as `/v1/stores` lists them. One that may describe none is refused. That is 503 rather
        than 403 while a store still loads: its ACL may yet allow it."""
        shown: list[str] | None = None
        if self.service.tokens is not None and not self.service.options.public_metrics:
            who = await self.api.principal(request.headers.raw)
            shown = [state.name for state in self.api.listed_stores(who, _client(request))]
            if not shown and not all(state.ready for state in self.service.stores.values()):  # cannot judge yet
                raise Denied(error(503, "not_ready", "the stores are still loading their versions: retry shortly"))
            if not shown:
                what = f"{who} may describe no store: metrics need `describe` on a store (docs/serving.md)"
                raise Denied(error(403, "forbidden", what))
        return Response(self.api.metrics.render(shown), media_type=CONTENT_TYPE, headers={"cache-control": "no-store"})

    async def openapi(self, request: Request) -> Response:
        return _response(self.document, {"cache-control": "no-cache"}, request)

    async def fallback(self, request: Request) -> Response:
        raise not_found(f"no such endpoint: {request.url.path}")

    async def crashed(self, request: Request, exc: Exception) -> Response:
        return _response(internal(exc, request.scope))

    async def refused(self, request: Request, exc: Exception) -> Response:
        """Starlette's one refusal: a method other than GET or HEAD (405). It is a JSON error like every other. Or it
        is the page of the part whose path it is (`Api.error_page`: the console's under /ui)."""
        refusal = cast(HTTPException, exc)  # the handler of HTTPException only
        what = (
            f"{request.method} is not answered here: the API is read-only (GET and HEAD), but for an instance's"
            " report (POST /v1/{store}/consumers/{instance})"
        )
        found, headers = error(refusal.status_code, "method_not_allowed", what), dict(refusal.headers or {})
        page = self.api.error_page(request.url.path)
        if page is None:
            return _response(found, headers)
        response = page(found, request)
        response.headers.update(headers)
        return response


def rollout_statuses(known: History, chosen: Selection, heard: bytes) -> list[dict[str, Any]]:
    """The status of every rollout in the view's tags (`known`, `chosen`). Its cohort is counted among `heard`, this
    server's consumers listing (decoded here, off the event loop)."""
    return statuses(known, chosen, reports=[ServerReport("this server", json.loads(heard))])


def query_answer(loaded: LoadedVersion, kind: str, key: str, recursive: bool) -> Answer:
    """The unfiltered answer of query `kind` (`tags`, `imports`, `imported-by`, `datasets`) about `key` in version
    `loaded`. It comes from its cache, built from the version's import relations. The first `imported-by` or
    `datasets` of a version indexes them, so call it off the event loop. Denied 400 for `datasets` of a key that is
    not a tag; UnresolvableKeyError for a key on or behind an import cycle."""
    exists = key in loaded.nodes

    def build() -> dict[str, Any]:
        found = loaded.relations
        if kind == "tags":
            return {"key": key, "exists": exists, "tags": found.tags(key)}
        if kind == "imports":
            return {"key": key, "exists": exists, "recursive": recursive, "imports": found.imports(key, recursive)}
        if kind == "imported-by":
            return {"key": key, "recursive": recursive, "imported_by": found.imported_by(key, recursive)}
        if not found.is_tag(key):
            roots = ", ".join(found.tag_roots)
            raise Denied(error(400, "not_a_tag", f"{key} is not a tag (tags are under {roots})"))
        return {"tag": key, "datasets": found.datasets(key)}

    return loaded.cached((kind, key, recursive), build)


REPORT_BYTES = 4096  # the largest report body read


class BadReport(ValueError):
    """A report the server refuses: its status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _body(request: Request) -> Any:
    """A report's JSON body, reading at most `REPORT_BYTES` of it. The one JSON a client sends the server:
    nesting deep enough to exhaust the parser's recursion (`[[[...`) is a 400 like any other bad body."""
    data = b""
    async for chunk in request.stream():
        data += chunk
        if len(data) > REPORT_BYTES:
            raise BadReport(413, f"a report has at most {REPORT_BYTES} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise BadReport(400, "a report is a JSON object") from None


def _version(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 999_999_999:
        raise BadReport(400, f"{what} is a version number (1 to 9 digits)")
    return value


def _keys(value: Any) -> list[str] | None:
    """A report's `last_check.keys`: the keys its files were rendered from, normalized (None: not said)."""
    if value is None:
        return None
    what = f'last_check.keys is a list of at most {CHECK_KEYS} keys, such as ["/data/a"]'
    if not isinstance(value, list) or len(value) > CHECK_KEYS or not all(isinstance(k, str) for k in value):
        raise BadReport(400, what)
    try:
        return sorted({normalize_key(k, None) for k in value})
    except CfgtoolError as exc:
        raise BadReport(400, f"{what}: {exc.message}") from None


class Posted(NamedTuple):
    """A report's parts. `applies`: it says which version the instance applied (`applied`, None for none yet) and
    its last attempt (`check`). `error`: the version it met an error on and the error's message."""

    applies: bool
    applied: int | None
    check: dict[str, Any] | None
    error: tuple[int, str | None] | None


def _report(doc: Any) -> Posted:
    """The parts of a report `{"applied": N | null, "last_check": {"version", "ok", "message", "keys"}}`, or of
    `{"error": {"version": N, "message": text | null}}`, or of both in one."""
    what = 'a report is {"applied": N | null, "last_check": {...}} or {"error": {"version": N, "message": text}}'
    if not isinstance(doc, dict) or ("applied" not in doc and doc.get("error") is None):
        raise BadReport(400, what)
    met = doc.get("error")
    if met is not None and (not isinstance(met, dict) or not isinstance(met.get("message"), str | None)):
        raise BadReport(400, 'error is {"version": N, "message": text | null}')
    failed = None if met is None else (_version(met.get("version"), "error.version"), _text(met.get("message")))
    if "applied" not in doc:
        return Posted(False, None, None, failed)
    applied, check = _applied(doc)
    return Posted(True, applied, check, failed)


def _text(message: str | None) -> str | None:
    return None if message is None else message[:MESSAGE_LIMIT]


def _applied(doc: dict[str, Any]) -> tuple[int | None, dict[str, Any] | None]:
    """(applied, last check) of a report that says what the instance applied."""
    applied = None if doc["applied"] is None else _version(doc["applied"], "applied")
    check = doc.get("last_check")
    if check is None:
        return applied, None
    message = check.get("message") if isinstance(check, dict) else None
    if not isinstance(check, dict) or not isinstance(check.get("ok"), bool) or not isinstance(message, str | None):
        raise BadReport(400, 'last_check is {"version": N, "ok": true | false, "message": text | null}')
    kept = {"version": _version(check.get("version"), "last_check.version"), "ok": check["ok"],
            "message": _text(message), "keys": _keys(check.get("keys"))}  # fmt: skip
    return applied, kept


async def explain_answer(
    api: Api, state: StoreState, loaded: LoadedVersion, key: str, path: str, who: str | None, host: str | None
) -> Answer:
    """The unfiltered explain of `key` at `path` (a valid HOCON path) in version `loaded`, from its cache. Else it
    comes from the store's resolver process, as one of the reads that wait for it. Past that bound: Denied 429
    (`Api.resolving`). Denied 503 `resolver_unavailable` when that process does not answer in time."""

    async def build() -> dict[str, Any]:
        with api.resolving(who, host):
            return await state.explain(loaded.version, key, path)

    try:
        return await loaded.cached_async(("explain", key, path), build)
    except ResolverUnavailable as exc:
        raise Denied(error(503, "resolver_unavailable", exc.message), [(b"retry-after", b"1")]) from exc
