"""The console's access page (docs/console.md): who may do what on a key, and the ACL rule that decided.

`/ui/{store}/v/{N}/access/{key}` is `cfgtool acl check` for each key operation, by the same `Authorizer`. It checks
under version N's own ACL. When N is not the current version, it checks under the current version's too: an answer
about N's keys must pass both. A signed-in person sees their own rights. Asking about another principal
(`?principal=`) needs `describe_acl` on the store, as the ACL itself is described. So does the list of the ACL
entries that apply to the key. Without tokens (loopback) everything may be asked, as with the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from cfgtool.access.acl import checked_principal
from cfgtool.access.operations import KEY_OPERATIONS
from cfgtool.errors import UsageError
from cfgtool.serve.answers import Denied, error, not_found

if TYPE_CHECKING:
    from cfgtool.access.authorizer import Authorizer
    from cfgtool.console.context import Context

MAX_PRINCIPAL = 200  # characters of an asked-for principal read at most


async def access_page(ctx: Context) -> Response:
    """Per key operation: allowed or denied, and the deciding rule, under each ACL that judges version N."""
    loaded, state, view = ctx.loaded, ctx.state, ctx.view
    assert loaded is not None and state is not None and view is not None
    key = ctx.console.key(ctx.request)
    if ctx.seen.verdict(key, "describe") == 404:
        raise not_found(f"store {state.name} has no key {key} in version {loaded.version}")
    own, problem = state.acl(loaded.commit)  # the version's ACL, also when the server judges nothing (no tokens)
    judges: list[tuple[str, Authorizer]] = [(f"version {loaded.version}", own)]
    if view.current is not None and view.current != loaded.version and view.authorizer is not None:
        judges.append((f"the current version ({view.current})", view.authorizer))
    may_describe_acl = ctx.who is None or all(
        judge.authorize(ctx.who, "describe_acl", None, ctx.host).allowed for _, judge in judges
    )
    asked = ctx.request.query_params.get("principal", "").strip()[:MAX_PRINCIPAL]
    host = ctx.host
    who: str | None
    mistake = None  # what is wrong with the principal asked about, said beside the form (400) instead of an answer
    if asked:
        if not may_describe_acl:
            raise Denied(error(403, "forbidden", f"{ctx.who} may not describe the ACL, so only its own rights"))
        try:
            who = checked_principal(asked)
        except UsageError as exc:
            who, mistake = None, f"{exc.message}: {exc.hint}."
        host = ctx.request.query_params.get("host", "").strip()[:64] or None
    else:
        who = ctx.who
    rows: list[dict[str, Any]] = []
    if who is not None:
        for operation in KEY_OPERATIONS:
            decisions = [judge.authorize(who, operation, key, host) for _, judge in judges]
            rows.append({"operation": operation, "allowed": all(d.allowed for d in decisions), "decisions": decisions})
    entries = []
    if may_describe_acl:
        entries = own.entries(None, key)
    return ctx.render(
        "access.html",
        400 if mistake else 200,
        key=key,
        principal=who,
        asked=asked,
        host=host if asked else None,
        judges=[label for label, _ in judges],
        rows=rows,
        acl_file=own.acl.file,
        acl_present=own.acl.present,
        problem=problem,
        mistake=mistake,
        may_ask=may_describe_acl,
        entries=entries,
    )
