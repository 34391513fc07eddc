"""`_CONFIG_STORE`: the store's settings (docs/store-format.md#store-root-and-_config_store), validated against the
shipped `settings.schema.json`.

Problems are E_SETTINGS diagnostics that name the setting and point at its YAML node. Line and column come from
PyYAML's composed node marks. The returned `Settings` then holds the defaults for whatever was invalid. So compile
can go on and report everything else.
"""

from __future__ import annotations

import difflib
import itertools
import json
import posixpath
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import yaml

from cfgtool._util.yamlmarks import duplicate_keys, mark
from cfgtool.diagnostics import Diagnostic
from cfgtool.errors import UsageError
from cfgtool.store.keys import BadKeyError, normalize_key
from cfgtool.store.rollout_plan import PlanError, RolloutPlan, plan

if TYPE_CHECKING:
    import jsonschema

SETTINGS_FILE = "_CONFIG_STORE"
ACL_FILE = "_ACL.yaml"  # the default ACL file at the store root (docs/access.md#the-acl)
RECIPIENTS_FILE = "_RECIPIENTS"  # the age recipients that secrets are sealed to (docs/access.md#secrets)


@dataclass(frozen=True)
class Variable:
    """A declared includes variable: every allowed value, and the default (None: required)."""

    name: str
    values: tuple[str, ...]
    default: str | None = None


@dataclass(frozen=True)
class PolicySpec:
    """A policy to run: `module:Class` and the mapping handed to its `configure()`."""

    class_path: str
    config: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class Settings:
    """Typed settings with docs/store-format.md#store-root-and-_config_store defaults. `schemas` is as written (relative
    to the store root)."""

    name: str | None = None
    tag_roots: tuple[str, ...] = ("/tags",)
    version_tag_prefix: str = "config/v"
    rollback_tag_prefix: str = "config/rolledback/v"
    variables: Mapping[str, Variable] = field(default_factory=lambda: MappingProxyType({}))
    schemas: str | None = None
    policies: tuple[PolicySpec, ...] = ()
    acl: str | None = None  # the ACL file, relative to the store root (docs/access.md#the-acl); None: ACL_FILE
    rollout: RolloutPlan | None = None  # None: every version reaches every reader at once

    def schemas_dir(self, store_dir: str) -> str | None:
        """The schemas directory relative to the repository root, given the store's repo-relative dir."""
        if self.schemas is None:
            return None
        return posixpath.normpath(posixpath.join(store_dir or ".", self.schemas))

    def acl_file(self, store_dir: str) -> str:
        """The ACL file's repo-relative path (docs/access.md#the-acl), given the store's repo-relative dir."""
        return posixpath.normpath(posixpath.join(store_dir or ".", self.acl or ACL_FILE))


@cache
def settings_schema() -> dict[str, Any]:
    """The JSON Schema of `_CONFIG_STORE` shipped with the package."""
    text = resources.files("cfgtool.store").joinpath("settings.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def parse_settings(text: str, file: str = SETTINGS_FILE, *, checked: bool = False) -> tuple[Settings, list[Diagnostic]]:
    """Settings from `_CONFIG_STORE` text (`file` is its repo-relative path, for diagnostics). `checked`: this very
    text passed the settings schema before; a cache says so. Then jsonschema is not even imported."""
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root) if root is not None else None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
        problem = err.problem or err.context or "invalid YAML"
        diag = Diagnostic.of("E_SETTINGS", f"not valid YAML: {problem}", file=file, line=line, col=col)
        return Settings(), [diag]
    except yaml.YAMLError as err:
        return Settings(), [Diagnostic.of("E_SETTINGS", f"not valid YAML: {err}", file=file)]
    finally:
        loader.dispose()
    if root is None or data is None:
        return Settings(), []
    diags = list(_duplicate_keys(root, file))
    errors: list[jsonschema.ValidationError] = []
    if not checked:
        import jsonschema  # when there are settings to check, not whenever the module is imported

        validator = jsonschema.Draft202012Validator(settings_schema())
        errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    for error in errors:
        diags.extend(_schema_diagnostics(error, root, file))
    bad = set().union(*(_invalidated(e) for e in errors))
    settings, more = _build(data if isinstance(data, dict) else {}, bad, root, file)
    return settings, sorted(diags + more, key=lambda d: (d.line or 0, d.col or 0))


