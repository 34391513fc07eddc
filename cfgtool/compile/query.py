"""Queries that read what they need. One key's answers come from the files of L(KEY) alone. The import graph comes
from every node's includes, without any `main.conf`.

`query_key` answers `get`, `explain`, `imports` and `tags`. It discovers K's nearest node and every node it reaches
(`cfgtool.store.scope`). It linearizes and resolves those, and hides secrets, exactly as a full compile does for
them. So the answer and the errors that affect K are the full compile's. Those errors are its layers' syntax, import
and resolution errors, and the settings' (docs/resolution.md). Two cases go through the full compile instead. One is
an import cycle among K's nodes. How a cycle is reported depends on where the store-wide search enters it. The other
is a working tree where git does not list a file the scope relied on (an ignored file).

`query_graph` answers `imported-by` and `datasets`. They need every node's imports but no `main.conf`. So only errors
of the import graph refuse them: discovery, includes, cycles, settings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cfgtool.diagnostics import VALIDATION_CODES, Diagnostic, count
from cfgtool.errors import CfgtoolError
from cfgtool.store import keys

if TYPE_CHECKING:  # the answers' types; the compile machinery is imported by the functions that compile
    from cfgtool.compile.compiler import CompileResult
    from cfgtool.snapshot.model import Reading, Snapshot
    from cfgtool.store.graph import Graph
    from cfgtool.store.nodes import Store
    from cfgtool.store.scope import Scope
    from cfgtool.store.sources import Source


class QueryRefused(CfgtoolError):
    """A query whose answer errors make unreliable (exit 1): every caller refuses it alike. The message names the
    first error by place (then code and message) and counts them. `key` is None for the import graph. `total` is
    the errors of the whole store the read found (None: it read only what the key needs). So the count says why it
    differs from `cfgtool compile`'s."""

    def __init__(self, key: str | None, errors: Sequence[Diagnostic], total: int | None = None) -> None:
        first = min(errors, key=lambda d: (d.file or "", d.line or 0, d.col or 0, d.code, d.message))
        where = f"{first.location}: " if first.location else ""
        n, plural = len(errors), len(errors) != 1
        if key is None:
            count = f"the store cannot be queried: its import graph has {n:,} error{'s' if plural else ''}"
        elif total is not None and total > n:
            count = f"{key} cannot be queried: {n:,} of the store's {total:,} errors affect{'' if plural else 's'} it"
        else:
            count = f"{key} cannot be queried: {n:,} error{'s affect' if plural else ' affects'} it"
        super().__init__(
            f"{count}, the first: {where}{first.code} {first.message}",
            hint="`cfgtool compile` lists every error of the store (also those of schemas, policies and other"
            " variable values, which do not stop a query); or query a good state with --ref REF",
        )
        self.key = key
        self.errors = tuple(errors)


@dataclass(frozen=True)
class KeyAnswer:
    """What the queries about one key read: `result` compiles the nodes L(key) needs. `scope` is None when that is
    the whole store. The query then fell back to a full compile, or read a commit from a version artifact."""

    key: str
    result: CompileResult | Reading
    scope: Scope | None

    @property
    def snapshot(self) -> Snapshot:
        return self.result.snapshot

    def errors(self) -> list[Diagnostic]:
        """The errors that make an answer about `key` unreliable (as `CompileResult.errors_affecting`)."""
        return self.result.errors_affecting(self.key)

    def store_errors(self) -> int | None:
        """How many errors the whole store has, as far as this read found. None when it read only the nodes `key`
        needs; errors elsewhere were not looked for."""
        if self.scope is not None:
            return None
        return count(self.result.diagnostics)[0]

    def check(self) -> KeyAnswer:
        """This answer, or QueryRefused when errors affect `key`: errors of any layer of L(key), or of no node
        (settings). Validation errors (schemas, policies) never change a resolved config, so they refuse nothing."""
        errors = self.errors()
        if errors:
            raise QueryRefused(self.key, errors, self.store_errors())
        return self

    def near_node(self) -> str | None:
        """A node whose key is close to `key` (which has no node), for a did-you-mean (`keys.near_node`)."""
        scope = self.scope
        if scope is None:
            return self.snapshot.near_node(self.key)
        names = lambda k: keys.siblings(map(keys.last_segment, scope.children(k)))  # noqa: E731
        return keys.near_node(self.key, scope.nearest, names)

    def read(self, path: str | None, *, nearest: bool = False, how: str = "nearest=True") -> KeyRead:
        """The config of `key`, or the value at `path` in it (`hocon.read_path`, as every reader reads one).

        A key without a node raises KeyNotFound naming a node with a close key, unless `nearest`: a typo must
        not read as its ancestor's config (`how` says how the caller asks for that on purpose). A `path` that
        is not set raises CfgtoolError, with the quoted path that is set when there is one."""
        from cfgtool.snapshot.model import KeyNotFound

        snap = self.snapshot
        node = snap.nearest_node(self.key)
        if node != self.key and not nearest:
            raise KeyNotFound.no_node(self.key, snap.name or snap.store, node, self.near_node(), how=how)
        found = snap.lookup(self.key)
        if path is None:
            return KeyRead(found.key, found.node, found.exists, found.config)
        from cfgtool.hocon import (
            read_path,
            split_path,
        )  # the HOCON engine only for a path: a cached read parses nothing
        from cfgtool.hocon.resolver import render_path

        value = read_path(found.config, path)
        if not value.found:
            near = f"; did you mean {value.did_you_mean}?" if value.did_you_mean else ""
            raise CfgtoolError(
                f"{render_path(split_path(path))} is not set in the config of {self.key}{near}",
                hint=f"list what is set with `cfgtool get {self.key}`",
            )
        return KeyRead(found.key, found.node, found.exists, value.value)


