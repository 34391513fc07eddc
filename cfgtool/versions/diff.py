"""The resolved diff between two states of a store (docs/versions.md `cfgtool diff A B`).

A and B are side specs (`sides.py`): a version, a git ref, or `worktree` for the working tree.

Both sides are compiled under the same `--var` values, without validation and without checking other variable values.
Only resolved values matter here. Per key, leaf values are compared. Objects are walked, and arrays are compared as
whole values. `1`, `1.0` and `true` are different values. Nodes added or removed entirely are keys added or removed
with all their values. Each new value carries its origin from B's provenance. `via` is the layer of B that set it:
the node owning the origin's file, or `own` when the key sets it in its own files. `file` is the file that set it,
when that is not the layer's main.conf but a file it includes. It is relative to the key's directory when `via` is
`own`, else repository-relative. Changes are then grouped by (path, old, new, via, file) and counted over keys.

A node is compared only when it can differ: its layers changed, or the main.conf of one of them did. The blob ids
come from both compiles. Only nodes whose configs differ are walked. Renderers live in `diff_render.py`.

A version is the configs and the rules. So the rule files whose blob ids differ are listed too: settings, schemas,
policy code, ACL, recipients. For the ACL, so are the statements each side has that the other lacks.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from cfgtool.compile.compiler import CompileResult, absent_store, compile_store
from cfgtool.hocon import Origin, bulk, split_path
from cfgtool.snapshot.hidden import HIDDEN
from cfgtool.snapshot.model import NodeSnapshot, Snapshot
from cfgtool.snapshot.provenance import path_name
from cfgtool.store import git
from cfgtool.store.sources import StoreNotFoundError
from cfgtool.versions.names import WORKTREE
from cfgtool.versions.sides import Side, resolve_side

VIA_OWN = "own"  # `via` of a value the key sets in its own main.conf

Kind = Literal["added", "removed", "changed"]


class _Absent:
    """A value that is not set on one side (omitted from JSON, shown as `(unset)`)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ABSENT"

    def __reduce__(self) -> str:
        return "ABSENT"  # unpickled as this module's ABSENT: `is ABSENT` holds for a diff made in another process


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class ValueChange:
    """One leaf path of one key: `old` and/or `new` (ABSENT when unset), and the new value's origin. Also `via`, and
    `file`: the included file that set it, None when it is the layer's main.conf."""

    path: str
    old: Any
    new: Any
    origin: Origin | None
    via: str | None
    file: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.old is not ABSENT:
            out["old"] = self.old
        if self.new is not ABSENT:
            out["new"] = self.new
        out["origin"] = _origin_json(self.origin)
        out["via"] = self.via
        out["file"] = self.file
        return out


@dataclass(frozen=True)
class KeyChange:
    key: str
    kind: Kind
    values: tuple[ValueChange, ...]

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "values": [v.to_json() for v in self.values]}


@dataclass(frozen=True)
class Group:
    """The same change (path, old -> new) made through the same layer (`via`) and file in `keys`."""

    path: str
    old: Any
    new: Any
    via: str | None
    keys: tuple[str, ...]
    file: str | None = None

    @property
    def count(self) -> int:
        return len(self.keys)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.old is not ABSENT:
            out["old"] = self.old
        if self.new is not ABSENT:
            out["new"] = self.new
        out.update(count=self.count, via=self.via, file=self.file, keys=list(self.keys))
        return out


@dataclass(frozen=True)
class RuleChange:
    """A rule file added, removed or changed. For the ACL, also its statements added and removed (`Acl.statements`).
    They are None when a side does not parse, so only the file can be named."""

    path: str
    kind: Kind
    acl_added: tuple[str, ...] | None = None
    acl_removed: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        acl = None
        if self.acl_added is not None:
            acl = {"added": list(self.acl_added), "removed": list(self.acl_removed or ())}
        return {"path": self.path, "kind": self.kind, "acl": acl}


@dataclass(frozen=True)
class Diff:
    """What changed from `a` to `b`: per key (sorted), and grouped. Also the keys that could not be compared because
    they did not compile on one side."""

    a: Side
    b: Side
    changes: tuple[KeyChange, ...]
    groups: tuple[Group, ...]
    unresolved: tuple[str, ...] = ()
    rules: tuple[RuleChange, ...] = ()

    @property
    def empty(self) -> bool:
        """No resolved config differs (the rules may: see `rules`)."""
        return not self.changes

    def count(self, kind: Kind) -> int:
        return sum(1 for c in self.changes if c.kind == kind)

    @property
    def values(self) -> int:
        return sum(len(c.values) for c in self.changes)

    def to_json(self) -> dict[str, Any]:
        """docs/versions.md's `diff` contract, plus `spec`/`worktree`/`dirty`/`errors` per side, `via` per value, a
        value count and the unresolved keys."""
        return {
            "from": self.a.to_json(),
            "to": self.b.to_json(),
            "summary": {
                "added": self.count("added"),
                "removed": self.count("removed"),
                "changed": self.count("changed"),
                "values": self.values,
                "unresolved": len(self.unresolved),
            },
            "changes": [c.to_json() for c in self.changes],
            "groups": [g.to_json() for g in self.groups],
            "unresolved": list(self.unresolved),
            "rules": [r.to_json() for r in self.rules],
        }


