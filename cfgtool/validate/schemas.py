"""JSON Schemas by selector (docs/schemas.md): load and compile each schema file once, check selected nodes.

Each `*.yaml`, `*.yml` or `*.json` file of the schemas directory is a JSON Schema (draft 2020-12) with a
selector::

    x-cfgtool:
      applies_to: {keys: ["/data/**"], tags: ["/tags/acl/restricted"], kinds: [dataset], exclude: ["/tags/**"]}

- `keys` are key globs (`*` one segment, `**` any depth; `/data/**` does not match `/data` itself), `tags`
  select nodes whose import order L contains the tag (the tag node itself included, hence `exclude`), `kinds`
  (any of `dataset`, `group`, `tag`, as `compile` counts them) keeps only nodes of those kinds.
- A node is selected when it matches ANY key glob OR has ANY listed tag, is of one of the `kinds`, and
  matches no `exclude` glob.
- Without `keys` and `tags` (no `x-cfgtool`, no `applies_to`, or both lists empty) a schema applies to every
  node of its `kinds`, or without `kinds` to every node that is neither a tag nor a tag root; `exclude` still
  applies.
- `$ref` between schema files works by `$id`, or by path relative to the schemas directory; nothing is
  fetched from the network. `format` is asserted (`format: email` is checked).

Problems are E_SCHEMA diagnostics. One is an unreadable or invalid schema, or an unknown `x-cfgtool` field. Another
is a selector entry that matches no node, reported at the schema file. That is an error, since a typo in a glob
silently switches validation off. Every violation in a selected node is one too, at the file:line:col of the value at
fault.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema
import referencing
import referencing.jsonschema
from jsonschema_specifications import REGISTRY as SPECIFICATIONS  # type: ignore[import-untyped]

from cfgtool._util.forking import can_fork, fork
from cfgtool.build.cache import SchemaPasses
from cfgtool.diagnostics import Diagnostic
from cfgtool.hocon.resolver import render_path
from cfgtool.snapshot.model import Snapshot, node_hash
from cfgtool.store.keys import BadKeyError, glob_match, normalize_key
from cfgtool.validate.documents import SCHEMA_SUFFIXES, Document, read_document
from cfgtool.validate.locate import json_path, locate
from cfgtool.validate.messages import describe_error
from cfgtool.validate.writeonly import WriteOnly

if TYPE_CHECKING:
    from referencing._core import Resolver  # the package does not export the type

Validator = jsonschema.Draft202012Validator
DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
EXTENSION = "x-cfgtool"
SELECTOR_FIELDS = ("keys", "tags", "kinds", "exclude")
KINDS = ("dataset", "group", "tag")  # the kinds of node `applies_to.kinds` names (`StoreQueries.kind`)
_GLOB_SEGMENT = re.compile(r"\*\*|[A-Za-z0-9._~*?-]+")
SIMPLE_TYPES = frozenset({"string", "integer", "number", "boolean"})
PARALLEL_MIN = 2000  # nodes to check against one schema before half of them go to a forked worker
_Todo = tuple[str, tuple[str, str]]  # a node key, and its verdict's key in SchemaPasses
_Checked = tuple[list[Diagnostic], list[tuple[str, str]], bool]  # problems, verdicts of passes, schema unusable


@dataclass(frozen=True)
class Selector:
    """`x-cfgtool.applies_to`: which nodes a schema checks (see the module docstring)."""

    keys: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()  # empty: any kind

    @property
    def everything(self) -> bool:
        """No keys and no tags: every node that is not a tag (minus `exclude`)."""
        return not self.keys and not self.tags

    def selects(self, snapshot: Snapshot, key: str) -> bool:
        if any(glob_match(pattern, key) for pattern in self.exclude):
            return False
        if self.kinds and snapshot.kind(key) not in self.kinds:
            return False
        if self.everything:
            return bool(self.kinds) or (not snapshot.is_tag(key) and key not in snapshot.tag_roots)
        if any(glob_match(pattern, key) for pattern in self.keys):
            return True
        if self.tags:
            layers = snapshot.linearization(key) or ()
            return any(tag in layers for tag in self.tags)
        return False


@dataclass(frozen=True)
class SchemaSpec:
    """One compiled schema file: where it is, what it selects, and its validator."""

    file: str  # repo-relative
    schema: Mapping[str, Any]
    selector: Selector
    validator: jsonschema.protocols.Validator = field(repr=False, compare=False)
    # where to report a selector entry that matches nothing: ("keys", i) / ("tags", i) / () -> line, col
    marks: Mapping[tuple[Any, ...], tuple[int, int]] = field(default_factory=dict, repr=False, compare=False)
    # what resolves the schema's `$ref`s (every schema file, by `$id` or relative path), based at this file
    resolver: Resolver[Any] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def writeonly(self) -> WriteOnly:
        """Which values this schema marks secret (`writeOnly`), however it reaches them."""
        resolver = self.resolver or referencing.Registry().resolver()
        return WriteOnly(self.schema, resolver)

    @property
    def title(self) -> str:
        return str(self.schema.get("title") or posixpath.basename(self.file))

    def selected(self, snapshot: Snapshot) -> list[str]:
        """The keys of the nodes this schema checks, sorted."""
        return [key for key in sorted(snapshot.nodes) if self.selector.selects(snapshot, key)]


def load_schemas(
    files: Mapping[str, str | None], store_name: str | None = None
) -> tuple[list[SchemaSpec], list[Diagnostic]]:
    """Compile every schema file in `files`: repo-relative path -> text, None for a file that is not UTF-8. Other
    suffixes are ignored. A file with any problem is reported and left out; the others are used."""
    docs: list[Document] = []
    diags: list[Diagnostic] = []
    for file in sorted(files):
        if not file.endswith(SCHEMA_SUFFIXES):
            continue
        doc, problems = read_document(file, files[file])
        diags += problems
        if doc is None:
            continue
        if not isinstance(doc.data, dict):
            what = "empty" if doc.data is None else f"a {type(doc.data).__name__}"
            diags.append(doc.error(f"a schema file must hold a JSON Schema object (a mapping), but it is {what}"))
            continue
        if not problems:
            docs.append(doc)
    registry, uris = _registry(docs)
    specs: list[SchemaSpec] = []
    for doc in docs:
        spec, problems = _compile(doc, registry, uris[doc.file], store_name)
        diags += problems
        if spec is not None:
            specs.append(spec)
    return specs, sorted(diags, key=lambda d: (d.file or "", d.line or 0, d.col or 0))


def _registry(docs: Sequence[Document]) -> tuple[referencing.Registry[Any], dict[str, str]]:
    """Every schema file by its `$id` and by its path relative to the schemas directory (no retrieval). Also the URI
    each file's own `$ref`s are resolved against."""
    base = posixpath.commonpath([posixpath.dirname(d.file) for d in docs]) if docs else ""
    pairs: list[tuple[str, referencing.Resource[Any]]] = []
    uris: dict[str, str] = {}
    for doc in docs:
        resource = referencing.jsonschema.DRAFT202012.create_resource(doc.data)
        relative = posixpath.relpath(doc.file, base or ".")
        if isinstance(doc.data.get("$id"), str):
            pairs.append((doc.data["$id"], resource))
        pairs.append((relative, resource))
        uris[doc.file] = doc.data["$id"] if isinstance(doc.data.get("$id"), str) else relative
    registry: referencing.Registry[Any] = SPECIFICATIONS.with_resources(pairs)
    return registry, uris


