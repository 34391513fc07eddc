"""`cfgtool agent` end to end (docs/agent.md): real agents following real servers on loopback, real git, real
files. Every file of one version or of the one before, never a mix; a publish at the key's checkpoint; a
rollback at once; a failing check; reloads; signals; server restarts; `--once` with and without a server."""

from __future__ import annotations

import itertools
import json
import os
import stat
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx
import pytest
import yaml

from cfgtool.serve.timeline import last_checkpoint
from cfgtool.versions import rollback
from tests.agent.conftest import (
    STORE,
    Answer,
    Hostile,
    RunAgent,
    StartAgent,
    files,
    forward,
    free_port,
    read_json,
    version_on_disk,
    wait_for,
)
from tests.conftest import GitRepo
from tests.serve.conftest import StartServer, publish_change

FAST = ("--cache-time", "0", "--fetch-interval", "0.2")


def test_once_writes_every_format_in_the_kubelet_layout(
    small: GitRepo, start_server: StartServer, run_agent: RunAgent, out: Path
) -> None:
    server = start_server(small.root, *FAST)
    done = run_agent(
        server.url,
        "--once",
        *("--file", "a.json=/data/a", "--file", "a.yaml=/data/a", "--file", "a.properties=/data/a"),
        *("--file", "a.conf=/data/a", "--file", "a.env=/data/a", "--file", "b.txt=/data/b:json"),
    )
    assert done.returncode == 0, done.stderr
    assert os.readlink(out / "..data").startswith("..1_")
    for name in ("a.json", "a.yaml", "a.properties", "a.conf", "a.env", "b.txt"):
        assert os.readlink(out / name) == f"..data/{name}"
        assert stat.S_IMODE((out / name).stat().st_mode) == 0o644
    config = {"owner": "platform", "retention": {"days": 7}, "tier": "gold", "size": 1, "tagged": True}
    assert read_json(out / "a.json") == config
    assert yaml.safe_load((out / "a.yaml").read_text()) == config
    assert "retention.days=7\n" in (out / "a.properties").read_text()
    assert "TAGGED='true'\n" in (out / "a.env").read_text()
    sourced = subprocess.run(
        ["/bin/sh", "-c", f"set -a; . {out / 'a.env'}; echo $OWNER $RETENTION_DAYS"], capture_output=True, text=True
    )
    assert sourced.stdout == "platform 7\n"
    assert json.loads((out / "b.txt").read_text())["size"] == 2
    assert "applied version 1" in done.stderr


def test_once_without_a_server_uses_the_cache_else_exits_1(
    small: GitRepo, start_server: StartServer, run_agent: RunAgent, out: Path, tmp_path: Path
) -> None:
    server = start_server(small.root, *FAST)
    url = server.url
    assert run_agent(url, "--once", "--file", "a.json=/data/a", cache=tmp_path / "c1").returncode == 0
    server.stop()
    (out / "..data").unlink()  # a fresh directory, as an init container's emptyDir
    for entry in out.iterdir():
        if entry.is_dir():
            for child in entry.iterdir():
                child.unlink()
            entry.rmdir()
    cached = run_agent(url, "--once", "--file", "a.json=/data/a", cache=tmp_path / "c1")
    assert cached.returncode == 0, cached.stderr
    assert "from the cache" in cached.stderr
    assert version_on_disk(out) == 1
    assert read_json(out / "a.json")["size"] == 1  # type: ignore[index]

    # no server, no cache, but files on disk: they stay, exit 0
    kept = run_agent(url, "--once", "--file", "a.json=/data/a", cache=tmp_path / "c2")
    assert kept.returncode == 0, kept.stderr
    assert "keeps version 1" in kept.stderr

    # no server, no cache, nothing on disk: exit 1, a clear message
    fresh = tmp_path / "fresh"
    env_cache = tmp_path / "c3"
    command = [sys.executable, "-m", "cfgtool", "agent", "--server", url, "--store", STORE, "--dir", str(fresh)]
    env = {**os.environ, "CFGTOOL_CACHE_DIR": str(env_cache)}
    failed = subprocess.run([*command, "--once", "--file", "a.json=/data/a"], capture_output=True, text=True, env=env)
    assert failed.returncode == 1, failed.stderr
    assert "cannot reach" in failed.stderr and "nothing of store 'small' is cached" in failed.stderr
    assert "Traceback" not in failed.stderr
    assert not fresh.exists() or not any(fresh.iterdir())


