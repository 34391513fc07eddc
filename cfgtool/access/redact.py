"""Compile's secret checks and the redaction of a compiled snapshot (docs/access.md#secrets).

`secret_paths` reads which paths of each node are secret from the schemas. A path is secret at `writeOnly: true`,
however a schema reaches the value (`cfgtool.validate.writeonly`). `unknown_secrets` says where it cannot tell: a
`$ref` that does not resolve (W_SECRET_UNKNOWN). `seal_snapshot` hides secrets (`cfgtool.snapshot.hidden`) in every
node of a snapshot. It runs right after resolution and before validation, so nothing later sees a secret. It reports
E_SECRET_IN_CLEAR: a secret path holding anything but an envelope. It reports E_SECRET_CONCAT: an envelope
concatenated into a string. And it reports E_SECRET_BINDING: an envelope assigned somewhere else. That is another
store, node or path than the one it was sealed for. That is read from the clear binding: the compiler never opens
anything.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace

from cfgtool.access.secrets import binding, bound_to, sealed_in, store_label
from cfgtool.diagnostics import Diagnostic
from cfgtool.hocon import split_path
from cfgtool.hocon.resolver import render_path
from cfgtool.snapshot.hidden import PREFIX, hide
from cfgtool.snapshot.model import NodeSnapshot, Snapshot
from cfgtool.validate.locate import locate
from cfgtool.validate.schemas import SchemaSpec


def secret_paths(specs: Sequence[SchemaSpec], snapshot: Snapshot) -> dict[str, frozenset[tuple[str, ...]]]:
    """The secret paths of each node: those every schema that selects it marks writeOnly in its config."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for spec in specs:
        analysis = spec.writeonly
        if not analysis.marks_any:
            continue
        for key in spec.selected(snapshot):
            config = snapshot.nodes[key].config
            found = analysis.secrets(config) if config is not None else None
            if found:
                out.setdefault(key, set()).update(found)
    return {key: frozenset(paths) for key, paths in out.items()}


def unknown_secrets(specs: Sequence[SchemaSpec]) -> list[Diagnostic]:
    """W_SECRET_UNKNOWN for each `$ref` a schema reaches but cfgtool cannot resolve. What it describes may be secret,
    and nothing tells."""
    return [
        Diagnostic.of(
            "W_SECRET_UNKNOWN",
            f"$ref {ref!r} cannot be resolved, so cfgtool cannot tell whether the values it describes are "
            "secret (writeOnly); they are not hidden",
            file=spec.file,
            notes=(
                "put the schema it names in the schemas directory (by $id or relative path), or mark the "
                "secret paths writeOnly in this file",
            ),
        )
        for spec in specs
        for ref in spec.writeonly.unresolvable
    ]


def seal_snapshot(snapshot: Snapshot, specs: Sequence[SchemaSpec]) -> tuple[Snapshot, list[Diagnostic]]:
    """`snapshot` with every secret hidden, and the problems of its secrets."""
    paths_of = secret_paths(specs, snapshot)
    store = store_label(snapshot.name, snapshot.store)
    diags: list[Diagnostic] = []
    nodes: dict[str, NodeSnapshot] = {}
    changed = False
    secrets: dict[str, dict[str, str | None]] = {}
    owner = {node.file: key for key, node in snapshot.nodes.items() if node.file is not None}
    for key, node in snapshot.nodes.items():
        paths = paths_of.get(key, frozenset())
        if node.config is None or not (paths or PREFIX in json.dumps(node.config, ensure_ascii=False, default=str)):
            nodes[key] = node
            continue
        concats: list[tuple[str, ...]] = []
        config, found = hide(node.config, paths, concats.append)
        for path in concats:
            file, line, col = locate(node, snapshot.store, path)
            message = f"{render_path(path)}: a secret is concatenated into a string, which would put it in clear"
            diags.append(Diagnostic.of("E_SECRET_CONCAT", message, key=key, file=file, line=line, col=col,
                                       notes=("copy a secret whole: x = ${db.password}",)))  # fmt: skip
        for name, envelope in found.items():
            if envelope is None:
                file, line, col = locate(node, snapshot.store, split_path(name))
                message = f"{name} is a secret (writeOnly in a schema) but holds a value that is not sealed"
                where = owner.get(file, key) if file is not None else key
                diags.append(Diagnostic.of("E_SECRET_IN_CLEAR", message, key=key, file=file, line=line, col=col,
                                           notes=(f"seal it: cfgtool secret set {where} {name} < value-file",
                                                  "a value once committed in clear stays in git history: "
                                                  "change the secret itself")))  # fmt: skip
        if found:
            secrets[key] = found
        if config is not node.config:
            changed = True
            node = replace(node, config=config, content_hash=None)
        nodes[key] = node
    diags += _bindings(snapshot, store)
    hidden = replace(snapshot, nodes=nodes, secrets=secrets) if changed else snapshot
    return hidden, diags


def _bindings(snapshot: Snapshot, store: str) -> list[Diagnostic]:
    """E_SECRET_BINDING for each envelope assigned where it was not sealed for (its clear binding). It checks a
    node's main.conf and any file it includes. A file included by two nodes is checked for each."""
    diags = []
    for key, node in snapshot.nodes.items():
        for name, envelope, o in sealed_in(snapshot.texts, node.file):
            if bound_to(envelope) != binding(store, key, name):
                message = f"{name}: this secret was sealed for another store, node or path (it was copied here)"
                note = f"seal the value here: cfgtool secret set {key} {name}"
                diags.append(Diagnostic.of("E_SECRET_BINDING", message, key=key, file=o.file, line=o.line,
                                           col=o.col, notes=(note,)))  # fmt: skip
    return diags
