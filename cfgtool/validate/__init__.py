"""Validation of compiled snapshots (DESIGN 8): JSON Schemas by selector, and pluggable policies.

The policy contract for policy authors (`Policy`, `NodeRequest`, `PolicyViolation`) lives in
`cfgtool.policies`; this package holds the machinery that loads and runs schemas and policies.
"""

from cfgtool.validate.documents import read_schema_files
from cfgtool.validate.policies import (
    LoadedPolicy,
    check_policies,
    close_policies,
    load_policies,
    run_policies,
)
from cfgtool.validate.schemas import SchemaSpec, Selector, check_schemas, load_schemas, schema_types

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
