"""Fixtures for every test: real git repositories in temporary directories, a private parse cache, and a copy
of the embedded example store committed to its own repository (so tests never depend on the checkout's state)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from cfgtool.store.git import git_env
from tests.processes import ForkServer, child_env, cli_command, fork_server
from tests.remotes import RemoteWatch, add_origin

CHECKOUT = Path(__file__).resolve().parents[1]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto` (pyproject's addopts): one worker more than the cores this process may run on. Many tests wait
    for the processes they start (servers, agents, git, Spark), so with one worker a core the cores idled about a
    fifth of a run."""
    return len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) + 1


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "long: a test of a minute or more on a loaded 2-core machine, started first")


@pytest.hookimpl(trylast=True)  # after pytest-xdist's own
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The `long` tests first (a stable sort, the rest in their order): with several workers a long test started
    last ends the run long after the others have finished. Under `--dist loadgroup`, each test of an
    `xdist_group` is named for its group (`_grouped`)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)
    if getattr(config.option, "loadgroup", False):  # set on each xdist worker
        for item in items:
            _grouped(item)


def _grouped(item: pytest.Item) -> None:
    """Give `item` the `@group` suffix of its `xdist_group` marks, by which `--dist loadgroup` sends a group's
    tests to one worker. pytest-xdist 3.8 writes that suffix where pytest 9.2 no longer reads a node id from
    (it keeps a structured id): there every group's tests went to every worker, each starting its own Spark
    session, browser and conformance runs."""
    names = sorted(
        {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    )
    suffix = "@" + "_".join(names)
    if names and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
        item._id = type(item._id).parse(item.nodeid + suffix)


_CONFIG = {"user": {"name": "Test", "email": "test@example.com"}, "commit": {"gpgsign": "false"}}
"""Every test repository's git configuration: an identity to commit with, and no signing."""


class GitRepo:
    """A real repository in a temporary directory, with helpers to write files and commit them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        fresh = not (root / ".git").exists()
        self.git("init", "-q", "-b", "main")
        if fresh:  # written as `git config` writes them, without three more git processes per repository
            with open(root / ".git" / "config", "a", encoding="utf-8") as config:
                for section, entries in _CONFIG.items():
                    config.write(f"[{section}]\n" + "".join(f"\t{k} = {v}\n" for k, v in entries.items()))
        else:
            for section, entries in _CONFIG.items():
                for key, value in entries.items():
                    self.git("config", f"{section}.{key}", value)

    @classmethod
    def existing(cls, root: Path) -> GitRepo:
        """The repository already at `root` (made by this class), without running git."""
        repo = cls.__new__(cls)
        repo.root = root
        return repo

    def git(self, *args: str) -> str:
        proc = subprocess.run(("git", *args), cwd=self.root, env=git_env(), capture_output=True, text=True, check=True)
        return proc.stdout.strip()

    def write(self, files: Mapping[str, str | bytes | None], under: str = "") -> None:
        """Write (or with None, delete) files; `under` prefixes every path (e.g. "store/")."""
        for rel, content in files.items():
            path = self.root / under / rel
            if content is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")


@pytest.fixture(autouse=True, scope="session")
def private_parse_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Point the parse cache and the cache key (and the CLI subprocesses, which inherit the environment) at a
    fresh directory, away from the user's own."""
    old = {name: os.environ.get(name) for name in ("CFGTOOL_CACHE_DIR", "CFGTOOL_CACHE_KEY_FILE")}
    os.environ["CFGTOOL_CACHE_DIR"] = str(tmp_path_factory.mktemp("parse-cache"))
    os.environ["CFGTOOL_CACHE_KEY_FILE"] = str(tmp_path_factory.mktemp("cache-key") / "cache.key")
    yield
    for name, value in old.items():
        if value is None:
            del os.environ[name]
        else:
            os.environ[name] = value


@pytest.fixture(autouse=True, scope="session")
def child_bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Where bytecode is not written (PYTHONDONTWRITEBYTECODE, `-B`), let the thousands of Python processes the
    tests start (CLI runs, servers, agents) write it and share it in a directory of this run's own, outside the
    checkout: otherwise each of them compiles every cfgtool module it imports from source, a third of a CLI
    run's time."""
    if not sys.dont_write_bytecode:
        yield
        return
    saved = {name: os.environ.get(name) for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("bytecode"))
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def store_repo(repo: GitRepo) -> GitRepo:
    """A repository whose `store/` has an empty `_CONFIG_STORE` and nothing else yet."""
    repo.write({"store/_CONFIG_STORE": ""})
    return repo


_templates: dict[str, Path] = {}
"""This process's template repositories by name (each made at its first use), and under "" the directory that
the `template_directory` fixture names for them."""


@pytest.fixture(autouse=True, scope="session")
def template_directory(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Where this session's template repositories go: a temporary directory pytest cleans up."""
    _templates.setdefault("", tmp_path_factory.mktemp("templates"))


def copy_template(name: str, build: Callable[[Path], object], root: Path) -> GitRepo:
    """A new repository at `root`: a copy of this process's template `name`, `.git` included, as independent of
    it as a clone. The template is made once per process (each xdist worker) by `build(path)`, then its objects
    are packed into one file and git's sample hooks removed (nothing runs them): fewer files to copy. A copy
    takes a tenth of the time of git init, add and commit (and of a publish); its index is refreshed, so that
    git sees the copied files as unchanged."""
    if name not in _templates:
        parent = _templates.get("") or Path(tempfile.mkdtemp(prefix="cfgtool-templates-"))
        build(parent / name)
        template = GitRepo.existing(parent / name)
        template.git("repack", "-a", "-d", "-q")
        shutil.rmtree(template.root / ".git" / "hooks", ignore_errors=True)
        _templates[name] = template.root
    shutil.copytree(_templates[name], root, symlinks=True)
    repo = GitRepo.existing(root)
    repo.git("update-index", "-q", "--refresh")
    return repo


def _commit_embedded(root: Path) -> GitRepo:
    """A new repository at `root` holding the embedded store, its schemas and policies, committed."""
    repo = GitRepo(root)
    for name in ("store", "schemas", "policies"):
        if (CHECKOUT / name).is_dir():
            shutil.copytree(CHECKOUT / name, root / name, ignore=shutil.ignore_patterns("__pycache__"))
    repo.commit("the embedded example store")
    return repo


def copy_embedded(root: Path) -> GitRepo:
    """A new repository at `root` holding a committed copy of the embedded store, its schemas and policies."""
    return copy_template("embedded", _commit_embedded, root)


@pytest.fixture(scope="session")
def embedded_repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    """The embedded store, committed; shared by the session, so tests must not change it."""
    return copy_embedded(tmp_path_factory.mktemp("embedded") / "repo")


@pytest.fixture
def work(tmp_path: Path) -> GitRepo:
    """A repository holding a committed copy of the embedded store, its own for each test (which may change it)."""
    return copy_embedded(tmp_path / "repo")


@pytest.fixture
def remote(work: GitRepo, tmp_path: Path) -> Iterator[RemoteWatch]:
    """A bare remote `origin` of `work`, with main pushed; checked for moved tags when the test ends."""
    watch = add_origin(work, tmp_path / "remote.git")
    yield watch
    watch.check()


@pytest.fixture(autouse=True, scope="session")
def cfgtool_forks(private_parse_cache: None, child_bytecode_cache: None) -> Iterator[ForkServer]:
    """This worker's fork server for the CLI runs of the tests (tests/forkserver.py, `cli_command`): started at
    its first run, in the environment the session's fixtures set; stopped when the session ends."""
    forks = fork_server()
    yield forks
    forks.stop()


@pytest.fixture
def run_cfgtool(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`run_cfgtool(*args, cwd=tmp_path, env=None, input=None)`: the finished process, stdout and stderr as
    text (`input` is its standard input). The process is a fork of this worker's fork server (a third of the
    CPU time of a fresh `cfgtool`), or a fresh `cfgtool` where `env` changes what the interpreter reads as it
    starts (`cli_command`)."""
    base_env = child_env()

    def run(
        *args: str, cwd: Path = tmp_path, env: dict[str, str] | None = None, input: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        environ = {**base_env, **(env or {})}
        return subprocess.run(
            [*cli_command(environ), *args],
            cwd=cwd,
            env=environ,
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            encoding="utf-8",
            timeout=60,
            check=False,
        )

    return run
