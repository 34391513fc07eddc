"""Server tokens on real `cfgtool serve` processes (docs/access.md): SHA-256 hashes compared in constant time,
older scrypt files still accepted, no timing difference between an unknown id and a wrong secret, wrong
secrets never slow the answers down, and `cfgtool token list|revoke` (a running server follows the file)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import statistics
import subprocess
import threading
import time
from base64 import b64encode
from pathlib import Path

import httpx
import pytest

from tests.conftest import GitRepo
from tests.serve.conftest import Server, StartServer, cfgtool_command, cli_command, publish_change

ACL = """\
acls:
  - {principal: "User:*", operation: read, key: /data/, pattern: prefixed, permission: allow}
"""
EXPLAIN = "/v1/small/versions/2/explain/data/a?path=size"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cli_command(), "token", *args], capture_output=True, text=True, timeout=60)


def add(tokens: Path, principal: str) -> str:
    proc = cli("add", principal, "--tokens", str(tokens))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def write_scrypt_file(tokens: Path, principal: str) -> str:
    """A tokens file as cfgtool wrote it before SHA-256 tokens (salted scrypt, n=2**14): its one token."""
    ident, secret, salt = secrets.token_hex(8), "", secrets.token_bytes(16)
    while "_" not in secret:  # cfgtool_<id>_<secret>: a secret holding "_" must be read whole
        secret = secrets.token_urlsafe(32)
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    entry = {"id": ident, "principal": principal, "salt": b64encode(salt).decode(), "hash": b64encode(digest).decode(),
             "n": 2**14, "r": 8, "p": 1, "created": "2026-01-01T00:00:00+00:00"}  # fmt: skip
    tokens.write_text(json.dumps({"tokens": [entry]}))
    tokens.chmod(0o600)
    return f"cfgtool_{ident}_{secret}"


def wrong_secret(token: str) -> str:
    return token[:-1] + ("B" if token.endswith("A") else "A")


def unknown_id(token: str) -> str:
    """The token with its secret under a random id (cfgtool_<id>_<secret>: the secret may hold "_" itself)."""
    return f"cfgtool_{secrets.token_hex(8)}_{token.split('_', 2)[2]}"


def timed(client: httpx.Client, url: str, token: str) -> tuple[int, float]:
    start = time.perf_counter()
    status = client.get(url, headers={"authorization": f"Bearer {token}"}).status_code
    return status, time.perf_counter() - start


def served(small: GitRepo, start_server: StartServer, tokens: Path) -> Server:
    publish_change(small, {"store/_ACL.yaml": ACL, "store/data/c/main.conf": "size = 3\n"}, "an ACL")
    return start_server(small.root, "--tokens", str(tokens), "--cache-time", "0", "--fetch-interval", "0.2")


def test_token_add_stores_a_sha256_of_a_256_bit_token(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    first, second = add(tokens, "alice"), add(tokens, "User:alice")
    assert first != second and first.startswith("cfgtool_")
    secret = first.split("_", 2)[2]  # cfgtool_<id>_<secret>: the secret may hold "_" itself
    assert len(secret) == 43  # 32 random bytes, url-safe base64
    text = tokens.read_text()
    assert first not in text and secret not in text
    entries = json.loads(text)["tokens"]
    assert [(e["principal"], e["kind"]) for e in entries] == [("User:alice", "sha256")] * 2
    assert entries[0]["hash"] == b64encode(hashlib.sha256(first.encode()).digest()).decode()
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600


def test_token_list_and_revoke_and_the_running_server_follows(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    alice, bob = add(tokens, "alice"), add(tokens, "bob")
    url = served(small, start_server, tokens).url

    listed = cli("list", "--tokens", str(tokens), "--format", "json")
    assert listed.returncode == 0, listed.stderr
    entries = json.loads(listed.stdout)
    assert [(e["principal"], e["kind"]) for e in entries] == [("User:alice", "sha256"), ("User:bob", "sha256")]
    assert set(entries[0]) == {"id", "principal", "created", "kind"}
    text = cli("list", "--tokens", str(tokens)).stdout
    assert entries[1]["id"] in text and "User:bob" in text and "sha256" in text
    assert alice.split("_", 2)[2] not in listed.stdout + text

    def status(token: str) -> int:
        return httpx.get(f"{url}{EXPLAIN}", headers={"authorization": f"Bearer {token}"}).status_code

    assert status(alice) == status(bob) == 200
    revoked = cli("revoke", entries[1]["id"], "--tokens", str(tokens), "--format", "json")
    assert revoked.returncode == 0, revoked.stderr
    assert json.loads(revoked.stdout)["revoked"]["principal"] == "User:bob"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    deadline = time.monotonic() + 30
    while status(bob) != 401:
        assert time.monotonic() < deadline, "the server still accepts a revoked token"
        time.sleep(0.1)
    assert status(alice) == 200

    again = cli("revoke", entries[1]["id"], "--tokens", str(tokens))
    assert again.returncode == 2 and "no token with id" in again.stderr and "Traceback" not in again.stderr
    missing = cli("list", "--tokens", str(tmp_path / "none.json"))
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_an_older_scrypt_tokens_file_keeps_working(small: GitRepo, start_server: StartServer, tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    old = write_scrypt_file(tokens, "User:carol")
    new = add(tokens, "dave")  # adding keeps the older entry as it is
    url = served(small, start_server, tokens).url
    with httpx.Client(timeout=60) as client:  # a loaded machine: slow, not failed
        for token in (old, old, new):
            assert timed(client, f"{url}{EXPLAIN}", token)[0] == 200
        for token in (wrong_secret(old), unknown_id(old), wrong_secret(new), "garbage"):
            assert timed(client, f"{url}{EXPLAIN}", token)[0] == 401
    kinds = [e["kind"] for e in json.loads(cli("list", "--tokens", str(tokens), "-f", "json").stdout)]
    assert kinds == ["scrypt", "sha256"]


def _cpu(pid: int) -> float:
    """The CPU seconds process `pid` has used, all its threads (ended ones too): /proc/PID/stat's utime + stime."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _check_cpu(server: Server, tokens: dict[str, str], rounds: int) -> dict[str, float]:
    """The server's CPU seconds spent answering each token, `rounds` requests each, alternating.

    A refused token's answer time is its check's work plus however long the scheduler keeps that work waiting: the
    check runs at the lowest CPU priority, so on a busy machine the wait (seconds) drowns the work (tens of
    milliseconds) and sways from one request to the next. The work is what a quiet server's timing shows an
    attacker, and it is measured alike on a busy one."""
    used = dict.fromkeys(tokens, 0.0)
    with httpx.Client(timeout=60) as client:  # a loaded machine: slow, not failed
        for _ in range(rounds):
            for name, token in tokens.items():
                before = _cpu(server.pid)
                assert timed(client, f"{server.url}{EXPLAIN}", token)[0] == 401
                used[name] += _cpu(server.pid) - before
    return used


