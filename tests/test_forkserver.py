"""The fork server of `run_cfgtool` (tests/forkserver.py): a forked run answers as a fresh `cfgtool` process does
(output, errors, exit status, standard input, directory and environment), a signal to the client reaches the
run, and a run whose client is gone (a test's timeout killed it) is killed."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import GitRepo
from tests.processes import ForkServer, cfgtool_command, child_env, wait_for

KEY = "/data/databases/identity"


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None, input: str = "") -> tuple[int, str, str]:
    proc = subprocess.run(command, cwd=cwd, env=env or child_env(), input=input, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("compile", "--format", "json"),
        ("get", KEY, "--format", "yaml"),
        ("explain", KEY, "database"),
        ("get", "/no/such/key/anywhere"),  # exit 1, with a suggestion on stderr
        ("compile", "--format", "xml"),  # a usage error: exit 2
        ("versions",),
    ],
)
def test_a_forked_run_answers_as_a_fresh_cfgtool(
    args: tuple[str, ...], embedded_repo: GitRepo, cfgtool_forks: ForkServer
) -> None:
    fresh = run([*cfgtool_command(), *args], embedded_repo.root)
    forked = run([*cfgtool_forks.command(), *args], embedded_repo.root)
    assert forked == fresh


def test_a_forked_run_has_the_callers_stdin_directory_and_environment(
    tmp_path: Path, embedded_repo: GitRepo, cfgtool_forks: ForkServer
) -> None:
    (tmp_path / "a.conf").write_text("from.file = 1\n", encoding="utf-8")
    args = ["hocon", "a.conf", "/dev/stdin"]
    forked = run([*cfgtool_forks.command(), *args], tmp_path, input="from.stdin = 2\n")
    assert forked == run([*cfgtool_command(), *args], tmp_path, input="from.stdin = 2\n")
    assert forked[0] == 0 and '"stdin": 2' in forked[1] and '"file": 1' in forked[1]
    cache = tmp_path / "its-own-cache"
    env = child_env(cache)
    assert run([*cfgtool_forks.command(), "compile"], embedded_repo.root, env)[0] == 0
    assert any(cache.iterdir()), "the run did not cache where its environment said"


def test_only_a_run_that_keeps_the_interpreters_start_up_variables_is_forked(
    cfgtool_forks: ForkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CFGTOOL_TESTS_FRESH", raising=False)
    cfgtool_forks.command()
    assert cfgtool_forks.fits(child_env(extra={"COLUMNS": "80", "CFGTOOL_CACHE_DIR": "/elsewhere"}))
    for variable in ("PATH", "PYTHONPATH", "PYTHONIOENCODING", "LC_ALL", "LANG"):
        assert not cfgtool_forks.fits(child_env(extra={variable: "changed"})), variable
    monkeypatch.setenv("CFGTOOL_TESTS_FRESH", "1")
    assert not cfgtool_forks.fits(child_env())


def children(pid: int) -> set[int]:
    return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


def blocked_run(cfgtool_forks: ForkServer, tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A forked run that waits for standard input, and its pid in the server."""
    command = cfgtool_forks.command()
    assert cfgtool_forks.server is not None
    server = cfgtool_forks.server.proc.pid
    before = children(server)
    client = subprocess.Popen([*command, "hocon", "/dev/stdin"], cwd=tmp_path, stdin=subprocess.PIPE)
    wait_for(lambda: children(server) - before, 30, "the forked run")
    (pid,) = children(server) - before
    time.sleep(0.5)  # into its read of stdin
    return client, pid


def test_a_signal_to_the_client_ends_the_run_as_it_ends_a_fresh_process(
    tmp_path: Path, cfgtool_forks: ForkServer
) -> None:
    client, pid = blocked_run(cfgtool_forks, tmp_path)
    client.send_signal(signal.SIGTERM)
    assert client.wait(30) == -signal.SIGTERM
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 30, "the end of the forked run")


def test_a_run_whose_client_is_killed_is_killed(tmp_path: Path, cfgtool_forks: ForkServer) -> None:
    client, pid = blocked_run(cfgtool_forks, tmp_path)
    client.kill()  # as subprocess.run's timeout does
    client.wait(30)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), 30, "the end of the forked run")
    assert cfgtool_forks.server is not None and cfgtool_forks.server.proc.poll() is None
    assert run([*cfgtool_forks.command(), "--version"], tmp_path)[0] == 0  # and the server still answers


def test_a_fork_server_whose_worker_died_ends(tmp_path: Path) -> None:
    """A pytest worker killed by a timeout never stops its fork server: the server ends by itself."""
    worker = (
        "import sys; from pathlib import Path; from tests.processes import ForkServer\n"
        "forks = ForkServer(Path(sys.argv[1])); forks.command(); print(forks.server.proc.pid, flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", worker, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    server = int(proc.stdout.readline())
    proc.kill()
    proc.wait()

    def ended() -> bool:
        try:
            return Path(f"/proc/{server}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    wait_for(ended, 30, "the end of the fork server")
