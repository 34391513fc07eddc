"""`cfgtool compile`: compile every node of the store (every declared variable value) and report (docs/compile.md)."""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cfgtool.cli.options import ListAll, Ref, Vars, compile_for
from cfgtool.diagnostics import TEXT_CAUSES, plural, render_github, render_json, render_markdown, render_text
from cfgtool.store.keys import parent

if TYPE_CHECKING:
    from cfgtool.compile.compiler import CompileResult


class ReportFormat(StrEnum):
    """How `compile` prints its report."""

    TEXT = "text"
    JSON = "json"
    GITHUB = "github"
    MARKDOWN = "markdown"


class Color(StrEnum):
    """When the text report uses colour."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


Fmt = Annotated[
    ReportFormat,
    typer.Option(
        "--format",
        "-f",
        help="Report format: text for people, json for scripts, github for workflow annotations,"
        " markdown for a pull-request comment.",
    ),
]

Output = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Write the compiled Snapshot (JSON, with its digest) to FILE, atomically. Written only when the"
        " compile succeeds.",
        show_default=False,
    ),
]

Base = Annotated[
    str | None,
    typer.Option(
        "--base",
        metavar="REF",
        help="Compare with the store at REF: policies see each node as created, altered, deleted or unchanged"
        " (a pull-request check passes the target branch).",
        show_default=False,
    ),
]

Principal = Annotated[
    str | None,
    typer.Option(
        "--principal",
        metavar="NAME",
        help="Who asks, passed to the policies (a PR check passes the PR author).",
        show_default=False,
    ),
]

Strict = Annotated[bool, typer.Option("--strict", help="Fail (exit 1) on warnings too.")]

ColorOption = Annotated[
    Color,
    typer.Option("--color", help="Colour the text report: auto (only on a terminal, unless NO_COLOR is set)."),
]


def compile_command(
    ctx: typer.Context,
    ref: Ref = None,
    variables: Vars = None,
    fmt: Fmt = ReportFormat.TEXT,
    output: Output = None,
    base: Base = None,
    principal: Principal = None,
    strict: Strict = False,
    every: ListAll = False,
    color: ColorOption = Color.AUTO,
) -> None:
    """Compile every node of the store and report every problem.

    Reads the working tree (or the store at --ref) and resolves every node. It
    checks every declared value of every variable the includes use; a --var
    fixes that variable to one value. One failing node never stops the others.

    Exit status: 0 no errors (warnings allowed unless --strict), 1 errors,
    2 usage error or unreadable source.

    Examples:
      cfgtool compile
      cfgtool compile --ref origin/main --format json --output snapshot.json
      cfgtool compile --strict --format github
      cfgtool compile --base origin/main --principal alice --format markdown
    """
    result = compile_for(ctx, ref, variables, base=base, principal=principal)
    ok = result.ok(strict)
    if output is not None and ok:
        from cfgtool.snapshot.model import save

        save(result.snapshot, output)
    if fmt is ReportFormat.TEXT:
        painted = _use_color(color)
        report = render_report(result, painted, output if ok else None, every=every)
        typer.echo(report, nl=False, color=painted)
    elif fmt is ReportFormat.JSON:
        typer.echo(render_json_report(result), nl=False)
    elif fmt is ReportFormat.GITHUB:
        typer.echo(render_github(result.diagnostics), nl=False)
    else:
        typer.echo(render_markdown(result.diagnostics), nl=False)
    if output is not None and not ok:
        typer.echo(f"cfgtool: the snapshot was not written to {output}: the compile failed", err=True)
    raise typer.Exit(0 if ok else 1)


def _use_color(color: Color) -> bool:
    if color is Color.AUTO:
        return sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    return color is Color.ALWAYS


def render_json_report(result: CompileResult) -> str:
    """docs/compile.md's report object, plus the store's name, the digest and every variable assignment checked."""
    snap = result.snapshot
    return render_json(
        result.diagnostics,
        store=snap.store,
        name=snap.name,
        source={"ref": snap.source.ref, "commit": snap.source.commit, "dirty": snap.source.dirty},
        variables=dict(sorted(snap.variables.items())),
        nodes=len(result.store.nodes),
        resolved=len(snap.nodes) - len(snap.failed),
        digest=snap.digest if not result.errors else None,
        checked=[dict(sorted(a.items())) for a in result.checked],
    )


def render_report(result: CompileResult, color: bool, output: Path | None = None, *, every: bool = False) -> str:
    """The problems, then a one-screen summary of what was compiled. Problems show the source line and caret,
    grouped: the first causes, or `every` one."""
    read_line = result.store.source.line_reader()
    problems = render_text(result.diagnostics, read_line, color, summary=False, limit=None if every else TEXT_CAUSES)
    return (problems + "\n" if problems else "") + render_summary(result, output)


def render_summary(result: CompileResult, output: Path | None = None) -> str:
    """Store, source, node counts, variables, digest and the error and warning counts."""
    snap = result.snapshot
    store_dir = (snap.store or ".") + "/"
    lines = [f"store      {snap.name or '(unnamed)'} ({store_dir})", f"source     {_describe_source(result)}"]
    lines.append(f"nodes      {_describe_nodes(result)}")
    lines.append(f"variables  {_describe_variables(result)}")
    lines.append(f"digest     {snap.digest}" if not result.errors else "digest     none: the compile has errors")
    if output is not None:
        lines.append(f"snapshot   {output}")
    lines.append(f"{plural(result.errors, 'error')}, {plural(result.warnings, 'warning')}")
    return "\n".join(lines) + "\n"


def _describe_source(result: CompileResult) -> str:
    source = result.snapshot.source
    short = (source.commit or "")[:7]
    if source.ref is not None:
        return f"ref {source.ref} (commit {short})"
    if source.commit is None:
        return "working tree (no commit yet)"
    state = "uncommitted changes" if source.dirty else "clean"
    return f"working tree at HEAD {short} ({state})"


def _describe_nodes(result: CompileResult) -> str:
    """`48 (31 datasets, 12 tags, 5 groups)`: tags are under the tag roots, datasets are the other leaves."""
    snap = result.snapshot
    keys = list(result.store.nodes)
    parents = {parent(k) for k in keys}
    tagged = {k for k in keys if snap.is_tag(k) or k in snap.tag_roots}
    tags = len(tagged)
    datasets = sum(1 for k in keys if k not in tagged and k not in parents)
    text = f"{len(keys):,} ({plural(datasets, 'dataset')}, {plural(tags, 'tag')}, "
    text += f"{plural(len(keys) - tags - datasets, 'group')})"
    failed = len(keys) - len(snap.nodes) + len(snap.failed)
    return text + (f", {failed:,} not resolved" if failed else "")


def _describe_variables(result: CompileResult) -> str:
    """`local_cluster.name=ltx1 (checked: ltx1, lva1)` per variable, or `none declared`."""
    if not result.snapshot.variables:
        return "none declared"
    parts = []
    for name, value in sorted(result.snapshot.variables.items()):
        seen = list(dict.fromkeys(a[name] for a in result.checked if name in a))
        parts.append(f"{name}={value} (checked: {', '.join(seen)})")
    return "; ".join(parts)