def test_an_unknown_id_answers_as_slowly_as_a_wrong_secret(
    small: GitRepo, start_server: StartServer, tmp_path: Path
) -> None:
    tokens = tmp_path / "tokens.json"
    old = write_scrypt_file(tokens, "User:carol")  # scrypt: tens of milliseconds for a known id
    server = served(small, start_server, tokens)
    used = _check_cpu(server, {"wrong": wrong_secret(old), "unknown": unknown_id(old)}, 15)
    assert used["unknown"] > 0.6 * used["wrong"] > 0, used  # an unknown id without scrypt: 0.13 s against 1.27

    fresh = tmp_path / "fresh.json"
    new = add(fresh, "dave")
    tokens.write_text(fresh.read_text())  # SHA-256 only: a hash and a comparison each, whatever the id
    time.sleep(1)
    hashed = _check_cpu(server, {"wrong": wrong_secret(new), "unknown": unknown_id(new)}, 15)
    assert max(hashed.values()) < 0.5 * used["wrong"], (hashed, used)  # no stand-in scrypt run for either


@pytest.mark.parametrize("kind", ["sha256", "scrypt"])
def test_wrong_secrets_leave_explain_fast(small: GitRepo, start_server: StartServer, tmp_path: Path, kind: str) -> None:
    tokens = tmp_path / "tokens.json"
    if kind == "scrypt":  # the worst case: every wrong secret may cost an scrypt run
        old = write_scrypt_file(tokens, "User:carol")
        good = add(tokens, "dave")
    else:
        old = good = add(tokens, "dave")
    url = served(small, start_server, tokens).url
    stop = threading.Event()
    statuses: set[int] = set()

    def attack() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                with contextlib.suppress(httpx.TransportError):  # a busy machine: the attacker only retries
                    statuses.add(timed(client, f"{url}{EXPLAIN}", wrong_secret(old))[0])

    def explain(n: int) -> float:
        with httpx.Client(timeout=60) as client:  # a loaded machine: slow, not failed
            took = []
            for _ in range(n):
                status, t = timed(client, f"{url}{EXPLAIN}", good)
                assert status == 200
                took.append(t)
            return statistics.median(took)

    quiet = explain(20)
    attackers = [threading.Thread(target=attack) for _ in range(10)]
    for t in attackers:
        t.start()
    try:
        time.sleep(0.5)
        loaded = explain(20)
    finally:
        stop.set()
        for t in attackers:
            t.join()
    assert statuses <= {401, 429} and 401 in statuses
    assert loaded < 5 * quiet + 0.05, (quiet, loaded)  # before: 10 ms -> seconds (scrypt filled the thread pool)


def test_token_commands_at_once_lose_no_token(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    command = [*cfgtool_command(), "token", "add"]
    procs = [subprocess.Popen([*command, f"user{i}", "--tokens", str(tokens)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for i in range(6)]  # fmt: skip
    assert all(p.wait(120) == 0 for p in procs)
    listed = json.loads(cli("list", "--tokens", str(tokens), "-f", "json").stdout)
    assert sorted(e["principal"] for e in listed) == [f"User:user{i}" for i in range(6)]
