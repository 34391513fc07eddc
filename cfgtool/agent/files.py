"""What the agent writes (docs/agent.md). `--file NAME=KEY[:FORMAT]` renders a key's config in a format.
`--template NAME=TEMPLATE[:KEY]` renders a Jinja2 template (sandboxed) with a key's config as its context.

Formats come from `cfgtool.snapshot.formats` (json, yaml, properties, hocon, env). Secrets are `[hidden]` unless the
agent holds an identity. Then a file holding an opened secret is written mode 0600.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool.access.secrets import is_envelope
from cfgtool.agent.layout import DATA, Content
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.snapshot.formats import Format, UnsafeVariable, render
from cfgtool.snapshot.hidden import HIDDEN
from cfgtool.store.keys import ROOT

_BY_SUFFIX = {
    ".json": Format.JSON,
    ".yaml": Format.YAML,
    ".yml": Format.YAML,
    ".properties": Format.PROPERTIES,
    ".conf": Format.HOCON,
    ".hocon": Format.HOCON,
    ".env": Format.ENV,
}


class RenderError(CfgtoolError):
    """A version cannot be rendered into files: a template fails, or a config does not fit a format. The files
    applied before stay."""


@dataclass(frozen=True)
class FileSpec:
    """One file the agent writes: `name` in the directory, from `key`'s config, as `fmt` or through
    `template` (a Jinja2 file)."""

    name: str
    key: str
    fmt: Format | None = None
    template: Path | None = None


def _name(name: str, option: str, text: str) -> str:
    if not name or "/" in name or name.startswith("..") or name in (".", DATA):
        raise UsageError(
            f"{option} {text}: {name!r} is not a plain file name (no '/', not starting with '..')",
            hint=f"{option} app.json=/data/tracking/PageViewEvent",
        )
    return name


def parse_file(text: str) -> FileSpec:
    """`--file NAME=KEY[:FORMAT]`; without FORMAT, the name's suffix says it (.json .yaml .yml .properties
    .conf .hocon .env)."""
    name, sep, rest = text.partition("=")
    if not sep or not rest.startswith("/"):
        raise UsageError(
            f"--file {text}: expected NAME=KEY[:FORMAT] with a key starting with '/'",
            hint="--file app.json=/data/tracking/PageViewEvent or --file app.conf=/data/x:hocon",
        )
    key, colon, fmt_text = rest.rpartition(":")
    if not colon or "/" in fmt_text:
        key, fmt_text = rest, ""
    if fmt_text:
        try:
            fmt = Format(fmt_text)
        except ValueError:
            choices = ", ".join(f.value for f in Format)
            raise UsageError(f"--file {text}: unknown format {fmt_text!r}", hint=f"one of {choices}") from None
    else:
        found = _BY_SUFFIX.get(Path(name).suffix.lower())
        if found is None:
            raise UsageError(
                f"--file {text}: the name's suffix does not say a format",
                hint=f"add one: --file {name}={key}:json (json, yaml, properties, hocon, env)",
            )
        fmt = found
    return FileSpec(_name(name, "--file", text), key, fmt=fmt)


def parse_template(text: str) -> FileSpec:
    """`--template NAME=TEMPLATE[:KEY]`: the template's context is KEY's config (default: the root, `/`).
    The template is read and compiled now, so a syntax error stops the agent before it starts."""
    name, sep, rest = text.partition("=")
    if not sep or not rest:
        raise UsageError(
            f"--template {text}: expected NAME=TEMPLATE[:KEY]",
            hint="--template nginx.conf=/etc/cfgtool/nginx.conf.j2:/services/web",
        )
    path_text, found, key_tail = rest.rpartition(":/")
    path, key = (Path(path_text), "/" + key_tail) if found else (Path(rest), ROOT)
    spec = FileSpec(_name(name, "--template", text), key, template=path)
    _compile(spec)
    return spec


JINJA2_FLOOR = (3, 1, 6)  # 3.1.5 and 3.1.6 fix sandbox escapes (str.format through a reference, the attr filter)


def _environment() -> Any:
    """Jinja2's sandbox: templates reach the config's values and Jinja's filters, not Python's internals. A
    Jinja2 older than `JINJA2_FLOOR` is refused: its sandbox has known escapes."""
    try:
        import jinja2
        from jinja2 import StrictUndefined
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError as exc:
        raise UsageError(
            "--template needs Jinja2, the optional extra 'agent'",
            hint="in your cfgtool checkout: pip install -e '.[agent]'",
        ) from exc
    version = str(getattr(jinja2, "__version__", "") or _installed("jinja2"))
    found = tuple(int(part) for part in re.findall(r"[0-9]+", version)[:3])
    if found < JINJA2_FLOOR:
        floor = ".".join(map(str, JINJA2_FLOOR))
        raise UsageError(
            f"--template needs Jinja2 {floor} or later; {version or 'an unknown version'} is installed, whose"
            " sandbox has known escapes (a template could run code in the agent)",
            hint=f"upgrade it: pip install -U 'jinja2>={floor}' (in your cfgtool checkout: pip install -e '.[agent]')",
        )
    return ImmutableSandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)


def _installed(name: str) -> str:
    """The installed version of distribution `name`, "" when it has no metadata."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return ""


