"""`.github/CODEOWNERS` from the ACL: GitHub's required reviews as the approval flow for config changes.

ACL entries allow principals to `alter` (or `all`) a key prefix or a literal key. Each becomes the store directory it
names, owned by those principals. A prefix `/data/tracking/` becomes `/store/data/tracking/`. A literal key owns its
node's own files, `/store/data/orders/*`. The principals allowed `alter_store` own the rule files. Those are
settings, schemas, policy code, recipients, and the files that decide how CI runs (`cfgtool.validate.gate`). The
principals allowed `alter_acl` own the ACL file. The super users own both. Principals become GitHub names through the
ACL's `github:` map. A group without a name is its members' names. Deny entries and entries limited to a host cannot
be expressed there; the pull-request check enforces them. GitHub takes the last matching line, so broader paths come
first and the rule files last. Turn on "Require review from Code Owners" in the branch protection. A change then
needs a review by one of the owners of every path it touches.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cfgtool._util.atomic import write_atomic
from cfgtool.access.acl import Acl, Entry
from cfgtool.access.enforce import acl_of
from cfgtool.diagnostics import Diagnostic
from cfgtool.errors import CfgtoolError
from cfgtool.store.nodes import read_settings
from cfgtool.store.sources import open_source
from cfgtool.validate.gate import GATE_DIRS, GATE_FILES, GATE_NESTED
from cfgtool.validate.rules import Rules, rules_of

CODEOWNERS = ".github/CODEOWNERS"
EVERYONE = "User:*"
_SAFE_PATH = re.compile(r"[A-Za-z0-9._~/-]*")  # what a path of CODEOWNERS may hold unescaped
_KEY_OPERATIONS = ("alter", "all")


class AclBroken(CfgtoolError):
    """The ACL has errors: CODEOWNERS is not written from a broken ACL (exit 1)."""


@dataclass(frozen=True)
class Codeowners:
    """The CODEOWNERS text of an ACL, and the principals it found no GitHub name for. Also the ACL entries it left
    out, whose key cannot be a CODEOWNERS path."""

    text: str
    unmapped: tuple[str, ...]
    skipped: tuple[Entry, ...]


@dataclass(frozen=True)
class Check:
    """The file as it is against the file as the ACL makes it. `diff` (unified) is empty when it is fresh."""

    path: Path
    expected: Codeowners
    diff: str

    @property
    def fresh(self) -> bool:
        return not self.diff


def codeowners(acl: Acl, rules: Rules) -> Codeowners:
    """The CODEOWNERS file of `acl` for the store and rule files of `rules` (see the module doc)."""
    names = _Names(acl)
    lines = [
        f"# Written by `cfgtool acl codeowners` from {rules.acl_file}: do not edit. Change the ACL, then run",
        "# `cfgtool acl codeowners` again (CI runs it with --check). Each key prefix's `alter` principals own its",
        "# directory; the super users and the principals allowed alter_store (alter_acl for the ACL) own the rules.",
        "",
    ]
    if not acl.present:
        lines.append(f"# {rules.acl_file} does not exist: access control is off, so nobody owns anything here.")
        return Codeowners("\n".join(lines) + "\n", (), ())
    owned: dict[str, set[str]] = {}
    skipped: list[Entry] = []
    for entry in acl.entries:
        if entry.key is None or entry.permission != "allow" or entry.host != "*":
            continue
        if entry.operation not in _KEY_OPERATIONS:
            continue
        path = _key_path(rules.source.store, entry)
        if path is None:
            skipped.append(entry)
            continue
        owned.setdefault(path, set()).add(entry.principal)
    for path in sorted(owned):  # a path sorts before the longer paths under it, which GitHub lets win
        lines.append(_line(path, owned[path], names))

    store_owners = _store_principals(acl, "alter_store")
    acl_owners = _store_principals(acl, "alter_acl")
    rule_paths = [_file(rules.settings_file), _file(rules.recipients_file)]
    if rules.schemas_dir is not None:
        rule_paths.append(f"/{rules.schemas_dir}/")
    for top in rules.packages():
        rule_paths += [f"/{top}/", f"/{top}.py"]
    rule_paths += [f"/{d}/" for d in GATE_DIRS] + [_file(p) for p in (*GATE_FILES, *GATE_NESTED)]
    lines += [""] if owned else []
    lines += ["# The rules: settings, schemas, policy code, recipients, and the files that decide how CI runs"]
    lines += ["# (workflows, requirements, hooks, code owners); then the ACL."]
    lines += [_line(path, store_owners, names) for path in dict.fromkeys(rule_paths)]
    lines.append(_line(_file(rules.acl_file), acl_owners, names))
    if names.unmapped:
        lines += ["", "# No GitHub name (add them to `github:` in the ACL): " + ", ".join(sorted(names.unmapped))]
    return Codeowners("\n".join(lines) + "\n", tuple(sorted(names.unmapped)), tuple(skipped))


def codeowners_at(repo: Path | None, store: str | Path) -> tuple[Codeowners, Path, list[Diagnostic]]:
    """The CODEOWNERS of the working tree's store, where it goes, and the ACL's problems. AclBroken when the ACL has
    errors: a broken ACL owns nothing, and must be fixed first."""
    source = open_source(repo, store, None)
    rules = rules_of(source, *read_settings(source))
    acl, problems = acl_of(rules)
    if acl.broken:
        raise AclBroken(
            f"{rules.acl_file} has errors, so no CODEOWNERS is written from it",
            hint="fix them (cfgtool compile shows them), then run cfgtool acl codeowners again",
        )
    return codeowners(acl, rules), source.repo_root / CODEOWNERS, problems


def write_codeowners(repo: Path | None, store: str | Path) -> tuple[Codeowners, Path, bool]:
    """Write the store's CODEOWNERS atomically; True when its content changed."""
    found, path, _ = codeowners_at(repo, store)
    if _read(path) == found.text:
        return found, path, False
    write_atomic(path, found.text)
    return found, path, True


