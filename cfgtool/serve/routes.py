"""The Starlette routes of docs/serving.md other than the hot key reads: stores, versions, queries, readiness, metrics
and the API's OpenAPI document."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from starlette.applications import Starlette
from starlette.convertors import PathConvertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from cfgtool.hocon import HoconError, split_path
from cfgtool.serve.answers import Answer, answer, error, etag_matches
from cfgtool.serve.metrics import CONTENT_TYPE
from cfgtool.serve.openapi import openapi_answer

if TYPE_CHECKING:
    from cfgtool.serve.app import Api

QUERIES = ("tags", "datasets", "imports", "imported-by", "explain")

Handler = Callable[[Request], Awaitable[Response]]


class AnyPath(PathConvertor):
    """The rest of the path, newlines included (Starlette's `path` stops at one, so a key holding `%0A` fell
    through every route to a plain-text 404)."""

    regex = r"[\s\S]*"


register_url_convertor("anypath", AnyPath())


def _response(found: Answer, headers: dict[str, str] | None = None, request: Request | None = None) -> Response:
    out = dict(headers or {})
    if found.status == 200:
        out["etag"] = found.etag.decode()
        if request is not None and etag_matches(request.headers.get("if-none-match", "").encode(), found.etag):
            return Response(status_code=304, headers=out)
    else:
        out.setdefault("cache-control", "no-store")
    return Response(found.body, status_code=found.status, headers=out, media_type="application/json")


def starlette_app(api: Api) -> Starlette:
    """The Starlette application behind the fast path."""
    from cfgtool.serve.app import Denied, internal, not_found, version_number

    service = api.service

    def handled(route: str, handler: Handler) -> Handler:
        async def run(request: Request) -> Response:
            try:
                response = await handler(request)
            except Denied as exc:
                response = _response(exc.answer, {k.decode(): v.decode() for k, v in exc.headers})
            api.metrics.count(route, response.status_code)
            return response

        return run

    def host(request: Request) -> str | None:
        return request.client.host if request.client else None

    async def stores(request: Request) -> Response:
        who = await api.principal(request.headers.raw)
        found = []
        for name, state in service.stores.items():
            view = state.view
            if view.acl_problem is not None:  # no current version to judge by: the store answers nothing
                continue
            if who is not None:  # only the stores it may describe (none while a store cannot judge)
                if not state.ready or view.authorizer is None:
                    continue
                if not view.authorizer.authorize(who, "describe", None, host(request)).allowed:
                    continue
            found.append({"name": name, "path": state.path, "current": state.view.current,
                          "seq": service.feeds[name].seq})  # fmt: skip
        return _response(answer(found), request=request)

    async def versions(request: Request) -> Response:
        who = await api.principal(request.headers.raw)
        state, view = api.store(request.path_params["store"], who)
        api.describe_store(state, view, who, host(request))
        return _response(view.versions_answer, request=request)

    async def query(request: Request) -> Response:
        who = await api.principal(request.headers.raw)
        state, view = api.store(request.path_params["store"], who)
        kind = request.path_params["query"]
        if kind not in QUERIES:
            raise not_found(f"no query {kind!r} (queries: {', '.join(QUERIES)})")
        loaded = await api.version(state, version_number(request.path_params["n"]))
        key = api.key(request.path_params["key"])
        missing = f"{key} has no node in version {loaded.version} of store {state.name}"
        api.check(view, loaded, who, "read" if kind == "explain" else "describe", key, host(request), missing)
        may_describe = api.may_describe(view, loaded, who, host(request))
        recursive = request.query_params.get("recursive", "0") in ("1", "true")
        path = request.query_params.get("path")
        if kind == "explain":
            if path is None:
                raise Denied(error(400, "bad_request", "explain needs ?path=P (a HOCON path)"))
            try:
                split_path(path)
            except HoconError as exc:
                raise Denied(error(400, "bad_path", f"{path!r} is not a HOCON path: {exc.message}")) from exc
            found = await asyncio.to_thread(
                loaded.cached, ("explain", key, path), lambda: state.explain(loaded.version, key, path)
            )
            if who is not None:
                found = answer(hide_layers(json.loads(found.body), may_describe, state.path))
            return _response(found, {"cache-control": "private, max-age=31536000, immutable"}, request)
        exists = key in loaded.nodes
        needs_node = kind in ("datasets", "imported-by") or (kind == "imports" and not recursive)
        if needs_node and not exists:
            raise not_found(missing)

        def build() -> dict[str, Any]:
            snap = state.snapshot(loaded.version)
            if kind == "tags":
                return {"key": key, "exists": exists, "tags": snap.tags(key)}
            if kind == "imports":
                return {"key": key, "exists": exists, "recursive": recursive, "imports": snap.imports(key, recursive)}
            if kind == "imported-by":
                return {"key": key, "recursive": recursive, "imported_by": snap.imported_by(key, recursive)}
            if not snap.is_tag(key):
                roots = ", ".join(snap.tag_roots)
                raise Denied(error(400, "not_a_tag", f"{key} is not a tag (tags are under {roots})"))
            return {"tag": key, "datasets": snap.datasets(key)}

        found = await asyncio.to_thread(loaded.cached, (kind, key, recursive), build)
        if who is not None:  # drop what the principal may not describe
            found = answer(_filter(found, may_describe))
        return _response(found, {"cache-control": "private, max-age=31536000, immutable"}, request)

    async def healthz(request: Request) -> Response:
        """Anyone may ask (load balancers send no token); an unknown token only loses the details."""
        try:
            who = await api.principal(request.headers.raw) if "authorization" in request.headers else None
        except Denied:
            who = None
        doc = service.health(who)
        status = 503 if doc["status"] == "starting" else 200
        return JSONResponse(doc, status_code=status, headers={"cache-control": "no-store"})

    async def metrics(request: Request) -> Response:
        return Response(api.metrics.render(), media_type=CONTENT_TYPE)

    document = openapi_answer()

    async def openapi(request: Request) -> Response:
        return _response(document, {"cache-control": "no-cache"}, request)

    async def fallback(request: Request) -> Response:
        raise not_found(f"no such endpoint: {request.url.path}")

    routes = [
        Route("/v1/stores", handled("stores", stores)),
        Route("/v1/openapi.json", handled("openapi", openapi)),
        Route("/v1/{store}/versions", handled("versions", versions)),
        Route("/v1/{store}/versions/{n}/{query}/{key:anypath}", handled("query", query)),
        Route("/healthz", handled("healthz", healthz)),
        Route("/metrics", handled("metrics", metrics)),
        Route("/{rest:anypath}", handled("other", fallback)),
    ]

    async def crashed(request: Request, exc: Exception) -> Response:
        return _response(internal(exc, request.scope))

    async def refused(request: Request, exc: Exception) -> Response:
        """Starlette's one refusal, a method other than GET or HEAD (405), as a JSON error like every other."""
        refusal = cast(HTTPException, exc)  # the handler of HTTPException only
        what = f"{request.method} is not answered here: the API is read-only (GET and HEAD)"
        return _response(error(refusal.status_code, "method_not_allowed", what), dict(refusal.headers or {}))

    return Starlette(routes=routes, exception_handlers={HTTPException: refused, Exception: crashed})


