"""Where access control is enforced (docs/access.md#the-acl): a pull request's changes, and publish / rollback.

- `change_problems`: `compile --base REF --principal P` reports E_ACCESS_DENIED, at the changed file with the
  node's key, for each node P may not create, alter or delete (its main.conf, its includes or a file its
  main.conf includes changed), for each key a node starts to import that P may not read (the import copies it
  into a node others read), for each node whose files a node starts to `include` that P may not read, and
  for each rule-file change without `alter_store` (settings, schemas, policies, recipients) or `alter_acl`
  (the ACL file). The ACL is the base ref's: a change cannot grant itself rights.
- `require`: publish and rollback check their operation on the store under the ACL of the current version
  (or of the published ref when there is none yet).
- `acl_of` reads and checks the ACL of a set of rules; `acl_problems` are E_ACL / W_ACL_PREFIX of a store's
  own ACL file, reported by every compile.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path

from cfgtool.access.acl import Acl, checked_principal, parse_acl
from cfgtool.access.acl import principal as as_principal
from cfgtool.access.authorizer import Authorizer, Decision
from cfgtool.diagnostics import Diagnostic
from cfgtool.errors import CfgtoolError
from cfgtool.store.includes import expand
from cfgtool.store.nodes import IncludesFile, Node, Store, read_settings
from cfgtool.store.sources import Source, open_source
from cfgtool.validate.rules import Rules, rules_of


class AccessDenied(CfgtoolError):
    """The principal may not do this operation (exit 1)."""


def acl_of(rules: Rules) -> tuple[Acl, list[Diagnostic]]:
    """The ACL of `rules` (absent: access control is off) and its problems."""
    return parse_acl(rules.text(rules.acl_file), rules.acl_file, rules.settings.name)


# A compiled store and, for each key, the files its main.conf includes (`CompileResult.included`).
Compiled = tuple[Store, Mapping[str, tuple[str, ...]]]


def change_problems(
    trusted: Rules, base: Compiled, new: Compiled, principal: str, rule_files: Sequence[str]
) -> list[Diagnostic]:
    """E_ACCESS_DENIED for every change `principal` may not make under the trusted (base) ACL."""
    acl, _ = acl_of(trusted)
    if not acl.present:
        return []
    authorizer = Authorizer(acl)
    who = as_principal(principal)
    diags: list[Diagnostic] = []
    (old_store, old_included), (new_store, new_included) = base, new
    owners: dict[str, str] | None = None  # node directory -> key, made when first needed
    for key in sorted(old_store.nodes.keys() | new_store.nodes.keys()):
        old_node, new_node = old_store.nodes.get(key), new_store.nodes.get(key)
        before = _files(old_store, old_node, old_included.get(key, ()))
        after = _files(new_store, new_node, new_included.get(key, ()))
        if before != after:
            operation = "create" if not before else "delete" if not after else "alter"
            changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
            decision = authorizer.authorize(who, operation, key)
            if not decision.allowed:
                own = _own_files(old_node) | _own_files(new_node)  # before a file the node only includes
                at = next((p for p in changed if p in own), changed[0])
                diags.append(_denied(decision, at, f"{operation} {key}", key))
        if new_node is None:
            continue
        started = sorted(set(new_included.get(key, ())) - set(old_included.get(key, ())))
        if started and owners is None:
            owners = _owners(new_store)
        for file in started:
            assert owners is not None
            owner = _owner(file, owners)
            if owner is None or owner == key:
                continue
            decision = authorizer.authorize(who, "read", owner)
            if not decision.allowed:
                what = f"include {file} into {key} (a file of {owner}, so it needs read on {owner})"
                diags.append(_denied(decision, new_node.main.path if new_node.main else file, what, key))
        if new_node.includes is None:
            continue
        known = _imports(old_store, old_node.includes) if old_node is not None and old_node.includes else {}
        for imported, line in _imports(new_store, new_node.includes).items():
            if imported in known:
                continue
            decision = authorizer.authorize(who, "read", imported)
            if not decision.allowed:
                what = f"import {imported} into {key} (it needs read on {imported})"
                diags.append(_denied(decision, new_node.includes.path, what, key, line))
    for file in rule_files:
        operation = "alter_acl" if file == trusted.acl_file else "alter_store"
        decision = authorizer.authorize(who, operation, None)
        if not decision.allowed:
            diags.append(_denied(decision, file, f"change {file} ({operation})"))
    return diags


def acl_problems(source: Source, rules: Rules) -> list[Diagnostic]:
    """E_ACL and W_ACL_PREFIX of the compiled source's own ACL file. The rules in force may be another ref's, but a
    change that breaks the ACL must still be told."""
    own = rules if rules.source is source else rules_of(source, *read_settings(source))
    return acl_of(own)[1]


def _files(store: Store, node: Node | None, included: Sequence[str]) -> dict[str, str]:
    """A node's files and their blob ids: its main.conf, its includes and every file its main.conf includes. `-` is
    an include of a missing file. Empty when the node does not exist or has no files of its own."""
    if node is None:
        return {}
    files = {node.main.path: node.main.oid} if node.main is not None else {}
    if node.includes is not None:
        files[node.includes.path] = node.includes.oid
    if included:
        oids = store.source.oids(included)
        files.update((path, oids.get(path, "-")) for path in included)
    return files


def _own_files(node: Node | None) -> set[str]:
    """A node's main.conf and includes file, those it has."""
    if node is None:
        return set()
    return {f.path for f in (node.main, node.includes) if f is not None}


