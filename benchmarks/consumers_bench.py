"""Consumers (docs/serving.md "Consumers"): what 1,000 agents' long polls cost the server, and how fast
`GET /v1/{store}/consumers` answers with 2,000 known instances.

    python -m benchmarks.consumers_bench                      # 5 runs of each
    python -m benchmarks.consumers_bench --parts b            # only the listing
    git worktree add /tmp/old-consumers 151efdc               # the code before consumers, then side by side:
    python -m benchmarks.consumers_bench --old /tmp/old-consumers

Builds a --datasets store (benchmarks/gen_store.py), publishes version 1, starts `cfgtool serve` on a loopback
port and measures, printing the load average with every figure:

(a) --agents simulated agents (asyncio, raw sockets, one connection each): each reads a key's `current` answer
    with its own `Cfgtool-Instance` and `User-Agent: cfgtool/<v> (agent)`, reports the version it applied
    (`POST /v1/{store}/consumers/{id}`), then holds a long poll `changes?since=S&wait=55`. The server's VmRSS
    once all of them wait (and before they came), median of --runs rounds; each round's polls are then released
    by a publish. The clients come from 127.0.0.2, 127.0.0.3, ... (100 each: the server lets 100 long polls
    wait per client address without tokens).
(b) (measured first) --instances instances each make one read, then `GET /v1/{store}/consumers` is timed from
    the client (connect, answer, body), median and worst of --runs x 10 requests; and the server's CPU time per
    listing (/proc, over those requests), which the load generator's own time does not blur.

With `--old DIR` a second server runs that code (PYTHONPATH=DIR) and (a) measures both, alternating (the old
server answers the reports 404 or 405; its polls and reads are the same). The script first prints the time of a
pure-Python loop (`for i in range(10_000_000): s += i`, median of 3), to compare machines.

Targets: (a) the server at most 150 MB while 1,000 agents wait; (b) at most 20 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.machine import load, python_loop
from benchmarks.serve_bench import FETCH, build, cpu_seconds, get, rss_mb
from benchmarks.server import start_server

HERE = Path(__file__).resolve().parent

STORE = "bench"
PER_ADDRESS = 100  # long polls the server lets wait per client address without tokens


def _request(method: str, path: str, ident: str, body: bytes = b"") -> bytes:
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nCfgtool-Instance: {ident}\r\n"
        f"User-Agent: cfgtool/0 (agent)\r\nContent-Length: {len(body)}\r\n"
    )
    if body:
        head += "Content-Type: application/json\r\n"
    return head.encode() + b"\r\n" + body


async def _answer(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    status = int((await reader.readline()).split()[1])
    length = 0
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        if name.lower() == b"content-length":
            length = int(value)
    return status, await reader.readexactly(length)


async def _agent(port: int, n: int, key: str, since: int, waiting: list[int]) -> int:
    """One agent: read, report, then hold a long poll until it is answered; the poll's status."""
    address = f"127.0.0.{2 + n // PER_ADDRESS}"
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(address, 0))
    ident = f"agent-{n}"
    try:
        writer.write(_request("GET", f"/v1/{STORE}/current/keys{key}", ident))
        await _answer(reader)
        report = json.dumps({"applied": 1, "last_check": {"version": 1, "ok": True}}).encode()
        writer.write(_request("POST", f"/v1/{STORE}/consumers/{ident}", ident, report))
        await _answer(reader)
        writer.write(_request("GET", f"/v1/{STORE}/changes?since={since}&wait=55", ident))
        waiting.append(n)
        status, _ = await _answer(reader)
        return status
    finally:
        writer.close()


async def _agents(port: int, count: int, keys: list[str], since: int, pid: int, rss: list[float]) -> list[int]:
    waiting: list[int] = []
    tasks = [asyncio.create_task(_agent(port, n, keys[n % len(keys)], since, waiting)) for n in range(count)]
    while len(waiting) < count and not all(t.done() for t in tasks):
        await asyncio.sleep(0.2)
    await asyncio.sleep(2.0)  # the last polls reach the server's wait
    rss.append(rss_mb(pid))
    return await asyncio.gather(*tasks)


def _publish(repo: Path, n: int) -> None:
    from cfgtool.versions import publish

    target = repo / "store" / "main.conf"
    target.write_text(target.read_text() + f"\nbench.round = {n}\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", f"round {n}"], check=True)
    publish(repo, message=f"round {n}")