def _invalidated(error: jsonschema.ValidationError) -> set[tuple[str, ...]]:
    """The settings an error makes unusable. An unknown setting makes only itself unusable; the others are kept. An
    error inside a variable makes that variable unusable. Anything else makes the whole top-level setting unusable."""
    if error.validator == "additionalProperties" and not error.absolute_path and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        return {(str(k),) for k in error.instance if k not in known}
    return {_scope(tuple(error.absolute_path))}


def _scope(path: tuple[Any, ...]) -> tuple[str, ...]:
    """What an error invalidates: one variable for errors inside it, else the whole top-level setting."""
    if len(path) >= 2 and path[0] == "variables":
        return ("variables", str(path[1]))
    return tuple(str(p) for p in path[:1])


def _build(
    data: dict[str, Any], bad: set[tuple[str, ...]], root: yaml.Node, file: str
) -> tuple[Settings, list[Diagnostic]]:
    """Typed settings from schema-checked data, skipping invalid ones; checks beyond the schema."""
    if () in bad:  # the document itself is wrong (e.g. not a mapping)
        return Settings(), []
    diags: list[Diagnostic] = []
    ok = {k: v for k, v in data.items() if (k,) not in bad}
    kwargs: dict[str, Any] = {}
    for name in ("name", "version_tag_prefix", "rollback_tag_prefix", "schemas", "acl"):
        if name in ok:
            kwargs[name] = ok[name]
    if "tag_roots" in ok:
        roots: list[str] = []
        for i, raw in enumerate(ok["tag_roots"]):
            try:
                roots.append(normalize_key(raw, ok.get("name")))
            except BadKeyError as err:
                diags.append(_at(root, ("tag_roots", i), file, f"setting 'tag_roots[{i}]': {err.message}"))
        kwargs["tag_roots"] = tuple(roots)
    if "variables" in ok:
        variables: dict[str, Variable] = {}
        for vname, spec in ok["variables"].items():
            if ("variables", vname) in bad:
                continue
            values = tuple(str(v) for v in spec["values"])
            default = None if spec.get("default") is None else str(spec["default"])
            if default is not None and default not in values:
                path = ("variables", vname, "default")
                message = f"setting {_name(path)}: {default!r} is not one of {list(values)}"
                diags.append(_at(root, path, file, message))
                default = None
            variables[vname] = Variable(vname, values, default)
        kwargs["variables"] = MappingProxyType(variables)
    if "policies" in ok:
        kwargs["policies"] = tuple(_policy(p) for p in ok["policies"])
    if "rollout" in ok:
        try:
            kwargs["rollout"] = plan(ok["rollout"])
        except PlanError as err:
            where = ("rollout", *err.path)
            diags.append(_at(root, where, file, f"setting {_name(where)}: {err.message}"))
    defaults = Settings()
    version = kwargs.get("version_tag_prefix", defaults.version_tag_prefix)
    if version == kwargs.get("rollback_tag_prefix", defaults.rollback_tag_prefix):
        message = "setting 'rollback_tag_prefix': must differ from version_tag_prefix"
        diags.append(_at(root, ("rollback_tag_prefix",), file, message))
        kwargs.pop("rollback_tag_prefix", None)
        kwargs.pop("version_tag_prefix", None)
    return Settings(**kwargs), diags


def _policy(entry: str | dict[str, Any]) -> PolicySpec:
    """A policy entry, `"module:Class"` or `{class, config}`, as a PolicySpec."""
    if isinstance(entry, str):
        return PolicySpec(entry)
    return PolicySpec(entry["class"], MappingProxyType(dict(entry.get("config") or {})))


