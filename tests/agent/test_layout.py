"""The agent's directory holds only its own layout: a path it writes is its link through `..data` or nothing,
and anything else there (a file of its own, a link planted to elsewhere) is refused, never reported applied while
the path reads something else. Real server, real agent runs."""

from __future__ import annotations

import os
from pathlib import Path

from tests.agent.conftest import RunAgent, read_json
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer

FAST = ("--cache-time", "0", "--fetch-interval", "0.2")


def test_a_planted_link_is_refused_before_and_after_a_version_is_applied(
    small: GitRepo, start_server: StartServer, run_agent: RunAgent, out: Path, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    planted = elsewhere / "file"
    planted.write_text('{"planted": true}\n')
    out.mkdir()
    (out / "a.json").symlink_to(planted)

    done = run_agent(server.url, "--once", "--file", "a.json=/data/a")
    assert done.returncode == 1, done.stderr
    assert f"{out / 'a.json'} is a link to {planted}, not the agent's link through ..data" in done.stderr
    assert "applied" not in done.stderr and "Traceback" not in done.stderr
    assert planted.read_text() == '{"planted": true}\n' and os.readlink(out / "a.json") == str(planted)

    (out / "a.json").unlink()
    done = run_agent(server.url, "--once", "--file", "a.json=/data/a")
    assert done.returncode == 0, done.stderr
    assert read_json(out / "a.json") == read_json(out / "..data" / "a.json")

    # planted after the version was applied: the version is on disk, but the path reads elsewhere
    (out / "a.json").unlink()
    (out / "a.json").symlink_to(planted)
    done = run_agent(server.url, "--once", "--file", "a.json=/data/a")
    assert done.returncode == 1 and "is a link to" in done.stderr, done.stderr
    assert planted.read_text() == '{"planted": true}\n'
