"""Who reads which version (docs/serving.md "Consumers"): each store's registry of the client instances that
asked this server, kept in memory.

Every HTTP client of cfgtool sends `Cfgtool-Instance: <id>` and `User-Agent: cfgtool/<version> (<kind>)`. Some
requests are noted. They were answered (status below 400), name a served store and carry a valid instance id. So an
unknown token or a refused principal leaves no trace. The note holds that instance's principal, kind, address and the
time. It also holds the version it read: `versions/{N}/...`, or the version a `current` answer named. An agent or a
watch also reports the version it applied and its last attempt (`POST /v1/{store}/consumers/{id}`). From then on its
version is the applied one, not what it last read. It may read a version that its check then refuses. An application
reports the errors it meets on a version (`ConfigClient.report_error()`): the instance counts them per version, for
the rollout's consumers gate, and keeps the last one's message.

Instance ids are client text: 1 to 200 visible ASCII characters but `/`, the first a letter or digit. Anything else
is not noted. Ids are keyed together with the principal, so one principal cannot overwrite another's instance. A
store keeps at most `MAX_INSTANCES`, dropping the least recently heard one. A principal keeps at most
`MAX_PER_PRINCIPAL`, dropping its own least recently heard one. So one token inventing ids cannot push the other
principals' instances out. Nor can it make every listing hold a hundred thousand of its inventions. An instance is
forgotten after `FORGET_AFTER` seconds of silence. Noting a request costs a dictionary update on the event loop; the
listing is built when asked for.

A report's text (a check's output, a template's render error) is data of the keys it was rendered from. It may quote
their values. A report names those keys (`last_check.keys`, the agent's `--file` and `--template` keys). A listing
shows its message only to a principal that may read every one of them under the current ACL. A report that names no
keys (a reported error names none) shows its message to super users only. Others see `"message": null` with
`"withheld": true`, and only the named keys they may describe (`shown_check`).
"""

from __future__ import annotations

import re
from collections import Counter, OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from cfgtool.serve.cohorts import INSTANCE
from cfgtool.snapshot.model import canonical_json

if TYPE_CHECKING:
    from cfgtool.serve.visibility import Visibility

MAX_INSTANCES = 100_000
MAX_PER_PRINCIPAL = 10_000  # without tokens every instance has the same principal (None): the same bound
FORGET_AFTER = 24 * 3600.0
USER_AGENT = re.compile(rb"cfgtool/[!-~]{1,40} \((client|watch|agent|cli)\)")
MESSAGE_LIMIT = 500  # characters of a reported check's message kept
CHECK_KEYS = 100  # keys a report may name
ERROR_VERSIONS = 10  # versions an instance keeps error counts of (the highest)


@dataclass(slots=True)
class Instance:
    """One client instance as this server knows it."""

    id: str
    principal: str | None
    kind: str
    address: str | None
    version: int | None  # the version it reads (or, once it reported, the one it applied)
    last_contact: float
    reported: bool = False
    last_check: dict[str, Any] | None = None  # {"version", "ok", "message", "keys", "at"}
    errors: dict[int, int] | None = None  # version -> errors reported on it (the ERROR_VERSIONS highest)
    last_error: dict[str, Any] | None = None  # {"version", "message", "keys": None, "at"}
    json: str | None = None  # `to_json()` as canonical JSON, built when listed and dropped by any change

    def fragment(self, seen: Visibility | None = None) -> str:
        """Its canonical JSON as `seen`'s principal may see it (None: everything). It is built once per change for
        whoever sees it whole. So a listing of thousands mostly joins kept strings."""
        has_text = self.last_check is not None or self.last_error is not None
        if has_text and seen is not None and not seen.sees_everything:
            return canonical_json(self.to_json(seen))
        if self.json is None:
            self.json = canonical_json(self.to_json())
        return self.json

    def to_json(self, seen: Visibility | None = None) -> dict[str, Any]:
        """The instance as `seen`'s principal may see it (None: everything; `shown_check`)."""
        return {
            "id": self.id,
            "principal": self.principal,
            "kind": self.kind,
            "address": self.address,
            "version": self.version,
            "reported": self.reported,
            "last_contact": _iso(self.last_contact),
            "last_check": self.last_check if seen is None else shown_check(self.last_check, seen),
            "errors": {str(n): count for n, count in sorted((self.errors or {}).items())},
            "last_error": self.last_error if seen is None else shown_check(self.last_error, seen),
        }


def fair(instances: list[Instance]) -> list[Instance]:
    """`instances` (most recently heard first) in rounds. A client is a principal at an address. The first round
    holds the most recently heard instance of each client, the next the second of each, and so on. Clients come in
    the order they were last heard. One token inventing hundreds of ids from one host fills one place per round. So
    the first rows of a listing (the console's page) still show every other client's instances."""
    clients: dict[tuple[str | None, str | None], list[Instance]] = {}
    for instance in instances:
        clients.setdefault((instance.principal, instance.address), []).append(instance)
    if len(clients) == len(instances):
        return instances
    return [i for rank in zip_longest(*clients.values()) for i in rank if i is not None]


