"""The policy contract (docs/policies.md#the-contract, KIP-108 for configs) and the built-in policies.

This module is a public contract. Policy authors import `Policy`, `NodeRequest` and `PolicyViolation` from here, so
their names and fields only ever grow. A policy is a class named `module:Class` in `_CONFIG_STORE`. cfgtool creates
it with no arguments and calls `configure(settings)` once with its `config` mapping. It then calls
`validate(request)` once per node. It calls `close()` at the end of the run, also after failures.

- `validate` returns to accept the node, raises `PolicyViolation` to reject it (E_POLICY for that node only);
  any other exception is a bug in the policy (E_POLICY_ERROR), and every other node is still checked.
- `configure` raises `ValueError` or `TypeError` with a clear message on bad settings (E_POLICY_ERROR).

Built-ins (options are documented on each class and in docs/policies.md):

- `MonotonicPaths`: listed numeric values may only grow (Kafka partition counts never shrink).
- `FrozenPaths`: listed values may not change once a node has them (a topic's cluster and name).
- `ProtectedDeletes`: nodes selected by key globs or tags may not be deleted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from cfgtool._util.plain import MISSING, value_at
from cfgtool.hocon import HoconError, split_path
from cfgtool.store.keys import BadKeyError, glob_match, normalize_key

__all__ = [
    "BasePolicy",
    "Change",
    "FrozenPaths",
    "MonotonicPaths",
    "NodeRequest",
    "Policy",
    "PolicyViolation",
    "ProtectedDeletes",
]

Change = Literal["created", "altered", "deleted", "unchanged"]


@dataclass(frozen=True)
class NodeRequest:
    """What a policy sees for one node.

    - `change`: against `compile --base REF`: `created` (no node at the base), `altered` (its resolved config
      differs), `deleted` (a node at the base only), `unchanged`; always `unchanged` without a base.
    - `own_config`: the values the node's own main.conf assigns (as resolved in this node); `{}` when deleted.
    - `resolved_config`: the node's resolved config; `{}` when deleted.
    - `previous_config`: its resolved config at the base; None when created or without a base.
    - `imports`: its explicit imports, highest priority first; `tags`: the tags in its import order,
      highest priority first. For a deleted node both are as they were at the base.
    - `principal`: who asks (`compile --principal`, the PR author in CI), None when unknown.

    The mappings are plain JSON-like data shared with the rest of the run: never modify them.
    """

    key: str
    change: Change
    own_config: Mapping[str, Any]
    resolved_config: Mapping[str, Any]
    previous_config: Mapping[str, Any] | None
    imports: tuple[str, ...]
    tags: tuple[str, ...]
    principal: str | None


class PolicyViolation(Exception):
    """Raised by `Policy.validate` to reject a node. `message` says why. `path` (optional, a dotted path such as
    `kafka.partitions`) names the value at fault. The report then points at the line that set it."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


@runtime_checkable
class Policy(Protocol):
    """The interface every policy implements (structurally: subclassing is optional)."""

    def configure(self, settings: Mapping[str, Any]) -> None:
        """Receive the policy's `config` from _CONFIG_STORE once; raise ValueError/TypeError on bad settings."""
        ...

    def validate(self, request: NodeRequest) -> None:
        """Accept the node by returning; reject it with `PolicyViolation(message, path=None)`."""
        ...

    def close(self) -> None:
        """Release what `configure` acquired; called once at the end of every run, also after failures."""
        ...


class BasePolicy:
    """A convenient base: `configure` accepts no settings, `close` does nothing; override `validate`."""

    def configure(self, settings: Mapping[str, Any]) -> None:
        if settings:
            raise ValueError(f"{type(self).__name__} takes no settings, got: {', '.join(sorted(settings))}")

    def validate(self, request: NodeRequest) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement validate()")

    def close(self) -> None:
        return None


def _check_settings(settings: Mapping[str, Any], known: set[str], name: str) -> None:
    if not isinstance(settings, Mapping):
        raise TypeError(f"{name} settings must be a mapping, got {type(settings).__name__}")
    unknown = sorted(str(k) for k in settings if k not in known)
    if unknown:
        raise ValueError(f"{name}: unknown setting(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")


def _string_list(settings: Mapping[str, Any], field: str, name: str, *, required: bool) -> list[str]:
    raw = settings.get(field)
    if raw is None:
        if required:
            raise ValueError(f"{name}: setting '{field}' is required (a list of strings)")
        return []
    if isinstance(raw, str) or not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise TypeError(f"{name}: setting '{field}' must be a list of non-empty strings, got {raw!r}")
    return list(raw)


