"""What clients trying wrong tokens cost everyone else, and whether an unknown token id answers faster than a
known one (docs/serving.md, "Tokens").

    python -m benchmarks.token_bench                          # this tree only
    python -m benchmarks.token_bench --old /tmp/old-8b5cb28   # side by side with another checkout of cfgtool

For each tree and tokens file (`token add`: the tokens the tree's `cfgtool token add` makes, SHA-256 in this
tree and scrypt in older ones; `scrypt file`: a file of older scrypt hashes, in this tree) it starts
`cfgtool serve --tokens FILE` on a loopback port over a small store and prints, with the load average:

- quiet: the latency of `GET .../explain/data/a?path=size` with a valid token (the mean of --requests requests
  one after the other, so a stall counts; the median of --runs such runs before the attack and --runs after);
- under attack: the same while another process runs 10 clients (threads, kept-alive connections) sending
  wrong secrets of a known id as fast as the server answers, for --attack seconds (runs of --requests explain
  requests for as long as the attack lasts: the median of their means, and the worst run), and how many wrong
  secrets they sent;
- the oracle: the median 401 time of an unknown id against that of a known id with a wrong secret (quiet).

Target: under attack, explain stays within 2x its quiet latency; the two 401 times do not differ.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from base64 import b64encode
from pathlib import Path

from benchmarks.machine import load, print_machine
from benchmarks.server import start_server

HERE = Path(__file__).resolve().parent
EXPLAIN = "/v1/small/versions/1/explain/data/a?path=size"
FILES = {
    "store/_CONFIG_STORE": "name: small\n",
    "store/_ACL.yaml": 'acls:\n  - {principal: "User:*", operation: read, key: /data/, pattern: prefixed,'
    " permission: allow}\n",
    "store/main.conf": "owner = platform\nretention.days = 7\n",
    "store/data/main.conf": "tier = gold\n",
    "store/data/a/main.conf": "size = 1\n",
    "store/data/b/main.conf": "size = 2\n",
}
ATTACKER = """
import http.client, sys, threading, time
port, token, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
sent = [0] * 10
def attack(i):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            conn.request("GET", sys.argv[4], headers={"Authorization": "Bearer " + token})
            conn.getresponse().read()
            sent[i] += 1
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
threads = [threading.Thread(target=attack, args=(i,)) for i in range(10)]
for t in threads: t.start()
for t in threads: t.join()
print(sum(sent))
"""


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def build(repo: Path, tree: Path) -> None:
    """The store, committed and published as version 1 by `tree`'s cfgtool."""
    for name, text in FILES.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "init", "-q", "-b", "main")
    for name, value in (("user.name", "Bench"), ("user.email", "bench@example.com")):
        git(repo, "config", name, value)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "bench store")
    subprocess.run([*cfgtool(), "publish", "-m", "v1"], cwd=repo, env=env(tree), check=True, capture_output=True)


def env(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def cfgtool() -> list[str]:
    return [sys.executable, "-m", "cfgtool"]  # the tree's, through PYTHONPATH


def add_token(tree: Path, tokens: Path, principal: str) -> str:
    proc = subprocess.run([*cfgtool(), "token", "add", principal, "--tokens", str(tokens)], env=env(tree),
                          check=True, capture_output=True, text=True)  # fmt: skip
    return proc.stdout.strip()


def scrypt_file(tokens: Path, principal: str) -> str:
    """A tokens file as older cfgtool versions wrote it (salted scrypt, n=2**14): its token."""
    ident, secret, salt = secrets.token_hex(8), secrets.token_urlsafe(32), secrets.token_bytes(16)
    digest = hashlib.scrypt(secret.encode(), salt=salt, n=2**14, r=8, p=1, dklen=32)
    entry = {"id": ident, "principal": principal, "salt": b64encode(salt).decode(),
             "hash": b64encode(digest).decode(), "n": 2**14, "r": 8, "p": 1, "created": None}  # fmt: skip
    tokens.write_text(json.dumps({"tokens": [entry]}))
    return f"cfgtool_{ident}_{secret}"


def timed(port: int, token: str, count: int) -> tuple[float, set[int]]:
    """The mean time of `count` explain requests with `token` on one kept-alive connection (a stall counts, as
    it does for the application waiting), and the statuses."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    took, statuses = [], set()
    for _ in range(count):
        start = time.perf_counter()
        conn.request("GET", EXPLAIN, headers={"Authorization": f"Bearer {token}"})
        response = conn.getresponse()
        response.read()
        took.append(time.perf_counter() - start)
        statuses.add(response.status)
    conn.close()
    return statistics.fmean(took), statuses


def measure(label: str, tree: Path, tmp: Path, kind: str, args: argparse.Namespace) -> None:
    tokens = tmp / f"tokens-{label}-{kind.replace(' ', '-')}.json"
    good = scrypt_file(tokens, "User:carol") if kind == "scrypt file" else add_token(tree, tokens, "carol")
    environ = {**env(tree), "CFGTOOL_CACHE_DIR": str(tmp / f"cache-{tokens.stem}")}
    proc, port = start_server(tmp / "repo", environ, "--tokens", str(tokens), name=f"serve-{tokens.stem}")
    try:
        wrong = good[:-1] + ("B" if good.endswith("A") else "A")
        unknown = f"cfgtool_{secrets.token_hex(8)}_{good.split('_', 2)[2]}"
        timed(port, good, 5)  # warm: the token checked once, the explain answer built
        time.sleep(3)  # the server settles after its start
        before = [timed(port, good, args.requests)[0] for _ in range(args.runs)]
        wrong_401 = statistics.median(timed(port, wrong, 5)[0] for _ in range(args.runs))
        unknown_401 = statistics.median(timed(port, unknown, 5)[0] for _ in range(args.runs))
        attacker = subprocess.Popen([sys.executable, "-c", ATTACKER, str(port), wrong, str(args.attack), EXPLAIN],
                                    stdout=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(1)  # every attacker busy
        under: list[float] = []
        while attacker.poll() is None:  # runs through the whole attack
            under.append(timed(port, good, args.requests)[0])
        sent = int((attacker.communicate()[0] or "0").strip() or 0)
        time.sleep(1)
        quiet = statistics.median(before + [timed(port, good, args.requests)[0] for _ in range(args.runs)])
        attacked = statistics.median(under) if under else float("nan")
        worst = max(under, default=float("nan"))
        print(f"{label} tree, {kind}: explain quiet {quiet * 1000:8.2f} ms, under attack {attacked * 1000:8.2f} ms"
              f" ({attacked / quiet:5.1f}x, {len(under)} runs, worst {worst * 1000:.2f} ms,"
              f" {sent / args.attack:5.0f} wrong tokens/s);"
              f" 401 known id {wrong_401 * 1000:7.2f} ms, unknown id {unknown_401 * 1000:7.2f} ms;"
              f" {load()}")  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, help="another checkout of cfgtool to compare with (e.g. 8b5cb28)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20, help="explain requests per run")
    parser.add_argument("--attack", type=float, default=10.0, help="seconds of wrong secrets")
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory(prefix="token-bench-") as name:
        tmp = Path(name)
        (tmp / "repo").mkdir()
        build(tmp / "repo", HERE.parent)
        trees = (("new", HERE.parent, ("token add", "scrypt file")), ("old", args.old, ("token add",)))
        for label, tree, kinds in trees:
            if tree is not None:
                for kind in kinds:
                    measure(label, tree.resolve(), tmp, kind, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
