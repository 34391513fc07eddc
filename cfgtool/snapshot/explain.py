"""`explain(K, path)` (docs/resolution.md#provenance): which assignment won, what it was built from and what it
overrode. Also how each layer of L(K) was reached. Computed from a Snapshot alone, so the CLI and the client explain
alike."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cfgtool.hocon import Origin, read_path, split_path
from cfgtool.hocon.resolver import render_path
from cfgtool.snapshot.hidden import HIDDEN
from cfgtool.snapshot.layers import intrinsic_of, intrinsic_value
from cfgtool.snapshot.model import Snapshot

INTRINSIC_FILE = "(intrinsic)"  # the "file" of a source that is an intrinsic value in JSON: no file sets it


@dataclass(frozen=True)
class LayerValue:
    """One layer of L(K): how it was reached. Also what its own config assigns at the path, if anything."""

    layer: str
    reached: str
    text: str | None
    origin: Origin | None


@dataclass(frozen=True)
class Explanation:
    key: str
    node: str  # the node read: `key`, or its nearest ancestor when `key` has no node
    exists: bool
    path: str
    found: bool
    value: Any
    origin: Origin | None  # the assignment that won
    sources: tuple[Origin, ...]  # what a substituted or concatenated value was built from
    layers: tuple[LayerValue, ...]  # every layer, highest priority first
    did_you_mean: str | None = None  # when not found: the quoted path that is set (`hocon.quoted_path`)

    @property
    def overridden(self) -> tuple[LayerValue, ...]:
        """Lower layers whose own assignment at the path lost to the winner."""
        setters = [lv for lv in self.layers if lv.text is not None]
        return tuple(setters[1:])

    def intrinsic(self, origin: Origin) -> tuple[str, str | None] | None:
        """(name, value) when `origin` is an intrinsic's (`cfgtool.name`: the key's last segment) rather than
        an assignment's."""
        name = intrinsic_of(origin)
        return None if name is None else (name, intrinsic_value(name, self.key))

    def to_json(self) -> dict[str, Any]:
        def org(o: Origin | None) -> dict[str, Any] | None:
            if o is None:
                return None
            intrinsic = self.intrinsic(o)
            if intrinsic is not None:  # the same fields as an origin, and which intrinsic it is
                return {"file": INTRINSIC_FILE, "line": 0, "col": 0, "intrinsic": intrinsic[0], "value": intrinsic[1]}
            return {"file": o.file, "line": o.line, "col": o.col}

        near = {"did_you_mean": self.did_you_mean} if self.did_you_mean is not None else {}
        return {
            **near,
            "key": self.key,
            "node": self.node,
            "exists": self.exists,
            "path": self.path,
            "found": self.found,
            "value": self.value if self.found else None,
            "origin": org(self.origin),
            "sources": [org(o) for o in self.sources],
            "overridden": [{"layer": lv.layer, "value": lv.text, "origin": org(lv.origin)} for lv in self.overridden],
            "layers": [
                {"layer": lv.layer, "reached": lv.reached, "value": lv.text, "origin": org(lv.origin)}
                for lv in self.layers
            ],
        }

    def render_text(self) -> str:
        """A few lines a person reads in a terminal."""
        head = f"{self.key} {self.path}"
        if not self.exists:
            head += f"  (no node: read from {self.node})"
        lines = [head]
        if not self.found:
            lines.append("  not set in any layer")
            if self.did_you_mean is not None:
                lines.append(f"  did you mean {self.did_you_mean}?")
        else:
            lines.append(f"  = {json.dumps(self.value, ensure_ascii=False)}")
            if self.origin is not None:
                lines.append(f"  set at {self.origin}")
            for src in self.sources:
                intrinsic = self.intrinsic(src)
                if intrinsic is None:
                    lines.append(f"  built from {src}")
                else:
                    name, value = intrinsic
                    lines.append(f"  built from {name} = {json.dumps(value, ensure_ascii=False)} (intrinsic)")
        setters = [lv for lv in self.layers if lv.text is not None]
        if setters:
            lines.append("  assignments, highest priority first:")
            for i, lv in enumerate(setters):
                mark = "wins" if i == 0 else "overridden"
                lines.append(f"    {lv.layer}: {self.path} = {lv.text}  ({lv.origin}; {mark})")
        lines.append("  layers (L):")
        for lv in self.layers:
            lines.append(f"    {lv.layer}  [{lv.reached}]")
        return "\n".join(lines) + "\n"


def explain(snapshot: Snapshot, key: str, path: str) -> Explanation:
    """Explain the value at `path` in the resolved config of `key`."""
    name = render_path(split_path(path))
    read = snapshot.lookup(key)
    node = snapshot.nodes[read.node]
    value = read_path(read.config, path)
    layers = []
    reached = node.reached
    keys = node.layers
    if not read.exists:
        keys = (key, *keys)
        reached = (f"{key} itself (no node)", f"nearest ancestor of {key} (which has no node)", *reached[1:])
    secret = name in snapshot.secrets.get(read.node, ())
    for layer, how in zip(keys, reached, strict=True):
        own = snapshot.nodes[layer].own.get(name) if layer in snapshot.nodes else None
        text = None if own is None else HIDDEN if secret else snapshot.own_text(layer, name, own.text)
        layers.append(LayerValue(layer, how, text, own.origin if own else None))
    return Explanation(
        key=key,
        node=read.node,
        exists=read.exists,
        path=name,
        found=value.found,
        value=value.value if value.found else None,
        origin=node.origins.get(name),
        sources=tuple(node.sources.get(name, ())),
        layers=tuple(layers),
        did_you_mean=value.did_you_mean,
    )