# ------------------------------------------------------------------------------------------ entry points


def diff(
    repo: Path | None,
    a: str,
    b: str = WORKTREE,
    store: str | Path = "store",
    variables: Mapping[str, str] | None = None,
) -> Diff:
    """The resolved diff from side `a` to side `b` of the store in `repo` (see the module doc for specs)."""
    root = git.locate(repo if repo is not None else Path.cwd()).root
    sides = [resolve_side(root, spec, store) for spec in (a, b)]
    results: list[CompileResult | None] = []
    missing: list[StoreNotFoundError] = []
    for i, side in enumerate(sides):
        try:
            ref = side.ref and side.commit
            result = compile_store(root, store, ref, variables, check_variables=False, validate=False)
        except StoreNotFoundError as err:  # a ref from before the store existed: every key is added (or removed)
            if side.ref is None:
                raise
            missing.append(err)
            results.append(None)
            continue
        errors = len(result.errors_affecting(None))  # problems that change no resolved value do not count
        sides[i] = Side(side.spec, side.ref, side.commit, side.version, result.snapshot.source.dirty, errors)
        results.append(result)
    if len(missing) == 2:
        raise missing[0]
    present = next(r for r in results if r is not None)
    old, new = (
        r.snapshot if r is not None else absent_store(present.snapshot.store, side.ref or side.spec, side.commit)
        for r, side in zip(results, sides, strict=True)
    )
    ids = [file_ids(r) if r is not None else {} for r in results]
    changed = {path for path, _ in ids[0].items() ^ ids[1].items()}
    found = diff_snapshots(old, new, sides[0], sides[1], changed)
    return replace(found, rules=rule_diff(results[0], results[1]))


def rule_diff(old: CompileResult | None, new: CompileResult | None) -> tuple[RuleChange, ...]:
    """The rule files whose blob ids differ between two compiles (None: no store on that side). With them, the ACL's
    statements added and removed."""
    ids = [r.snapshot.rules if r is not None else {} for r in (old, new)]
    acls = [_acl_file(r) for r in (old, new)]
    out = []
    for path in sorted(p for p in ids[0].keys() | ids[1].keys() if ids[0].get(p) != ids[1].get(p)):
        kind: Kind = "added" if path not in ids[0] else "removed" if path not in ids[1] else "changed"
        change = RuleChange(path, kind)
        if path in acls:
            statements = [_acl_statements(r) if acl == path else [] for r, acl in zip((old, new), acls, strict=True)]
            if None not in statements:
                before, after = set(statements[0] or ()), set(statements[1] or ())
                added, removed = tuple(sorted(after - before)), tuple(sorted(before - after))
                change = replace(change, acl_added=added, acl_removed=removed)
        out.append(change)
    return tuple(out)


def _acl_file(result: CompileResult | None) -> str | None:
    return result.rules.acl_file if result is not None else None


def _acl_statements(result: CompileResult | None) -> list[str] | None:
    """The statements of a compile's own ACL ([] without one), None when it does not parse."""
    from cfgtool.access.enforce import acl_of

    if result is None:
        return []
    acl = acl_of(result.rules)[0]
    return None if acl.broken else acl.statements()


def diff_snapshots(
    old: Snapshot, new: Snapshot, a: Side | None = None, b: Side | None = None, changed: Set[str] | None = None
) -> Diff:
    """The diff of two compiled snapshots (pure: no git, no compile).

    `changed`, when known, is the set of files whose content differs (`file_ids`). Only nodes that can have changed
    are compared. A substituted value is credited to the layer whose file changed.
    """
    a = a or Side("a", old.source.ref, old.source.commit, dirty=old.source.dirty)
    b = b or Side("b", new.source.ref, new.source.commit, dirty=new.source.dirty)
    with bulk():  # the diff allocates many small objects next to two large snapshots: keep the cyclic GC off
        owners = _Owners(new, changed or frozenset())
        candidates = None if changed is None else _candidates(old, new, changed)
        changes: list[KeyChange] = []
        unresolved: list[str] = []
        for key in sorted(old.nodes.keys() | new.nodes.keys()):
            before, after = old.nodes.get(key), new.nodes.get(key)
            if (before is not None and before.config is None) or (after is not None and after.config is None):
                unresolved.append(key)
                continue
            if candidates is not None and key not in candidates:
                continue
            secrets = (old.secrets.get(key, {}), new.secrets.get(key, {}))
            change = _diff_node(key, before, after, owners, secrets)
            if change is not None:
                changes.append(change)
        return Diff(a, b, tuple(changes), _group(changes), tuple(unresolved))


