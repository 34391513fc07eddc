"""What one principal may see of one served version: the single filter of the JSON API and the console.

Every answer about a version's keys is judged here, whether a JSON body or a console page or fragment. So the two can
never disagree (docs/access.md). Both the current version's ACL and the version's own must allow an operation; a deny
in either wins. A key without a node answers with its nearest node's config. So the same right is needed on that node
too. A key the principal may not describe appears nowhere: 404, as a key that does not exist. An explain shows a
layer it may not describe as `[hidden layer]`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cfgtool.access.authorizer import Authorizer
    from cfgtool.serve.loaded import LoadedVersion
    from cfgtool.serve.store_state import View

HIDDEN_LAYER = "[hidden layer]"
QUERY_FIELDS = ("tags", "imports", "imported_by", "datasets")


class Visibility:
    """The rights of `who` (None: access control is off) from address `host` over the answers of one version."""

    def __init__(
        self,
        judges: Sequence[Authorizer],
        who: str | None,
        host: str | None,
        nearest: Callable[[str], str] = lambda key: key,
    ) -> None:
        self.judges = tuple(judges) if who is not None else ()
        self.who = who
        self.host = host
        self.nearest = nearest

    @classmethod
    def of(cls, view: View, loaded: LoadedVersion, who: str | None, host: str | None) -> Visibility:
        """The rights over answers from `loaded`: judged by the current version's ACL and the version's own."""
        if who is None:
            return cls((), None, host)
        found = [a for a in (view.authorizer, loaded.authorizer) if a is not None]
        if len(found) == 2 and found[0] is found[1]:
            found = found[:1]
        return cls(found, who, host, loaded.nearest)

    @classmethod
    def of_store(cls, view: View, who: str | None, host: str | None) -> Visibility:
        """The rights over a store's own answers: its versions, its change feed. The current version's ACL judges
        them, as it judges `describe` on the store."""
        judge = view.authorizer
        return cls((judge,) if judge is not None else (), who, host)

    @property
    def sees_everything(self) -> bool:
        """Whether nothing is filtered: no access control, or a super user under every judging ACL."""
        return self.who is None or all(a.is_super_user(self.who) for a in self.judges)

    @property
    def counts(self) -> bool:
        """Whether counts over all the keys of a version are shown, such as its nodes or the keys an event changed.
        Only a principal that sees everything sees them. Such a count takes in keys others may not describe, and the
        server keeps no list of them to count again per principal."""
        return self.sees_everything

    def count(self, n: int | None) -> int | None:
        """A count over all the keys of a version as this principal may see it (`counts`): else None."""
        return n if self.counts else None

    def may(self, operation: str, key: str) -> bool:
        """Whether every judging ACL allows `operation` on the node `key` (no nearest-node rule: for listings)."""
        who = self.who
        return who is None or all(a.authorize(who, operation, key, self.host).allowed for a in self.judges)

    def describes(self, key: str) -> bool:
        """Whether `key` (a node) may appear at all: in a tree, a search, a graph, a diff or a count."""
        return self.may("describe", key)

    def verdict(self, key: str, operation: str) -> int:
        """The status of an answer about `key` (a node or not). 404 when the principal may not describe it or its
        nearest node. 403 when it may describe but not `operation` them. Else 200."""
        if self.who is None:
            return 200
        resources = {key, self.nearest(key)}
        if not all(self.may("describe", k) for k in resources):
            return 404
        if operation != "describe" and not all(self.may(operation, k) for k in resources):
            return 403
        return 200

    def near_node(self, loaded: LoadedVersion, key: str) -> str | None:
        """A node of `loaded` whose key is close to `key` (which has no node), for a did-you-mean. Only one the
        principal may describe: a suggestion never names a node it may not know of."""
        near = loaded.near_node(key)
        return near if near is not None and self.describes(near) else None

    def keys(self, keys: Iterable[str]) -> list[str]:
        """`keys` without those the principal may not describe, in their order."""
        return list(keys) if self.who is None else [k for k in keys if self.describes(k)]

    def query(self, doc: dict[str, Any]) -> dict[str, Any]:
        """A query's answer (`tags`, `imports`, `imported_by`, `datasets`) with only the keys it may describe."""
        if self.who is None:
            return doc
        return {**doc, **{f: self.keys(doc[f]) for f in QUERY_FIELDS if f in doc}}

    def explain(self, doc: dict[str, Any], store_path: str) -> dict[str, Any]:
        """An explain answer as the principal may see it. Each layer it may not describe shows as `[hidden layer]`.
        Its value, origin and how it was reached are dropped; `hidden_layers` counts them. How a visible layer was
        reached is hidden too when it names a hidden one. So is any origin in a file outside the directories of the
        visible layers."""
        if self.who is None:
            return doc
        hidden = {lv["layer"] for lv in doc["layers"] if not self.describes(lv["layer"])}
        if not hidden:
            return {**doc, "hidden_layers": 0}
        prefix = f"{store_path}/" if store_path else ""
        shown = [f"{prefix}{lv['layer'][1:]}".rstrip("/") for lv in doc["layers"] if lv["layer"] not in hidden]

        def origin(o: dict[str, Any] | None) -> dict[str, Any] | None:
            if o is None:
                return None
            if "intrinsic" in o:  # `${cfgtool.name}`: the key's own name, no file
                return o
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