def _schema_diagnostics(error: jsonschema.ValidationError, root: yaml.Node, file: str) -> Iterator[Diagnostic]:
    """E_SETTINGS diagnostics for one schema error, each naming the setting and pointing at its node."""
    path = tuple(error.absolute_path)
    if error.validator == "oneOf" and error.context:
        specific = [e for e in error.context if e.validator != "type" and len(e.absolute_path) >= len(path)]
        if specific:
            for sub in specific:
                yield from _schema_diagnostics(sub, root, file)
            return
        shape = "'module:Class' or {class: 'module:Class', config: {...}}"
        yield _at(root, path, file, f"setting {_name(path)}: must be {shape}")
        return
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema = error.schema if isinstance(error.schema, dict) else {}
        known = list(schema.get("properties", {}))
        what = schema.get("x-unknown", "unknown field" if path else "unknown setting")
        for extra in error.instance:
            if extra in known:
                continue
            where = (*path, extra)
            close = difflib.get_close_matches(str(extra), known, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            if not close and known:
                hint = f" (known: {', '.join(known)})"
            yield _at(root, where, file, f"{what} {_name(where)}{hint}", key_node=True)
        return
    if not path:
        yield _at(root, path, file, f"must be a mapping of settings, not {_kind(error.instance)}")
        return
    if error.validator == "type":
        wanted: Any = error.validator_value
        wanted = wanted if isinstance(wanted, str) else " or ".join(wanted)
        message = f"must be {_ARTICLE.get(wanted, wanted)}, not {_kind(error.instance)}"
    elif error.validator == "required":
        required: Any = error.validator_value
        instance: Any = error.instance
        missing = [repr(r) for r in required if r not in instance]
        message = f"missing {', '.join(missing)}"
    elif error.validator == "pattern" and isinstance(error.schema, dict) and "x-message" in error.schema:
        message = f"{error.instance!r} {error.schema['x-message']}"
    elif isinstance(error.schema, dict) and str(error.validator) in error.schema.get("x-messages", {}):
        custom = error.schema["x-messages"][str(error.validator)]
        message = custom if isinstance(error.instance, (dict, list)) else f"{error.instance!r} {custom}"
    else:
        message = error.message
    if "propertyNames" in error.schema_path:  # point at the offending key itself
        yield _at(root, (*path, error.instance), file, f"setting {_name(path)}: {message}", key_node=True)
        return
    yield _at(root, path, file, f"setting {_name(path)}: {message}")


_ARTICLE = {
    "string": "a string",
    "array": "a list",
    "object": "a mapping",
    "integer": "an integer",
    "string or integer": "a string or an integer",
    "string or number": "a string or a number",
    "number": "a number",
}


def _kind(value: object) -> str:
    """The YAML kind of a value, for type messages."""
    return "null" if value is None else _KINDS.get(type(value), type(value).__name__)


_KINDS = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer", float: "a number"}


def _name(path: Iterable[object]) -> str:
    """A setting path for messages: `'variables."local_cluster.name".default'`, `'policies[1].class'`."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = f'"{part}"' if "." in str(part) else str(part)
            out += f".{text}" if out else text
    return f"'{out}'"


def _at(root: yaml.Node, path: tuple[Any, ...], file: str, message: str, key_node: bool = False) -> Diagnostic:
    """A diagnostic at the YAML node for `path`, or the deepest one found. With `key_node`, at the key node."""
    line, col = mark(root, path, key_node)
    return Diagnostic.of("E_SETTINGS", message, file=file, line=line, col=col)


def _duplicate_keys(node: yaml.Node, file: str) -> Iterator[Diagnostic]:
    """A duplicated setting is almost always a mistake (YAML would silently keep the last one)."""
    for path, line, col in duplicate_keys(node):
        yield Diagnostic.of("E_SETTINGS", f"setting {_name(path)} is set twice", file=file, line=line, col=col)


def chosen_values(
    settings: Settings, settings_file: str, given: Mapping[str, str] | None, *, every: bool
) -> dict[str, str]:
    """The variable values a compile or a query uses: `given`, else the declared default. Each given value must be
    declared and allowed, else UsageError. A compile that checks `every` value also stands in the first value for a
    variable without a default. A read (client, query) does not. There a required variable with no value is
    E_UNRESOLVED_VARIABLE (docs/resolution.md#variables-dynamic-tags)."""
    for name, value in (given or {}).items():
        declared = settings.variables.get(name)
        if declared is None:
            known = ", ".join(sorted(settings.variables)) or "none"
            raise UsageError(
                f"variable {name!r} is not declared in {settings_file} (E_UNDECLARED_VARIABLE; declared: {known})"
            )
        if declared.values and value not in declared.values:
            raise UsageError(f"variable {name}={value!r}: allowed values are {', '.join(declared.values)}")
    chosen = {n: v.default for n, v in settings.variables.items() if v.default is not None}
    if every:
        chosen = {n: v.values[0] for n, v in settings.variables.items() if v.values} | chosen
    chosen.update(given or {})
    return chosen


def assignments(
    variables: Mapping[str, Variable], names: Iterable[str], given: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """Every combination of values of the declared variables in `names`, `given` ones fixed (compile 5.3)."""
    given = dict(given or {})
    free = sorted(n for n in set(names) if n in variables and n not in given)
    combos = itertools.product(*(variables[n].values for n in free))
    return [{**given, **dict(zip(free, combo, strict=True))} for combo in combos]
