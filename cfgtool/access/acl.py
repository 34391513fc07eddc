"""The ACL file (docs/access.md#the-acl): `_ACL.yaml` at the store root, or the file `acl:` in `_CONFIG_STORE` names.

`parse_acl` validates it against the JSON Schema shipped beside this module. It also checks what a schema cannot. An
operation must fit its resource, and a key must be a key. Every problem is E_ACL at its file:line:col. An ACL with
any E_ACL is `broken`: it fails closed, and only super users are allowed. A prefixed key that does not end with `/`
is W_ACL_PREFIX. It also matches keys that merely start alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import yaml

from cfgtool._util.yamlmarks import duplicate_keys, mark
from cfgtool.access.operations import KEY_OPERATIONS, STORE, STORE_OPERATIONS
from cfgtool.diagnostics import Diagnostic
from cfgtool.errors import UsageError
from cfgtool.store.keys import BadKeyError, normalize_key

if TYPE_CHECKING:
    import jsonschema

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_PRINCIPAL = re.compile(r"(User:([^\s:*]+|\*)|Group:[^\s:*]+)")
Permission = Literal["allow", "deny"]


@dataclass(frozen=True)
class Entry:
    """One ACL entry. `key` is None for the store resource; `line` is where it is in `file`."""

    principal: str
    operation: str  # one of OPERATIONS, or "all"
    permission: Permission
    key: str | None
    prefixed: bool = False
    host: str = "*"
    file: str | None = None
    line: int | None = None

    def describe(self) -> str:
        """`deny User:* read /data/secure/ (prefixed), store/_ACL.yaml:7` (the reason text of `acl check`)."""
        where = f", {self.file}:{self.line}" if self.file else ""
        return f"{self.rule()}{where}"

    def rule(self) -> str:
        """`deny User:* read /data/secure/ (prefixed)`: what the entry says, wherever it is written."""
        what = STORE if self.key is None else f"{self.key} ({'prefixed' if self.prefixed else 'literal'})"
        host = "" if self.host == "*" else f" from {self.host}"
        return f"{self.permission} {self.principal} {self.operation} {what}{host}"

    def to_json(self) -> dict[str, Any]:
        return {
            "principal": self.principal,
            "operation": self.operation,
            "permission": self.permission,
            "resource": "store" if self.key is None else "key",
            "key": self.key,
            "pattern": None if self.key is None else ("prefixed" if self.prefixed else "literal"),
            "host": self.host,
            "file": self.file,
            "line": self.line,
        }


@dataclass(frozen=True)
class Acl:
    """A parsed ACL. `present` is False when the store has no ACL file. Everything is then allowed: a store adopts
    access control by adding one. `broken` is True when it has E_ACL problems; only super users pass."""

    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False
    groups: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))
    entries: tuple[Entry, ...] = ()
    file: str | None = None
    present: bool = False
    broken: bool = False
    github: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))  # principal -> @team/@user

    def statements(self) -> list[str]:
        """Everything the ACL says, one sorted line per statement, independent of order and layout. A statement is an
        entry, a super user, a group member or a GitHub name. `diff` compares these between two versions."""
        lines = [f"super user {p}" for p in self.super_users]
        if self.allow_everyone_if_no_acl_found:
            lines.append("allow_everyone_if_no_acl_found: true")
        lines += [f"group {g} has {m}" for g, members in self.groups.items() for m in members]
        lines += [e.rule() for e in self.entries]
        lines += [f"github {p} is {name}" for p, name in self.github.items()]
        return sorted(set(lines))


def principal(text: str) -> str:
    """A principal from the command line: a bare name is `User:name` (docs/access.md#the-acl)."""
    text = text.strip()
    if not text:
        raise UsageError("the principal is empty", hint="give User:NAME, Group:NAME or a bare user name")
    if text.startswith(("User:", "Group:")):
        return text
    if ":" in text:
        kind = text.split(":", 1)[0]
        raise UsageError(
            f"unknown principal type {kind!r} in {text!r}", hint="give User:NAME, Group:NAME or a bare user name"
        )
    return f"User:{text}"


PRINCIPAL_FORM = (
    "a principal is User:NAME, Group:NAME or User:*, with no space, ':' or '*' in NAME; for example User:alice or"
    " Group:ops (a bare name such as alice is User:alice)"
)


def checked_principal(text: str) -> str:
    """A principal as `principal` reads it that an ACL can also name. It must match the ACL file's own pattern
    (`_PRINCIPAL`, as its schema's). So a name that cannot exist ("bad principal") is a UsageError saying what one
    looks like."""
    try:
        found = principal(text)
    except UsageError as exc:
        raise UsageError(exc.message, hint=PRINCIPAL_FORM) from None
    if not _PRINCIPAL.fullmatch(found):
        raise UsageError(f"{text.strip()!r} cannot be a principal", hint=PRINCIPAL_FORM)
    return found


@cache
def acl_schema() -> dict[str, Any]:
    """The JSON Schema of the ACL file shipped with the package."""
    text = resources.files("cfgtool.access").joinpath("acl.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def parse_acl(text: str | None, file: str, store_name: str | None = None) -> tuple[Acl, list[Diagnostic]]:
    """The ACL in `text` (None: there is no ACL file) and its problems, each at file:line:col."""
    if text is None:
        return Acl(file=file), []
    broken = Acl(file=file, present=True, broken=True)
    loader = _Loader(text)  # libyaml when present: a 10,000-entry ACL composes in a fraction of the time
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as err:
        where = err.problem_mark or err.context_mark
        line, col = (where.line + 1, where.column + 1) if where else (None, None)
        problem = err.problem or err.context or "invalid YAML"
        return broken, [Diagnostic.of("E_ACL", f"not valid YAML: {problem}", file=file, line=line, col=col)]
    except yaml.YAMLError as err:
        return broken, [Diagnostic.of("E_ACL", f"not valid YAML: {err}", file=file)]
    finally:
        loader.dispose()
    if root is None or data is None:
        return Acl(file=file, present=True), []
    diags = [
        Diagnostic.of("E_ACL", f"{'.'.join(path)} is set twice; only the last one would count", file=file, line=ln,
                      col=col)
        for path, ln, col in duplicate_keys(root)
    ]  # fmt: skip
    import jsonschema  # only when there is an ACL to check (`cfgtool acl --help` must not pay for it)

    for error in sorted(jsonschema.Draft202012Validator(acl_schema()).iter_errors(data), key=lambda e: e.path):
        diags.append(_schema_problem(error, root, file))
    if diags:  # fail closed, but the super users it names (when they can be read) still pass
        return replace(broken, super_users=_super_users(data)), diags
    entries: list[Entry] = []
    for i, raw in enumerate(data.get("acls") or []):
        entry, problems = _entry(raw, root, file, i, store_name)
        diags += problems
        if entry is not None:
            entries.append(entry)
    groups = {name: frozenset(members) for name, members in (data.get("groups") or {}).items()}
    acl = Acl(
        super_users=frozenset(data.get("super_users") or ()),
        allow_everyone_if_no_acl_found=bool(data.get("allow_everyone_if_no_acl_found", False)),
        groups=MappingProxyType(groups),
        entries=tuple(entries),
        github=MappingProxyType(dict(data.get("github") or {})),
        file=file,
        present=True,
        broken=any(d.code == "E_ACL" for d in diags),
    )
    return acl, diags


def _super_users(data: Any) -> frozenset[str]:
    """The well-formed principals of `super_users` in an ACL that is otherwise broken."""
    listed = data.get("super_users") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(p for p in listed if isinstance(p, str) and _PRINCIPAL.fullmatch(p))


def _entry(
    raw: dict[str, Any], root: yaml.Node, file: str, index: int, store_name: str | None
) -> tuple[Entry | None, list[Diagnostic]]:
    path = ("acls", index)
    line = mark(root, path)[0]

    def problem(code: str, message: str, field_name: str | None = None) -> Diagnostic:
        ln, col = mark(root, (*path, field_name) if field_name else path)
        return Diagnostic.of(code, f"acls[{index}]: {message}", file=file, line=ln, col=col)

    operation = raw["operation"]
    store_resource = raw.get("resource") == "store"
    if store_resource:
        if "key" in raw or "pattern" in raw:
            return None, [problem("E_ACL", "the store resource has no key or pattern; drop them", "resource")]
        if operation not in (*STORE_OPERATIONS, "all"):
            ops = ", ".join(STORE_OPERATIONS)
            return None, [problem("E_ACL", f"{operation!r} is not an operation on the store ({ops})", "operation")]
        common = (raw["principal"], operation, raw["permission"], None, False, raw.get("host", "*"), file, line)
        return Entry(*common), []
    if "key" not in raw:
        return None, [problem("E_ACL", "an entry names a key, or says resource: store")]
    if operation not in (*KEY_OPERATIONS, "all"):
        ops = ", ".join(KEY_OPERATIONS)
        hint = " (store operations need resource: store)" if operation in STORE_OPERATIONS else ""
        return None, [problem("E_ACL", f"{operation!r} is not an operation on keys ({ops}){hint}", "operation")]
    prefixed = raw.get("pattern") == "prefixed"
    key: str = raw["key"]
    diags: list[Diagnostic] = []
    if prefixed:
        if not key.startswith("/"):
            return None, [problem("E_ACL", f"prefixed key {key!r} must start with '/'", "key")]
        if not key.endswith("/"):
            message = (
                f"prefixed key {key!r} does not end with '/': it also matches keys such as {key}x; "
                f"write {key}/ for the keys under {key}"
            )
            diags.append(problem("W_ACL_PREFIX", message, "key"))
    elif key != "*":
        try:
            key = normalize_key(key, store_name)
        except BadKeyError as err:
            return None, [problem("E_ACL", f"key {raw['key']!r}: {err.message}", "key")]
    entry = Entry(raw["principal"], operation, raw["permission"], key, prefixed, raw.get("host", "*"), file, line)
    return entry, diags


def _schema_problem(error: jsonschema.ValidationError, root: yaml.Node, file: str) -> Diagnostic:
    path = tuple(error.absolute_path)
    line, col = mark(root, path)
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".") or "the ACL"
    if error.validator == "additionalProperties":
        message = f"{where}: {error.message}"
    elif error.validator == "enum":
        values: Any = error.validator_value
        allowed = ", ".join(str(v) for v in values)
        message = f"{where}: {error.instance!r} is not one of {allowed}"
    elif error.validator == "pattern" and isinstance(error.schema, dict) and "x-message" in error.schema:
        message = f"{where}: {error.instance!r} {error.schema['x-message']}"
    elif error.validator == "required":
        message = f"{where}: {error.message}"
    else:
        message = f"{where}: {error.message}"
    if "propertyNames" in error.schema_path:
        line, col = mark(root, (*path, error.instance), key=True)
    return Diagnostic.of("E_ACL", message, file=file, line=line, col=col)
