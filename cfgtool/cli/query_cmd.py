"""The query commands of docs/queries.md#the-queries, docs/compile.md: `get`, `explain`, `imports`, `imported-by`,
`tags` and `datasets`.

`get`, `explain`, `imports` and `tags` compile the nodes KEY needs in a working tree
(`cfgtool.compile.query.query_key`). They read a commit (`--ref`, `--version`) from its version artifact
(`cfgtool.versions.reading`), compiled and cached on a miss. `imported-by` and `datasets` read the import graph of
every node (`query_graph`). Each refuses when there are errors that affect the answer (exit 1), then answers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cfgtool.cli.completion import complete_keys, complete_tags
from cfgtool.cli.context import CliContext
from cfgtool.cli.options import Ref, Vars, Version, read_at_ref, ref_for
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.store.assignments import parse_assignments

if TYPE_CHECKING:
    from cfgtool.compile.query import GraphAnswer, KeyAnswer

# The library (compile, explain, formats, the HOCON engine) is imported inside the commands: building the CLI,
# `--help` and `--version` must not pay for it.


class QueryFormat(StrEnum):
    """Output of the list-like queries."""

    TEXT = "text"
    JSON = "json"


class GetFormat(StrEnum):
    """Output of `get`: text is HOCON for objects and lists and the bare value for a scalar."""

    TEXT = "text"
    JSON = "json"
    HOCON = "hocon"
    YAML = "yaml"
    PROPERTIES = "properties"


_FORMAT_HELP = "Output format: text (one key per line) or json."
QueryFmt = Annotated[QueryFormat, typer.Option("--format", "-f", help=_FORMAT_HELP)]
Key = Annotated[
    str,
    typer.Argument(
        metavar="KEY",
        help="A key such as /data/tracking/PageViewEvent (the store's scheme, demo:/..., is accepted).",
        autocompletion=complete_keys,
    ),
]
Recursive = Annotated[
    bool,
    typer.Option(
        "--recursive",
        "-r",
        help="Use whole linearizations (imports, their parents, ancestors), not just includes files.",
    ),
]


def get(
    ctx: typer.Context,
    key: Key,
    path: Annotated[
        str | None,
        typer.Argument(
            metavar="PATH", help="A HOCON path inside the config, such as kafka.partitions.", show_default=False
        ),
    ] = None,
    ref: Ref = None,
    version: Version = None,
    variables: Vars = None,
    fmt: Annotated[
        GetFormat,
        typer.Option(
            "--format",
            "-f",
            help="Output format: text (HOCON, or the bare value of a scalar), json, hocon, yaml or properties.",
        ),
    ] = GetFormat.TEXT,
    nearest: Annotated[
        bool,
        typer.Option("--nearest", help="Read a key without a node as its nearest ancestor, on purpose."),
    ] = False,
) -> None:
    """Print the resolved config of KEY, or the value at PATH in it.

    A key without a node of its own is exit 1, naming a node with a close key.
    A typo must not read as its ancestor's config. With --nearest it prints
    the config it inherits from its nearest ancestor, and says so on stderr. A
    PATH that is not set is exit 1.

    Examples:
      cfgtool get /data/tracking/PageViewEvent
      cfgtool get demo:/data/tracking/PageViewEvent kafka.partitions
      cfgtool get /data/tracking/LoginEvent -f yaml --var local_cluster.name=lva1
    """
    answer = _answer(ctx, key, ref, version, variables)
    found = answer.read(None if path is None else _path(path), nearest=nearest, how="--nearest")
    _note_phantom(found.key, found.node, found.exists, answer)
    typer.echo(_render_value(found.value, fmt), nl=False)


def explain_command(
    ctx: typer.Context,
    key: Key,
    path: Annotated[str, typer.Argument(metavar="PATH", help="A HOCON path inside the config, such as retention.ms.")],
    ref: Ref = None,
    version: Version = None,
    variables: Vars = None,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """Explain a value: which file and line set it, and what it overrode.

    Shows the winning assignment (file:line:col) and the values it was built
    from. Also the lower layers it overrode, and how each layer of KEY's
    linearization was reached. A PATH set in no layer is exit 1.

    Example:
      cfgtool explain /data/tracking/PageViewEvent retention.ms
    """
    from cfgtool.snapshot.explain import explain
    from cfgtool.snapshot.formats import to_json

    answer = _answer(ctx, key, ref, version, variables)
    found = explain(answer.snapshot, answer.key, _path(path))
    _note_phantom(found.key, found.node, found.exists, answer)
    typer.echo(to_json(found.to_json()) if fmt is QueryFormat.JSON else found.render_text(), nl=False)
    if not found.found:
        raise typer.Exit(1)


def imports(
    ctx: typer.Context,
    key: Key,
    recursive: Recursive = False,
    ref: Ref = None,
    version: Version = None,
    variables: Vars = None,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """List what KEY imports, highest priority first.

    Without -r: the keys its includes file names, variables applied.
    With -r: its whole linearization L(KEY) without KEY, i.e. every layer
    it inherits from (imports, their parents, its own ancestors).

    Example:
      cfgtool imports -r /data/tracking/PageViewEvent
    """
    answer = _answer(ctx, key, ref, version, variables)
    key, snap = answer.key, answer.snapshot
    if not recursive and key not in snap.nodes:  # no includes file without a node; -r shows what it inherits
        _no_node(key, answer.near_node(), "has no node, so it imports nothing (-r lists the layers it inherits)")
    exists = _note_phantom(key, snap.nearest_node(key), key in snap.nodes, answer)
    found = snap.imports(key, recursive)
    _print_keys(fmt, found, {"key": key, "exists": exists, "recursive": recursive, "imports": found})


def imported_by(
    ctx: typer.Context,
    key: Key,
    recursive: Recursive = False,
    ref: Ref = None,
    version: Version = None,
    variables: Vars = None,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """List the nodes that import KEY, sorted.

    Without -r: the nodes whose includes file names KEY.
    With -r: every node that has KEY in its linearization, through
    imports or as an ancestor.

    Example:
      cfgtool imported-by -r /tags/retention/LONG
    """
    graph, key = _graph(ctx, key, ref, version, variables)
    _existing(graph, key)
    found = graph.graph.imported_by(key, recursive)
    _print_keys(fmt, found, {"key": key, "recursive": recursive, "imported_by": found})


def tags(
    ctx: typer.Context,
    key: Key,
    ref: Ref = None,
    version: Version = None,
    variables: Vars = None,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """List the tags in KEY's linearization, highest priority first.

    This includes the tags its ancestors import.

    Example:
      cfgtool tags /data/tracking/PageViewEvent --var local_cluster.name=lva1
    """
    answer = _answer(ctx, key, ref, version, variables)
    key, snap = answer.key, answer.snapshot
    exists = _note_phantom(key, snap.nearest_node(key), key in snap.nodes, answer)
    found = snap.tags(key)
    _print_keys(fmt, found, {"key": key, "exists": exists, "tags": found})


def datasets(
    ctx: typer.Context,
    tag: Annotated[
        str, typer.Argument(metavar="TAG", help="A tag key such as /tags/retention/LONG.", autocompletion=complete_tags)
    ],
    ref: Ref = None,
    version: Version = None,
    variables: Vars = None,
    fmt: QueryFmt = QueryFormat.TEXT,
) -> None:
    """List the datasets (non-tag nodes) that import TAG, sorted.

    A dataset counts when it imports TAG itself or inherits it through an
    ancestor or another tag. Importing a child tag of TAG does not count.

    Example:
      cfgtool datasets /tags/priority/HIGH --format json
    """
    graph, tag = _graph(ctx, tag, ref, version, variables)
    _existing(graph, tag)
    roots = graph.store.settings.tag_roots
    if not any(tag == r or tag.startswith(r.rstrip("/") + "/") for r in roots):
        raise CfgtoolError(
            f"{tag} is not a tag (tags are the nodes under {', '.join(roots)}): datasets lists those that import a tag",
            hint=f"`cfgtool imported-by {tag}` lists the nodes that import any key",
        )
    found = graph.graph.datasets(tag)
    _print_keys(fmt, found, {"tag": tag, "datasets": found})


# ------------------------------------------------------------------------------------------ helpers


def _answer(
    ctx: typer.Context, text: str, ref: str | None, version: str | None, variables: list[str] | None
) -> KeyAnswer:
    """What a forward query reads about KEY (`text`; BadKeyError: exit 2). QueryRefused (exit 1) when errors affect
    it (`KeyAnswer.check`)."""
    from cfgtool.compile.query import key_at, query_key

    cli: CliContext = ctx.obj
    if ref is None and version is None:
        answer = query_key(cli.repo, cli.store, None, text, parse_assignments(variables))
        _note_working_tree(answer)
    else:  # a commit: its version artifact when cached (one key read from it), else compiled once and cached
        answer = key_at(text, read_at_ref(ctx, ref, variables, version))
    return answer.check()


def _note_working_tree(answer: KeyAnswer) -> None:
    """Say on stderr that a working tree answered when the current version may answer otherwise, as `compile` names
    its source. A reader who meant the published config adds --version current."""
    from cfgtool.compile.compiler import CompileResult
    from cfgtool.versions.current import unlike_current

    result = answer.result
    if not isinstance(result, CompileResult):
        return
    found = unlike_current(result.store.source)
    if found is not None:
        current, dirty = found
        state = "uncommitted changes" if dirty else f"HEAD {(result.store.source.commit or '')[:7]}, not published"
        typer.echo(
            f"cfgtool: note: answered from the working tree ({state}); current version is {current.version}:"
            " add --version current",
            err=True,
        )


def _graph(
    ctx: typer.Context, text: str, ref: str | None, version: str | None, variables: list[str] | None
) -> tuple[GraphAnswer, str]:
    """The import graph a reverse query reads and its normalized KEY (`text`; BadKeyError: exit 2). QueryRefused
    (exit 1) when the graph has errors (`GraphAnswer.check`)."""
    from cfgtool.compile.query import query_graph
    from cfgtool.store.keys import normalize_key

    cli: CliContext = ctx.obj
    graph = query_graph(cli.repo, cli.store, ref_for(ctx, ref, version), parse_assignments(variables))
    key = normalize_key(text, graph.store.settings.name)
    return graph.check(), key


def _existing(graph: GraphAnswer, key: str) -> None:
    """Only nodes import or are imported, so a key without one is a typo (exit 1)."""
    if key not in graph.store.nodes:
        _no_node(key, graph.graph.near_node(key), "has no node, so nothing can import it")


def _no_node(key: str, near: str | None, problem: str) -> None:
    """CfgtoolError (exit 1): `key` has no node; names `near`, a node with a close key (`keys.near_node`)."""
    hint = f"did you mean {near}?" if near else "list the keys with `cfgtool imports -r /` or look under store/"
    raise CfgtoolError(f"{key} {problem}", hint=hint)


def _render_value(value: Any, fmt: GetFormat) -> str:
    """`get` output: text is HOCON, except that a scalar prints bare (`lz4`, `8`, `true`) for shell scripts."""
    from cfgtool.snapshot.formats import Format, render

    if fmt is not GetFormat.TEXT:
        return render(value, Format(fmt.value))
    if isinstance(value, Mapping | list):
        return render(value, Format.HOCON)
    return (value if isinstance(value, str) else json.dumps(value)) + "\n"


def _path(text: str) -> str:
    """Check a HOCON path expression given on the command line (a malformed one is a usage error)."""
    from cfgtool.hocon import HoconError, split_path

    try:
        split_path(text)
    except HoconError as exc:
        message = f"PATH {text!r} is not a HOCON path: {exc.message}"
        raise UsageError(message, hint='quote a key that contains a dot, e.g. kafka.config."retention.ms"') from exc
    return text


def _note_phantom(key: str, node: str, exists: bool, answer: KeyAnswer) -> bool:
    """Say on stderr when KEY has no node and the answer comes from its nearest ancestor
    (docs/resolution.md#keys-without-a-node). Also name a node with a close key. A typo reads as a valid, inherited
    answer otherwise."""
    if not exists:
        typer.echo(f"cfgtool: note: {key} has no node; it inherits everything from {node}", err=True)
        near = answer.near_node()
        if near is not None:
            typer.echo(f"cfgtool: note: did you mean {near}?", err=True)
    return exists


def _print_keys(fmt: QueryFormat, found: list[str], doc: Mapping[str, Any]) -> None:
    from cfgtool.snapshot.formats import to_json

    if fmt is QueryFormat.JSON:
        typer.echo(to_json(doc), nl=False)
    elif found:
        typer.echo("\n".join(found))
    else:
        typer.echo("cfgtool: note: none", err=True)
