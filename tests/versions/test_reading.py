"""Reading a ref or a version from its artifact (cfgtool/versions/reading.py): the query commands answer exactly as
after a compile (text, JSON, errors, exit codes), on generated stores and on the embedded one (variables, secrets,
keys without a node, failed nodes); a cached read compiles nothing and starts no git; refs that move are seen."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import cfgtool.versions.reading as reading
from cfgtool.cli.app import main
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.snapshot.model import Reading
from cfgtool.store.refmemo import SETTLED_NS
from cfgtool.versions import VersionNotFound, publish
from tests.conftest import CHECKOUT, GitRepo, copy_embedded

Outcome = tuple[int, str, str]  # exit status, stdout, stderr


def cli(*args: str, cwd: Path) -> Outcome:
    """Run cfgtool in this process (as the installed script would) and capture what it prints."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(list(args))
        finally:
            gc.enable()  # main() turns the collector off for its (short) process
    return status, out.getvalue(), err.getvalue()


def commands(key: str, path: str) -> list[list[str]]:
    """Every query that reads a key (those the artifact answers), in every format."""
    return [
        ["get", key], ["get", key, "-f", "json"], ["get", key, "-f", "yaml"], ["get", key, path],
        ["get", key, path, "-f", "json"], ["get", key, "no.such.path"], ["explain", key, path],
        ["explain", key, path, "-f", "json"], ["explain", key, "no.such.path"], ["imports", key],
        ["imports", key, "-r", "-f", "json"], ["tags", key], ["tags", key, "-f", "json"],
    ]  # fmt: skip