def test_a_reader_sees_one_version_or_the_one_before_never_a_mix(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, out: Path
) -> None:
    server = start_server(small.root, *FAST)
    publish_change(small, {"store/main.conf": "owner = platform\nretention.days = 7\ngen = 1\n"}, "gen 1")
    agent = start_agent(server.url, "--settle", "0", "--file", "a.json=/data/a", "--file", "b.json=/data/b")
    wait_for(lambda: version_on_disk(out) == 2, 30, "the first version", agent)
    seen: list[tuple[object, object]] = []
    errors: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.wait(0.001):  # a read each millisecond: not a spin that takes a core from the server and agent
            try:
                both = files(out)  # ..data resolved once, both files read inside that directory
            except FileNotFoundError:
                continue  # two swaps happened while it read: the directory it resolved is gone; read again
            try:
                a, b = json.loads(both["a.json"]), json.loads(both["b.json"])
                seen.append((a["gen"], b["gen"]))
                json.loads((out / "a.json").read_text())  # through the link: always a whole file
            except (ValueError, KeyError) as exc:
                errors.append(repr(exc))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for gen in range(2, 7):
            text = f"owner = platform\nretention.days = 7\ngen = {gen}\n"
            version = publish_change(small, {"store/main.conf": text}, f"gen {gen}")
            wait_for(lambda v=version: version_on_disk(out) == v, 30, f"version {version}", agent)  # type: ignore[misc]
        wait_for(lambda: bool(seen) and seen[-1][0] == 6, 10, "the reader reading the last version")
    finally:
        stop.set()
        thread.join()
    assert not errors, errors[:5]
    assert len(seen) > 50
    assert all(a == b for a, b in seen), [pair for pair in seen if pair[0] != pair[1]][:5]
    assert {a for a, _ in seen} >= {1, 6}
    kept = lambda: [d for d in out.iterdir() if d.name.startswith("..") and not d.is_symlink()]  # noqa: E731
    wait_for(lambda: len(kept()) == 2, 10, "removing the directories older than the one before")


def _published(url: str, version: int) -> float:
    with httpx.Client(base_url=url, timeout=30) as http:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            versions = http.get(f"/v1/{STORE}/versions").json()
            found = [v for v in versions if v["version"] == version]
            if found:
                return datetime.fromisoformat(found[0]["date"]).timestamp()
            time.sleep(0.05)
    raise AssertionError(f"the server never saw version {version}")


def _feed_reaches(url: str, seq: int) -> float:
    """Long-poll the change feed until the server counts `seq` events; the time it answered."""
    with httpx.Client(base_url=url, timeout=30) as http:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            answer = http.get(f"/v1/{STORE}/changes", params={"since": seq - 1, "wait": 10}).json()
            if answer["seq"] >= seq:
                return time.time()
    raise AssertionError(f"the server never counted {seq} events")


def test_a_publish_lands_at_the_keys_checkpoint_and_a_rollback_at_once(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, out: Path
) -> None:
    period = 5
    server = start_server(small.root, "--cache-time", str(period), "--fetch-interval", "0.2")
    agent = start_agent(server.url, "--file", "a.json=/data/a")
    wait_for(lambda: version_on_disk(out) == 1, 30, "version 1", agent)
    time.sleep(period)  # version 1's checkpoint has passed for every key
    for size in (2, 3, 4):
        # published a second after a checkpoint (dates are whole seconds), it switches at the next one: the server
        # has about 4 s to see it before then
        time.sleep((last_checkpoint(STORE, "/data/a", time.time(), period) + 1.1 - time.time()) % period)
        version = publish_change(small, {"store/data/a/main.conf": f"size = {size}\n"}, f"size {size}")
        published = _published(server.url, version)
        seen = time.time()  # the server has seen it by now
        last = last_checkpoint(STORE, "/data/a", published, period)
        switch = last if last >= published else last + period
        landed = wait_for(lambda: version_on_disk(out) == version, 30, f"version {version}", agent)  # noqa: B023
        # Never before the checkpoint. The agent learns it from the answer's whole-second `max-age` (rounded up),
        # so it may land up to 1 s after it (docs/agent.md); 1 s more for a loaded machine.
        assert switch - 0.1 <= landed <= max(switch + 1.0, seen) + 1.0, (published, switch, seen, landed)
        assert read_json(out / "a.json")["size"] == size  # type: ignore[index]
        if seen < switch - 0.5:
            break  # the server knew before the checkpoint: the agent landed at it, long before the next one
        time.sleep(2.5)  # a loaded machine's server saw the publish late: again, once --settle has passed
    else:
        raise AssertionError("the server saw each publish only at or after its key's checkpoint")
    assert landed < switch + period - 1.0

    # a rollback: at once, long before the key's next checkpoint. It is made just after a checkpoint (and past
    # --settle), so that waiting for the next checkpoint would take about a whole period after the server knows.
    time.sleep(max(0.0, switch + period + 0.2 - time.time()))
    rollback(small.root, version, reason="bad")
    seen = _feed_reaches(server.url, version + 1)  # the server has seen the rollback marker by now
    back = wait_for(lambda: version_on_disk(out) == version - 1, 30, "the rollback", agent)
    assert back <= seen + 3.0, back - seen
    assert read_json(out / "a.json")["size"] == size - 1  # type: ignore[index]


