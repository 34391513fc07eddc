"""`cfgtool.snapshot.formats`: json, yaml, properties and env rendering (hocon: tests/hocon/test_render.py)."""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from cfgtool.errors import UsageError
from cfgtool.snapshot.formats import Format, UnsafeVariable, render, to_env, to_json, to_properties, to_yaml

SAMPLE = {"z": 1, "a": {"list": [1, "two", None], "flag": False, "f": 1.5}, "é": "ü"}


def test_to_json_is_pretty_keeps_order_and_unicode() -> None:
    text = to_json(SAMPLE)
    assert json.loads(text) == SAMPLE
    assert text.startswith('{\n  "z": 1,\n  "a": {')
    assert '"é": "ü"' in text
    assert text.endswith("}\n")


def test_to_json_escapes_surrogates_that_utf8_cannot_carry() -> None:
    text = to_json({"pair": "\ud83d\ude00", "lone": "\ud800"})
    text.encode("utf-8")
    assert json.loads(text) == {"pair": "\U0001f600", "lone": "\ud800"}


def test_to_yaml_keeps_order_and_types() -> None:
    text = to_yaml(SAMPLE)
    assert yaml.safe_load(text) == SAMPLE
    assert text.startswith("z: 1\na:\n")


def test_to_yaml_quotes_strings_that_look_like_other_types() -> None:
    doc = {"s": "true", "n": "10", "nul": "null", "e": ""}
    assert yaml.safe_load(to_yaml(doc)) == doc


def test_to_properties_flattens_objects_and_lists() -> None:
    assert to_properties(SAMPLE) == (
        "z=1\na.list.0=1\na.list.1=two\na.list.2=\na.flag=false\na.f=1.5\n\\u00E9=\\u00FC\n"
    )


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        ("k", " lead and trail ", "k=\\ lead and trail \n"),
        ("a key", "v", "a\\ key=v\n"),
        ("k", "a=b:c#d!e", "k=a\\=b\\:c\\#d\\!e\n"),
        ("k", "back\\slash", "k=back\\\\slash\n"),
        ("k", "l1\nl2\tx\r\f", "k=l1\\nl2\\tx\\r\\f\n"),
        ("k", "\x01\x7f", "k=\\u0001\\u007F\n"),
        ("k", "\U0001f600", "k=\\uD83D\\uDE00\n"),
        ("#k", "", "\\#k=\n"),
    ],
)
def test_to_properties_escapes_like_java_properties_store(key: str, value: str, line: str) -> None:
    assert to_properties({key: value}) == line


def test_to_properties_empty_containers_produce_no_lines() -> None:
    assert to_properties({"a": {}, "b": [], "c": 1}) == "c=1\n"


@pytest.mark.parametrize("fmt", list(Format))
def test_render_dispatches_every_format(fmt: Format) -> None:
    text = render({"a": 1}, fmt)
    assert "a" in text.lower()  # env names are upper-case
    assert text.endswith("\n")


def test_to_env_is_what_a_shell_sources() -> None:
    value = {"db": {"host": "h", "pass": "it's $HOME `x`\nline"}, "1st": None, "a-b": [True, 2.5]}
    text = to_env(value)
    assert text.splitlines()[0] == "DB_HOST='h'"
    assert "_1ST=''\n" in text and "A_B_0='true'\n" in text and "A_B_1='2.5'\n" in text
    script = 'set -a; . ./cfg.env; printf \'%s|%s|%s\' "$DB_HOST" "$DB_PASS" "$A_B_1"'
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "cfg.env").write_text(text, encoding="utf-8")
        done = subprocess.run(["/bin/sh", "-c", script], cwd=tmp, capture_output=True, text=True, check=True)
    assert done.stdout == "h|it's $HOME `x`\nline|2.5"


def test_to_env_refuses_two_paths_with_one_name() -> None:
    with pytest.raises(ValueError, match=r"'a\.b' and 'a_b' are both the environment variable A_B"):
        to_env({"a": {"b": 1}, "a_b": 2})


CODE = [  # paths whose variable a shell, the dynamic linker or a runtime reads as code (or where to load it from)
    *("ld_preload", "ld_library_path", "ld_audit", "dyld_insert_libraries", "glibc_tunables", "gconv_path"),
    *("bash_env", "env", "ps4", "prompt_command", "ifs", "path", "shellopts", "bashopts", "bash_func_ls%%"),
    *("perl5opt", "perl5lib", "node_options", "pythonpath", "pythonstartup", "rubyopt", "rubylib"),
    *("java_tool_options", "_java_options", "jdk_java_options", "classpath", "git_ssh_command", "lua_init"),
    *("phprc", "dotnet_startup_hooks", "openssl_conf", "erl_aflags", "lessopen", "editor", "pager", "home"),
]


@pytest.mark.parametrize("path", CODE)
def test_to_env_refuses_a_variable_read_as_code_and_takes_it_under_a_prefix(path: str) -> None:
    name = path.upper().replace("%", "_")
    with pytest.raises(UnsafeVariable, match=rf"environment variable {name}, which .* reads as code") as refused:
        to_env({"ok": 1, path: "/tmp/evil"})
    assert refused.value.hint == f"prefix every name: --env-prefix APP_ (then APP_{name}), or rename the path"
    assert to_env({"ok": 1, path: "/tmp/evil"}, "APP_") == f"APP_OK='1'\nAPP_{name}='/tmp/evil'\n"


def test_to_env_refuses_a_prefix_that_makes_code_of_every_name() -> None:
    with pytest.raises(UnsafeVariable, match="LD_NAME, which the dynamic linker") as refused:
        to_env({"name": "x"}, "LD_")
    assert refused.value.hint == "choose another --env-prefix than 'LD_'"
    for bad in ("1APP", "APP-", "A P", "\u00c9"):
        with pytest.raises(UsageError, match="cannot start an environment variable's name"):
            to_env({"name": "x"}, bad)
    assert to_env({"name": "x", "tier": None}) == "NAME='x'\nTIER=''\n"  # names outside the families pass
