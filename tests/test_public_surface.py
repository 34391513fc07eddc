"""The public surface: what users import. `cfgtool.__all__` lists exactly the public names the package defines,
and the modules users import by name (docs/client.md, docs/policies.md, docs/spark.md) keep their names wherever
the code behind them moves (ARCHITECTURE.md: moving a module never changes this list)."""

from __future__ import annotations

import importlib
import types

import pytest

import cfgtool


def test_all_lists_every_public_name() -> None:
    for name in cfgtool.__all__:  # imported when first used
        getattr(cfgtool, name)
    public = {
        name
        for name, value in vars(cfgtool).items()
        if (not name.startswith("_") or name == "__version__") and not isinstance(value, types.ModuleType)
    }
    assert set(cfgtool.__all__) == public


def test_all_has_no_duplicates() -> None:
    assert len(cfgtool.__all__) == len(set(cfgtool.__all__))


def test_version_is_a_string() -> None:
    assert isinstance(cfgtool.__version__, str)
    assert cfgtool.__version__


def test_watch_is_the_function_and_http_client_a_config_client() -> None:
    from cfgtool.client.watch import watch

    assert cfgtool.watch is watch
    assert issubclass(cfgtool.HttpConfigClient, cfgtool.ConfigClient)


SURFACE = {
    "cfgtool": ["CfgtoolError", "CompileResult", "ConfigClient", "Diagnostic", "HttpConfigClient", "KeyNotFound",
                "Snapshot", "StoreNotFound", "Watcher", "__version__", "compile", "watch"],
    "cfgtool.policies": ["BasePolicy", "Change", "FrozenPaths", "MonotonicPaths", "NodeRequest", "Policy",
                         "PolicyViolation", "ProtectedDeletes"],
    "cfgtool.errors": ["CfgtoolError", "EXIT_CONFIG_ERROR", "EXIT_USAGE_ERROR", "SourceError", "UsageError"],
    "cfgtool.spark": ["ConfigLoader", "PinConflict", "SnapshotView", "SparkNotInstalled", "pin_keys"],
    "cfgtool.snapshot": ["KeyNotFound", "Lookup", "NodeSnapshot", "Snapshot", "SourceInfo"],
    "cfgtool.client": ["ConfigClient", "HttpConfigClient", "StoreNotFound", "Watcher", "watch"],
}  # fmt: skip


@pytest.mark.parametrize("module", sorted(SURFACE))
def test_the_names_users_import_are_there(module: str) -> None:
    imported = importlib.import_module(module)
    missing = [name for name in SURFACE[module] if not hasattr(imported, name)]
    assert not missing, f"{module} lost {missing}"
    if hasattr(imported, "__all__"):
        assert sorted(imported.__all__) == sorted(SURFACE[module])


def test_one_class_whichever_way_it_is_imported() -> None:
    from cfgtool.client import ConfigClient
    from cfgtool.snapshot import Snapshot

    assert cfgtool.ConfigClient is ConfigClient and cfgtool.Snapshot is Snapshot
    assert cfgtool.KeyNotFound is importlib.import_module("cfgtool.snapshot").KeyNotFound


def test_compile_is_the_function_also_after_its_package_loads() -> None:
    importlib.import_module("cfgtool.compile.compiler")
    assert callable(cfgtool.compile) and cfgtool.compile.__name__ == "compile_store"
