"""Kafka's StandardAuthorizer, for config keys and the store (docs/access.md#the-acl).

A decision: a super user is allowed. Else any matching `deny` denies. Else any matching `allow` allows. Else, when no
entry at all names the resource, `allow_everyone_if_no_acl_found` decides. Else it is denied. An `allow` of read,
create, alter or delete also allows describe. One of alter_acl allows describe_acl. A `deny` implies nothing.
`describe` on the store is also allowed to a principal that may describe at least one key of it. An explicit deny of
it on the store still wins. Entries are indexed once: literal keys in a dict, prefixes by length. So a decision over
thousands of entries costs a few dictionary lookups, not a scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from cfgtool.access.acl import Acl, Entry
from cfgtool.access.operations import KEY_OPERATIONS, OPERATIONS, STORE, STORE_OPERATIONS
from cfgtool.errors import UsageError

_IMPLIES = {"describe": frozenset({"read", "create", "alter", "delete"}), "describe_acl": frozenset({"alter_acl"})}


@dataclass(frozen=True)
class Decision:
    """Whether `principal` may do `operation` on `resource` (a key, or `store`), why, and the deciding entry."""

    allowed: bool
    reason: str
    rule: Entry | None
    principal: str = ""
    operation: str = ""
    resource: str = ""

    def to_json(self) -> dict[str, Any]:
        """docs/access.md#the-acl's `acl check --format json` object."""
        return {
            "principal": self.principal,
            "operation": self.operation,
            "resource": self.resource,
            "allowed": self.allowed,
            "reason": self.reason,
            "rule": None if self.rule is None else self.rule.to_json(),
        }