def _compile(
    doc: Document, registry: referencing.Registry[Any], uri: str, store_name: str | None
) -> tuple[SchemaSpec | None, list[Diagnostic]]:
    data: dict[str, Any] = doc.data
    diags: list[Diagnostic] = []
    declared = data.get("$schema")
    if declared is not None and str(declared).rstrip("#") != DRAFT_2020_12:
        message = f"$schema is {declared!r}, but cfgtool checks schemas as draft 2020-12 ({DRAFT_2020_12})"
        diags.append(doc.error(message, ("$schema",)))
    meta = Validator(Validator.META_SCHEMA, format_checker=Validator.FORMAT_CHECKER)
    for error in sorted(meta.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        where = json_path(list(error.absolute_path))
        diags.append(doc.error(f"invalid JSON Schema at {where}: {describe_error(error)}", list(error.absolute_path)))
    selector, marks, problems = _selector(doc, store_name)
    diags += problems
    if diags:
        return None, diags
    validator = Validator(data, registry=registry, format_checker=Validator.FORMAT_CHECKER)
    return SchemaSpec(doc.file, data, selector, validator, marks, registry.resolver(base_uri=uri)), []


def _selector(
    doc: Document, store_name: str | None
) -> tuple[Selector, dict[tuple[Any, ...], tuple[int, int]], list[Diagnostic]]:
    """`x-cfgtool.applies_to`, checked: unknown fields, wrong types and bad keys are E_SCHEMA."""
    marks: dict[tuple[Any, ...], tuple[int, int]] = {(): doc.mark((EXTENSION, "applies_to"))}
    ext = doc.data.get(EXTENSION)
    if ext is None:
        return Selector(), marks, []
    where: tuple[Any, ...] = (EXTENSION,)
    if not isinstance(ext, dict):
        return Selector(), marks, [doc.error(f"{EXTENSION} must be a mapping with 'applies_to'", where)]
    diags = [
        doc.error(_unknown(f"{EXTENSION}.{k}", ["applies_to"]), (*where, k), True) for k in ext if k != "applies_to"
    ]
    applies = ext.get("applies_to")
    if applies is None:
        return Selector(), marks, diags
    where = (EXTENSION, "applies_to")
    if not isinstance(applies, dict):
        diags.append(doc.error(f"{EXTENSION}.applies_to must be a mapping of keys, tags, kinds and exclude", where))
        return Selector(), marks, diags
    for k in applies:
        if k not in SELECTOR_FIELDS:
            diags.append(doc.error(_unknown(f"{EXTENSION}.applies_to.{k}", SELECTOR_FIELDS), (*where, k), True))
    lists: dict[str, tuple[str, ...]] = {}
    for name in SELECTOR_FIELDS:
        raw = applies.get(name)
        if raw is None:
            lists[name] = ()
            continue
        if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
            diags.append(doc.error(f"{EXTENSION}.applies_to.{name} must be a list of strings", (*where, name)))
            continue
        items: list[str] = []
        for i, text in enumerate(raw):
            marks[(name, i)] = doc.mark((*where, name, i))
            problem = (
                _tag_problem(text, store_name)
                if name == "tags"
                else _kind_problem(text)
                if name == "kinds"
                else _glob_problem(text)
            )
            if problem:
                diags.append(doc.error(f"{EXTENSION}.applies_to.{name}[{i}]: {problem}", (*where, name, i)))
            items.append(normalize_key(text, store_name) if name == "tags" and not problem else text)
        lists[name] = tuple(items)
    selector = Selector(lists.get("keys", ()), lists.get("tags", ()), lists.get("exclude", ()), lists.get("kinds", ()))
    return selector, marks, diags


def _unknown(name: str, known: Iterable[str]) -> str:
    return f"unknown field '{name}' (known: {', '.join(known)})"


def _kind_problem(text: str) -> str | None:
    if text in KINDS:
        return None
    close = [k for k in KINDS if text.rstrip("s").lower() == k]
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{text!r} is not a kind of node (known: {', '.join(KINDS)}){hint}"


def _tag_problem(text: str, store_name: str | None) -> str | None:
    try:
        normalize_key(text, store_name)
    except BadKeyError as err:
        return err.message
    return None


def _glob_problem(text: str) -> str | None:
    parts = [p for p in text.split("/") if p]
    if not text.startswith("/") or any(_GLOB_SEGMENT.fullmatch(p) is None or ("**" in p and p != "**") for p in parts):
        return (
            f"{text!r} is not a key glob: start with / and use key segments, `*` (one segment) "
            "and `**` (any depth) as whole segments"
        )
    return None


def check_schemas(specs: Sequence[SchemaSpec], snapshot: Snapshot) -> list[Diagnostic]:
    """E_SCHEMA for every violation in every selected node with a resolved config. Also for selector entries that
    match no node. The node key goes into `Diagnostic.key`, never into the message (for grouping). Many nodes to
    check are split with a forked worker (`_checked_in_two`), with the same result."""
    diags: list[Diagnostic] = []
    passes = SchemaPasses.default(schemas_digest(specs))
    for spec in specs:
        selected = spec.selected(snapshot)
        diags += _unmatched(spec, snapshot, selected)
        todo: list[tuple[str, tuple[str, str]]] = []
        for key in selected:
            node = snapshot.nodes[key]
            if node.resolved:
                passed = (spec.file, node_hash(node))
                if not passes.has(passed):
                    todo.append((key, passed))
        split = _checked_in_two(spec, snapshot, todo) if len(todo) >= PARALLEL_MIN else None
        found, ok, _ = split if split is not None else _checked(spec, snapshot, todo)
        for passed in ok:
            passes.put(passed, True)
        diags += found
    passes.flush()
    return list(dict.fromkeys(diags))


def _checked(spec: SchemaSpec, snapshot: Snapshot, todo: Sequence[_Todo]) -> _Checked:
    """The problems of `spec` in the nodes of `todo`, in order, and the verdicts of those that pass. Also whether the
    schema turned out not to apply, which ends the check."""
    diags: list[Diagnostic] = []
    ok: list[tuple[str, str]] = []
    for key, passed in todo:
        try:
            errors = sorted(spec.validator.iter_errors(snapshot.nodes[key].config), key=_error_order)
        except referencing.exceptions.Unresolvable as err:
            message = f"the schema cannot be applied: $ref {err.ref!r} names no schema file or $id"
            diags.append(Diagnostic.of("E_SCHEMA", message, file=spec.file, line=1, col=1))
            return diags, ok, True
        if not errors:
            ok.append(passed)
        for error in errors:
            diags += _violations(spec, snapshot, key, error)
    return diags, ok, False


def _checked_in_two(spec: SchemaSpec, snapshot: Snapshot, todo: Sequence[_Todo]) -> _Checked | None:
    """`_checked` in two processes, a forked worker taking the first half of `todo`. The result is the one process's.
    None when no worker can be forked or it failed."""
    if not can_fork():
        return None
    half = len(todo) // 2
    join = fork(lambda: pickle.dumps(_checked(spec, snapshot, todo[:half]), protocol=pickle.HIGHEST_PROTOCOL))
    try:
        mine = _checked(spec, snapshot, todo[half:])
    finally:
        data = join()  # also when this half failed: no worker is left behind
    if data is None:
        return None
    theirs: _Checked = pickle.loads(data)  # a pipe from this compile's own child, never a cache
    if theirs[2]:
        return theirs
    return theirs[0] + mine[0], theirs[1] + mine[1], mine[2]


def schemas_digest(specs: Sequence[SchemaSpec]) -> str:
    """What a node's verdict depends on besides its config. That is every schema, since a `$ref` may name another
    file, and the jsonschema that applies them."""
    content = [jsonschema_code(), [[spec.file, spec.schema] for spec in specs]]
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=repr)  # YAML may hold dates
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@cache
def jsonschema_code() -> str:
    """A digest of the source of the jsonschema modules that apply the schemas, so a patched install counts too.
    Asking for its version would import importlib.metadata, about 15 ms of every compile."""
    digest = hashlib.sha256()
    for path in sorted(Path(jsonschema.__file__).parent.glob("*.py")):
        digest.update(path.name.encode())
        with suppress(OSError):
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _error_order(error: jsonschema.ValidationError) -> tuple[list[str], str]:
    return [str(p) for p in error.absolute_path], str(error.validator)


