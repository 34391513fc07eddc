"""Output formats for resolved configs (plain JSON-like Python values): json, hocon, yaml, properties and env.

One place renders values for every command that prints configs.
Each renderer returns text ending in a newline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from enum import StrEnum
from typing import Any

from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.hocon.render import to_hocon


class Format(StrEnum):
    """A text format for a resolved config."""

    JSON = "json"
    HOCON = "hocon"
    YAML = "yaml"
    PROPERTIES = "properties"
    ENV = "env"


def deep_recursion() -> AbstractContextManager[None]:
    """The HOCON engine's recursion allowance. Values nest up to its limit (400), deeper than the renderers manage
    under Python's default. Imported on use: the CLI's start-up must not load the engine."""
    from cfgtool.hocon.recursion import deep_recursion as allowance

    return allowance()


def render(value: Any, fmt: Format, *, env_prefix: str = "") -> str:
    """`value` as text in `fmt`. Object keys keep their order; `env_prefix` starts every name of the env
    format (`to_env`)."""
    if fmt is Format.JSON:
        return to_json(value)
    if fmt is Format.HOCON:
        with deep_recursion():
            return to_hocon(value)
    if fmt is Format.YAML:
        return to_yaml(value)
    if fmt is Format.ENV:
        with deep_recursion():
            return to_env(value, env_prefix)
    with deep_recursion():
        return to_properties(value)


def to_json(value: Any) -> str:
    """Pretty JSON, keys in the order given, non-ASCII characters kept as they are. Surrogates are the exception,
    since UTF-8 cannot carry them. They are escaped; a pair reads back as the character it encodes."""
    with deep_recursion():  # values nest up to the HOCON engine's limit, deeper than the default allows
        text = json.dumps(value, indent=2, ensure_ascii=False)
    return _SURROGATE.sub(_escape_surrogate, text) + "\n"


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def to_yaml(value: Any) -> str:
    """Block-style YAML (PyYAML `safe_dump`), keys in the order given."""
    import yaml  # imported here: only this format needs it

    with deep_recursion():
        text: str = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return text


def to_properties(value: Any) -> str:
    """Java `.properties` lines `a.b.c=value`, escaped as `java.util.Properties.store` does.

    Nested objects join keys with dots and list items use their index (`hosts.0=...`). The format cannot express
    everything. Null is an empty value. Empty objects and lists produce no line. A key containing a dot is
    indistinguishable from a nested one.
    """
    return "".join(f"{_escape(key, is_key=True)}={_escape(text, is_key=False)}\n" for key, text in _flatten(value, ""))


def _flatten(value: Any, prefix: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _flatten(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _flatten(item, f"{prefix}.{index}" if prefix else str(index))
    elif value is None:
        yield prefix, ""
    elif isinstance(value, bool):
        yield prefix, "true" if value else "false"
    elif isinstance(value, float):
        yield prefix, repr(value)
    else:
        yield prefix, str(value)


def to_env(value: Any, prefix: str = "") -> str:
    """Environment lines `A_B_C='value'`, as a POSIX shell sources them and systemd's `EnvironmentFile=`
    reads them.

    Names are `prefix` then the flattened paths (as `to_properties` makes them), upper-cased. Every character other
    than an ASCII letter, digit or `_` becomes `_`. A leading digit gets a `_` before it. Values are single-quoted (a
    `'` inside is written `'\\''`); null is an empty value. Two paths that come out as the same name are an error
    (ValueError). So one never silently hides the other. A name that a shell, the dynamic linker or a language
    runtime reads as code is an error too (UnsafeVariable, see `unsafe_variable`).
    """
    check_env_prefix(prefix)
    lines: list[str] = []
    seen: dict[str, str] = {}
    for key, text in _flatten(value, ""):
        name = prefix + (_ENV_NAME.sub("_", key).upper() or "_")
        if name[0].isdigit():
            name = "_" + name
        if name in seen:
            raise ValueError(f"{seen[name]!r} and {key!r} are both the environment variable {name}")
        reader = unsafe_variable(name)
        if reader is not None:
            raise UnsafeVariable(
                f"the path {key!r} becomes the environment variable {name}, which {reader} reads as code or as"
                " where to load code from: a config would run as a program",
                hint=f"choose another --env-prefix than {prefix!r}"
                if prefix
                else f"prefix every name: --env-prefix APP_ (then APP_{name}), or rename the path",
            )
        seen[name] = key
        quoted = text.replace("'", _QUOTE)
        lines.append(f"{name}='{quoted}'\n")
    return "".join(lines)


class UnsafeVariable(CfgtoolError):
    """The env format would write a variable that a shell, the dynamic linker or a language runtime reads as code.
    Examples are `LD_PRELOAD`, `BASH_ENV` and `PYTHONPATH`. The config would become a program."""


# Variables read as code, or as where to load code from, by a shell, the C library's dynamic linker or a
# language runtime; by prefix (a family) and by name. Sources: bash(1) and dash(1), ld.so(8) and dyld(1),
# glibc's secure-execution list (unsecvars.h), python(1), perlrun(1), ruby(1), node(1), the JVM's launcher,
# git(1), lua(1), php(1), .NET startup hooks and profilers, erl(1), OpenSSL's config(5). Not exhaustive: an
# env file that a shell sources should always have a prefix of its own.
_UNSAFE_PREFIXES = {
    "LD_": "the dynamic linker",
    "DYLD_": "the macOS dynamic linker",
    "GLIBC_": "the C library",
    "BASH_": "bash",
    "PYTHON": "Python",
    "PERL": "Perl",
    "RUBY": "Ruby",
    "GEM_": "RubyGems",
    "NODE_": "Node.js",
    "NPM_CONFIG_": "npm",
    "JAVA_": "the JVM or its launch scripts",
    "_JAVA_": "the JVM",
    "GIT_": "git",
    "LUA_": "Lua",
    "PHP": "PHP",
    "DOTNET_": ".NET",
    "CORECLR_": ".NET",
    "COR_": ".NET",
    "ERL_": "Erlang",
    "OPENSSL_": "OpenSSL",
}
_UNSAFE_NAMES = {
    **dict.fromkeys(
        ("ENV", "SHELLOPTS", "BASHOPTS", "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "IFS", "PATH"),
        "a shell",
    ),
    **dict.fromkeys(("CDPATH", "GLOBIGNORE", "FPATH", "HOME", "ZDOTDIR", "INPUTRC", "SHELL"), "a shell"),
    **dict.fromkeys(("GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES"), "the C library"),
    **dict.fromkeys(("JDK_JAVA_OPTIONS", "CLASSPATH"), "the JVM"),
    "ELIXIR_ERL_OPTIONS": "Elixir",
    **dict.fromkeys(
        ("EDITOR", "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS"),
        "a program that runs it",
    ),
}


def unsafe_variable(name: str) -> str | None:
    """Who reads the environment variable `name` as code, or as where to load code from. None for a name outside the
    families this knows (`_UNSAFE_PREFIXES`, `_UNSAFE_NAMES`)."""
    upper = name.upper()
    found = _UNSAFE_NAMES.get(upper)
    return found or next((who for prefix, who in _UNSAFE_PREFIXES.items() if upper.startswith(prefix)), None)


_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def check_env_prefix(prefix: str) -> None:
    """UsageError unless `prefix` (`--env-prefix`) is empty or starts an environment variable's name."""
    if prefix and not _PREFIX.fullmatch(prefix):
        raise UsageError(
            f"--env-prefix {prefix!r} cannot start an environment variable's name",
            hint="ASCII letters, digits and _, not starting with a digit, at most 64: --env-prefix APP_",
        )


_ENV_NAME = re.compile(r"[^A-Za-z0-9_]")
_QUOTE = "'\\''"  # ends the quoted text, adds an escaped quote, opens it again


_PROPERTIES_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}


def _escape(text: str, *, is_key: bool) -> str:
    """`Properties.saveConvert`: escape separators and comment starts, spaces in keys (and a value's
    leading space), and every character outside printable ASCII as `\\uXXXX` (UTF-16 code units)."""
    out = []
    for index, ch in enumerate(text):
        code = ord(ch)
        if ch in _PROPERTIES_ESCAPES:
            out.append(_PROPERTIES_ESCAPES[ch])
        elif ch == " ":
            out.append("\\ " if is_key or index == 0 else " ")
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif code < 0x20 or code > 0x7E:
            units = ch.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{int.from_bytes(units[i : i + 2], 'big'):04X}" for i in range(0, len(units), 2))
        else:
            out.append(ch)
    return "".join(out)
