"""Keys without a node under a node whose config uses the `cfgtool.key` intrinsics: each is resolved for its own
name, so a client can make up names without end. The resolving runs in the resolver process, waits bounded
(429 beyond), and a flood of made-up names does not slow the other readers."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import httpx

from tests.conftest import GitRepo
from tests.machine import SLOW
from tests.serve.conftest import StartServer, publish_change

VALUES = 2000  # values that name the key: resolving one made-up name costs milliseconds of pure Python

FLOOD = """
import asyncio, re, sys, time, uuid
port, seconds = int(sys.argv[1]), float(sys.argv[2])
counts = {}
async def run(until):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    while time.monotonic() < until:
        key = f"/v1/small/versions/2/keys/data/b/{uuid.uuid4().hex}"
        writer.write(f"GET {key} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n".encode())
        head = await reader.readuntil(b"\\r\\n\\r\\n")
        await reader.readexactly(int(re.search(rb"content-length: (\\d+)", head).group(1)))
        status = int(head.split()[1])
        counts[status] = counts.get(status, 0) + 1
    writer.close()
async def main():
    until = time.monotonic() + seconds
    await asyncio.gather(*(run(until) for _ in range(8)))
asyncio.run(main())
print(counts)
"""


def _latencies(url: str, reads: int) -> list[float]:
    found = []
    with httpx.Client(base_url=url, timeout=60) as http:
        for _ in range(reads):
            start = time.perf_counter()
            assert http.get("/v1/small/versions/2/keys/data/a").status_code == 200
            found.append(time.perf_counter() - start)
    return found


def test_a_flood_of_made_up_names_does_not_delay_other_readers(small: GitRepo, start_server: StartServer) -> None:
    values = "".join(f'v{i} = ${{cfgtool.name}}"-{i}"\n' for i in range(VALUES))
    publish_change(small, {"store/data/b/main.conf": values}, "intrinsics")
    server = start_server(small.root, "--cache-time", "0")
    with httpx.Client(base_url=server.url, timeout=60) as http:
        answer = http.get("/v1/small/versions/2/keys/data/b/made-up").json()
        assert answer["exists"] is False and answer["config"]["v7"] == "made-up-7"
    alone = statistics.median(_latencies(server.url, 40))
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, str(server.port), "20"], stdout=subprocess.PIPE, text=True)
    try:
        time.sleep(2)  # the flood is on
        during = _latencies(server.url, 40)
    finally:
        counts, _ = flood.communicate(timeout=120)
    assert flood.returncode == 0
    delayed = statistics.median(during)
    assert delayed <= 2 * alone + 0.005 * SLOW, (
        f"reads took {delayed * 1000:.1f} ms (median) during the flood, {alone * 1000:.1f} ms alone; flood: {counts}"
    )