def _unmatched(spec: SchemaSpec, snapshot: Snapshot, selected: Sequence[str]) -> list[Diagnostic]:
    """Selector entries that match no node (each a likely typo), else a selection emptied by `exclude`."""
    selector = spec.selector
    diags = []
    for i, pattern in enumerate(selector.keys):
        if not any(glob_match(pattern, key) for key in snapshot.nodes):
            line, col = spec.marks.get(("keys", i), (1, 1))
            message = f"applies_to.keys[{i}] {pattern} matches no node, so this schema checks nothing there"
            diags.append(Diagnostic.of("E_SCHEMA", message, file=spec.file, line=line, col=col))
    for i, tag in enumerate(selector.tags):
        if tag not in snapshot.nodes:
            line, col = spec.marks.get(("tags", i), (1, 1))
            message = f"applies_to.tags[{i}] {tag} has no node, so no node imports it"
            diags.append(Diagnostic.of("E_SCHEMA", message, file=spec.file, line=line, col=col))
    if not diags and not selected and (not selector.everything or selector.kinds):
        line, col = spec.marks.get((), (1, 1))
        narrowed = [name for name in ("kinds", "exclude") if getattr(selector, name)]
        once = f" once {' and '.join(narrowed)} {'are' if len(narrowed) > 1 else 'is'} applied" if narrowed else ""
        message = f"applies_to selects no node{once}, so this schema checks nothing"
        cycle = sorted(k for k, node in snapshot.nodes.items() if not node.layers) if selector.tags else []
        if cycle:  # their imports are unknown: the cause is the E_CYCLE, not applies_to
            shown = ", ".join(cycle[:3]) + (f" and {len(cycle) - 3:,} more" if len(cycle) > 3 else "")
            message = (
                f"applies_to selects no node, and cannot tell for {shown}: on or behind an import cycle (E_CYCLE), "
                f"{'its imports are' if len(cycle) == 1 else 'their imports are'} unknown; fix the cycle first"
            )
        diags.append(Diagnostic.of("E_SCHEMA", message, file=spec.file, line=line, col=col))
    return diags