def test_a_failing_check_keeps_the_old_files_and_the_next_good_version_lands(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, out: Path
) -> None:
    server = start_server(small.root, *FAST)
    check = '! grep -q \'"size": 666\' a.json && test -f "$CFGTOOL_AGENT_DIR/a.json"'
    args = ("--settle", "0", "--file", "a.json=/data/a", "--check", check, "--instance", "web-7")
    agent = start_agent(server.url, *args)
    wait_for(lambda: version_on_disk(out) == 1, 30, "version 1", agent)
    before = files(out)
    bad = publish_change(small, {"store/data/a/main.conf": "size = 666\n"}, "bad")
    wait_for(lambda: f"version {bad} not applied: the check failed" in agent.log(), 30, "the refusal", agent)
    assert version_on_disk(out) == 1 and files(out) == before
    # the server knows: the agent applied version 1, its check refused the bad one
    listing = httpx.get(f"{server.url}/v1/{STORE}/consumers", timeout=30).json()
    reported = next(i for i in listing["instances"] if i["id"] == "web-7")
    assert reported["kind"] == "agent" and reported["version"] == 1 and reported["reported"] is True
    assert reported["last_check"]["version"] == bad and reported["last_check"]["ok"] is False
    assert "the check failed" in reported["last_check"]["message"]
    assert reported["last_check"]["keys"] == ["/data/a"]  # whose readers alone may read the check's output
    assert len([d for d in out.iterdir() if d.name.startswith("..") and not d.is_symlink()]) == 1  # staged removed
    good = publish_change(small, {"store/data/a/main.conf": "size = 3\n"}, "good")
    wait_for(lambda: version_on_disk(out) == good, 30, f"version {good}", agent)
    assert read_json(out / "a.json")["size"] == 3  # type: ignore[index]
    wait_for(lambda: agent.applied() == [1, good], 10, "the log of the swaps", agent)  # logged after the swap


def test_reload_runs_once_per_swap_and_versions_within_settle_are_applied_once(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, out: Path, tmp_path: Path
) -> None:
    settle = 3
    server = start_server(small.root, *FAST)
    reloads = tmp_path / "reloads"
    agent = start_agent(
        server.url,
        *("--settle", str(settle), "--file", "a.json=/data/a"),
        *("--reload", f'echo "$CFGTOOL_AGENT_VERSION ${{CFGTOOL_AGENT_DIR##*/}} $(tr -d " \\n" <a.json)" >>{reloads}'),
    )
    wait_for(lambda: version_on_disk(out) == 1, 30, "version 1", agent)
    latest = 1
    for size in (2, 3, 4):
        latest = publish_change(small, {"store/data/a/main.conf": f"size = {size}\n"}, f"v{size}")
    wait_for(lambda: version_on_disk(out) == latest, 30, f"version {latest}", agent)

    def done() -> bool:  # the agent notes a version applied, then runs its reload: each in its own time
        return agent.applied()[-1:] == [latest] and reloads.read_text().split()[-3:-2] == [str(latest)]

    wait_for(done, 30, f"the agent noting version {latest} applied and its reload", agent)
    lines = [line.split() for line in reloads.read_text().splitlines()]
    applied = agent.applied()
    assert [int(version) for version, _, _ in lines] == applied  # one reload per swap, after it
    assert applied[0] == 1 and applied[-1] == latest
    assert '"size":4' in lines[-1][2]
    # The versions that came within --settle of a swap were applied once, when that time was up (docs/agent.md):
    # each swapped version was written (its directory's name says when) at least --settle after the one before.
    # A count of swaps would depend on how fast the machine publishes; this holds however loaded it is.
    written = [datetime.strptime(name.split("_", 1)[1], "%Y%m%dT%H%M%S.%fZ") for _, name, _ in lines]
    gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(written)]
    assert all(gap >= settle for gap in gaps), gaps


