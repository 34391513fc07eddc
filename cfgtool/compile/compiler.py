"""The one path from a source to a `Snapshot` and its diagnostics (ARCHITECTURE.md, docs/compile.md).

discover nodes -> parse every main.conf (cached by blob id) -> linearize (one graph per variable assignment)
-> merge the layers' own configs and resolve once per node (intrinsics `cfgtool.key` / `cfgtool.name`)
-> Snapshot. Problems are collected as `Diagnostic`s per node; one failing node never stops the others.
Nothing here prints or writes files except the caches (`cfgtool.build.cache`, `cfgtool.build.structure`). Each file
is written atomically. A store's shape found in the structure cache skips discovery and the graphs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cfgtool._version import __version__
from cfgtool.access.enforce import acl_problems, change_problems
from cfgtool.build import structure
from cfgtool.build.builder import Builder
from cfgtool.build.builder import Progress as Progress  # the callback type, for callers
from cfgtool.diagnostics import VALIDATION_CODES as VALIDATION_CODES  # its first home: still importable here
from cfgtool.diagnostics import Diagnostic, count
from cfgtool.hocon import bulk
from cfgtool.snapshot.model import Snapshot, SourceInfo, errors_affecting
from cfgtool.store import git
from cfgtool.store.graph import Graph
from cfgtool.store.nodes import Store, discover, read_settings
from cfgtool.store.settings import assignments, chosen_values
from cfgtool.store.sources import Source, StoreNotFoundError, open_source
from cfgtool.validate.gate import gate_changes
from cfgtool.validate.rules import Rules, rule_changes, rules_of

if TYPE_CHECKING:
    from cfgtool.validate.policy_runs import Reverts

# The rolled-back values of a store that policies do not judge a change back from: (repository, store, the
# base's snapshot) -> reverts. The versions package computes them from the rollback markers
# (`cfgtool.versions.sticky.store_reverts`); `cfgtool compile --base` passes that.
RevertsOf = Callable[[Path, "str | Path", Snapshot], "Reverts"]


@dataclass(frozen=True)
class CompileResult:
    """A compiled store: the snapshot (under the chosen variable values) and every problem found."""

    snapshot: Snapshot
    diagnostics: tuple[Diagnostic, ...]
    store: Store
    rules: Rules  # what it was checked with
    checked: tuple[Mapping[str, str], ...]  # every variable assignment that was compiled
    stats: Mapping[str, int]  # files parsed, nodes resolved, nodes reused, graphs reused (1: from the cache)
    # key -> the files its main.conf includes (`include "x.conf"`, transitively): they are the node's files too
    included: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def errors(self) -> int:
        return count(self.diagnostics)[0]

    @property
    def warnings(self) -> int:
        return count(self.diagnostics)[1]

    def ok(self, strict: bool = False) -> bool:
        """No errors (and, when `strict`, no warnings either)."""
        return self.errors == 0 and not (strict and self.warnings)

    def errors_affecting(self, key: str | None) -> list[Diagnostic]:
        """Errors that make an answer about `key` unreliable; `None` asks about the whole store (see
        `cfgtool.snapshot.model.errors_affecting`)."""
        return errors_affecting(self.snapshot, self.diagnostics, key)


def compile_store(
    repo: Path | None = None,
    store: str | Path = "store",
    ref: str | None = None,
    variables: Mapping[str, str] | None = None,
    *,
    check_variables: bool = True,
    validate: bool = True,
    base: str | None = None,
    principal: str | None = None,
    progress: Progress | None = None,
    reverts: RevertsOf | None = None,
) -> CompileResult:
    """Compile the store in `repo` at `ref` (None: the working tree); see `compile_source`.

    `base` names a ref to compare with. Policies then see each node as created, altered, deleted or unchanged against
    the store at that ref (docs/policies.md#the-contract). Every rule is then the base's, never the change's own
    (docs/security.md). The rules are settings, schemas, policy code, ACL and recipients. `principal` is who asks (a
    PR's author). `reverts` finds the store's rolled-back values, which policies let a change return to.
    `cfgtool compile --base` passes those of the version tags. Without it, policies judge every change.
    """
    source = open_source(repo, store, ref)
    if base is None:
        return compile_source(
            source, variables, check_variables=check_variables, validate=validate, principal=principal,
            progress=progress,
        )  # fmt: skip
    try:
        base_source = open_source(source.repo_root, store, base)
    except StoreNotFoundError:  # the change adds the store (a repository adopting cfgtool): all is created
        base_snapshot = absent_store(source.store, base, git.resolve_commit(source.repo_root, base))
        result = compile_source(
            source, variables, check_variables=check_variables, validate=validate, base=base_snapshot,
            principal=principal, progress=progress,
        )  # fmt: skip
        added = rule_changes({}, result.rules.files(), None)  # no trusted rules yet: its own, flagged
        added += _gate_changes(source, base_snapshot)
        return replace(result, diagnostics=result.diagnostics + tuple(added))
    based = compile_source(base_source, variables, check_variables=False, validate=False, progress=progress)
    rolled_back = None
    if reverts is not None and validate and based.rules.settings.policies:  # not the policies' business
        rolled_back = reverts(source.repo_root, store, based.snapshot)
    result = compile_source(
        source, variables, check_variables=check_variables, validate=validate, base=based.snapshot,
        principal=principal, trusted=based.rules, progress=progress, reverts=rolled_back,
    )  # fmt: skip
    result = replace(result, diagnostics=result.diagnostics + tuple(_gate_changes(source, based.snapshot)))
    if principal is None:
        return result
    changed_rules = [d.file for d in result.diagnostics if d.code == "W_RULES_CHANGED" and d.file]
    denied = change_problems(
        based.rules, (based.store, based.included), (result.store, result.included), principal, changed_rules
    )
    return replace(result, diagnostics=result.diagnostics + tuple(denied))


def _gate_changes(source: Source, base: Snapshot) -> list[Diagnostic]:
    """W_GATE_CHANGED for the files that decide how CI runs which `source` changes against the base."""
    if base.source.commit is None:
        return []
    return gate_changes(source.repo_root, base.source.commit, source.commit if source.ref is not None else None)


def absent_store(store: str, ref: str, commit: str | None) -> Snapshot:
    """The snapshot of a ref whose tree has no store yet. It has no nodes, so against it every node is created."""
    return Snapshot(
        store=store,
        name=None,
        source=SourceInfo(ref, commit, False),
        variables={},
        tag_roots=(),
        nodes={},
        cfgtool_version=__version__,
    )


def compile_source(
    source: Source,
    variables: Mapping[str, str] | None = None,
    *,
    check_variables: bool = True,
    validate: bool = True,
    base: Snapshot | None = None,
    principal: str | None = None,
    trusted: Rules | None = None,
    progress: Progress | None = None,
    reverts: Reverts | None = None,
) -> CompileResult:
    """Compile every node of the store in `source`, then (with `validate`) check schemas and policies.

    The snapshot uses `variables`, falling back to the declared defaults (then to each variable's first value).
    With `check_variables`, every other declared value of every variable a node depends on is compiled too. Its
    problems are reported with the values that caused them (docs/resolution.md#variables-dynamic-tags). `trusted`:
    the rules to compile and check with instead of the source's own (a `--base` ref's). Every rule file the source
    changes against them is W_RULES_CHANGED. `progress`, when given, is told how far the compile is (nothing here
    prints). `reverts`: the base's rolled-back values, which policies do not judge a change reverting
    (`cfgtool.validate.policy_runs`).
    """
    with bulk():  # a compile builds large acyclic structures: pausing the cyclic GC halves its time
        result, written = _compile(source, variables, check_variables, trusted, progress, aside=validate)
        try:
            hidden, problems = hide_secrets(result.rules, result.snapshot)
            problems += acl_problems(source, result.rules)
            if validate:
                if progress is not None:
                    progress("validating", 0, 0)
                problems += validate_snapshot(result.store, hidden, result.rules, base, principal, reverts)
        except BaseException:
            written(False)  # no child is left behind; an interrupted compile writes nothing more
            raise
        written(True)  # the caches are whole when the compile returns
    return replace(result, snapshot=hidden, diagnostics=result.diagnostics + tuple(problems))


def hide_secrets(rules: Rules, snapshot: Snapshot) -> tuple[Snapshot, list[Diagnostic]]:
    """The snapshot with every secret `[hidden]` (docs/access.md), and its secrets' problems (W_SECRET_UNKNOWN
    included). It runs right after resolution, before validation and before anything reads the snapshot. Stores
    without recipients or writeOnly schemas skip the hiding."""
    secrets = rules.uses_secrets
    # without secrets, a $ref that cannot be resolved may still hide a writeOnly mark: W_SECRET_UNKNOWN
    if not secrets and not any(text and "$ref" in text for text in rules.schema_files[0].values()):
        return snapshot, []
    from cfgtool.access.redact import seal_snapshot, unknown_secrets

    specs = rules.schemas[0]
    if not secrets:
        return snapshot, unknown_secrets(specs)
    hidden, problems = seal_snapshot(snapshot, specs)
    return hidden, problems + unknown_secrets(specs)


def validate_snapshot(
    store: Store,
    snapshot: Snapshot,
    rules: Rules,
    base: Snapshot | None = None,
    principal: str | None = None,
    reverts: Reverts | None = None,
) -> list[Diagnostic]:
    """JSON Schemas and policies (docs/schemas.md, docs/policies.md) of `rules` on a compiled snapshot. One problem
    never stops the others."""
    from cfgtool.validate import check_policies, check_schemas  # jsonschema: only when validating

    source = rules.source
    diags: list[Diagnostic] = []
    schemas_dir = rules.schemas_dir
    if schemas_dir is not None:
        files, links = rules.schema_files
        diags += [
            Diagnostic.of(
                "E_UNSAFE_PATH",
                f"{link} is a symbolic link; cfgtool never reads schemas through links, so it is ignored",
                file=link,
                notes=("a link can lead outside the repository: commit the schema itself instead",),
            )
            for link in links
        ]
        if not files:
            diags.append(
                Diagnostic.of(
                    "E_SETTINGS",
                    f"schemas: {rules.settings.schemas!r} names {schemas_dir}/, which holds no schema files",
                    file=rules.settings_file,
                    notes=("add *.yaml or *.json JSON Schemas there, or remove the setting",),
                )
            )
        specs, problems = rules.schemas
        diags += problems
        diags += check_schemas(specs, snapshot)
    if rules.settings.policies:
        diags += check_policies(
            rules.settings.policies,
            source.repo_root,
            snapshot,
            base,
            principal,
            settings_file=rules.settings_file,
            settings_text=rules.settings_text,
            present=store.nodes.keys(),
            code_root=rules.policy_root(),
            reverts=reverts,
        )
    return diags


def _compile(
    source: Source,
    variables: Mapping[str, str] | None,
    check_variables: bool,
    trusted: Rules | None,
    progress: Progress | None,
    aside: bool,
) -> tuple[CompileResult, Callable[[bool], None]]:
    """The compile of `compile_source` without validation, and the function that waits for its cache entries to be
    written. With `aside`, a child writes them while the caller validates (`Builder.flush_aside`)."""
    shape = structure.shape_key(source, variables, check_variables) if trusted is None else None
    known = structure.load(shape) if shape is not None else None
    store = known.store(source) if known is not None else None
    if store is None:
        known = None  # none, or one that does not fit this source (planted or foreign): a miss
        store = discover(source, None if trusted is None else (trusted.settings, trusted.settings_file))
    own = rules_of(source, *read_settings(source)) if trusted is not None else None
    rules = trusted or rules_of(source, store.settings, store.settings_file)
    settings = store.settings
    chosen = chosen_values(settings, store.settings_file, variables, every=check_variables)

    diags: list[Diagnostic] = list(store.diagnostics)
    if own is not None and trusted is not None:
        diags += trusted.changes(own)
    if known is not None:
        graph, checks = known.restore(store, chosen)
    else:
        graph = Graph(store, chosen)
        checks = _checks(graph, chosen, variables) if check_variables else []
        if shape is not None:
            structure.save(shape, store, graph, checks)
    diags += graph.diagnostics
    builder = Builder(store, diags, progress)
    nodes = builder.build(graph, graph.nodes)

    checked: list[Mapping[str, str]] = [chosen]
    main_count = len(diags)
    for check in checks:
        checked.append(check.assignment)
        diags += check.diagnostics
        note = ("with " + ", ".join(f"{n}={v}" for n, v in sorted(check.assignment.items())),)
        builder.build(check.graph, check.changed, note, keep=False)
    diags[main_count:] = _new_problems(diags[:main_count], diags[main_count:])

    snapshot = Snapshot(
        store=source.store,
        name=settings.name,
        source=SourceInfo(source.ref, source.commit, _dirty(source, rules)),
        variables=chosen,
        tag_roots=tuple(settings.tag_roots),
        nodes=nodes,
        cfgtool_version=__version__,
        texts=source.texts(builder.texts_paths()),
        rules=(own or rules).files(),  # the source's own rules, also when checked with a base's
    )
    source.flush()
    stats = {**builder.stats, "graphs_reused": int(known is not None)}
    result = CompileResult(
        snapshot, tuple(dict.fromkeys(diags)), store, rules, tuple(checked), stats, dict(builder.included)
    )
    if aside:
        return result, builder.flush_aside()  # last: nothing may fail between the fork and the caller's wait
    builder.flush()
    return result, lambda keep: None


def _checks(graph: Graph, chosen: Mapping[str, str], variables: Mapping[str, str] | None) -> list[structure.Check]:
    """Every other assignment of the variables that nodes depend on (docs/resolution.md#variables-dynamic-tags). Each
    comes with its graph, the problems that graph reports and the nodes whose L it changes. Only those are resolved
    again."""
    depends = {k: used for k in graph.nodes if k not in graph.failed and (used := graph.variables_of(k))}
    out = []
    for assignment in assignments(graph.store.settings.variables, set().union(*depends.values()), variables):
        differing = {n for n, v in assignment.items() if chosen.get(n) != v}
        if not differing:
            continue
        other = Graph(graph.store, {**chosen, **assignment}, base=graph)
        found = tuple(other.diagnostics)  # those found building it (not while answering queries later)
        changed = [k for k, used in depends.items() if used & differing]
        changed = [k for k in changed if other.linearization(k) != graph.linearization(k)]
        out.append(structure.Check(assignment, found, tuple(changed), other))
    return out


def _dirty(source: Source, rules: Rules) -> bool:
    """Whether a working tree differs from HEAD in anything the compile reads. That is the store, and the rules when
    they come from the working tree too. Schemas and policy code may live outside the store."""
    if source.ref is not None:
        return False
    if source.dirty:
        return True
    return rules.source is source and git.is_dirty(source.repo_root, *rules.paths())


def _new_problems(reported: list[Diagnostic], others: list[Diagnostic]) -> list[Diagnostic]:
    """Problems found under other variable values, less those already reported (each once)."""
    seen = {(d.code, d.key, d.file, d.line, d.col, d.message) for d in reported}
    out = []
    for d in others:
        signature = (d.code, d.key, d.file, d.line, d.col, d.message)
        if signature not in seen:
            seen.add(signature)
            out.append(d)
    return out
