"""Validation of compiled snapshots (docs/schemas.md, docs/policies.md): JSON Schemas by selector, and pluggable
policies.

The policy contract for policy authors (`Policy`, `NodeRequest`, `PolicyViolation`) lives in `cfgtool.policies`. This
package holds the machinery that loads and runs schemas and policies. Its names are imported on first use: reading
the schema files (`documents`) must not import jsonschema.
"""

import typing as _typing

from cfgtool._lazy import make_lazy as _make_lazy

if _typing.TYPE_CHECKING:
    from cfgtool.validate.documents import read_schema_files as read_schema_files
    from cfgtool.validate.policy_runs import LoadedPolicy as LoadedPolicy
    from cfgtool.validate.policy_runs import check_policies as check_policies
    from cfgtool.validate.policy_runs import close_policies as close_policies
    from cfgtool.validate.policy_runs import load_policies as load_policies
    from cfgtool.validate.policy_runs import run_policies as run_policies
    from cfgtool.validate.schemas import SchemaSpec as SchemaSpec
    from cfgtool.validate.schemas import Selector as Selector
    from cfgtool.validate.schemas import check_schemas as check_schemas
    from cfgtool.validate.schemas import load_schemas as load_schemas
    from cfgtool.validate.schemas import schema_types as schema_types

__all__ = [
    "LoadedPolicy",
    "SchemaSpec",
    "Selector",
    "check_policies",
    "check_schemas",
    "close_policies",
    "load_policies",
    "load_schemas",
    "read_schema_files",
    "run_policies",
    "schema_types",
]

_make_lazy(
    __name__,
    {
        "LoadedPolicy": ("cfgtool.validate.policy_runs", "LoadedPolicy"),
        "SchemaSpec": ("cfgtool.validate.schemas", "SchemaSpec"),
        "Selector": ("cfgtool.validate.schemas", "Selector"),
        "check_policies": ("cfgtool.validate.policy_runs", "check_policies"),
        "check_schemas": ("cfgtool.validate.schemas", "check_schemas"),
        "close_policies": ("cfgtool.validate.policy_runs", "close_policies"),
        "load_policies": ("cfgtool.validate.policy_runs", "load_policies"),
        "load_schemas": ("cfgtool.validate.schemas", "load_schemas"),
        "read_schema_files": ("cfgtool.validate.documents", "read_schema_files"),
        "run_policies": ("cfgtool.validate.policy_runs", "run_policies"),
        "schema_types": ("cfgtool.validate.schemas", "schema_types"),
    },
)