def _violations(spec: SchemaSpec, snapshot: Snapshot, key: str, error: jsonschema.ValidationError) -> list[Diagnostic]:
    """One E_SCHEMA per failing value: one per missing property, one per property that is not allowed."""
    node = snapshot.nodes[key]
    path = list(error.absolute_path)
    suffix = f" (schema {spec.file})"
    out: list[Diagnostic] = []

    def add(message: str, where: list[str | int], missing: bool = False) -> None:
        file, line, col = locate(node, snapshot.store, where, missing=missing)
        out.append(Diagnostic.of("E_SCHEMA", message + suffix, key=key, file=file, line=line, col=col))

    instance = error.instance
    if error.validator == "required" and isinstance(instance, dict):
        required: Any = error.validator_value
        for name in required:
            if name not in instance:
                add(f"{json_path([*path, name])}: required, but not set", path, missing=True)
        return out
    if error.validator == "additionalProperties" and isinstance(instance, dict) and isinstance(error.schema, dict):
        allowed = list(error.schema.get("properties") or {})
        patterns = list(error.schema.get("patternProperties") or {})
        extras = [k for k in instance if k not in allowed and not any(re.search(p, k) for p in patterns)]
        shown = ", ".join(allowed) if allowed else "none"
        for extra in extras:
            add(f"{json_path([*path, extra])}: not allowed here (allowed: {shown})", [*path, extra])
        if extras:
            return out
    add(f"{json_path(path)}: {describe_error(error)}", path)
    return out


