"""Packages whose exported names are imported when first used (PEP 562).

Every CLI command imports some `cfgtool.<package>.<module>`, which runs the package's `__init__`. An eager `__init__`
would make `cfgtool --version` pay for the compiler, jsonschema and git. A lazy package imports an exported name's
module on first access. Some exported function shares its name with a submodule (`cfgtool.compile`,
`cfgtool.versions.publish`). The lazy package keeps that submodule from replacing it. The import system sets a
package attribute for every submodule it loads.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Mapping


class LazyPackage(types.ModuleType):
    """The module type of a lazy package (see `make_lazy`)."""

    _exports: Mapping[str, tuple[str, str]]

    def __getattr__(self, name: str) -> object:
        exports = self.__dict__.get("_exports", {})
        if name not in exports:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        module, attribute = exports[name]
        value = getattr(importlib.import_module(module), attribute)
        types.ModuleType.__setattr__(self, name, value)  # the next access is a plain attribute
        return value

    def __setattr__(self, name: str, value: object) -> None:
        exports = self.__dict__.get("_exports", {})
        if isinstance(value, types.ModuleType) and name in exports:
            return  # a submodule of the same name as an exported function: the function wins
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted({*self.__dict__, *self.__dict__.get("_exports", {})})


def make_lazy(package: str, exports: Mapping[str, tuple[str, str]]) -> None:
    """Make the (already imported) `package` lazy: `exports` maps each public name to (module, attribute)."""
    module = sys.modules[package]
    module._exports = exports  # type: ignore[attr-defined]
    module.__class__ = LazyPackage