def check_codeowners(repo: Path | None, store: str | Path) -> Check:
    """Compare the store's CODEOWNERS with what the ACL makes it (nothing is written)."""
    found, path, _ = codeowners_at(repo, store)
    current = _read(path)
    if current == found.text:
        return Check(path, found, "")
    old = (current or "").splitlines(keepends=True)
    label = CODEOWNERS if current is not None else "/dev/null"
    diff = difflib.unified_diff(old, found.text.splitlines(keepends=True), label, f"{CODEOWNERS} (from the ACL)")
    return Check(path, found, "".join(diff))


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CfgtoolError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _key_path(store: str, entry: Entry) -> str | None:
    """The CODEOWNERS path of an entry's key, None when the key holds characters a path cannot."""
    key = entry.key or ""
    base = f"/{store}" if store else ""
    if not _SAFE_PATH.fullmatch(key):
        return None
    if key == "*":  # every key: the whole store
        return f"{base}/" if base else "*"
    if entry.prefixed:  # by characters: /data/track also covers /data/tracking
        return f"{base}{key}" if key.endswith("/") else f"{base}{key}*"
    return f"{base}{key.rstrip('/')}/*"  # a literal key: its node's own files, not the nodes under it


def _file(path: str) -> str:
    return f"/{path}"


def _line(path: str, principals: set[str], names: _Names) -> str:
    """`path @a @b`; `path` alone when everyone may change it (no review required). A comment when nobody may, or
    none of its principals has a GitHub name. An owner-less line would waive the review the ACL asks for."""
    if not principals:
        return f"# {path} (nobody may change it: the ACL names no principal, not even a super user)"
    owners = names.of(principals)
    if owners is None:
        return path
    return f"{path} {' '.join(owners)}" if owners else f"# {path} (no GitHub name for its owners)"


def _store_principals(acl: Acl, operation: str) -> set[str]:
    """The super users and the principals allowed `operation` on the store from any host. Everyone when no entry
    names the store and `allow_everyone_if_no_acl_found` is true."""
    found = set(acl.super_users)
    if acl.allow_everyone_if_no_acl_found and all(entry.key is not None for entry in acl.entries):
        found.add(EVERYONE)
    for entry in acl.entries:
        usable = entry.key is None and entry.permission == "allow" and entry.host == "*"
        if usable and entry.operation in (operation, "all"):
            found.add(entry.principal)
    return found


class _Names:
    """GitHub names of principals (the ACL's `github:` map), collecting those it has none for."""

    def __init__(self, acl: Acl) -> None:
        self.acl = acl
        self.unmapped: set[str] = set()

    def of(self, principals: Iterable[str]) -> list[str] | None:
        """Sorted GitHub names of `principals`. None when everyone (`User:*`) is one of them. Every user may then
        change it, so no review is required."""
        principals = set(principals)
        if EVERYONE in principals:
            return None
        out: set[str] = set()
        for p in principals:
            name = self.acl.github.get(p)
            if name is not None:
                out.add(name)
            elif p in self.acl.groups:
                out.update(self.of_members(p))
            else:
                self.unmapped.add(p)
        return sorted(out)

    def of_members(self, group: str) -> list[str]:
        found = []
        for member in sorted(self.acl.groups[group]):
            name = self.acl.github.get(member)
            if name is None:
                self.unmapped.add(member)
            else:
                found.append(name)
        if not found:
            self.unmapped.add(group)
        return found