def file_ids(result: CompileResult) -> dict[str, str]:
    """`{path: blob id}` of every file a compile resolved from: each node's main.conf and each included file."""
    ids = {n.main.path: n.main.oid for n in result.store.nodes.values() if n.main is not None}
    included = [p for p in result.snapshot.texts if p not in ids]
    if included:
        ids.update(result.store.source.oids(included))
    return ids


def _candidates(old: Snapshot, new: Snapshot, changed: Set[str]) -> set[str] | None:
    """Keys whose config may differ, None for all of them.

    A resolved config is a function of its key, its layers and their own documents. A node cannot differ when its
    layers and their main.conf files are the same on both sides. A changed file that is no node's main.conf (a HOCON
    `include`d file) means: compare everything. So do different variables.
    """
    if dict(old.variables) != dict(new.variables):
        return None
    touched: set[str] = set()
    for snapshot in (old, new):
        by_file = {s.file: k for k, s in snapshot.nodes.items() if s.file}
        for f in changed:
            owner = by_file.get(f)
            if owner is None and posixpath.basename(f) != "main.conf":
                return None
            if owner is not None:
                touched.add(owner)
    out = set()
    for key in old.nodes.keys() | new.nodes.keys():
        before, after = old.nodes.get(key), new.nodes.get(key)
        if before is None or after is None or before.layers != after.layers or not touched.isdisjoint(after.layers):
            out.add(key)
    return out


# ------------------------------------------------------------------------------------------ comparison


def same(a: Any, b: Any, *, by_value: bool = False) -> bool:
    """Strict equality of resolved values: types must match (`1`, `1.0` and `true` differ); key order is
    ignored. `by_value`: numbers compare by value (`1` is `1.0`), a boolean still only equals a boolean."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return by_value and t in (int, float) and type(b) in (int, float) and bool(a == b)
    if t is dict:
        if len(a) != len(b):
            return False
        for k, v in a.items():
            w = b.get(k, ABSENT)
            if w is ABSENT or not same(v, w, by_value=by_value):
                return False
        return True
    if t is list:
        return len(a) == len(b) and all(same(x, y, by_value=by_value) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _diff_node(
    key: str,
    before: NodeSnapshot | None,
    after: NodeSnapshot | None,
    owners: _Owners,
    secrets: tuple[Mapping[str, str | None], Mapping[str, str | None]] = ({}, {}),
) -> KeyChange | None:
    old_cfg = before.config if before is not None else None
    new_cfg = after.config if after is not None else None
    resealed = sorted(p for p in secrets[0].keys() & secrets[1].keys() if secrets[0][p] != secrets[1][p])
    if old_cfg is not None and new_cfg is not None and same(old_cfg, new_cfg) and not resealed:
        return None
    pairs: list[tuple[tuple[str, ...], Any, Any]] = []
    _walk(old_cfg or {}, new_cfg or {}, (), pairs)
    walked = {path_name(p) for p, _, _ in pairs}
    # a secret reads [hidden] on both sides: say that it changed, showing neither value (docs/security.md)
    pairs += [(split_path(p), HIDDEN, HIDDEN) for p in resealed if p not in walked]
    hidden = {split_path(p) for p in secrets[0].keys() | secrets[1].keys()}
    if hidden:  # a path secret on either side is hidden on both: a value made secret never shows its clear past
        pairs = [(p, o, n) if not _under(p, hidden) else (p, _hide(o), _hide(n)) for p, o, n in pairs]
    kind: Kind = "added" if before is None else "removed" if after is None else "changed"
    if not pairs and kind == "changed":
        return None
    origins = after.origins if after is not None and new_cfg is not None else {}
    values = []
    for path, o, n in pairs:
        name = path_name(path)
        origin = origins.get(name) if n is not ABSENT else None
        via, file = owners.via(origin, after.sources.get(name, ()) if after is not None else ())
        if via == key:
            via = VIA_OWN
            if file is not None and after is not None and after.file:  # the key's own include: name it from there
                file = posixpath.relpath(file, posixpath.dirname(after.file))
        values.append(ValueChange(name, o, n, origin, via, file))
    return KeyChange(key, kind, tuple(values))


def _under(path: tuple[str, ...], secrets: Set[tuple[str, ...]]) -> bool:
    """Whether `path` is a secret path or lies under one."""
    return any(path[:n] in secrets for n in range(1, len(path) + 1))


def _hide(value: Any) -> Any:
    return value if value is ABSENT else HIDDEN


def changed_values(old: Any, new: Any) -> list[tuple[str, Any, Any]]:
    """The leaves that differ between two configs, as (path expression, old, new), ABSENT where unset."""
    pairs: list[tuple[tuple[str, ...], Any, Any]] = []
    _walk(old if isinstance(old, dict) else {}, new if isinstance(new, dict) else {}, (), pairs)
    return [(path_name(p), o, n) for p, o, n in pairs]


def _walk(old: Mapping[str, Any], new: Mapping[str, Any], prefix: tuple[str, ...], out: list[Any]) -> None:
    """Changed leaves under two objects: (path, old, new), ABSENT on the side where a leaf is unset."""
    for k, n in new.items():
        path = (*prefix, k)
        o = old.get(k, ABSENT)
        if o is ABSENT:
            out.extend((p, ABSENT, v) for p, v in _leaves(n, path))
        elif isinstance(o, dict) and isinstance(n, dict):
            if not same(o, n):
                _walk(o, n, path, out)
        elif not same(o, n):
            if (isinstance(o, dict) and o) or (isinstance(n, dict) and n):  # an object became a scalar or array
                out.extend((p, v, ABSENT) for p, v in _leaves(o, path))
                out.extend((p, ABSENT, v) for p, v in _leaves(n, path))
            else:
                out.append((path, o, n))
    for k, o in old.items():
        if k not in new:
            out.extend((p, v, ABSENT) for p, v in _leaves(o, (*prefix, k)))


def _leaves(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Leaf values (scalars, arrays, empty objects) under `value`."""
    if isinstance(value, dict) and value:
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    else:
        yield path, value