def _compile(spec: FileSpec) -> Any:
    """The compiled template of `spec`. UsageError with file:line for a template that cannot be read or parsed."""
    assert spec.template is not None
    try:
        source = spec.template.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read template {spec.template}: {exc}", hint="check the --template path") from exc
    environment = _environment()
    from jinja2 import TemplateSyntaxError

    try:
        return environment.from_string(source)
    except TemplateSyntaxError as exc:
        raise UsageError(
            f"{spec.template}:{exc.lineno}:1: template syntax error: {exc.message}", hint="fix the template"
        ) from exc


def render_file(spec: FileSpec, config: Mapping[str, Any], env_prefix: str = "") -> bytes:
    """The bytes of `spec`'s file for `config`, a key's config with secrets opened or `[hidden]`. RenderError when
    the template fails or the config does not fit the format. An env file's variable that would be read as code does
    not fit; `env_prefix` starts every name. The template file is read again each time. So an edited template applies
    from the next version on."""
    if spec.template is None:
        assert spec.fmt is not None
        try:
            return render(config, spec.fmt, env_prefix=env_prefix).encode("utf-8")
        except UnsafeVariable as exc:
            raise RenderError(f"{spec.name}: {spec.key}: {exc.message}", hint=exc.hint) from exc
        except (ValueError, TypeError, RecursionError) as exc:
            raise RenderError(f"{spec.name}: the config of {spec.key} does not fit {spec.fmt.value}: {exc}") from exc
    from jinja2 import TemplateError

    try:
        text: str = _compile(spec).render(dict(config))
    except UsageError as exc:
        raise RenderError(exc.message, hint=exc.hint) from exc
    except (TemplateError, ValueError, TypeError, ArithmeticError, LookupError, AttributeError) as exc:
        line = _template_line(exc)
        where = f"{spec.template}:{line}" if line else str(spec.template)
        raise RenderError(
            f"{where}: {spec.name} cannot be rendered for {spec.key}: {type(exc).__name__}: {exc}",
            hint="fix the template, or the config it reads",
        ) from exc
    return text.encode("utf-8")


def _template_line(exc: BaseException) -> int | None:
    """The template line an error was raised at (Jinja2 compiles templates to code named `<template>`)."""
    found = getattr(exc, "lineno", None)
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            found = tb.tb_lineno
        tb = tb.tb_next
    return found if isinstance(found, int) else None


def contents(
    specs: list[FileSpec], configs: Mapping[str, Mapping[str, Any]], opened: set[str], env_prefix: str = ""
) -> dict[str, Content]:
    """Every file of a version: `configs` by key. The keys in `opened` hold opened secrets (mode 0600 files).
    `env_prefix` starts the names of env files."""
    return {spec.name: Content(render_file(spec, configs[spec.key], env_prefix), spec.key in opened) for spec in specs}


def sealed_paths(config: Mapping[str, Any]) -> dict[tuple[str, ...], str]:
    """The sealed envelopes of a config read with `?secrets=sealed`, by path."""
    found: dict[tuple[str, ...], str] = {}
    todo: list[tuple[tuple[str, ...], Any]] = [((), config)]
    while todo:
        path, value = todo.pop()
        if isinstance(value, Mapping):
            todo += [((*path, str(k)), v) for k, v in value.items()]
        elif isinstance(value, list):
            todo += [((*path, str(i)), v) for i, v in enumerate(value)]
        elif is_envelope(value):
            found[path] = value
    return found


def replace_at(config: Mapping[str, Any], values: Mapping[tuple[str, ...], str | None]) -> dict[str, Any]:
    """A copy of `config` with the value at each path of `values` replaced (None: `[hidden]`)."""

    def walk(value: Any, path: tuple[str, ...]) -> Any:
        if path in values:
            return HIDDEN if values[path] is None else values[path]
        if isinstance(value, Mapping):
            return {k: walk(v, (*path, str(k))) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, (*path, str(i))) for i, v in enumerate(value)]
        return value

    out: dict[str, Any] = walk(config, ())
    return out


__all__ = ["FileSpec", "RenderError", "contents", "parse_file", "parse_template", "render_file"]