def schema_types(specs: Sequence[SchemaSpec], snapshot: Snapshot | None = None) -> dict[str, str]:
    """The declared JSON type ("string", "integer", "number" or "boolean") of dotted paths. It comes from simple
    `type` keywords under nested `properties` of the schemas. `$ref`, `allOf` and type lists give none.

    With a snapshot, only schemas selecting at least one of its nodes count. Schemas that disagree on a
    path leave it out, except integer with number, which is number.
    """
    chosen = list(specs)
    if snapshot is not None:
        chosen = [s for s in specs if any(s.selector.selects(snapshot, k) for k in snapshot.nodes)]
    found: dict[str, set[str]] = {}
    for spec in chosen:
        _collect_types(spec.schema, (), found)
    out: dict[str, str] = {}
    for path, types in found.items():
        if len(types) == 1:
            out[path] = next(iter(types))
        elif types == {"integer", "number"}:
            out[path] = "number"
    return out


def _collect_types(schema: Mapping[str, Any], prefix: tuple[str, ...], found: dict[str, set[str]]) -> None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for name, sub in properties.items():
        if not isinstance(sub, Mapping) or not isinstance(name, str):
            continue
        path = (*prefix, name)
        declared = sub.get("type")
        if isinstance(declared, str) and declared in SIMPLE_TYPES:
            found.setdefault(render_path(path), set()).add(declared)
        _collect_types(sub, path, found)
