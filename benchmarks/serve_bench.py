"""`cfgtool serve` under load: reads, 304s, 5,000 long polls, a soak for memory growth, and two attacks.

    python -m benchmarks.serve_bench                       # everything; the soak runs 10 minutes
    python -m benchmarks.serve_bench --parts ab --runs 5   # only the read figures
    python -m benchmarks.serve_bench --parts d --soak-seconds 120
    git worktree add /tmp/old 8b5cb28                      # then, side by side with that code:
    python -m benchmarks.serve_bench --parts aef --old /tmp/old

Builds a 10,000-dataset store (benchmarks/gen_store.py), publishes version 1, starts `cfgtool serve` as a
subprocess on a loopback port and measures, printing the load average with every figure:

(a) `GET /v1/bench/current/keys/...` over every dataset key, `wrk -t1 -c64 --latency`: requests/s and p99
    (median of --runs runs of --duration seconds);
(b) the same with each key's `If-None-Match`: every answer a 304;
(c) 5,000 long polls `changes?since=S&wait=55` held open by another process (asyncio, raw sockets), then a
    publish of version 2: when the answers arrive (the spread from the first to the last, and the time from
    the tag's creation), and the server's RSS (VmRSS) while they wait;
(d) a soak at --rate requests/s (default 1,000; a paced asyncio loader in another process, keep-alive
    connections, current and versions/N reads over every key) for --soak-seconds (default 600), sampling the
    server's VmRSS every 10 s and printing its growth after the warm-up (the first fifth, at most 60 s).

(e) four connections each send --header-mb MB of short request headers as fast as the server reads them: the
    server's RSS before, at its peak and after they close;
(f) one connection (wrk -t1 -c1) asks for distinct --long-key-character keys as fast as it can while the
    soak's paced loader (16 connections, 500 requests/s) reads ordinary keys: the loader's p99, and without
    the long keys for comparison.

With `--old DIR` (a checkout of older code) a second server runs that code (PYTHONPATH=DIR) over the same
store, and (a), (e) and (f) measure both, runs alternating. The script first prints the time of a pure-Python
loop (`for i in range(10_000_000): s += i`, median of 3), to compare machines.

Targets: (a) and (b) >= 3,000 requests/s with p99 <= 25 ms (and (a) within 10% of the old code's); (c) every
poll answered within 1 s, RSS <= 300 MB; (d) RSS growth <= 5%; (e) RSS growth <= 50 MB; (f) p99 <= 5 ms.
The load generators share the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.machine import load, print_machine
from benchmarks.server import start_server

HERE = Path(__file__).resolve().parent
SELF = [sys.executable, "-m", "benchmarks.serve_bench"]  # the loaders run this module again (cwd: the root)

STORE = "bench"
FETCH = ("--fetch-interval", "0.5")  # (c) publishes version 2 while the polls wait


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of process `pid` so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# -- the store and the server -------------------------------------------------------------------------------
def build(repo: Path, datasets: int) -> list[str]:
    """Generate, commit and publish the store; its dataset keys."""
    from benchmarks.gen_store import generate, git_commit
    from cfgtool.versions import publish

    stats = generate(datasets, repo)
    git_commit(repo, stats.written, "bench store")
    for name, value in (("user.name", "Bench"), ("user.email", "bench@example.com")):
        subprocess.run(["git", "-C", str(repo), "config", name, value], check=True)
    publish(repo, message="v1")
    return sorted(
        "/" + str(Path(path).parent.relative_to("store"))
        for path, _ in stats.written
        if path.startswith("store/data/") and path.endswith("/main.conf") and path.count("/") == 5
    )


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.headers), response.read()
    except OSError:
        return 0, {}, b""
    finally:
        conn.close()


# -- (a) and (b): wrk ----------------------------------------------------------------------------------------
def lua(paths: list[str], etags: list[str] | None) -> str:
    """A wrk script that cycles over prebuilt requests (built once per thread in `init`)."""
    rows = ",\n".join(f"{{{json.dumps(p)}, {json.dumps(etags[i]) if etags else 'nil'}}}" for i, p in enumerate(paths))
    return f"""
