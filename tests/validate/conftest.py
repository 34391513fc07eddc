"""Helpers for validation tests: write a store plus schemas into a real git repository and compile it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from cfgtool.compile.compiler import CompileResult, compile_store
from cfgtool.diagnostics import Diagnostic
from cfgtool.validate import check_schemas, load_schemas, read_schema_files


@pytest.fixture
def compile_files(repo: Any) -> Callable[..., CompileResult]:
    """Write files (repo-relative; None deletes) and compile the store: the working tree, or `ref`."""

    def run(files: Mapping[str, str | None] | None = None, ref: str | None = None) -> CompileResult:
        repo.write(files or {})
        return compile_store(repo.root, "store", ref, validate=False)

    return run


@pytest.fixture
def schema_report() -> Callable[[CompileResult], tuple[list[Diagnostic], list[Diagnostic]]]:
    """(problems loading the schemas, violations) for a compiled store whose settings name a schemas dir."""

    def report(result: CompileResult) -> tuple[list[Diagnostic], list[Diagnostic]]:
        settings = result.store.settings
        directory = settings.schemas_dir(result.snapshot.store)
        assert directory is not None
        files = read_schema_files(result.store.source.repo_root, directory)
        specs, load_diags = load_schemas(files, settings.name)
        return load_diags, check_schemas(specs, result.snapshot)

    return report
