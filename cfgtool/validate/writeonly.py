"""Which values a JSON Schema marks secret (`writeOnly: true`), however the schema reaches them.

A value is secret when any subschema that applies to it says `writeOnly: true`. Subschemas apply through
`properties`, `patternProperties`, `additionalProperties`, `items` / `prefixItems` and `dependentSchemas`. They also
apply through `allOf` / `anyOf` / `oneOf` and `if` / `then` / `else`. And through `$ref`: to `$defs` or to another
schema file, by `$id` or relative path. Branches that may or may not apply all count. A value that could be a secret
is one. Those are `anyOf`, `oneOf`, `if` / `then` / `else` and `dependentSchemas`. A `$ref` that cannot be resolved
is reported (W_SECRET_UNKNOWN). What it describes may be secret, and cfgtool cannot tell.

`WriteOnly` prepares a schema once: which of its subschemas can lead to a writeOnly mark at all. `secrets` then walks
a resolved config along those subschemas only. So a large config under a schema with one secret costs a few lookups.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

import referencing.exceptions
import referencing.jsonschema

if TYPE_CHECKING:
    from referencing._core import Resolver  # the package does not export the type

Path = tuple[str, ...]
_Sub = tuple[Mapping[str, Any], "Resolver[Any]"]  # a subschema and what resolves its $refs there
_IN_PLACE = ("allOf", "anyOf", "oneOf")  # lists of schemas applied to the value itself
_IN_PLACE_ONE = ("if", "then", "else")  # schemas applied to the value itself
_REFS = ("$ref", "$dynamicRef")


class WriteOnly:
    """The writeOnly analysis of one schema file (`root`, resolved through `resolver`)."""

    def __init__(self, root: Mapping[str, Any], resolver: Resolver[Any]) -> None:
        self.root: _Sub = (root, _within(root, resolver))
        self.unresolvable: dict[str, None] = {}  # every $ref that cannot be resolved, in the order found
        self._relevant = self._prepare()

    @property
    def marks_any(self) -> bool:
        """Whether the schema can mark anything writeOnly (or reaches a `$ref` it cannot resolve)."""
        return id(self.root[0]) in self._relevant

    def secrets(self, config: Any) -> set[Path]:
        """The paths of `config` whose values the schema marks writeOnly (list items by index)."""
        found: set[Path] = set()
        stack: list[tuple[Any, Path, list[_Sub]]] = [(config, (), [self.root])] if self.marks_any else []
        while stack:
            value, path, subs = stack.pop()
            applied = self._applied(subs)
            if any(schema.get("writeOnly") is True for schema, _ in applied):
                if path:
                    found.add(path)
                continue
            if isinstance(value, Mapping):
                for name, child in value.items():
                    kids = [s for s in _members(applied, str(name)) if id(s[0]) in self._relevant]
                    if kids:
                        stack.append((child, (*path, str(name)), kids))
            elif isinstance(value, list):
                for index, child in enumerate(value):
                    kids = [s for s in _items(applied, index) if id(s[0]) in self._relevant]
                    if kids:
                        stack.append((child, (*path, str(index)), kids))
        return found

    def _applied(self, subs: list[_Sub]) -> list[_Sub]:
        """`subs` and every subschema they apply to the same value ($ref, allOf, if, ...), each once."""
        out: dict[int, _Sub] = {}
        todo = list(subs)
        while todo:
            sub = todo.pop()
            if id(sub[0]) in out:
                continue
            out[id(sub[0])] = sub
            todo += self._in_place(sub)
        return list(out.values())

    def _in_place(self, sub: _Sub) -> Iterator[_Sub]:
        schema, resolver = sub
        for keyword in _REFS:
            ref = schema.get(keyword)
            if isinstance(ref, str):
                target = self._resolve(ref, resolver)
                if target is not None:
                    yield target
        for keyword in _IN_PLACE:
            for child in _schemas(schema.get(keyword)):
                yield child, _within(child, resolver)
        for keyword in _IN_PLACE_ONE:
            one = schema.get(keyword)
            if isinstance(one, Mapping):
                yield one, _within(one, resolver)
        dependent = schema.get("dependentSchemas")
        if isinstance(dependent, Mapping):
            for child in dependent.values():
                if isinstance(child, Mapping):
                    yield child, _within(child, resolver)

    def _resolve(self, ref: str, resolver: Resolver[Any]) -> _Sub | None:
        try:
            resolved = resolver.lookup(ref)
        except referencing.exceptions.Unresolvable:
            self.unresolvable.setdefault(ref)
            return None
        contents = resolved.contents
        return (contents, resolved.resolver) if isinstance(contents, Mapping) else None

    def _prepare(self) -> set[int]:
        """The subschemas (by id) from which a writeOnly mark or an unresolvable $ref can be reached. The
        unresolvable $refs reachable from the root are collected on the way."""
        edges: dict[int, set[int]] = {}
        hot: set[int] = set()
        todo = [self.root]
        while todo:
            sub = todo.pop()
            key = id(sub[0])
            if key in edges:
                continue
            unknown_before = len(self.unresolvable)
            nexts = [*self._in_place(sub), *_all_children(sub)]
            edges[key] = {id(s[0]) for s in nexts}
            if sub[0].get("writeOnly") is True or len(self.unresolvable) > unknown_before:
                hot.add(key)
            todo += nexts
        back: dict[int, set[int]] = {}
        for source, targets in edges.items():
            for target in targets:
                back.setdefault(target, set()).add(source)
        relevant, todo_ids = set(hot), list(hot)
        while todo_ids:
            for source in back.get(todo_ids.pop(), ()):
                if source not in relevant:
                    relevant.add(source)
                    todo_ids.append(source)
        return relevant


def _within(schema: Mapping[str, Any], resolver: Resolver[Any]) -> Resolver[Any]:
    """The resolver for `$ref`s inside `schema`: a subschema with its own `$id` is a new base."""
    if isinstance(schema.get("$id"), str):
        return resolver.in_subresource(referencing.jsonschema.DRAFT202012.create_resource(schema))
    return resolver


def _schemas(value: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(value, list):
        yield from (v for v in value if isinstance(v, Mapping))


def _members(applied: list[_Sub], name: str) -> Iterator[_Sub]:
    """The subschemas that apply to member `name` of an object: `properties`, every matching
    `patternProperties`, else `additionalProperties`."""
    for schema, resolver in applied:
        properties = schema.get("properties")
        matched = False
        if isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping):
            matched = True
            yield properties[name], _within(properties[name], resolver)
        patterns = schema.get("patternProperties")
        if isinstance(patterns, Mapping):
            for pattern, child in patterns.items():
                if isinstance(child, Mapping) and _search(str(pattern), name):
                    matched = True
                    yield child, _within(child, resolver)
        extra = schema.get("additionalProperties")
        named = isinstance(properties, Mapping) and name in properties
        if not matched and not named and isinstance(extra, Mapping):
            yield extra, _within(extra, resolver)


def _items(applied: list[_Sub], index: int) -> Iterator[_Sub]:
    """The subschemas that apply to item `index` of a list: `prefixItems[index]`, else `items`."""
    for schema, resolver in applied:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and index < len(prefix):
            if isinstance(prefix[index], Mapping):
                yield prefix[index], _within(prefix[index], resolver)
            continue
        items = schema.get("items")
        if isinstance(items, Mapping):
            yield items, _within(items, resolver)


def _all_children(sub: _Sub) -> Iterator[_Sub]:
    """Every subschema that applies to some member or item of the value."""
    schema, resolver = sub
    for keyword in ("properties", "patternProperties"):
        table = schema.get(keyword)
        if isinstance(table, Mapping):
            for child in table.values():
                if isinstance(child, Mapping):
                    yield child, _within(child, resolver)
    for keyword in ("additionalProperties", "items"):
        child = schema.get(keyword)
        if isinstance(child, Mapping):
            yield child, _within(child, resolver)
    for child in _schemas(schema.get("prefixItems")):
        yield child, _within(child, resolver)


@cache
def _compiled(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:  # the metaschema check reports a bad pattern; here it matches nothing
        return None


def _search(pattern: str, name: str) -> bool:
    compiled = _compiled(pattern)
    return compiled is not None and compiled.search(name) is not None