local rows = {{
{rows}
}}
local reqs = {{}}
local i = 0
function init(args)
  for n, row in ipairs(rows) do
    local headers = {{}}
    if row[2] then headers["If-None-Match"] = row[2] end
    reqs[n] = wrk.format("GET", row[1], headers)
  end
end
function request()
  i = i + 1
  if i > #reqs then i = 1 end
  return reqs[i]
end
"""


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()  # type: ignore[union-attr]
    return float(number) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def wrk(port: int, script: Path, duration: int, connections: int = 64) -> tuple[float, float, int, int]:
    """(requests/s, p99 ms, non-2xx/3xx answers, requests) of one wrk run."""
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{duration}s",
            "--latency",
            "-s",
            str(script),
            f"http://127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))  # type: ignore[union-attr]
    p99 = _ms(re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1))  # type: ignore[union-attr]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    return rate, p99, int(bad.group(1)) if bad else 0, total


def wrk_cpu(port: int, pid: int, script: Path, duration: int, connections: int = 64) -> tuple[float, float, int, float]:
    """One wrk run, and the server's CPU microseconds per request during it: what a request costs the
    server, which a loaded machine slows far less than it slows requests per second."""
    before = cpu_seconds(pid)
    rate, p99, bad, total = wrk(port, script, duration, connections)
    return rate, p99, bad, (cpu_seconds(pid) - before) / max(total, 1) * 1e6


def reads(
    servers: dict[str, int],
    pids: dict[str, int],
    keys: list[str],
    runs: int,
    duration: int,
    tmp: Path,
    conditional: bool,
) -> None:
    """(a) or (b) on each server, runs alternating between them."""
    port = next(iter(servers.values()))
    paths = [f"/v1/{STORE}/current/keys{key}" for key in keys]
    etags = None
    if conditional:
        etags = [get(port, p)[1].get("etag", "") for p in paths]
        sample = [get(port, p, {"If-None-Match": e})[0] for p, e in list(zip(paths, etags, strict=True))[::200]]
        assert set(sample) == {304}, f"conditional answers are not all 304: {set(sample)}"
    script = tmp / ("reads-304.lua" if conditional else "reads.lua")
    script.write_text(lua(paths, etags))
    label = "(b) If-None-Match -> 304" if conditional else "(a) current/keys       "
    rates: dict[str, list[float]] = {name: [] for name in servers}
    p99s: dict[str, list[float]] = {name: [] for name in servers}
    cpus: dict[str, list[float]] = {name: [] for name in servers}
    for run in range(runs):
        for name, port in servers.items():
            rate, p99, bad, cpu = wrk_cpu(port, pids[name], script, duration)
            rates[name].append(rate)
            p99s[name].append(p99)
            cpus[name].append(cpu)
            print(f"    {name} run {run + 1}: {rate:8,.0f} req/s  p99 {p99:6.2f} ms  server CPU {cpu:5.1f} us/request"
                  f"  errors {bad}  {load()}", flush=True)  # fmt: skip
    for name in servers:
        print(
            f"{label} [{name}] {len(keys):,} keys, 64 connections: median {statistics.median(rates[name]):,.0f}"
            f" req/s, p99 median {statistics.median(p99s[name]):.2f} ms, server CPU median"
            f" {statistics.median(cpus[name]):.1f} us/request (target >= 3,000 req/s, p99 <= 25 ms)  {load()}",
            flush=True,
        )


# -- (e): oversized headers ---------------------------------------------------------------------------------
def _send_header(port: int, megabytes: int) -> None:
    import socket

    chunk = (b"x-pad: " + b"a" * 57 + b"\r\n") * 1024  # 64 KB of short headers: each one kept is a tuple
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: bench\r\n")
            for _ in range(megabytes * 16):
                sock.sendall(chunk)
        except OSError:  # refused: the server closed the connection
            pass


def headers(servers: dict[str, int], pids: dict[str, int], megabytes: int) -> None:
    for name, port in servers.items():
        pid = pids[name]
        before = rss_mb(pid)
        peaks = [before]
        done = threading.Event()
        sampler = threading.Thread(target=_sample_peak, args=(pid, peaks, done))
        sampler.start()
        t0 = time.perf_counter()
        senders = [threading.Thread(target=_send_header, args=(port, megabytes)) for _ in range(4)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        took = time.perf_counter() - t0
        time.sleep(1)
        done.set()
        sampler.join()
        after = rss_mb(pid)
        print(
            f"(e) [{name}] 4 connections x {megabytes} MB of headers ({took:.1f} s): server RSS {before:.0f} MB"
            f" before, {max(peaks):.0f} MB peak (+{max(peaks) - before:.0f}), {after:.0f} MB after they closed"
            f" (target: growth <= 50 MB)  {load()}",
            flush=True,
        )


# -- (f): long keys beside ordinary readers ----------------------------------------------------------------
def long_keys(
    servers: dict[str, int], pids: dict[str, int], keys: list[str], length: int, runs: int, duration: int, tmp: Path
) -> None:
    import random

    rng = random.Random(16)
    paths = []
    for n in range(2000):  # distinct deep keys of `length` characters, under a real dataset
        base = keys[n % len(keys)]
        tail = "/".join(rng.choice("abcdefgh") for _ in range((length - len(base)) // 2))
        key = (base + "/" + tail)[:length].rstrip("/")
        paths.append(f"/v1/{STORE}/current/keys{key}")
    script = tmp / "long-keys.lua"
    script.write_text(lua(paths, None))
    keys_file = tmp / "keys.txt"
    keys_file.write_text("\n".join(keys))
    for name, port in servers.items():  # what one long-key request holds the server (and its event loop) for
        rate, p99, bad, cpu = wrk_cpu(port, pids[name], script, duration, connections=1)
        print(f"(f) [{name}] {length}-character keys alone, one connection: {rate:,.0f} req/s, p99 {p99:.2f} ms,"
              f" server CPU {cpu:,.0f} us/request, {bad} not 2xx/3xx  {load()}", flush=True)  # fmt: skip
    results: dict[tuple[str, bool], list[float]] = {}
    for run in range(runs):
        for name, port in servers.items():
            for hammer in (False, True):
                loader = subprocess.Popen(
                    [*SELF, "_soak", str(port), str(keys_file), "500", str(duration)],
                    stdout=subprocess.PIPE, text=True, cwd=HERE.parent,
                )  # fmt: skip
                rate = 0.0
                if hammer:
                    rate = wrk(port, script, duration, connections=1)[0]
                out, _ = loader.communicate()
                p99 = json.loads(out.strip().splitlines()[-1])["p99_ms"]
                results.setdefault((name, hammer), []).append(p99)
                what = f"long keys at {rate:,.0f} req/s" if hammer else "no long keys"
                print(f"    {name} run {run + 1}: {what}: readers' p99 {p99:.2f} ms  {load()}", flush=True)
    for (name, hammer), p99s in results.items():
        what = f"one connection of {length}-character keys" if hammer else "alone"
        print(
            f"(f) [{name}] readers at 500 req/s, {what}: p99 median {statistics.median(p99s):.2f} ms"
            f" (target <= 5 ms)  {load()}",
            flush=True,
        )


# -- (c): long polls -----------------------------------------------------------------------------------------
async def _one_poll(port: int, since: int, gate: asyncio.Semaphore, ready: list[int]) -> float | str:
    async with gate:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    ready[0] += 1
    try:
        while True:
            request = f"GET /v1/{STORE}/changes?since={since}&wait=55 HTTP/1.1\r\nHost: bench\r\n\r\n"
            writer.write(request.encode())
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
            body = json.loads(await reader.readexactly(length))
            if body["seq"] > since:
                return time.time()
    except (OSError, asyncio.IncompleteReadError, ValueError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        writer.close()


async def _polls(port: int, since: int, count: int) -> None:
    gate = asyncio.Semaphore(200)
    ready = [0]
    tasks = [asyncio.create_task(_one_poll(port, since, gate, ready)) for _ in range(count)]
    while ready[0] < count and not all(t.done() for t in tasks):
        await asyncio.sleep(0.05)
    print(json.dumps({"connected": ready[0]}), flush=True)
    results = await asyncio.gather(*tasks)
    times = [r for r in results if isinstance(r, float)]
    errors = [r for r in results if isinstance(r, str)]
    print(json.dumps({"times": times, "errors": errors[:5], "error_count": len(errors)}), flush=True)


def _sample_peak(pid: int, peaks: list[float], done: threading.Event) -> None:
    while not done.wait(0.1):
        peaks.append(rss_mb(pid))


def long_polls(port: int, pid: int, repo: Path, count: int) -> None:
    from cfgtool.versions import publish

    since = json.loads(get(port, "/v1/stores")[2])[0]["seq"]
    poller = subprocess.Popen(
        [*SELF, "_polls", str(port), str(since), str(count)], stdout=subprocess.PIPE, text=True, cwd=HERE.parent
    )
    assert poller.stdout is not None
    connected = json.loads(poller.stdout.readline())["connected"]
    waiting, deadline = 0.0, time.monotonic() + 60
    while waiting < connected and time.monotonic() < deadline:  # every poll registered with the feed
        time.sleep(0.2)
        metrics = get(port, "/metrics")[2].decode()
        waiting = sum(float(m) for m in re.findall(r"^cfgtool_long_polls_waiting\{[^}]*\} (\S+)$", metrics, re.M))
    waiting_rss = rss_mb(pid)
    conf = next((repo / "store" / "data").glob("*/*/*/main.conf"))
    conf.write_text(conf.read_text() + "\nbench_marker = 2\n")
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "v2"], check=True)
    publish(repo, message="v2")
    tagged = time.time()
    peaks = [waiting_rss]
    done = threading.Event()
    sampler = threading.Thread(target=_sample_peak, args=(pid, peaks, done))
    sampler.start()
    result = json.loads(poller.stdout.readline())  # read while it runs: its answer is larger than a pipe's buffer
    done.set()
    sampler.join()
    poller.wait()
    peak = max(peaks)
    times = sorted(result["times"])
    if not times:
        print(f"(c) long polls: none answered: {result['errors']}")
        return
    print(
        f"(c) {connected:,} long polls connected ({waiting:,.0f} waiting at the server), {len(times):,} answered,"
        f" {result['error_count']} errors"
        f" {result['errors']}; answers spread over {times[-1] - times[0]:.2f} s (first to last);"
        f" tag created -> first answer {times[0] - tagged:.2f} s, -> last {times[-1] - tagged:.2f} s;"
        f" server RSS {waiting_rss:.0f} MB waiting, {peak:.0f} MB peak (targets: within 1 s, <= 300 MB)  {load()}",
        flush=True,
    )


# -- (d): soak -----------------------------------------------------------------------------------------------
async def _soak_connection(port: int, paths: list[str], start: float, rate: float, slot: int, conns: int,
                           until: float, stats: dict[str, list[float]]) -> None:  # fmt: skip
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    n = slot
    while True:
        due = start + n / rate
        if due >= until:
            break
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        path = paths[n % len(paths)]
        sent = time.monotonic()
        writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))  # type: ignore[union-attr]
        await reader.readexactly(length)
        stats["ok" if head.startswith(b"HTTP/1.1 200") else "bad"].append(time.monotonic() - sent)
        n += conns
    writer.close()


async def _soak(port: int, keys_file: str, rate: float, seconds: float) -> None:
    keys = Path(keys_file).read_text().split()
    version = json.loads((await asyncio.to_thread(get, port, "/v1/stores"))[2])[0]["current"]
    paths = [p for k in keys for p in (f"/v1/{STORE}/current/keys{k}", f"/v1/{STORE}/versions/{version}/keys{k}")]
    conns = 16
    stats: dict[str, list[float]] = {"ok": [], "bad": []}
    start = time.monotonic() + 0.5
    until = start + seconds
    await asyncio.gather(*(_soak_connection(port, paths, start, rate, c, conns, until, stats) for c in range(conns)))
    took = time.monotonic() - start
    lat = sorted(stats["ok"])
    p99 = lat[int(len(lat) * 0.99)] * 1000 if lat else 0.0
    print(json.dumps({"requests": len(lat) + len(stats["bad"]), "bad": len(stats["bad"]), "seconds": took,
                      "p99_ms": p99}), flush=True)  # fmt: skip


def soak(port: int, pid: int, keys: list[str], rate: float, seconds: int, tmp: Path) -> None:
    keys_file = tmp / "keys.txt"
    keys_file.write_text("\n".join(keys))
    loader = subprocess.Popen(
        [*SELF, "_soak", str(port), str(keys_file), str(rate), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=HERE.parent,
    )
    samples: list[tuple[float, float]] = []
    began = time.monotonic()
    while loader.poll() is None:
        samples.append((time.monotonic() - began, rss_mb(pid)))
        print(f"    {samples[-1][0]:5.0f} s  server RSS {samples[-1][1]:6.1f} MB  {load()}", flush=True)
        for _ in range(100):
            if loader.poll() is not None:
                break
            time.sleep(0.1)
    samples.append((time.monotonic() - began, rss_mb(pid)))
    assert loader.stdout is not None
    result = json.loads(loader.stdout.read().strip().splitlines()[-1])
    warm_up = min(60.0, seconds / 5)
    after = [mb for at, mb in samples if at >= warm_up]
    base = after[0] if after else samples[0][1]
    growth = (samples[-1][1] - base) / base * 100
    achieved = result["requests"] / result["seconds"]
    print(
        f"(d) soak {seconds} s at {rate:,.0f} req/s asked, {achieved:,.0f} achieved ({result['requests']:,} requests,"
        f" {result['bad']} not 200, p99 {result['p99_ms']:.1f} ms): server RSS {base:.1f} MB after {warm_up:.0f} s"
        f" warm-up -> {samples[-1][1]:.1f} MB at the end, growth {growth:+.1f}% (target <= 5%)  {load()}",
        flush=True,
    )


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_polls":
        resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
        asyncio.run(_polls(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])))
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "_soak":
        asyncio.run(_soak(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), float(sys.argv[5])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--parts", default="abcdef", help="which measurements: any of a-f (default all)")
    parser.add_argument("--runs", type=int, default=5, help="wrk runs for (a) and (b); the median is printed")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--polls", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=1000.0, help="the soak's requests per second")
    parser.add_argument("--soak-seconds", type=int, default=600)
    parser.add_argument("--header-mb", type=int, default=64, help="(e): MB of header per connection")
    parser.add_argument("--long-key", type=int, default=1024, help="(f): characters of the long keys")
    parser.add_argument("--old", type=Path, help="a checkout of older code to measure side by side")
    args = parser.parse_args()
    print_machine()
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the server inherits it: 5,000 polls need the fds
    with tempfile.TemporaryDirectory(prefix="cfgtool-serve-bench-") as name:
        tmp = Path(name)
        env = {**os.environ, "CFGTOOL_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": str(HERE.parent)}
        os.environ["CFGTOOL_CACHE_DIR"] = env["CFGTOOL_CACHE_DIR"]
        t0 = time.perf_counter()
        keys = build(tmp / "repo", args.datasets)
        print(f"built and published a {len(keys):,}-dataset store in {time.perf_counter() - t0:.0f} s  {load()}")
        t0 = time.perf_counter()
        proc, port = start_server(tmp / "repo", env, *FETCH)
        print(f"server pid {proc.pid} ready in {time.perf_counter() - t0:.1f} s, RSS {rss_mb(proc.pid):.0f} MB")
        procs, servers = {"new": proc}, {"new": port}
        if args.old is not None:
            old_env = {**env, "PYTHONPATH": str(args.old.resolve())}
            procs["old"], servers["old"] = start_server(tmp / "repo", old_env, *FETCH, name="serve-old")
            print(f"old server (PYTHONPATH={args.old}) pid {procs['old'].pid}, RSS {rss_mb(procs['old'].pid):.0f} MB")
        pids = {name: p.pid for name, p in procs.items()}
        try:
            if "a" in args.parts:
                reads(servers, pids, keys, args.runs, args.duration, tmp, conditional=False)
            if "b" in args.parts:
                reads(servers, pids, keys, args.runs, args.duration, tmp, conditional=True)
            if "c" in args.parts:
                long_polls(port, proc.pid, tmp / "repo", args.polls)
            if "d" in args.parts:
                soak(port, proc.pid, keys, args.rate, args.soak_seconds, tmp)
            if "e" in args.parts:
                headers(servers, pids, args.header_mb)
            if "f" in args.parts:
                long_keys(servers, pids, keys, args.long_key, args.runs, args.duration, tmp)
        finally:
            for p in procs.values():
                p.send_signal(signal.SIGTERM)
                p.wait(60)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