@pytest.fixture
def compiled_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reads that compile (each ref and variables once, kept in memory) and never touch an artifact: the
    answers of a full compile, to compare with."""
    done: dict[tuple[Any, ...], Reading] = {}
    compile_at = reading.compile_at

    def compiled(
        repo: Path | None, store: Any, ref: str | None, variables: Any, cache: Path, progress: Any = None
    ) -> Reading:
        key = (repo, str(store), ref, tuple(sorted(variables.items())))
        if key not in done:
            done[key] = compile_at(repo, store, ref, variables, cache)
        return done[key]

    monkeypatch.setattr(reading, "compile_at", compiled)
    monkeypatch.setattr(reading, "open_version", lambda *args, **kwargs: None)
    monkeypatch.setattr(reading, "save_artifact", lambda *args, **kwargs: False)
    yield


def no_compile(*args: object, **kwargs: object) -> Reading:
    raise AssertionError("a cached read compiled")


def answers(root: Path, keys: list[tuple[str, str]], states: list[list[str]]) -> dict[str, Outcome]:
    return {
        " ".join(command + state): cli(*command, *state, cwd=root)
        for state in states
        for key, path in keys
        for command in commands(key, path)
    }


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    """A generated store (benchmarks/gen_store.py: tags, references, dynamic includes with variables) published
    as version 1, then a commit that adds a node whose reference does not resolve (and a child of it)."""
    root = tmp_path_factory.mktemp("generated") / "repo"
    gen = [sys.executable, "-m", "benchmarks.gen_store", "--datasets", "60", "--out", str(root)]
    subprocess.run([*gen, "--git"], check=True, capture_output=True, cwd=CHECKOUT)
    repo = GitRepo(root)  # an identity to commit with
    publish(root, message="v1")
    repo.write({"store/data/broken/main.conf": "x = ${nowhere}\n", "store/data/broken/child/main.conf": "y = 1\n"})
    repo.write({"store/main.conf": (root / "store/main.conf").read_text() + "\nlater = true\n"})
    repo.commit("after v1: a node that does not resolve")
    return repo


def generated_keys(repo: GitRepo) -> list[tuple[str, str]]:
    store = repo.root / "store"
    datasets = sorted("/" + str(p.parent.relative_to(store)) for p in (store / "data").rglob("main.conf"))
    dynamic = next(k for k in datasets if "${" in _read(store / k[1:] / "includes"))
    return [
        ("/", "retention"), ("/data", "owner"), (datasets[-1], "retention.ms"), (dynamic, "kafka.partitions"),
        ("/tags", "retention"), (datasets[3] + "/NoNode", "retention.ms"), ("/data/broken", "x"),
        ("/data/broken/child", "y"), ("/no/such/key", "a.b"),
    ]  # fmt: skip


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def test_generated_store_answers_from_the_artifact_equal_the_compile(
    generated: GitRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, compiled_only: None
) -> None:
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cache"))
    keys = generated_keys(generated)
    states = [["--ref", "HEAD"], ["--version", "1"], ["--ref", "HEAD", "--var", "deploy.env=prod"]]
    expected = answers(generated.root, keys, states)
    monkeypatch.undo()
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cache"))
    for state in states:  # the first read of each state compiles and writes its artifact ...
        assert cli("get", "/", *state, cwd=generated.root)[0] == 0
    monkeypatch.setattr(reading, "compile_at", no_compile)  # ... every later one reads it
    assert answers(generated.root, keys, states) == expected
    statuses = {outcome[0] for outcome in expected.values()}
    assert statuses == {0, 1}  # refusals, unset paths and failed nodes are among them


def test_embedded_store_answers_from_the_artifact_equal_the_compile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compiled_only: None
) -> None:
    repo = copy_embedded(tmp_path / "repo")
    publish(repo.root, message="v1")
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cache"))
    keys = [
        ("/data/tracking/PageViewEvent", "kafka.partitions"), ("/data/tracking/NewTopic", "kafka.topic"),
        ("/data/databases/identity", "database.credentials.password"), ("demo:/tags/priority/HIGH", "priority"),
        ("/data/databases/identity/emails", "database.credentials.password"), ("/", "retention"),
    ]  # fmt: skip
    states = [["--version", "1"], ["--ref", "config/v1", "--var", "local_cluster.name=lva1"]]
    expected = answers(repo.root, keys, states)
    monkeypatch.undo()
    monkeypatch.setenv("CFGTOOL_CACHE_DIR", str(tmp_path / "cache"))
    for state in states:
        assert cli("get", "/", *state, cwd=repo.root)[0] == 0
    monkeypatch.setattr(reading, "compile_at", no_compile)
    got = answers(repo.root, keys, states)
    assert got == expected
    shown = "".join(out for _, out, _ in got.values())
    assert "[hidden]" in shown and "ENC[" not in shown  # secrets stay hidden, envelopes never shown


def probe(repo: Path, *args: str, cache: Path) -> tuple[str, list[str]]:
    """Run the CLI in a fresh process; its output and the modules it imported."""
    code = (
        "import contextlib, io, json, sys\nfrom cfgtool.cli.app import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n    main(sys.argv[1:])\n"
        "print(json.dumps([out.getvalue(), sorted(sys.modules)]))"
    )
    env = {"CFGTOOL_CACHE_DIR": str(cache), "PATH": "/usr/bin:/bin", "HOME": str(cache)}
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=repo, env={**env, "PYTHONPATH": str(CHECKOUT)},
                          capture_output=True, text=True, check=True)  # fmt: skip
    text, modules = json.loads(proc.stdout.splitlines()[-1])
    return text, modules


def settle() -> None:
    """Let the refs age past the memo's racy window (a memo is only written for settled refs)."""
    time.sleep(SETTLED_NS / 1e9 + 0.1)


def test_a_cached_read_compiles_nothing_and_starts_no_git(store_repo: GitRepo, tmp_path: Path) -> None:
    store_repo.write({"store/main.conf": "a = 1\n", "store/data/main.conf": "b = 2\n"})
    store_repo.commit()
    publish(store_repo.root, message="v1")
    settle()
    cache = tmp_path / "cache"
    first, loaded = probe(store_repo.root, "get", "/data", "--ref", "HEAD", cache=cache)
    assert "cfgtool.compile.compiler" in loaded and "git" in loaded  # compiled, wrote the artifact and the memo
    for args in (["get", "/data", "--ref", "HEAD"], ["get", "/data", "b", "--version", "1"]):
        first, loaded = probe(store_repo.root, *args, cache=cache)  # git tells which commit version 1 is
        again, loaded = probe(store_repo.root, *args, cache=cache)
        assert again == first
        heavy = {"git", "cfgtool.compile.compiler", "cfgtool.store.git", "cfgtool.build.builder", "yaml", "msgpack"}
        if len(args) == 4:  # (a PATH is parsed by the HOCON engine)
            heavy.add("cfgtool.hocon.parser")
        assert not heavy & set(loaded), sorted(heavy & set(loaded))


