"""The typed columns of `attach` (docs/spark.md). A path's values form one Arrow array, its type decided by the
version.

A column's type is the simple type the version's JSON Schemas declare for the path, when every node's value there has
it. Where no schema gives one, it is the type its values share over every node. All strings give string, all integers
long, all numbers double, all booleans boolean. Anything else, or a mix, is JSON text. It is decided over every node,
never over the keys at hand. So a job's output schema depends on the version and the paths, never on the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from cfgtool.access.secrets import Secret
from cfgtool.client.local import compact_json

Kind = str | None  # "string", "integer", "number", "boolean", or None: JSON text
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NONE = type(None)
_EXACT: dict[str, set[type]] = {"string": {str}, "integer": {int}, "number": {int, float}, "boolean": {bool}}


def column_kind(declared: str | None, values: Sequence[Any]) -> Kind:
    """The type of a column holding `values`: the value at its path in every node, None where absent. It is
    `declared` (the schemas' type, if any) when every value has it, else the type they all share."""
    if declared is not None and all(v is None or _matches(v, declared) for v in values):
        return declared
    types = set(map(type, values)) - {_NONE}
    if types == {str}:
        return "string"
    if types == {bool}:
        return "boolean"
    if types == {int}:
        return "integer" if all(v is None or _INT64_MIN <= v <= _INT64_MAX for v in values) else None
    if types and types <= {int, float}:
        return "number"
    return None


def _matches(value: Any, kind: str) -> bool:
    """Whether a plain value is of the JSON Schema simple type `kind` and fits its column. A bool is no number. An
    integer may be written `8.0`, as in JSON Schema. An integer column is 64-bit."""
    if type(value) is bool:
        return kind == "boolean"
    if kind == "integer":
        if type(value) is float and value.is_integer():
            value = int(value)
        return type(value) is int and _INT64_MIN <= value <= _INT64_MAX
    if kind == "number":
        return type(value) in (int, float)
    return type(value) is {"string": str, "boolean": bool}[kind]


def arrow_type(pa: Any, kind: Kind) -> Any:
    return {"integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}.get(kind or "", pa.string())


def spark_type(t: Any, kind: Kind) -> Any:
    return {"integer": t.LongType(), "number": t.DoubleType(), "boolean": t.BooleanType()}.get(
        kind or "", t.StringType()
    )


def column_array(pa: Any, values: Sequence[Any], kind: Kind) -> Any:
    """`values` as an Arrow array of the column's type. A value that does not have the type is null in a typed
    column. One re-resolved for a key without a node can differ from every node's."""
    if kind is None:
        return pa.array(json_texts(values), pa.string())
    if set(map(type, values)) - {_NONE} <= _EXACT[kind]:  # nearly always: Arrow converts the list itself
        return pa.array(values, arrow_type(pa, kind))
    convert: Callable[[Any], Any] = {"integer": int, "number": float}.get(kind, _same)
    typed = [convert(v) if v is not None and _matches(v, kind) else None for v in values]
    return pa.array(typed, arrow_type(pa, kind))


def _same(value: Any) -> Any:
    return value


def revealed(value: Any) -> Any:
    """`value` with every `Secret` in it opened (`Secret.reveal`); plain values are returned as they are."""
    if isinstance(value, Secret):
        return value.reveal()
    if isinstance(value, Mapping):
        return {k: revealed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [revealed(v) for v in value]
    return value


def json_texts(values: Sequence[Any]) -> list[str | None]:
    """`values` as compact JSON text; scalars repeat across keys, so their texts are shared."""
    texts: dict[tuple[type, Any], str] = {}
    out: list[str | None] = []
    for value in values:
        if value is None:
            out.append(None)
        elif not isinstance(value, str | int | float):  # objects and lists
            out.append(compact_json(value))
        else:
            text = texts.get((type(value), value))
            if text is None:
                text = texts[type(value), value] = compact_json(value)
            out.append(text)
    return out
