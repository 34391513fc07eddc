"""Readable messages for JSON Schema errors. Values are in JSON notation (`true`, `"x"`), never Python reprs. Never
whole objects either: a config subtree can be large."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
from jsonschema.exceptions import best_match

MAX_VALUE = 60
MAX_MESSAGE = 240

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
    "null": "null",
}


def show(value: Any) -> str:
    """A value in JSON notation, shortened: `"x"`, `1024`, `true`, `["a", "b"]`; objects as `an object`."""
    if isinstance(value, dict):
        return "an object"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 3] + "..."


def kind(value: Any) -> str:
    """The JSON type of a value, with an article: `a string`, `an integer`, `null`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def describe_error(error: jsonschema.ValidationError) -> str:
    """What is wrong with the value, without its path: `2000 is greater than the maximum of 1024`."""
    validator = error.validator
    expected: Any = error.validator_value
    instance = error.instance
    if validator == "type":
        names = [expected] if isinstance(expected, str) else list(expected)
        wanted = " or ".join(_TYPE_NAMES.get(str(n), str(n)) for n in names)
        got = (
            kind(instance)
            if isinstance(instance, dict | list) or instance is None
            else f"{kind(instance)} {show(instance)}"
        )
        return f"expected {wanted}, got {got}"
    if validator == "enum" and isinstance(expected, list):
        return f"{show(instance)} is not one of {', '.join(show(v) for v in expected)}"
    if validator == "const":
        return f"must be {show(expected)}, not {show(instance)}"
    if validator == "not":
        forbidden = json.dumps(expected, ensure_ascii=False, sort_keys=True, default=str)
        return f"{show(instance)} is not allowed here (the schema forbids {_short(forbidden, MAX_VALUE)})"
    if validator == "pattern":
        return f"{show(instance)} does not match the pattern {expected}"
    if validator in ("anyOf", "oneOf") and error.context:
        best = best_match(error.context)
        hint = f"; closest: {describe_error(best)}" if best is not None else ""
        what = "any" if validator == "anyOf" else "exactly one"
        return _short(f"{show(instance)} does not match {what} of the allowed schemas{hint}")
    return _short(error.message)


def _short(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