def long_polls(servers: dict[str, tuple[int, int]], repo: Path, keys: list[str], count: int, runs: int) -> None:
    before = {name: rss_mb(pid) for name, (_, pid) in servers.items()}
    waiting: dict[str, list[float]] = {name: [] for name in servers}
    rounds = 0
    for run in range(runs):
        for name, (port, pid) in servers.items():
            seq = json.loads(get(port, "/v1/stores")[2])[0]["seq"]
            rss: list[float] = []
            result: list[list[int]] = []

            def poll(
                port: int = port, pid: int = pid, seq: int = seq, rss: list[float] = rss, out: list[list[int]] = result
            ) -> None:
                out.append(asyncio.run(_agents(port, count, keys, seq, pid, rss)))

            thread = threading.Thread(target=poll)
            thread.start()
            while not rss and thread.is_alive():
                time.sleep(0.2)
            rounds += 1
            _publish(repo, rounds)  # releases every waiting poll
            thread.join(120)
            statuses = result[0] if result else []
            waiting[name].append(rss[0] if rss else float("nan"))
            bad = sum(1 for s in statuses if s != 200)
            print(f"  {name} run {run + 1}: {rss[0]:.1f} MB while {count} agents wait ({bad} polls not 200; {load()})")
    for name in servers:
        figure = statistics.median(waiting[name])
        print(f"(a) {name}: {figure:.1f} MB median while {count} agents wait (before: {before[name]:.1f} MB); "
              f"target <= 150 MB; {load()}")  # fmt: skip


async def _read(port: int, ident: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_request("GET", f"/v1/{STORE}/versions", ident))
    await _answer(reader)
    writer.close()


async def _instances(port: int, count: int) -> None:
    gate = asyncio.Semaphore(64)

    async def one(n: int) -> None:
        async with gate:
            await _read(port, f"svc-{n:05d}.example.internal:{n}")

    await asyncio.gather(*(one(n) for n in range(count)))


def listing(port: int, pid: int, count: int, runs: int) -> None:
    asyncio.run(_instances(port, count))
    get(port, f"/v1/{STORE}/consumers")  # the first listing builds every instance's JSON once
    times = []
    cpu = cpu_seconds(pid)
    for _ in range(runs * 10):
        t0 = time.perf_counter()
        status, _, body = get(port, f"/v1/{STORE}/consumers")
        times.append((time.perf_counter() - t0) * 1000)
        assert status == 200, body[:200]
    server_ms = (cpu_seconds(pid) - cpu) * 1000 / len(times)
    known = len(json.loads(body)["instances"])
    print(f"(b) consumers with {known} instances: median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms "
          f"({len(times)} requests, {len(body):,} bytes), server CPU {server_ms:.1f} ms per listing; "
          f"target <= 20 ms; {load()}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--parts", default="ab", help="which measurements: a (long polls), b (the listing)")
    parser.add_argument("--old", type=Path, help="a checkout of older code, measured side by side in (a)")
    args = parser.parse_args()
    print(f"python loop (10M additions, median of 3): {python_loop():.2f} s; {load()}")
    with tempfile.TemporaryDirectory(prefix="consumers-bench-") as tmp:
        repo = Path(tmp) / "repo"
        keys = build(repo, args.datasets)
        env = {**os.environ, "CFGTOOL_CACHE_DIR": str(Path(tmp) / "cache")}
        procs = {}
        new, port = start_server(repo, env, *FETCH)
        procs["new"] = (port, new.pid)
        if args.old is not None:
            old_env = {**env, "PYTHONPATH": str(args.old.resolve()), "CFGTOOL_CACHE_DIR": str(Path(tmp) / "old")}
            old, old_port = start_server(repo, old_env, *FETCH, name="serve-old")
            procs["old"] = (old_port, old.pid)
        try:
            if "b" in args.parts:  # first: the agents of (a) would be known instances too
                listing(*procs["new"], args.instances, args.runs)
            if "a" in args.parts:
                long_polls(procs, repo, keys, args.agents, args.runs)
        finally:
            for proc in [new, *([old] if args.old is not None else [])]:
                proc.terminate()
                proc.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