class Authorizer:
    """Decisions under one ACL (`authorize`), and the entries that apply to a principal or key (`entries`)."""

    def __init__(self, acl: Acl) -> None:
        self.acl = acl
        self._literal: dict[str, list[Entry]] = {}
        self._prefixed: dict[str, list[Entry]] = {}
        self._wildcard: list[Entry] = []
        self._store: list[Entry] = []
        for entry in acl.entries:
            if entry.key is None:
                self._store.append(entry)
            elif entry.prefixed:
                self._prefixed.setdefault(entry.key, []).append(entry)
            elif entry.key == "*":
                self._wildcard.append(entry)
            else:
                self._literal.setdefault(entry.key, []).append(entry)
        self._lengths = sorted({len(prefix) for prefix in self._prefixed})
        self._groups: dict[str, set[str]] = {}
        for group, members in acl.groups.items():
            for member in members:
                self._groups.setdefault(member, set()).add(group)

    def identities(self, principal: str) -> frozenset[str]:
        """The principal and the groups it belongs to."""
        return frozenset({principal, *self._groups.get(principal, ())})

    def is_super_user(self, principal: str) -> bool:
        """Whether the ACL names `principal` (or a group of it) among its super users."""
        return bool(self.identities(principal) & self.acl.super_users)

    def authorize(self, principal: str, operation: str, resource: str | None, host: str | None = None) -> Decision:
        """May `principal` (`User:x`, `Group:g`) do `operation` on `resource` from `host`? `resource` is a normalized
        key, or None or `store` for the store. `host` None is no address, so only entries for any host apply."""
        on_store = resource is None or resource == STORE
        shown = STORE if on_store else str(resource)
        if operation not in OPERATIONS:
            raise UsageError(f"unknown operation {operation!r}", hint=f"use one of {', '.join(OPERATIONS)}")
        if operation not in (STORE_OPERATIONS if on_store else KEY_OPERATIONS):
            kind = "keys" if on_store else "the store"
            raise UsageError(f"{operation} is an operation on {kind}", hint="check the operation and the resource")

        def decide(allowed: bool, reason: str, rule: Entry | None = None) -> Decision:
            return Decision(allowed, reason, rule, principal, operation, shown)

        acl = self.acl
        if not acl.present:
            return decide(True, "the store has no ACL file: access control is off")
        identities = self.identities(principal)
        if identities & acl.super_users:
            return decide(True, "super user")
        if acl.broken:
            return decide(False, f"the ACL file {acl.file} has errors (E_ACL): only super users are allowed")
        candidates = self._store if on_store else self._for_key(str(resource))
        if on_store and operation == "describe":
            return self._describe_store(principal, host, decide)
        if not candidates:
            flag = str(acl.allow_everyone_if_no_acl_found).lower()
            return decide(acl.allow_everyone_if_no_acl_found, f"no ACL names this resource; "
                          f"allow_everyone_if_no_acl_found is {flag}")  # fmt: skip
        user = principal.startswith("User:")
        allow: Entry | None = None
        deny: Entry | None = None
        implied_by = _IMPLIES.get(operation, frozenset())
        for entry in candidates:
            if not (entry.principal in identities or (user and entry.principal == "User:*")):
                continue
            if entry.host != "*" and entry.host != host:
                continue
            exact = entry.operation in (operation, "all")
            if entry.permission == "deny":
                if exact and (deny is None or _order(entry) < _order(deny)):
                    deny = entry
            elif (exact or entry.operation in implied_by) and (allow is None or _order(entry) < _order(allow)):
                allow = entry
        if deny is not None:
            return decide(False, deny.describe(), deny)
        if allow is not None:
            return decide(True, allow.describe(), allow)
        return decide(False, f"no ACL entry allows {principal} to {operation} {shown}")

    def _matching(self, entries: Iterable[Entry], principal: str, host: str | None) -> Iterable[Entry]:
        """The entries that apply to `principal` (its groups, `User:*`) from `host`."""
        identities = self.identities(principal)
        user = principal.startswith("User:")
        for entry in entries:
            if (entry.principal in identities or (user and entry.principal == "User:*")) and entry.host in ("*", host):
                yield entry

    def _describe_store(self, principal: str, host: str | None, decide: Callable[..., Decision]) -> Decision:
        """`describe` on the store. An entry on the store decides, a deny first. Else it is implied by the right to
        describe any key. Else `allow_everyone_if_no_acl_found` decides, when no entry names the store."""
        deny = allow = None
        for entry in self._matching(self._store, principal, host):
            if entry.operation in ("describe", "all"):
                if entry.permission == "deny" and (deny is None or _order(entry) < _order(deny)):
                    deny = entry
                elif entry.permission == "allow" and (allow is None or _order(entry) < _order(allow)):
                    allow = entry
        if deny is not None:
            return decide(False, deny.describe(), deny)
        if allow is not None:
            return decide(True, allow.describe(), allow)
        implied = self._a_describable_key(principal, host)
        if implied is not None:
            reason = f"may describe a key of the store: {implied.describe()}" if isinstance(implied, Entry) else implied
            return decide(True, reason, implied if isinstance(implied, Entry) else None)
        if not self._store and self.acl.allow_everyone_if_no_acl_found:
            return decide(True, "no ACL names this resource; allow_everyone_if_no_acl_found is true")
        return decide(False, f"no ACL entry allows {principal} to describe the store or any of its keys")

    def _a_describable_key(self, principal: str, host: str | None) -> Entry | str | None:
        """The entry that lets `principal` describe some key, or the reason when no entry names that key. None when
        it may describe none. A prefix (or `*`) allows some key unless a deny covers all of it."""
        entries = [*self._wildcard, *(e for es in self._literal.values() for e in es),
                   *(e for es in self._prefixed.values() for e in es)]  # fmt: skip
        if self.acl.allow_everyone_if_no_acl_found and not self._wildcard and "/" not in self._prefixed:
            return "no ACL names some of its keys; allow_everyone_if_no_acl_found is true"
        mine = list(self._matching(entries, principal, host))
        denies = [e for e in mine if e.permission == "deny" and e.operation in ("describe", "all")]
        for entry in sorted(mine, key=_order):
            if entry.permission != "allow" or entry.operation not in ("all", "describe", *_IMPLIES["describe"]):
                continue
            if entry.key is not None and not entry.prefixed and entry.key != "*":
                if self.authorize(principal, "describe", entry.key, host).allowed:
                    return entry
                continue
            covered = "/" if entry.key == "*" else str(entry.key)
            if not any(d.key == "*" or (d.prefixed and covered.startswith(str(d.key))) for d in denies):
                return entry
        return None

    def _for_key(self, key: str) -> list[Entry]:
        found = [*self._literal.get(key, ()), *self._wildcard]
        for length in self._lengths:
            if length > len(key):
                break
            found += self._prefixed.get(key[:length], ())
        return found

    def entries(self, principal: str | None = None, key: str | None = None) -> list[Entry]:
        """The entries that apply to `principal` and to `key`, in file order; None: any. A principal's entries
        include those of its groups and of `User:*`. A key's are its literal, wildcard and prefix entries."""
        pool: Iterable[Entry] = self.acl.entries if key is None else self._for_key(key)
        if principal is not None:
            identities = self.identities(principal)
            user = principal.startswith("User:")
            pool = [e for e in pool if e.principal in identities or (user and e.principal == "User:*")]
        return sorted(pool, key=_order)


def _order(entry: Entry) -> tuple[str, int]:
    return (entry.file or "", entry.line or 0)