class _Owners:
    """Which layer of B set a value: the node owning a file. That is the node whose main.conf it is, else the node of
    its directory. A substituted or concatenated value takes the first of its origin and its sources whose file
    changed. So `x = ${retention.ms}` in a dataset changes because the tag that sets `retention.ms` did."""

    def __init__(self, snapshot: Snapshot, changed: Set[str]) -> None:
        self._snapshot = snapshot
        self._changed = changed
        self._by_file: dict[str, str] | None = None

    def via(self, origin: Origin | None, sources: tuple[Origin, ...]) -> tuple[str | None, str | None]:
        """(the layer that set the value, the file that did when it is not that layer's main.conf)."""
        if origin is None:
            return None, None
        file = next((c.file for c in (origin, *sources) if c.file in self._changed), origin.file)
        owner = self.owner(file)
        return owner, None if file in self._main_files() else file

    def _main_files(self) -> Mapping[str, str]:
        if self._by_file is None:
            self._by_file = {s.file: k for k, s in self._snapshot.nodes.items() if s.file}
        return self._by_file

    def owner(self, file: str) -> str | None:
        found = self._main_files().get(file)
        if found is not None:
            return found
        directory = posixpath.dirname(file)
        store = self._snapshot.store
        if store:
            if directory != store and not directory.startswith(store + "/"):
                return None
            directory = directory[len(store) :]
        return "/" + directory.strip("/")


def _group(changes: list[KeyChange]) -> tuple[Group, ...]:
    found: dict[tuple[str, str, str, str | None, str | None], tuple[Any, Any, list[str]]] = {}
    for change in changes:
        for v in change.values:
            ident = (v.path, _canonical(v.old), _canonical(v.new), v.via, v.file)
            entry = found.get(ident)
            if entry is None:
                found[ident] = (v.old, v.new, [change.key])
            else:
                entry[2].append(change.key)
    ordered = sorted(
        found.items(),
        key=lambda item: (-len(item[1][2]), item[0][0], item[0][1:3], item[0][3] or "", item[0][4] or ""),
    )
    return tuple(Group(ident[0], old, new, ident[3], tuple(keys), ident[4]) for ident, (old, new, keys) in ordered)


def _canonical(value: Any) -> str:
    if value is ABSENT:
        return ""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _origin_json(origin: Origin | None) -> dict[str, Any] | None:
    return None if origin is None else {"file": origin.file, "line": origin.line, "col": origin.col}