def test_a_signal_reaches_the_process_in_the_pid_file(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, out: Path, tmp_path: Path
) -> None:
    pid_file, got = tmp_path / "app.pid", tmp_path / "got"
    program = (
        "import os, signal, sys, time\n"
        f"def hup(n, f): open({str(got)!r}, 'a').write(open({str(out / 'a.json')!r}).read() + '---\\n')\n"
        "signal.signal(signal.SIGHUP, hup)\n"
        f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(120)\n"
    )
    app = subprocess.Popen([sys.executable, "-c", program])
    try:
        wait_for(pid_file.exists, 30, "the program's pid file")
        server = start_server(small.root, *FAST)
        agent = start_agent(server.url, "--file", "a.json=/data/a", "--signal", "HUP", "--pid-file", str(pid_file))
        wait_for(lambda: got.exists() and got.read_text().count("---") == 1, 30, "the first SIGHUP", agent)
        publish_change(small, {"store/data/a/main.conf": "size = 5\n"}, "v2")
        wait_for(lambda: got.read_text().count("---") == 2, 30, "the second SIGHUP", agent)
        assert '"size": 5' in got.read_text().split("---")[1]  # the program read the new file on the signal
        assert app.poll() is None
    finally:
        app.kill()
        app.wait()


def test_a_webhook_is_posted_after_each_swap(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, out: Path
) -> None:
    import http.server

    posted: list[dict[str, object]] = []

    class Hook(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            posted.append({"path": self.path, **json.loads(body)})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    hook = http.server.HTTPServer(("127.0.0.1", 0), Hook)
    thread = threading.Thread(target=hook.serve_forever, daemon=True)
    thread.start()
    try:
        server = start_server(small.root, *FAST)
        url = f"http://127.0.0.1:{hook.server_address[1]}/-/reload"
        agent = start_agent(server.url, "--settle", "0", "--file", "a.json=/data/a", "--webhook", url)
        wait_for(lambda: len(posted) == 1, 30, "the first webhook", agent)
        version = publish_change(small, {"store/data/a/main.conf": "size = 5\n"}, "v2")
        wait_for(lambda: len(posted) == 2, 30, "the second webhook", agent)
        assert posted == [{"path": "/-/reload", "version": 1}, {"path": "/-/reload", "version": version}]
    finally:
        hook.shutdown()


def test_the_files_stay_while_the_server_is_away_and_catch_up_after(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, out: Path, tmp_path: Path
) -> None:
    port = free_port()
    cache = tmp_path / "serve-cache"
    server = start_server(small.root, *FAST, "--port", str(port), cache=cache)
    agent = start_agent(server.url, "--file", "a.json=/data/a", "--file", "b.json=/data/b")
    wait_for(lambda: version_on_disk(out) == 1, 30, "version 1", agent)
    before, link = files(out), os.readlink(out / "..data")
    server.stop()
    version = publish_change(small, {"store/data/a/main.conf": "size = 9\n"}, "while down")
    # the agent fails, backs off and fails again (however slow the machine: no fixed sleep), the files untouched
    wait_for(lambda: agent.log().count("keeps version 1); retrying in") >= 2, 60, "two retries", agent)
    assert agent.proc.poll() is None
    assert files(out) == before and os.readlink(out / "..data") == link
    again = start_server(small.root, *FAST, "--port", str(port), cache=cache)
    assert again.url == server.url
    wait_for(lambda: version_on_disk(out) == version, 60, "catching up", agent)
    assert read_json(out / "a.json")["size"] == 9  # type: ignore[index]
    time.sleep(1)  # into its long poll of the feed
    asked = time.monotonic()
    assert agent.stop() == 0  # SIGTERM cuts the long poll: the agent ends at once, exit 0
    assert time.monotonic() - asked < 15  # a loaded machine's exit; before, the long poll's whole 30 s


DEEP = b"[" * 200_000 + b"]" * 200_000  # JSON nested past the parser's recursion
JSON = {"Content-Type": "application/json"}


def _attack(upstream: str, kind: str, path: str) -> Answer | None:
    """A hostile server's answer to `path`: `Cfgtool-Version: ²` (which `int()` takes for 2), a change feed whose
    `seq` is no integer, or a list of stores nested 200,000 deep; None for the honest answer."""
    if kind == "version" and "/current/keys/" in path:
        status, headers, body = forward(upstream, path)
        kept = {name: value for name, value in headers.items() if name.lower() != "cfgtool-version"}
        return status, {**kept, "Cfgtool-Version": "\u00b2"}, body
    if kind == "seq" and "/changes?" in path:
        return 200, JSON, b'{"seq": "7.5", "current": 1}'
    if kind == "deep" and (path in ("/v1/stores", f"/v1/{STORE}/versions") or "/changes?" in path):
        return 200, JSON, DEEP
    return None


@pytest.mark.parametrize("kind", ["version", "seq", "deep"])
def test_a_hostile_answer_keeps_the_files_and_the_agent_retries(
    small: GitRepo, start_server: StartServer, start_agent: StartAgent, hostile: Hostile, out: Path, kind: str
) -> None:
    server = start_server(small.root, *FAST)
    attacks: list[str] = []
    url = hostile(server.url, lambda path: _attack(server.url, attacks[0], path) if attacks else None)
    agent = start_agent(url, "--settle", "0", "--file", "a.json=/data/a", "--file", "b.json=/data/b")
    wait_for(lambda: version_on_disk(out) == 1, 30, "version 1", agent)
    attacks.append(kind)
    publish_change(small, {"store/data/a/main.conf": "size = 5\n"}, "v2")  # wakes the long poll under way
    wait_for(lambda: "; retrying in" in agent.log(), 30, "a retry", agent)
    assert agent.proc.poll() is None and "Traceback" not in agent.log()
    assert version_on_disk(out) in (1, 2) and set(files(out)) == {"a.json", "b.json"}  # a whole version
    attacks.clear()
    version = publish_change(small, {"store/data/a/main.conf": "size = 9\n"}, "v3")
    wait_for(lambda: version_on_disk(out) == version, 60, f"version {version} after the attack", agent)
    assert '"size": 9' in files(out)["a.json"]


def test_once_refuses_hostile_answers_with_a_message(
    small: GitRepo, start_server: StartServer, run_agent: RunAgent, hostile: Hostile, out: Path
) -> None:
    server = start_server(small.root, *FAST)

    def answer(path: str) -> Answer | None:
        return _attack(server.url, "version", path) or _attack(server.url, "deep", path)

    done = run_agent(hostile(server.url, answer), "--once", "--file", "a.json=/data/a")
    assert done.returncode == 1, done.stderr
    assert "the Cfgtool-Version header is not a version or sequence number: '\u00b2'" in done.stderr
    assert "nothing of store 'small' is cached" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists() or not any(out.iterdir())


def test_usage_errors_are_clear(run_agent: RunAgent, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    cases = [
        (["--file", "a.txt=/data/a"], "the name's suffix does not say a format"),
        (["--file", "a.json=/data/a:xml"], "unknown format 'xml'"),
        (["--file", "../a.json=/data/a"], "not a plain file name"),
        (["--file", "a.json=data/a"], "expected NAME=KEY[:FORMAT]"),
        (["--file", "a.json=/data/a", "--signal", "HUP"], "--signal and --pid-file go together"),
        (["--file", "a.json=/data/a", "--signal", "NOPE", "--pid-file", "p"], "not a signal"),
        (["--file", "a.json=/data/a", "--reload", "x", "--webhook", "http://127.0.0.1:1/"], "exclude each other"),
        (["--file", "a.json=/data/a", "--file", "a.json=/data/b"], "a.json named more than once"),
        ([], "nothing to write"),
        (["--file", "a.json=/data/a", "--secrets-from", "/data/b"], "has no --identity to open them"),
    ]
    for args, message in cases:
        done = run_agent(url, "--once", *args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_a_key_without_a_node_is_refused_unless_nearest(
    small: GitRepo, start_server: StartServer, run_agent: RunAgent, out: Path, tmp_path: Path
) -> None:
    publish_change(small, {"store/data/orders/main.conf": "size = 5\n"}, "orders")
    server = start_server(small.root, *FAST)
    template = tmp_path / "size.j2"
    template.write_text("size={{ size }}\n")
    for args in (["--file", "o.json=/data/ordrs"], ["--template", f"o.txt={template}:/data/ordrs"]):
        done = run_agent(server.url, "--once", *args)
        assert done.returncode == 1, done.stderr
        assert "/data/ordrs has no node" in done.stderr and "did you mean /data/orders?" in done.stderr
        assert "--nearest" in done.stderr and "Traceback" not in done.stderr
        assert not out.exists() or not any(out.iterdir())  # nothing written: /data's config is not the file
    args = ["--file", "o.json=/data/ordrs", "--template", f"o.txt={template}:/data/orders/eu"]
    done = run_agent(server.url, "--once", "--nearest", *args)
    assert done.returncode == 0, done.stderr
    assert read_json(out / "o.json") == {"owner": "platform", "retention": {"days": 7}, "tier": "gold"}
    assert (out / "o.txt").read_text() == "size=5\n"
