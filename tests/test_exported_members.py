"""`cfgtool.__all__` is the public API: it must list exactly the public names the package defines."""

from __future__ import annotations

import types

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
    from cfgtool.watcher import watch

    assert cfgtool.watch is watch
    assert issubclass(cfgtool.HttpConfigClient, cfgtool.ConfigClient)
