"""`cfgtool rollout status|promote|pause|resume|abort`, run as real subprocesses against a real repository whose
versions `cfgtool publish` made under a rollout plan, with a bare remote whose tags must never move."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cfgtool.versions.messages import format_message, parse_message
from tests.conftest import GitRepo
from tests.remotes import RemoteWatch, add_origin
from tests.serve.conftest import small  # noqa: F401 (a fixture)

Run = Callable[..., subprocess.CompletedProcess[str]]

ACL = """super_users: [User:admin]
acls:
  - {principal: User:releaser, operation: publish, resource: store, permission: allow}
  - {principal: User:oncall, operation: rollback, resource: store, permission: allow}
  - {principal: "User:*", operation: read, key: "*", permission: allow}
"""
RULES = "name: small\nrollout: {steps: [5, 25, 100], step_time: 10m, bake: 1h}\n"


@pytest.fixture
def rolling(small: GitRepo, run_cfgtool: Run, tmp_path: Path) -> Iterator[tuple[GitRepo, RemoteWatch]]:  # noqa: F811
    """`small` with a bare remote, then version 2 published by `cfgtool publish` under a plan and an ACL."""
    watch = add_origin(small, tmp_path / "remote.git")
    small.git("push", "-q", "origin", "config/v1")
    small.write({"store/_CONFIG_STORE": RULES, "store/_ACL.yaml": ACL, "store/main.conf": "owner = platform\n"
                 "retention.days = 14\n"})  # fmt: skip
    small.commit("a rollout plan, an ACL, longer retention")
    proc = run_cfgtool("publish", "--remote", "origin", "-m", "v2", cwd=small.root)
    assert proc.returncode == 0, proc.stderr
    yield small, watch
    watch.check()


def cli(run: Run, repo: GitRepo, *args: str) -> tuple[int, Any, str]:
    """Exit status, the JSON printed (None when none) and stderr of `cfgtool rollout ARGS --format json`."""
    proc = run("rollout", *args, "--format", "json", cwd=repo.root)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def meta(repo: GitRepo, tag: str) -> dict[str, Any]:
    return parse_message(repo.git("for-each-ref", "--format=%(contents)", f"refs/tags/{tag}"))[1]


def test_status_shows_the_rolling_version_as_json_and_text(
    rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run
) -> None:
    repo, _ = rolling
    code, doc, _ = cli(run_cfgtool, repo, "status")
    assert code == 0
    assert set(doc) == {"store", "version", "stable", "state", "percent", "step", "steps", "since", "cohort", "gates",
                        "why", "events"}  # fmt: skip
    assert (doc["store"], doc["version"], doc["stable"], doc["state"], doc["percent"], doc["steps"]) == (
        "small",
        2,
        1,
        "rolling",
        5,
        [5, 25, 100],
    )
    assert doc["cohort"] is None and doc["gates"] == [] and doc["events"] == []
    assert doc["why"].startswith("next step (25%) at ") and doc["why"].endswith(" if the gates pass")
    text = run_cfgtool("rollout", "status", "2", cwd=repo.root).stdout
    assert "version 2 of store small: rolling at 5% (stable version: 1)" in text and "[5%] -> 25% -> 100%" in text
    code, _, err = cli(run_cfgtool, repo, "status", "1")
    assert code == 1 and "version 1 has no staged rollout: its rules have no rollout plan" in err
    code, _, err = cli(run_cfgtool, repo, "status", "9")
    assert code == 2 and "version 9 does not exist" in err


def test_promote_pause_and_resume_write_pushed_step_tags(
    rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run
) -> None:
    repo, remote = rolling
    code, doc, _ = cli(run_cfgtool, repo, "promote", "2", "-m", "canary fine", "--remote", "origin")
    assert code == 0 and (doc["action"], doc["percent"], doc["state"]) == ("step", 25, "rolling")
    assert doc["tag"] == "config/rollout/v2/1" and "config/rollout/v2/1" in remote.tags()
    step = meta(repo, "config/rollout/v2/1")
    assert (step["action"], step["percent"], step["reason"]) == ("step", 25, "promote: canary fine")
    code, doc, _ = cli(run_cfgtool, repo, "pause", "2", "-m", "watching errors", "--remote", "origin")
    assert code == 0 and (doc["action"], doc["percent"], doc["state"]) == ("pause", 25, "paused")
    code, _, err = cli(run_cfgtool, repo, "pause", "2", "-m", "again")
    assert code == 1 and "version 2 is already paused" in err and "rollout resume 2" in err
    _, status, _ = cli(run_cfgtool, repo, "status", "2")
    assert status["state"] == "paused" and status["why"].endswith(": watching errors")
    code, doc, _ = cli(run_cfgtool, repo, "resume", "2", "--remote", "origin")
    assert code == 0 and (doc["action"], doc["state"]) == ("resume", "rolling")
    code, _, err = cli(run_cfgtool, repo, "resume", "2")
    assert code == 1 and "version 2 is not paused: it is rolling" in err
    assert cli(run_cfgtool, repo, "promote", "2")[1]["state"] == "baking"
    code, doc, _ = cli(run_cfgtool, repo, "promote", "2", "--remote", "origin")
    assert code == 0 and (doc["action"], doc["state"]) == ("done", "done")
    code, _, err = cli(run_cfgtool, repo, "promote", "2")
    assert code == 1 and "cannot promote: version 2 finished its rollout" in err
    assert [t for t in remote.tags() if "rollout" in t] == [f"config/rollout/v2/{seq}" for seq in (1, 2, 3, 5)]


def test_abort_is_a_rollback_that_sticks(rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run) -> None:
    repo, remote = rolling
    code, doc, _ = cli(run_cfgtool, repo, "abort", "2", "-m", "latency up", "--remote", "origin")
    assert code == 0 and doc["rolled_back"] == [2] and doc["current"] == 1
    assert "config/rolledback/v2" in remote.tags()
    assert meta(repo, "config/rolledback/v2")["reason"] == "abort: latency up"
    _, status, _ = cli(run_cfgtool, repo, "status", "2")
    assert status["state"] == "rolled_back" and status["why"].endswith(": abort: latency up")
    text = run_cfgtool("rollout", "status", "2", cwd=repo.root).stdout
    assert "\n  next    revert the change (git revert) and publish that" in text  # what to do now
    code, _, err = cli(run_cfgtool, repo, "promote", "2")
    assert code == 1 and "cannot promote: version 2 is rolled back" in err
    code, _, err = cli(run_cfgtool, repo, "abort", "2", "-m", "again")
    assert code == 1 and "version 2 is rolled back" in err
    proc = run_cfgtool("publish", "-m", "the same again", cwd=repo.root)
    assert proc.returncode == 1 and "rolled back" in proc.stderr  # the values of version 2 stay withdrawn


def test_each_command_needs_its_permission(rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run) -> None:
    repo, _ = rolling
    for command in (["promote", "2"], ["pause", "2", "-m", "x"]):
        code, _, err = cli(run_cfgtool, repo, *command, "--principal", "oncall")
        assert code == 1 and "User:oncall may not publish this store" in err
    code, _, err = cli(run_cfgtool, repo, "abort", "2", "-m", "x", "--principal", "releaser")
    assert code == 1 and "User:releaser may not rollback this store" in err
    assert repo.git("tag", "-l", "config/rollout/*", "config/rolledback/*") == ""  # nothing was written
    code, doc, _ = cli(run_cfgtool, repo, "pause", "2", "-m", "x", "--principal", "User:releaser")
    assert code == 0 and doc["by"] == "User:releaser"
    resumed = run_cfgtool("rollout", "resume", "2", "--principal", "releaser", cwd=repo.root)
    assert resumed.stdout.startswith("version 2: resumed at 5% (config/rollout/v2/2) (local only: push the tag")
    code, _, err = cli(run_cfgtool, repo, "resume", "2", "--principal", "oncall")
    assert code == 1 and "may not publish" in err
    code, doc, _ = cli(run_cfgtool, repo, "abort", "2", "-m", "bad", "--principal", "oncall")
    assert code == 0 and doc["rolled_back"] == [2]


def test_a_restore_skips_the_plan_and_has_no_rollout(rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run) -> None:
    repo, _ = rolling
    repo.write({"store/data/b/main.conf": "size = 3\n"})
    repo.commit("bigger b")
    assert run_cfgtool("publish", "-m", "v3", cwd=repo.root).returncode == 0
    _, waiting, _ = cli(run_cfgtool, repo, "status", "3")
    assert waiting["state"] == "waiting" and waiting["why"] == "waits for version 2 to finish"
    code, _, err = cli(run_cfgtool, repo, "promote", "3")
    assert code == 1 and "version 3 waits for the version before it" in err
    proc = run_cfgtool("publish", "--ref", "config/v2", "-m", "restore v2", cwd=repo.root)
    assert proc.returncode == 0, proc.stderr
    code, _, err = cli(run_cfgtool, repo, "status", "4")
    assert code == 1 and "version 4 has no staged rollout: it restores an earlier version" in err


def lose_the_race(remote: Path, tmp_path: Path, seq: int, percent: int) -> None:
    """Make the remote take `config/rollout/v2/SEQ` for another writer (a step to `percent`) at the moment the
    command pushes it: a pre-receive hook creates it in the remote, then refuses the push."""
    message = tmp_path / f"theirs-{seq}.txt"
    meta = {"action": "step", "percent": percent, "by": "controller", "evidence": [], "store": "store"}
    message.write_text(format_message(f"version 2: step to {percent}%", meta), encoding="utf-8")
    hook = remote / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\nunset GIT_QUARANTINE_PATH GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES\n"
        f"if ! git rev-parse -q --verify refs/tags/config/rollout/v2/{seq} >/dev/null; then\n"
        f"  GIT_COMMITTER_NAME=controller GIT_COMMITTER_EMAIL=c@example.com "
        f"git tag -a config/rollout/v2/{seq} 'config/v2^{{commit}}' -F '{message}'\n  exit 1\nfi\n",
        encoding="utf-8",
    )
    hook.chmod(0o755)


def test_a_lost_race_is_retried_only_while_it_means_the_same_step(
    rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run, tmp_path: Path
) -> None:
    repo, watch = rolling
    lose_the_race(watch.bare, tmp_path, 1, 25)
    code, _, err = cli(run_cfgtool, repo, "promote", "2", "--remote", "origin")
    assert code == 1 and "the rollout of version 2 moved while this command ran" in err
    assert meta(repo, "config/rollout/v2/1")["by"] == "controller"
    assert repo.git("tag", "-l", "config/rollout/v2/2") == ""
    lose_the_race(watch.bare, tmp_path, 2, 25)  # a step that changes nothing: a pause still means the same
    code, doc, _ = cli(run_cfgtool, repo, "pause", "2", "-m", "hold it", "--remote", "origin")
    assert code == 0 and (doc["tag"], doc["percent"]) == ("config/rollout/v2/3", 25)


def test_a_server_that_is_not_an_http_url_is_refused_before_any_round(
    rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run
) -> None:
    repo, _ = rolling
    for args in (("run", "--once"), ("status",)):
        for server in ("configs:8750", "http://configs:87500", "http://configs:port"):  # a port is 0 to 65535
            proc = run_cfgtool("rollout", *args, "--server", server, cwd=repo.root)
            assert proc.returncode == 2, proc.stderr
            assert f"--server {server}: not an http(s) URL" in proc.stderr and "http://host:8750" in proc.stderr
            assert "holds" not in proc.stderr and proc.stdout == ""


def test_a_waiting_version_shows_no_step_taken(rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run) -> None:
    repo, _ = rolling
    repo.write({"store/main.conf": "owner = platform\nretention.days = 21\n"})
    repo.commit("longer still")
    assert run_cfgtool("publish", "-m", "v3", cwd=repo.root).returncode == 0
    text = run_cfgtool("rollout", "status", "3", cwd=repo.root).stdout
    assert "version 3 of store small: waiting (stable version: 1)" in text
    listed = run_cfgtool("versions", cwd=repo.root).stdout
    assert "good (rollout: waiting)" in listed and "good (rollout: rolling at 5%)" in listed
    assert "  steps   5% -> 25% -> 100%, since -\n" in text and "  why     waits for version 2 to finish" in text


def test_a_remote_that_is_no_remote_is_refused_before_any_round(
    rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run
) -> None:
    """`run` without `--once` is a daemon: a remote that looks like an option (or names nothing) must stop it at
    once, as for every other command, not make it log a refused fetch every round for ever."""
    repo, _ = rolling
    for remote in ("--upload-pack=touch pwned", "ext::sh -c touch% pwned", "nosuch"):
        proc = run_cfgtool("rollout", "run", "--server", "http://127.0.0.1:9", "--remote", remote, cwd=repo.root)
        assert proc.returncode == 2, proc.stderr
        assert f"--remote {remote!r} is neither a remote of this repository nor a URL" in proc.stderr
        assert not (repo.root / "pwned").exists()


def test_refusals_name_a_second_store_in_the_commands_they_suggest(run_cfgtool: Run, work: GitRepo) -> None:
    """Each command a refusal suggests is one to copy as is: for a store other than `store/`, it carries --store."""
    work.write({"second/_CONFIG_STORE": "name: second\nrollout: {steps: [50, 100]}\n", "second/x/main.conf": "a = 1\n"})
    work.commit("a second store, with a plan")
    assert run_cfgtool("publish", "--store", "second", cwd=work.root).returncode == 0
    work.write({"second/x/main.conf": "a = 2\n"})
    work.commit("a = 2")
    assert run_cfgtool("publish", "--store", "second", cwd=work.root).returncode == 0

    def refused(*args: str) -> str:
        proc = run_cfgtool("rollout", *args, "--store", "second", cwd=work.root)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
        return proc.stderr

    assert "cfgtool rollout pause 2 -m WHY --store second" in refused("resume", "2")
    assert run_cfgtool("rollout", "pause", "2", "-m", "x", "--store", "second", cwd=work.root).returncode == 0
    assert "cfgtool rollout resume 2 --store second" in refused("pause", "2", "-m", "again")
    for _ in ("100%", "done"):
        assert run_cfgtool("rollout", "promote", "2", "--store", "second", cwd=work.root).returncode == 0
    assert "cfgtool rollback 2 -m WHY --store second" in refused("promote", "2")
    assert "--store" not in run_cfgtool("rollout", "resume", "2", cwd=work.root).stderr  # the default store: as before


def test_a_server_that_is_down_is_named_once(rolling: tuple[GitRepo, RemoteWatch], run_cfgtool: Run) -> None:
    repo, _ = rolling
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    proc = run_cfgtool("rollout", "status", "--server", dead, cwd=repo.root)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: cannot reach {dead}: " in proc.stderr and proc.stderr.count(dead) == 1
    ran = run_cfgtool("rollout", "run", "--once", "--server", dead, cwd=repo.root)
    assert "a server cannot be read (cannot reach" in ran.stderr and ran.stderr.count(dead) == 1, ran.stderr
