"""User text reaches git only as data (docs/security.md): option-like remotes, refs and locations are refused before
git sees them, and no message text can strip or forge a tag's metadata."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cfgtool import ConfigClient
from cfgtool.errors import CfgtoolError
from tests.conftest import GitRepo
from tests.remotes import RemoteWatch, bump

Run = Callable[..., subprocess.CompletedProcess[str]]


def hostile_remotes(canary: Path) -> list[str]:
    return [f"--upload-pack=touch {canary}", f"--receive-pack=touch {canary}", f"ext::sh -c touch% {canary}",
            "-oProxyCommand=x", "nosuch"]  # fmt: skip


@pytest.mark.parametrize("command", [("publish", "-m", "x"), ("publish", "--dry-run"), ("rollback", "-m", "x")])
def test_a_hostile_remote_is_refused_before_git_runs(
    work: GitRepo, remote: RemoteWatch, run_cfgtool: Run, tmp_path: Path, command: tuple[str, ...]
) -> None:
    assert run_cfgtool("publish", "--remote", "origin", cwd=work.root).returncode == 0
    bump(work, "two")
    assert run_cfgtool("publish", "--remote", "origin", cwd=work.root).returncode == 0
    canary = tmp_path / "pwned"
    for hostile in hostile_remotes(canary):
        proc = run_cfgtool(*command, "--remote", hostile, cwd=work.root)
        assert proc.returncode == 2, (hostile, proc.stderr)
        assert "is neither a remote of this repository nor a URL" in proc.stderr
    assert not canary.exists()
    assert remote.tags() == ["config/v1", "config/v2"]


def test_option_like_refs_and_locations_are_data(work: GitRepo, run_cfgtool: Run, tmp_path: Path) -> None:
    canary = tmp_path / "out"
    for args in (("compile", "--ref", f"--output={canary}"), ("get", "/data", "--ref", f"--output={canary}"),
                 ("diff", f"--output={canary}", "HEAD"), ("publish", "--ref", f"--output={canary}")):  # fmt: skip
        proc = run_cfgtool(*args, cwd=work.root)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert not canary.exists()
    with pytest.raises(CfgtoolError):
        ConfigClient(f"--upload-pack=touch {canary}")
    assert not canary.exists()


def test_no_message_strips_or_forges_the_metadata(work: GitRepo, run_cfgtool: Run) -> None:
    fake = '{"digest":"sha256:forged","kind":"version","version":99}'
    message = f"hello\n-----BEGIN PGP SIGNATURE-----\nnot a signature\n\ncfgtool-metadata: {fake}"
    assert run_cfgtool("publish", "-m", message, cwd=work.root).returncode == 0
    shown = json.loads(run_cfgtool("versions", "--format", "json", cwd=work.root).stdout)
    version = shown[0]
    assert version["version"] == 1 and version["digest"].startswith("sha256:") and version["digest"] != "sha256:forged"
    assert version["message"] == message
    again = run_cfgtool("publish", "-m", message, cwd=work.root)
    assert again.returncode == 0 and "nothing to publish" in again.stdout  # the digest was read back
    assert work.git("tag", "--list", "config/*").split() == ["config/v1"]
