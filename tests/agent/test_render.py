"""What the agent writes besides plain formats (docs/agent.md): sandboxed Jinja2 templates, and secrets that
stay `[hidden]` without `--identity` and open into files of mode 0600 with it. Real server, real agent runs."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import httpx

from tests.agent.conftest import Answer, Hostile, RunAgent, forward
from tests.conftest import CHECKOUT, GitRepo
from tests.processes import cfgtool_command, child_env
from tests.serve.conftest import SharedSmall, StartServer, publish_change

DEMO_IDENTITY = CHECKOUT / "examples" / "demo-age-identity.txt"
DB = "/data/databases/identity"
TABLE = "/data/databases/identity/emails"
PV = "/data/tracking/PageViewEvent"
# the clear text of the embedded store's sealed password (opened by the demo identity)
TEMPLATE = "user={{ database.credentials.user }} password={{ database.credentials.password }}\n"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_secrets_are_hidden_without_an_identity_and_open_into_private_files_with_it(
    shared_published: SharedSmall, run_agent: RunAgent, tmp_path: Path
) -> None:
    server = shared_published.server("--cache-time", "0")
    template = tmp_path / "db.conf.j2"
    template.write_text(TEMPLATE, encoding="utf-8")
    args = ("--once", "--file", "db.json=" + DB, "--template", f"db.conf={template}:{TABLE}")
    args += ("--file", "pv.json=/data/tracking/PageViewEvent")

    hidden = tmp_path / "hidden"
    done = run_agent(server.url, *args, store="demo", directory=hidden)
    assert done.returncode == 0, done.stderr
    assert json.loads((hidden / "db.json").read_text())["database"]["credentials"]["password"] == "[hidden]"
    assert (hidden / "db.conf").read_text() == "user=snapshotter password=[hidden]\n"
    assert {_mode(hidden / name) for name in ("db.json", "db.conf", "pv.json")} == {0o644}

    opened = tmp_path / "opened"
    done = run_agent(server.url, *args, "--identity", str(DEMO_IDENTITY), store="demo", directory=opened)
    assert done.returncode == 0, done.stderr
    password = json.loads((opened / "db.json").read_text())["database"]["credentials"]["password"]
    assert password != "[hidden]" and not password.startswith("ENC[")
    assert (opened / "db.conf").read_text() == f"user=snapshotter password={password}\n"  # inherited: opens too
    assert _mode(opened / "db.json") == _mode(opened / "db.conf") == 0o600
    assert _mode(opened / "pv.json") == 0o644  # no secret in it
    assert password not in done.stderr + done.stdout


def test_templates_run_sandboxed_and_their_errors_name_the_line(
    shared_small: SharedSmall, run_agent: RunAgent, tmp_path: Path, out: Path
) -> None:
    server = shared_small.server("--cache-time", "0")
    good = tmp_path / "good.j2"
    good.write_text("{% for k, v in retention.items() %}{{ k }}={{ v }}\n{% endfor %}size={{ size }}\n")
    done = run_agent(server.url, "--once", "--template", f"a.txt={good}:/data/a")
    assert done.returncode == 0, done.stderr
    assert (out / "a.txt").read_text() == "days=7\nsize=1\n"

    escape = tmp_path / "escape.j2"
    escape.write_text("ok\n{{ owner.__class__.__mro__[1].__subclasses__() }}\n")
    done = run_agent(server.url, "--once", "--template", f"a.txt={escape}:/data/a")
    assert done.returncode == 1, done.stderr
    assert f"{escape}:2: a.txt cannot be rendered for /data/a: SecurityError" in done.stderr
    assert (out / "a.txt").read_text() == "days=7\nsize=1\n"  # the files before stay

    missing = tmp_path / "missing.j2"
    missing.write_text("{{ nope }}\n")
    done = run_agent(server.url, "--once", "--template", f"a.txt={missing}:/data/a")
    assert done.returncode == 1 and "'nope' is undefined" in done.stderr, done.stderr

    broken = tmp_path / "broken.j2"
    broken.write_text("line one\n{% for x in %}\n")
    done = run_agent(server.url, "--once", "--template", f"a.txt={broken}:/data/a")
    assert done.returncode == 2, done.stderr
    assert f"{broken}:2:1: template syntax error" in done.stderr and "Traceback" not in done.stderr


def test_a_failing_checks_output_is_neither_logged_nor_reported_when_the_files_hold_opened_secrets(
    published: GitRepo, start_server: StartServer, run_agent: RunAgent, tmp_path: Path
) -> None:
    """The agent reports its last check to the server, whose consumers report every principal that may describe
    the store reads (and its log goes wherever logs go): a checker that quotes what it refuses must not carry
    an opened secret there."""
    server = start_server(published.root, "--cache-time", "0")
    quoting = "grep -h password db.json; exit 1"  # a checker that quotes the line it refuses
    args = ("--once", "--file", "db.json=" + DB, "--check", quoting, "--instance", "db-agent")
    done = run_agent(server.url, *args, store="demo", directory=tmp_path / "hidden")
    assert done.returncode == 1 and '"password": "[hidden]"' in done.stderr  # nothing opened: the output is shown
    done = run_agent(server.url, *args, "--identity", str(DEMO_IDENTITY), store="demo", directory=tmp_path / "opened")
    assert done.returncode == 1 and "exit 1" in done.stderr and "password" not in done.stderr
    [agent] = httpx.get(f"{server.url}/v1/demo/consumers", timeout=10).json()["instances"]
    assert agent["last_check"]["ok"] is False and "password" not in agent["last_check"]["message"]


def test_a_hostile_server_cannot_route_another_nodes_secret_into_a_file(
    shared_published: SharedSmall, run_agent: RunAgent, hostile: Hostile, tmp_path: Path
) -> None:
    """A spoofed or compromised server answers PageViewEvent with the database's config, its sealed password
    included, and claims that PageViewEvent imports the database: the agent opens a secret only where the
    key it asked for (or an ancestor, or a node of --secrets-from) was sealed, so nothing is opened or written."""
    server = shared_published.server("--cache-time", "0")
    done = run_agent(server.url, "--once", "--file", f"db.json={DB}", "--identity", str(DEMO_IDENTITY), store="demo")
    assert done.returncode == 0, done.stderr
    password = json.loads((tmp_path / "out" / "db.json").read_text())["database"]["credentials"]["password"]

    def answer(path: str) -> Answer | None:
        if f"/keys{PV}" in path:  # the database's answer, as PageViewEvent's
            return forward(server.url, path.replace(PV, DB))
        if f"/imports{PV}" in path:  # "PageViewEvent imports the database"
            status, headers, body = forward(server.url, path)
            claimed = json.loads(body)
            claimed["imports"] = [DB, *claimed["imports"]]
            return status, headers, json.dumps(claimed).encode()
        return None

    url = hostile(server.url, answer)
    args = ("--once", "--file", f"pv.json={PV}", "--identity", str(DEMO_IDENTITY))
    attacked = tmp_path / "attacked"
    done = run_agent(url, *args, store="demo", directory=attacked)
    assert done.returncode == 1, done.stderr
    assert f"a secret sealed for {DB} database.credentials.password (store demo) was moved to" in done.stderr
    assert not (attacked / "pv.json").exists() and password not in done.stderr
    written = [p.read_bytes() for p in attacked.rglob("*") if p.is_file()] if attacked.exists() else []
    assert not any(password.encode() in data for data in written)

    # named on the agent's own command line, the database's secrets open at that path in PageViewEvent's file
    done = run_agent(url, *args, "--secrets-from", DB, store="demo", directory=tmp_path / "trusted")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "trusted" / "pv.json").read_text())["database"]["credentials"]["password"] == password


def test_an_env_file_never_writes_a_variable_read_as_code(
    small: GitRepo, start_server: StartServer, run_agent: RunAgent, out: Path
) -> None:
    """`ld_preload` in a config would be LD_PRELOAD in an env file that a shell sources before it starts the
    program: the dynamic linker would load whatever the config names. Refused, or written under --env-prefix."""
    publish_change(small, {"store/data/a/main.conf": 'size = 1\nld_preload = "/tmp/evil.so"\n'}, "v2")
    server = start_server(small.root, "--cache-time", "0")
    done = run_agent(server.url, "--once", "--file", "a.env=/data/a", "--file", "a.json=/data/a")
    assert done.returncode == 1, done.stderr
    assert "a.env: /data/a: the path 'ld_preload' becomes the environment variable LD_PRELOAD" in done.stderr
    assert "hint: prefix every name: --env-prefix APP_ (then APP_LD_PRELOAD)" in done.stderr
    assert not (out / "a.env").exists() and not (out / "a.json").exists()

    done = run_agent(server.url, "--once", "--file", "a.env=/data/a", "--env-prefix", "APP_")
    assert done.returncode == 0, done.stderr
    written = (out / "a.env").read_text()
    assert "APP_LD_PRELOAD='/tmp/evil.so'\n" in written and "APP_SIZE='1'\n" in written
    assert "\nLD_PRELOAD" not in written and not written.startswith("LD_")


def test_a_jinja2_with_known_sandbox_escapes_is_refused(tmp_path: Path, out: Path) -> None:
    """Jinja2 before 3.1.6 has sandbox escapes (a template reaching `str.format` through a reference, the `attr`
    filter): the agent refuses to render templates with one, and says to upgrade. The old Jinja2 here is the
    installed one, copied, with the version 3.1.5 it would say."""
    import jinja2

    old = tmp_path / "old"
    shutil.copytree(Path(jinja2.__file__).parent, old / "jinja2")
    init = old / "jinja2" / "__init__.py"
    init.write_text(re.sub(r'__version__ = "[^"]*"', '__version__ = "3.1.5"', init.read_text()))
    template = tmp_path / "a.txt.j2"
    template.write_text("size={{ size }}\n")
    paths = os.pathsep.join(p for p in (str(old), os.environ.get("PYTHONPATH", "")) if p)
    command = [*cfgtool_command(), "agent", "--server", "http://127.0.0.1:9", "--store", "small", "--dir", str(out)]
    command += ["--once", "--template", f"a.txt={template}:/data/a"]
    env = child_env(tmp_path / "cache", {"PYTHONPATH": paths})
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    assert done.returncode == 2, done.stderr
    assert "--template needs Jinja2 3.1.6 or later; 3.1.5 is installed, whose sandbox has known escapes" in done.stderr
    assert "upgrade it: pip install -U 'jinja2>=3.1.6'" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