def _owners(store: Store) -> dict[str, str]:
    return {node.dir: key for key, node in store.nodes.items()}


def _owner(file: str, owners: Mapping[str, str]) -> str | None:
    """The node whose directory holds `file` (the nearest one: a file under a `_x` directory is its parent's)."""
    directory = posixpath.dirname(file)
    while directory not in owners:
        if not directory:
            return None
        directory = posixpath.dirname(directory)
    return owners[directory]


def _imports(store: Store, includes: IncludesFile) -> dict[str, int]:
    """Every key an includes file imports, under every declared value of the variables it uses. Each comes with the
    line that imports it first."""
    declared = store.settings.variables
    out: dict[str, int] = {}
    for line in includes.lines:
        names = sorted({u.name for u in line.variables if u.name in declared})
        for values in product(*(declared[n].values for n in names)):
            found, _ = expand(
                [line], dict(zip(names, values, strict=True)), file=includes.path, key="", declared=declared,
                store_name=store.settings.name,
            )  # fmt: skip
            for imported in found:
                out.setdefault(imported.key, line.line)
    return out


def _denied(decision: Decision, file: str, what: str, key: str | None = None, line: int | None = None) -> Diagnostic:
    return Diagnostic.of(
        "E_ACCESS_DENIED",
        f"{decision.principal} may not {what}: {decision.reason}",
        key=key,
        file=file,
        line=line,
        notes=("the ACL of the target branch decides; ask its owners, or a super user, to make this change",),
    )


def require(repo: Path, store: str | Path, commit: str, principal: str, operation: str) -> Decision:
    """Check `operation` on the store for `principal` under the ACL at `commit`. AccessDenied when denied. A
    UsageError for a principal no entry could name, which `User:*` would otherwise allow."""
    source = open_source(repo, store, commit)
    settings, settings_file = read_settings(source)
    acl, _ = acl_of(rules_of(source, settings, settings_file))
    decision = Authorizer(acl).authorize(checked_principal(principal), operation, None)
    if not decision.allowed:
        raise AccessDenied(
            f"{decision.principal} may not {operation} this store: {decision.reason}",
            hint=f"the ACL of commit {commit[:7]} decides; ask a super user or the ACL's owners",
        )
    return decision


def authorizer_at(
    repo: Path | None, store: str | Path, ref: str | None
) -> tuple[Authorizer, list[Diagnostic], str | None]:
    """The authorizer of the store in the working tree (`ref` None) or at `ref`, and the ACL file's problems. Also
    the store's name, for keys written with its scheme."""
    source = open_source(repo, store, ref)
    settings, settings_file = read_settings(source)
    acl, problems = acl_of(rules_of(source, settings, settings_file))
    return Authorizer(acl), problems, settings.name