def _paths(settings: Mapping[str, Any], name: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The `paths` setting: required, non-empty, each a HOCON path expression (`a.b`, `a."b.c"`)."""
    _check_settings(settings, {"paths"}, name)
    paths = _string_list(settings, "paths", name, required=True)
    if not paths:
        raise ValueError(f"{name}: setting 'paths' is empty, so the policy would check nothing")
    out = []
    for text in paths:
        try:
            out.append((text, split_path(text)))
        except HoconError as err:
            raise ValueError(f"{name}: {text!r} in 'paths' is not a path expression: {err.message}") from err
    return tuple(out)


def _show(value: Any) -> str:
    """A value for messages, in JSON notation (`"x"`, `true`, `[1, 2]`)."""
    if value is MISSING:
        return "unset"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class MonotonicPaths:
    """Listed numeric values may only grow (Kafka can add partitions to a topic but never remove them).

    Settings:

    - `paths` (list of path expressions, required, non-empty): e.g. `[kafka.partitions]`.

    Only `altered` nodes are checked. A path may hold a number both before and after. Then the new value must be
    greater than or equal to the previous one. A value that appears, disappears or is not a number on either side is
    left to the schemas.
    """

    def __init__(self) -> None:
        self.paths: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def configure(self, settings: Mapping[str, Any]) -> None:
        self.paths = _paths(settings, "MonotonicPaths")

    def validate(self, request: NodeRequest) -> None:
        if request.change != "altered":
            return
        for text, path in self.paths:
            old = value_at(request.previous_config, path)
            new = value_at(request.resolved_config, path)
            if _is_number(old) and _is_number(new) and new < old:
                raise PolicyViolation(f"{text} may only grow, but it decreases from {old} to {new}", path=text)

    def close(self) -> None:
        return None


class FrozenPaths:
    """Listed values may not change once a node has them (a topic's cluster and physical name).

    Settings:

    - `paths` (list of path expressions, required, non-empty): e.g. `[kafka.cluster, kafka.topic]`.

    Only `altered` nodes are checked. A path that had a value at the base must keep exactly that value. Changing or
    removing it is a violation, whether the node's own file or an inherited layer changed it. Setting a frozen path
    for the first time is allowed; created nodes may set anything.
    """

    def __init__(self) -> None:
        self.paths: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def configure(self, settings: Mapping[str, Any]) -> None:
        self.paths = _paths(settings, "FrozenPaths")

    def validate(self, request: NodeRequest) -> None:
        if request.change != "altered":
            return
        for text, path in self.paths:
            old = value_at(request.previous_config, path)
            if old is MISSING:
                continue
            new = value_at(request.resolved_config, path)
            if new is MISSING or new != old or type(new) is not type(old):
                message = f"{text} is frozen once set, but this change moves it from {_show(old)} to {_show(new)}"
                raise PolicyViolation(message, path=text)

    def close(self) -> None:
        return None


class ProtectedDeletes:
    """Nodes selected by key globs or tags may not be deleted.

    Settings (at least one of the two, both may be given; a node is protected when either selects it):

    - `keys` (list of key globs): `*` matches one key segment, `**` any depth (`/data/databases/**`).
    - `tags` (list of tag keys): nodes that had one of these tags in their import order at the base.

    Only `deleted` nodes are checked. To delete a protected dataset, first remove its tag in a reviewed change.
    """

    def __init__(self) -> None:
        self.keys: tuple[str, ...] = ()
        self.tags: tuple[str, ...] = ()

    def configure(self, settings: Mapping[str, Any]) -> None:
        name = "ProtectedDeletes"
        _check_settings(settings, {"keys", "tags"}, name)
        keys = _string_list(settings, "keys", name, required=False)
        tags = _string_list(settings, "tags", name, required=False)
        if not keys and not tags:
            raise ValueError(f"{name}: set 'keys' (key globs) or 'tags' (tag keys), otherwise nothing is protected")
        normalized = []
        for tag in tags:
            try:
                normalized.append(normalize_key(tag))
            except BadKeyError as err:
                raise ValueError(f"{name}: {tag!r} in 'tags' is not a key: {err.message}") from err
        self.keys = tuple(keys)
        self.tags = tuple(normalized)

    def validate(self, request: NodeRequest) -> None:
        if request.change != "deleted":
            return
        for pattern in self.keys:
            if glob_match(pattern, request.key):
                raise PolicyViolation(f"this node may not be deleted: its key matches the protected glob {pattern}")
        for tag in self.tags:
            if tag in request.tags:
                raise PolicyViolation(
                    f"this node may not be deleted: it imports the protected tag {tag} "
                    "(remove the tag in a separate reviewed change first)"
                )

    def close(self) -> None:
        return None