def test_a_moved_ref_is_read_at_its_new_commit(store_repo: GitRepo, tmp_path: Path) -> None:
    store_repo.write({"store/main.conf": "a = 1\n"})
    store_repo.commit()
    settle()
    cache = tmp_path / "cache"
    assert probe(store_repo.root, "get", "/", "a", "--ref", "HEAD", cache=cache)[0] == "1\n"
    answer, loaded = probe(store_repo.root, "get", "/", "a", "--ref", "HEAD", cache=cache)
    assert answer == "1\n" and "git" not in loaded  # the memo answered
    store_repo.write({"store/main.conf": "a = 2\n"})
    store_repo.commit()  # HEAD moves at once: the memo must not answer the old commit
    answer, loaded = probe(store_repo.root, "get", "/", "a", "--ref", "HEAD", cache=cache)
    assert answer == "2\n" and "git" in loaded
    store_repo.git("checkout", "-q", "-b", "other", "HEAD~1")
    assert probe(store_repo.root, "get", "/", "a", "--ref", "HEAD", cache=cache)[0] == "1\n"
    store_repo.git("tag", "later", "main")
    assert probe(store_repo.root, "get", "/", "a", "--ref", "later", cache=cache)[0] == "2\n"


def test_an_unknown_ref_or_version_is_the_same_error_as_before(store_repo: GitRepo, tmp_path: Path) -> None:
    store_repo.write({"store/main.conf": "a = 1\n"})
    store_repo.commit()
    publish(store_repo.root, message="v1")
    for args in (["--ref", "nope"], ["--version", "7"], ["--version", "7", "--var", "bad"]):
        status, _, err = cli("get", "/", *args, cwd=store_repo.root)
        assert status == 2 and ("unknown ref 'nope'" in err or "version 7" in err), err


SIZE_SCHEMA = "type: object\nx-cfgtool:\n  applies_to:\n    keys: [/]\nproperties:\n  a: {type: integer, maximum: 10}\n"


def test_read_for_query_orders_its_refusals_as_a_compile_does(store_repo: GitRepo) -> None:
    """The library, not the command: an unknown version before a bad variable text, a bad variable text before the
    read, and a version tagged without publish's checks refused with the rule's message."""
    store_repo.write({"store/_CONFIG_STORE": "schemas: ../schemas\n", "schemas/a.yaml": SIZE_SCHEMA})
    store_repo.write({"store/main.conf": "a = 1\n"})
    store_repo.commit()
    publish(store_repo.root, message="v1")
    read = reading.read_for_query
    with pytest.raises(VersionNotFound):
        read(store_repo.root, "store", version="7", variables=["bad"])
    with pytest.raises(UsageError, match=r"^--var 'bad' is not NAME=VALUE \(hint"):
        read(store_repo.root, "store", version="1", variables=["bad"])
    assert read(store_repo.root, "store", ref="current").snapshot.lookup("/").config == {"a": 1}
    store_repo.write({"store/main.conf": "a = 5000\n"})
    store_repo.commit("too big")
    store_repo.git("tag", "-a", "config/v2", "-m", "made by hand")
    assert read(store_repo.root, "store", ref="HEAD").snapshot.lookup("/").config == {"a": 5000}  # a ref: as it is
    with pytest.raises(CfgtoolError, match=r"^version 2 \([0-9a-f]{7}\) has errors, so no application reads it: "):
        read(store_repo.root, "store", version="current")