def shown_check(check: dict[str, Any] | None, seen: Visibility) -> dict[str, Any] | None:
    """A reported check as `seen`'s principal may see it: only the keys it names that the principal may describe. Its
    message shows only when the principal may read every one of them. For a check that names no keys, only a
    principal that sees everything reads it. `withheld` says that a message was left out."""
    if check is None or seen.sees_everything:
        return check
    keys = check.get("keys")
    readable = keys is not None and all(seen.verdict(key, "read") == 200 for key in keys)
    shown = {**check, "keys": None if keys is None else seen.keys(keys)}
    if check["message"] is not None and not readable:
        shown.update(message=None, withheld=True)
    return shown


def _iso(t: float) -> str:
    return _second(int(t))


@lru_cache(maxsize=4096)
def _second(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds")


def kind_of(user_agent: bytes | None) -> str:
    """The client kind a `User-Agent: cfgtool/<version> (<kind>)` names; `other` for anything else."""
    found = USER_AGENT.fullmatch(user_agent) if user_agent else None
    return found.group(1).decode() if found else "other"


class Consumers:
    """The instances of one store, least recently heard first."""

    def __init__(
        self, limit: int = MAX_INSTANCES, forget_after: float = FORGET_AFTER, per_principal: int = MAX_PER_PRINCIPAL
    ) -> None:
        self.limit = limit
        self.forget_after = forget_after
        self.per_principal = per_principal
        self._items: OrderedDict[tuple[str | None, str], Instance] = OrderedDict()
        self._of: dict[str | None, OrderedDict[str, None]] = {}  # each principal's ids, least recently heard first

    def __len__(self) -> int:
        return len(self._items)

    def note(
        self, ident: str, principal: str | None, kind: str, address: str | None, version: int | None, now: float
    ) -> Instance:
        """An answered request of instance `ident` (already checked against `INSTANCE`)."""
        key = (principal, ident)
        found = self._items.get(key)
        if found is None:
            found = self._items[key] = Instance(ident, principal, kind, address, version, now)
            own = self._of.setdefault(principal, OrderedDict())
            own[ident] = None
            if len(own) > self.per_principal:
                self._drop((principal, next(iter(own))))
            self._forget(now)
        else:
            self._items.move_to_end(key)
            self._of[principal].move_to_end(ident)
            found.kind, found.address, found.last_contact, found.json = kind, address, now, None
            if version is not None and not found.reported:
                found.version = version
        return found

    def report(
        self,
        ident: str,
        principal: str | None,
        kind: str,
        address: str | None,
        applied: int | None,
        check: dict[str, Any] | None,
        now: float,
    ) -> Instance:
        """An instance's report of the version it applied (None: none yet) and of its last attempt."""
        found = self.note(ident, principal, kind, address, None, now)
        found.reported, found.version = True, applied
        if check is not None:
            found.last_check = {**check, "at": _iso(now)}
        return found

    def error(
        self,
        ident: str,
        principal: str | None,
        kind: str,
        address: str | None,
        version: int,
        message: str | None,
        now: float,
    ) -> Instance:
        """An instance's report of an error it met on `version` (which it read, unless it reports what it applied)."""
        found = self.note(ident, principal, kind, address, version, now)
        errors = found.errors = found.errors or {}
        errors[version] = errors.get(version, 0) + 1
        if len(errors) > ERROR_VERSIONS:
            del errors[min(errors)]
        found.last_error = {"version": version, "message": message, "keys": None, "at": _iso(now)}
        return found

    def _forget(self, now: float) -> None:
        """Drop the instances silent for too long and, past the limit, the least recently heard."""
        items = self._items
        while len(items) > self.limit:
            self._drop(next(iter(items)))
        while items:
            oldest = next(iter(items.values()))
            if now - oldest.last_contact <= self.forget_after:
                break
            self._drop((oldest.principal, oldest.id))

    def _drop(self, key: tuple[str | None, str]) -> None:
        del self._items[key]
        own = self._of[key[0]]
        del own[key[1]]
        if not own:
            del self._of[key[0]]

    def instances(self, now: float) -> list[Instance]:
        """The instances heard within `forget_after`, most recently heard first."""
        self._forget(now)
        return list(reversed(self._items.values()))

    def by_version(self, now: float) -> Counter[int]:
        """How many instances run each version (those with no known version are not counted)."""
        return self.summary(now)[1]

    def summary(self, now: float) -> tuple[list[Instance], Counter[int]]:
        """What a listing shows: the instances heard within `forget_after` in fair order (`fair`), and how many run
        each version. The JSON API and the console's page both list this."""
        found = self.instances(now)
        return fair(found), Counter(i.version for i in found if i.version is not None)

    def listing(self, now: float, seen: Visibility | None = None) -> bytes:
        """`GET /v1/{store}/consumers` as canonical JSON: `{"by_version": {"N": count}, "instances": [...]}`,
        each instance as `seen`'s principal may see it (None: everything)."""
        found, counts = self.summary(now)
        by_version = canonical_json({str(n): counts[n] for n in counts})
        instances = ",".join([i.fragment(seen) for i in found])
        return f'{{"by_version":{by_version},"instances":[{instances}]}}'.encode()


__all__ = [
    "CHECK_KEYS",
    "ERROR_VERSIONS",
    "FORGET_AFTER",
    "INSTANCE",
    "MAX_INSTANCES",
    "MAX_PER_PRINCIPAL",
    "Consumers",
    "Instance",
    "fair",
    "kind_of",
    "shown_check",
]
