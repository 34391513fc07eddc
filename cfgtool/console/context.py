"""What every console page shares. That is the request's context: who asks, the store and version it reads, what it
may see of them. Also the console's templates, sessions and sign-in, and the answers' security headers.

Page modules (`pages`, `changes`, `rights`) import from here. `pages.routes` gathers them, so no page module imports
another.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, urlencode, urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from cfgtool.console.session import COOKIE, LIFETIME, MAX_TOKEN, Sessions
from cfgtool.serve.accesslog import PRINCIPAL
from cfgtool.serve.answers import Answer, Bounded, Denied, error, url_version
from cfgtool.serve.loaded import LoadedVersion
from cfgtool.serve.protocol import HEAD_LIMIT
from cfgtool.serve.store_state import StoreState, View
from cfgtool.serve.tokens import token_id
from cfgtool.serve.visibility import Visibility
from cfgtool.versions.diff import ABSENT

if TYPE_CHECKING:
    from cfgtool.serve.app import Api
    from cfgtool.versions.audit import KeyHistory

CSP = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "x-frame-options": "DENY",
}
TIMELINE_SHOWN = 200  # events on the timeline page (the newest; how many older ones there are is said)
MAX_BODY = 4096  # bytes of a sign-in form read at most
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
REFUSALS = {  # errors the server answers before the console's routes run: a page's heading and what to do
    431: (
        "this address is too long",
        f"The address (with the request's headers) is over {HEAD_LIMIT // 1024} KB, more than the server reads: it"
        " was perhaps pasted twice or cut from a longer text. Open the page from the console's links, or shorten the"
        " search or key in it.",
    ),
    421: (
        "this server answers its own machine only",
        "Without tokens it shows everything to everyone on its machine, so it answers only the machine's own names"
        " and addresses (localhost, 127.0.0.1), never a site's name, which a page of that site could point at it."
        " Open it as http://127.0.0.1 or http://localhost, on the same port.",
    ),
    405: (
        "this page cannot be sent a form",
        "The console is read-only: its pages are opened (GET), as its links and its own forms open them; only"
        " sign-in and sign-out take a form sent to them. Open this address as a link instead; changes go through"
        " pull requests.",
    ),
}
NO_REQUEST = {"type": "http", "method": "GET", "path": "/ui/", "query_string": b"", "headers": []}


class SignIn(Exception):
    """The request needs a signed-in session (with access control on)."""


@dataclass
class Context:
    """One console request: who asks, from where, the store and version it reads and what it may see of them."""

    request: Request
    console: Console
    who: str | None
    state: StoreState | None = None
    view: View | None = None
    loaded: LoadedVersion | None = None
    seen: Visibility = field(default_factory=lambda: Visibility((), None, None))

    @property
    def host(self) -> str | None:
        return self.request.client.host if self.request.client else None

    @property
    def fragment(self) -> bool:
        """Whether htmx asked (it swaps in a fragment, not a whole page)."""
        return self.request.headers.get("hx-request") == "true"

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        return self.console.render(self, template, status, **values)


Handler = Callable[[Context], Awaitable[Response]]


class Console:
    """The console of one server: its templates, sessions and routes."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.service = api.service
        self.sessions = Sessions(api.service.options.cache / "console")
        self.histories: Bounded[tuple[str, str, str, str | None, int], KeyHistory] = Bounded(256)  # unfiltered
        self.env = Environment(
            loader=PackageLoader("cfgtool.console", "templates"),
            autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.env.filters["urlkey"] = lambda key: quote(str(key).lstrip("/"))
        self.env.filters["when"] = _when
        self.env.filters["value"] = _value_text
        self.env.filters["iso"] = _iso
        self.env.filters["hocon_name"] = _hocon_name
        self.env.filters["breakable"] = _breakable
        self.env.tests["defined_value"] = lambda value: value is not ABSENT
        self.env.globals["kind_of"] = _kind_of
        self.static = _static_files()

    @property
    def signing_in(self) -> bool:
        """Whether people sign in (the server has tokens); without, everyone sees everything (loopback)."""
        return self.service.tokens is not None

    def render(self, ctx: Context, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        store = ctx.state.name if ctx.state is not None else None
        page, _, here = ctx.request.url.path.removeprefix(f"/ui/{store}/").partition("/")
        if page == "v":  # /ui/{store}/v/{N}/{page}/...: the switcher keeps the page (and its query: a search)
            here = here.partition("/")[2]
            page = here.partition("/")[0]
            if ctx.request.url.query:
                here += f"?{ctx.request.url.query}"
        elif page == "history":  # a key's history, of no one version: the switcher opens the key in the one chosen
            here = f"key/{here}"
        body = self.env.get_template(template).render(
            page=page or "timeline",
            here=here,
            current_version=ctx.view.current if ctx.view is not None else None,
            who=ctx.who,
            signing_in=self.signing_in,
            store=store,
            version=ctx.loaded.version if ctx.loaded is not None else None,
            versions=self._switcher(ctx),
            fragment=ctx.fragment,
            path=ctx.request.url.path,
            **values,
        )
        return HTMLResponse(body, status_code=status, headers={"cache-control": "no-store", **SECURITY_HEADERS})

    @staticmethod
    def _switcher(ctx: Context) -> list[tuple[int, str | None]]:
        """The versions the header's switcher offers (servable ones, newest first), each with its note: `current`
        or `rolled back`. A page of no one version shows the current one chosen, never the newest, which may be
        rolled back."""
        if ctx.view is None:
            return []
        current = ctx.view.current
        return [
            (p.version, "current" if p.version == current else "rolled back" if p.rolled_back_at is not None else None)
            for p in ctx.view.published[:TIMELINE_SHOWN]
        ]

    # -- who asks -----------------------------------------------------------------------------------------
    async def principal(self, request: Request) -> str | None:
        """The signed-in principal (None without access control). SignIn without a live session: none, forged,
        expired, signed out, or its token revoked. Revoked means gone from the API's tokens file, as the server last
        read it."""
        tokens = self.service.tokens
        if tokens is None:
            return None
        who = self.sessions.principal(request.cookies.get(COOKIE), tokens)
        if who is None:
            raise SignIn
        PRINCIPAL.set(who)
        return who

    async def context(self, request: Request, store: bool = True, version: bool = False) -> Context:
        """The request's context: its principal, and its store and version as the route names them. The store is
        judged as the JSON API judges `/v1/{store}/versions`. The version comes with what the principal may see of
        it."""
        ctx = Context(request, self, await self.principal(request))
        if not store:
            return ctx
        ctx.state, ctx.view = self.api.described_store(request.path_params["store"], ctx.who, ctx.host)
        if version:
            ctx.loaded = await self.api.version(ctx.state, url_version(request.path_params["n"]))
            ctx.seen = Visibility.of(ctx.view, ctx.loaded, ctx.who, ctx.host)
        elif ctx.view.current is not None:
            current = await self.api.version(ctx.state, ctx.view.current)
            ctx.seen = Visibility.of(ctx.view, current, ctx.who, ctx.host)
        return ctx

    def key(self, request: Request) -> str:
        return self.api.key(request.path_params.get("key", ""))

    # -- answers ------------------------------------------------------------------------------------------
    def page(self, name: str, handler: Handler, store: bool = True, version: bool = False) -> Callable[..., Any]:
        """A route's endpoint: the context, the handler, and errors as pages (a missing session: the sign-in)."""

        async def run(request: Request) -> Response:
            try:
                ctx = await self.context(request, store, version)
                response = await handler(ctx)
            except SignIn:
                response = self._to_sign_in(request)
            except Denied as exc:
                response = await self._error(request, exc)
            self.api.metrics.count(name, response.status_code)
            return response

        return run

    def _to_sign_in(self, request: Request) -> Response:
        """To the sign-in, then back to the page asked for, its query included; a permalink's query is part of it.
        For htmx's request of a fragment, back to the page the person is on (`HX-Current-URL`)."""
        asked = urlsplit(str(request.url))
        if request.headers.get("hx-request") == "true":
            asked = urlsplit(request.headers.get("hx-current-url", "/ui/"))
        back = asked.path + (f"?{asked.query}" if asked.query else "")
        target = "/ui/login?" + urlencode({"next": _local(back)})
        if request.headers.get("hx-request") == "true":  # htmx follows this header with a whole-page load
            return Response(status_code=401, headers={"hx-redirect": target, **SECURITY_HEADERS})
        return RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)

    async def _error(self, request: Request, exc: Denied) -> Response:
        """The error as a page, its header naming who is signed in (with the sign-out), as every page's does."""
        doc = json.loads(exc.answer.body)
        try:
            who = await self.principal(request)
        except SignIn:
            who = None
        ctx = Context(request, self, who)
        headers = {k.decode(): v.decode() for k, v in exc.headers if k.lower() != b"www-authenticate"}
        # E_NO_ACL: no version to judge or show by (none published yet, or its ACL does not load), which
        # waiting alone will not change
        heading = "this store has no version to show" if doc.get("error") == "E_NO_ACL" else None
        status = exc.answer.status
        response = self.render(ctx, "error.html", status, code=status, heading=heading, message=doc["message"])
        response.headers.update(headers)
        return response

    def error_page(self, found: Answer, request: Request | None) -> Response:
        """An error the server answers before the console's routes run (`Api.error_page` under /ui), as the console's
        error page. One is a request line and headers over 16 KB (431). It is answered before there is a request: as
        if for /ui/, with no one signed in. One is a method a page does not take (405), its header naming who is
        signed in. One is a `Host` that names another site to a server without tokens (421)."""
        who = None
        if request is not None and self.service.tokens is not None:
            who = self.sessions.principal(request.cookies.get(COOKIE), self.service.tokens)
        ctx = Context(request or Request(dict(NO_REQUEST)), self, who)
        heading, message = REFUSALS.get(found.status, (None, json.loads(found.body)["message"]))
        return self.render(ctx, "error.html", found.status, code=found.status, heading=heading, message=message)

    # -- sign-in ------------------------------------------------------------------------------------------
    async def login_form(self, request: Request) -> Response:
        ctx = Context(request, self, None)
        if not self.signing_in:
            return RedirectResponse("/ui/", status_code=303, headers=SECURITY_HEADERS)
        return self.render(ctx, "login.html", next=_local(request.query_params.get("next", "/ui/")))

    async def login(self, request: Request) -> Response:
        """`POST /ui/login` with `token` (and `next`): a session cookie and a redirect, or the form again (401)."""
        ctx = Context(request, self, None)
        if not self.signing_in:
            return RedirectResponse("/ui/", status_code=303, headers=SECURITY_HEADERS)
        if not _same_origin(request):
            return self.render(ctx, "error.html", 403, code=403, message="sign-in from another site is refused")
        form = await _form(request)
        token, target = form.get("token", "").strip()[:MAX_TOKEN], _local(form.get("next", "/ui/"))
        try:
            await self.api.principal([(b"authorization", f"Bearer {token}".encode("latin-1", "replace"))])
            entry = self.service.tokens.entry(token_id(token) or "") if self.service.tokens is not None else None
            if entry is None:  # revoked between the check and now
                raise Denied(error(401, "unauthorized", "unknown or revoked token"))
        except Denied as exc:
            message = "unknown or revoked token" if exc.answer.status == 401 else json.loads(exc.answer.body)["message"]
            return self.render(ctx, "login.html", exc.answer.status, next=target, problem=message)
        response = RedirectResponse(target, status_code=303, headers=SECURITY_HEADERS)
        secure = request.url.scheme == "https"  # or X-Forwarded-Proto from a trusted proxy (server.ForwardedFor)
        response.set_cookie(
            COOKIE,
            self.sessions.start(entry),
            max_age=LIFETIME,
            path="/ui/",
            secure=secure,
            httponly=True,
            samesite="strict",
        )
        return response

    async def logout(self, request: Request) -> Response:
        """`POST /ui/logout`: the session ends and its cookie is cleared."""
        if not _same_origin(request):
            ctx = Context(request, self, None)
            return self.render(ctx, "error.html", 403, code=403, message="sign-out from another site is refused")
        if self.service.tokens is not None:
            self.sessions.end(request.cookies.get(COOKIE), self.service.tokens)
        response = RedirectResponse(
            "/ui/login" if self.signing_in else "/ui/", status_code=303, headers=SECURITY_HEADERS
        )
        response.delete_cookie(COOKIE, path="/ui/", httponly=True, samesite="strict")
        return response

    async def static_file(self, request: Request) -> Response:
        found = self.static.get(request.path_params["name"])
        if found is None:
            return Response("not found", status_code=404, media_type="text/plain", headers=SECURITY_HEADERS)
        body, kind = found
        return Response(body, media_type=kind, headers={"cache-control": "no-cache", **SECURITY_HEADERS})


def _iso(date: Any) -> str:
    """A date (datetime, Unix seconds or ISO 8601 text) in ISO 8601, for `<time datetime>`."""
    return str(_date(date).isoformat())


def _hocon_name(name: str) -> str:
    """A field name as one element of a HOCON path (quoted unless plain)."""
    return name if name and all(c.isalnum() or c in "-_" for c in name) else json.dumps(name)


def _breakable(text: str) -> Markup:
    """A key or path, escaped, that a narrow column wraps after a `/` (`<wbr>`), never inside a name."""
    return Markup("/<wbr>").join(escape(part) for part in str(text).split("/"))


def _kind_of(value: Any) -> str:
    """How the value tree lays a value out: `object`, `list` or `leaf`."""
    return "object" if isinstance(value, dict) else "list" if isinstance(value, list) else "leaf"


def _value_text(value: Any) -> str:
    """A leaf value as HOCON would spell it (strings quoted, `[hidden]` as it is)."""
    if value == "[hidden]":
        return "[hidden]"
    return json.dumps(value, ensure_ascii=False)


def _when(date: Any) -> str:
    """A date (datetime, Unix seconds or ISO 8601 text) as `2026-11-28 01:02 UTC`."""
    from datetime import UTC

    return str(_date(date).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"))


def _date(date: Any) -> Any:
    """A datetime of a datetime, Unix seconds, or ISO 8601 text (as JSON answers spell dates)."""
    from datetime import UTC, datetime

    if isinstance(date, int | float):
        return datetime.fromtimestamp(date, UTC)
    return datetime.fromisoformat(date) if isinstance(date, str) else date


def _local(target: str) -> str:
    """A redirect target only within the console (never another site: `//evil`, `/\\evil`, a scheme)."""
    if not target.startswith("/ui/") or target.startswith(("//", "/\\")) or "\\" in target or "\n" in target:
        return "/ui/"
    return target


def _same_origin(request: Request) -> bool:
    """Whether a form post comes from the console's own pages. Browsers name the posting page's origin in `Origin`
    and `Sec-Fetch-Site`. So a post from another site (sign-in forgery) is refused."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return False
    origin = request.headers.get("origin")
    host = request.headers.get("host", "")
    return origin is None or origin in (f"http://{host}", f"https://{host}")


async def _form(request: Request) -> dict[str, str]:
    """A small urlencoded form (`MAX_BODY` bytes at most; the rest is not read)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            break
    fields = parse_qs(body[:MAX_BODY].decode("utf-8", "replace"))
    return {name: values[-1] for name, values in fields.items()}


def _static_files() -> dict[str, tuple[bytes, str]]:
    """The console's static files (CSS, scripts), read once from the package."""
    found: dict[str, tuple[bytes, str]] = {}
    folder = resources.files("cfgtool.console") / "static"
    for item in folder.iterdir():
        kind = STATIC_TYPES.get("." + item.name.rsplit(".", 1)[-1])
        if kind is not None and item.is_file():
            found[item.name] = (item.read_bytes(), kind)
    return found