def _filter(found: Answer, may_describe: Callable[[str], bool]) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(found.body)
    for field in ("tags", "imports", "imported_by", "datasets"):
        if field in doc:
            doc[field] = [k for k in doc[field] if may_describe(k)]
    return doc


HIDDEN_LAYER = "[hidden layer]"


def hide_layers(doc: dict[str, Any], may_describe: Callable[[str], bool], store_path: str) -> dict[str, Any]:
    """An explain answer as a principal may see it: each layer it may not describe shows as `[hidden layer]`
    (its value, origin and how it was reached dropped; `hidden_layers` counts them); how a visible layer was
    reached is hidden too when it names a hidden one, and so is any origin in a file outside the
    directories of the visible layers."""
    hidden = {lv["layer"] for lv in doc["layers"] if not may_describe(lv["layer"])}
    if not hidden:
        return {**doc, "hidden_layers": 0}
    prefix = f"{store_path}/" if store_path else ""
    shown = [f"{prefix}{lv['layer'][1:]}".rstrip("/") for lv in doc["layers"] if lv["layer"] not in hidden]

    def origin(o: dict[str, Any] | None) -> dict[str, Any] | None:
        if o is None:
            return None
        folder = str(o["file"]).rsplit("/", 1)[0] if "/" in str(o["file"]) else ""
        return o if folder in shown else None

    def names_hidden(text: str) -> bool:
        return any(f"{k} " in f"{text} " or f"{k})" in text for k in hidden)

    def layer(lv: dict[str, Any]) -> dict[str, Any]:
        if lv["layer"] in hidden:
            return {**lv, "layer": HIDDEN_LAYER, "value": None, "origin": None,
                    **({"reached": HIDDEN_LAYER} if "reached" in lv else {})}  # fmt: skip
        out = {**lv, "origin": origin(lv["origin"])}
        if "reached" in lv and names_hidden(str(lv["reached"])):
            out["reached"] = f"through a {HIDDEN_LAYER}"
        return out

    return {
        **doc,
        "origin": origin(doc["origin"]),
        "sources": [s for s in (origin(o) for o in doc["sources"]) if s is not None],
        "overridden": [layer(lv) for lv in doc["overridden"]],
        "layers": [layer(lv) for lv in doc["layers"]],
        "hidden_layers": len(hidden),
    }