@dataclass(frozen=True)
class KeyRead:
    """What `KeyAnswer.read` read: the key, the node it reads (itself, or its nearest ancestor when it has no
    node: `exists` is then false) and the config or value."""

    key: str
    node: str
    exists: bool
    value: Any


def key_at(text: str, reading: Reading) -> KeyAnswer:
    """The answer about `text` (a key, BadKeyError when it is none) in a store read at a commit (`read_at`): the
    whole store, so its errors are counted store-wide."""
    return KeyAnswer(keys.normalize_key(text, reading.snapshot.name), reading, None)


def query_key(
    repo: Path | None, store: str | Path, ref: str | None, text: str, variables: Mapping[str, str] | None = None
) -> KeyAnswer:
    """The compiled nodes that `text` (a key, BadKeyError when it is none) needs, at `ref` (None: the working tree).
    They use the caller's `variables`, and declared defaults for the others."""
    from cfgtool._version import __version__
    from cfgtool.build.builder import Builder
    from cfgtool.build.cache import SettingsPasses
    from cfgtool.compile.compiler import CompileResult, compile_source, hide_secrets
    from cfgtool.snapshot.model import Snapshot, SourceInfo
    from cfgtool.store.graph import Graph
    from cfgtool.store.scope import Scope, WorkTreeListing, listing_of
    from cfgtool.store.settings import chosen_values
    from cfgtool.validate.rules import rules_of

    source = _open(repo, store, ref)
    passes = SettingsPasses.default(_settings_digest())
    scope = Scope(source, listing_of(source), lambda data: passes.has(_digest(data)))
    settings_blob = source.read(scope.settings_file)
    if settings_blob is not None and not scope.diagnostics and not passes.has(_digest(settings_blob.data)):
        passes.put(_digest(settings_blob.data), True)
        passes.flush()
    chosen = chosen_values(scope.settings, scope.settings_file, variables, every=False)
    key = keys.normalize_key(text, scope.settings.name)
    scope.close([scope.nearest(key)], chosen)
    found = scope.store()
    graph = Graph(found, chosen)
    listing = scope.listing
    if graph.failed or (isinstance(listing, WorkTreeListing) and not listing.verified()):
        full = compile_source(source, variables, check_variables=False, validate=False)
        return KeyAnswer(key, full, None)
    diags = [*found.diagnostics, *graph.diagnostics]
    builder = Builder(found, diags, caches=False)
    nodes = builder.build(graph, found.nodes)
    snapshot = Snapshot(
        store=source.store,
        name=found.settings.name,
        source=SourceInfo(source.ref, source.commit, False),  # a view for this query, never written out
        variables=chosen,
        tag_roots=tuple(found.settings.tag_roots),
        nodes=nodes,
        cfgtool_version=__version__,
        texts=source.texts(builder.texts_paths()),
    )
    rules = rules_of(source, found.settings, found.settings_file)
    hidden, problems = hide_secrets(rules, snapshot)
    result = CompileResult(hidden, tuple(dict.fromkeys([*diags, *problems])), found, rules, (chosen,), builder.stats)
    return KeyAnswer(key, result, scope)


@dataclass(frozen=True)
class GraphAnswer:
    """The import graph of a whole store (every node's includes, no `main.conf`) and its problems."""

    store: Store
    graph: Graph

    def errors(self) -> list[Diagnostic]:
        """Errors that make the graph unreliable: the store's discovery and import errors."""
        found = [*self.store.diagnostics, *self.graph.diagnostics]
        return [d for d in dict.fromkeys(found) if d.severity == "error" and d.code not in VALIDATION_CODES]

    def check(self) -> GraphAnswer:
        """This graph, or QueryRefused when it has errors. Any error of the store's includes, discovery or settings
        can change who imports what; a `main.conf` cannot."""
        errors = self.errors()
        if errors:
            raise QueryRefused(None, errors)
        return self


def query_graph(
    repo: Path | None, store: str | Path, ref: str | None, variables: Mapping[str, str] | None = None
) -> GraphAnswer:
    """The import graph of the store at `ref` (None: the working tree) with the caller's `variables`."""
    from cfgtool.store.graph import Graph
    from cfgtool.store.nodes import discover
    from cfgtool.store.settings import chosen_values
    from cfgtool.store.sources import open_source

    found = discover(open_source(repo, store, ref), mains=False)
    chosen = chosen_values(found.settings, found.settings_file, variables, every=False)
    return GraphAnswer(found, Graph(found, chosen))


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _settings_digest() -> str:
    """What a settings pass depends on besides the text. That is the settings schema and the code that reads it."""
    from cfgtool.store import settings
    from cfgtool.store.settings import settings_schema

    return _digest(Path(settings.__file__).read_bytes() + json.dumps(settings_schema()).encode())


def _open(repo: Path | None, store: str | Path, ref: str | None) -> Source:
    """The source to read. A working tree is not listed up front; `cfgtool.store.scope` looks at what it needs."""
    from cfgtool.store.sources import WorkTreeSource, open_source

    if ref is None:
        return WorkTreeSource(repo if repo is not None else Path.cwd(), store, listed=False)
    return open_source(repo, store, ref)
