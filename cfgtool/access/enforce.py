"""Where access control is enforced (DESIGN 13): a pull request's changes, and publish / rollback.

- `change_problems`: `compile --base REF --principal P` reports E_ACCESS_DENIED, at the changed file, for each
  node P may not create, alter or delete (its own main.conf or includes changed) and for each rule-file change
  without `alter_store` (settings, schemas, policies, recipients) or `alter_acl` (the ACL file). The ACL is the
  base ref's (DESIGN 15): a change cannot grant itself rights.
- `require`: publish and rollback check their operation on the store under the ACL of the current version
  (or of the published ref when there is none yet).
- `acl_of` reads and checks the ACL of a set of rules; `acl_problems` are E_ACL / W_ACL_PREFIX of a store's
  own ACL file, reported by every compile.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cfgtool.access.acl import Acl, parse_acl
from cfgtool.access.acl import principal as as_principal
from cfgtool.access.authorizer import Authorizer, Decision
from cfgtool.diagnostics import Diagnostic
from cfgtool.errors import CfgtoolError
from cfgtool.rules import Rules, rules_of
from cfgtool.store.nodes import Node, Store, read_settings
from cfgtool.store.sources import Source, open_source


class AccessDenied(CfgtoolError):
    """The principal may not do this operation (exit 1)."""


def acl_of(rules: Rules) -> tuple[Acl, list[Diagnostic]]:
    """The ACL of `rules` (absent: access control is off) and its problems."""
    return parse_acl(rules.text(rules.acl_file), rules.acl_file, rules.settings.name)


def change_problems(
    trusted: Rules, base: Store, new: Store, principal: str, rule_files: Sequence[str]
) -> list[Diagnostic]:
    """E_ACCESS_DENIED for every change `principal` may not make under the trusted (base) ACL."""
    acl, _ = acl_of(trusted)
    if not acl.present:
        return []
    authorizer = Authorizer(acl)
    who = as_principal(principal)
    diags: list[Diagnostic] = []
    for key in sorted(base.nodes.keys() | new.nodes.keys()):
        before, after = _files(base.nodes.get(key)), _files(new.nodes.get(key))
        if before == after:
            continue
        operation = "create" if not before else "delete" if not after else "alter"
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        decision = authorizer.authorize(who, operation, key)
        if not decision.allowed:
            diags.append(_denied(decision, changed[0], f"{operation} {key}"))
    for file in rule_files:
        operation = "alter_acl" if file == trusted.acl_file else "alter_store"
        decision = authorizer.authorize(who, operation, None)
        if not decision.allowed:
            diags.append(_denied(decision, file, f"change {file} ({operation})"))
    return diags


def acl_problems(source: Source, rules: Rules) -> list[Diagnostic]:
    """E_ACL and W_ACL_PREFIX of the compiled source's own ACL file (the rules in force may be another
    ref's: a change that breaks the ACL must still be told)."""
    own = rules if rules.source is source else rules_of(source, *read_settings(source))
    return acl_of(own)[1]


def _files(node: Node | None) -> dict[str, str]:
    """A node's own files and their blob ids (empty: the node does not exist or has no files of its own)."""
    if node is None:
        return {}
    files = {node.main.path: node.main.oid} if node.main is not None else {}
    if node.includes is not None:
        files[node.includes.path] = node.includes.oid
    return files


def _denied(decision: Decision, file: str, what: str) -> Diagnostic:
    return Diagnostic.of(
        "E_ACCESS_DENIED",
        f"{decision.principal} may not {what}: {decision.reason}",
        file=file,
        notes=("the ACL of the target branch decides; ask its owners, or a super user, to make this change",),
    )


def require(repo: Path, store: str | Path, commit: str, principal: str, operation: str) -> Decision:
    """Check `operation` on the store for `principal` under the ACL at `commit`; AccessDenied when denied."""
    source = open_source(repo, store, commit)
    settings, settings_file = read_settings(source)
    acl, _ = acl_of(rules_of(source, settings, settings_file))
    decision = Authorizer(acl).authorize(as_principal(principal), operation, None)
    if not decision.allowed:
        raise AccessDenied(
            f"{decision.principal} may not {operation} this store: {decision.reason}",
            hint=f"the ACL of commit {commit[:7]} decides; ask a super user or the ACL's owners",
        )
    return decision


def authorizer_at(
    repo: Path | None, store: str | Path, ref: str | None
) -> tuple[Authorizer, list[Diagnostic], str | None]:
    """The authorizer of the store in the working tree (`ref` None) or at `ref`, the ACL file's problems and
    the store's name (for keys written with its scheme)."""
    source = open_source(repo, store, ref)
    settings, settings_file = read_settings(source)
    acl, problems = acl_of(rules_of(source, settings, settings_file))
    return Authorizer(acl), problems, settings.name
