"""How much memory does `cfgtool agent` take while it follows a 10,000-dataset store, and how fast do versions land?

    python -m benchmarks.agent_bench [--datasets 10000] [--files 5] [--versions 5]

Generates a store (benchmarks/gen_store.py), publishes it, serves it (`cfgtool serve --cache-time 0`), starts one
`cfgtool agent` writing `--files` datasets' configs (json, yaml, properties, hocon, env in turn), then publishes
`--versions` changes of those datasets one after another. After each swap it prints the agent's resident memory
(VmRSS) and its peak (VmHWM) from /proc, and the time from the tag's date to the files on disk. docs/agent.md
promises at most 50 MB. The first line is the machine's speed now (a pure-Python loop, median of 3), as in the
other benchmarks; the load average is printed with it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.gen_store import generate, git_commit
from benchmarks.machine import python_loop
from cfgtool.versions import publish

FORMATS = ("json", "yaml", "properties", "hocon", "env")


def cfgtool() -> list[str]:
    script = Path(sysconfig.get_path("scripts")) / "cfgtool"
    return [str(script)] if script.exists() else [sys.executable, "-m", "cfgtool"]


def memory(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of process `pid` in MB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


def wait_for(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise SystemExit(f"{what} did not happen within {timeout} s")


def healthy(port: str) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
            return bool(answer.status == 200)
    except OSError:
        return False


def on_disk(directory: Path) -> int | None:
    try:
        return int(os.readlink(directory / "..data")[2:].split("_")[0])
    except OSError:
        return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--files", type=int, default=5)
    parser.add_argument("--versions", type=int, default=5)
    args = parser.parse_args()
    print(f"10M-addition loop: {python_loop():.3f} s (median of 3); load average {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="cfgtool-agent-bench-") as name:
        tmp = Path(name)
        repo = tmp / "repo"
        stats = generate(args.datasets, repo, 0)
        git_commit(repo, stats.written, "generated")
        os.environ["CFGTOOL_CACHE_DIR"] = str(tmp / "cache")  # publish here and the server share the snapshots
        env = dict(os.environ)
        start = time.perf_counter()
        publish(repo, message="v1")
        print(f"published version 1 of {args.datasets} datasets in {time.perf_counter() - start:.1f} s", flush=True)
        confs = sorted((repo / "store" / "data").rglob("main.conf"), key=lambda p: (-len(p.parts), str(p)))
        keys = ["/" + str(p.parent.relative_to(repo / "store")) for p in confs[: args.files]]
        log = open(tmp / "serve.log", "wb")  # noqa: SIM115 (kept open for the server's lifetime)
        command = [*cfgtool(), "serve", "--repo", str(repo), "--port", "0", "--cache-time", "0"]
        server = subprocess.Popen([*command, "--fetch-interval", "0.5"], stdout=log, stderr=log, env=env)
        agent = None
        try:
            wait_for(lambda: b"serving" in (tmp / "serve.log").read_bytes(), 300, "the server's start")
            text = (tmp / "serve.log").read_text()
            port = text.split("http://127.0.0.1:")[1].split()[0].rstrip("/")
            wait_for(lambda: healthy(port), 1800, "the server's readiness")  # it compiles the store once
            out = tmp / "out"
            files = [f"--file=f{i}.{FORMATS[i % 5]}=" + f"{key}:{FORMATS[i % 5]}" for i, key in enumerate(keys)]
            agent_log = open(tmp / "agent.log", "wb")  # noqa: SIM115
            where = ("--server", f"http://127.0.0.1:{port}", "--store", "bench", "--dir", str(out))
            agent = subprocess.Popen(
                [*cfgtool(), "agent", *where, "--settle", "0", *files],
                stdout=agent_log,
                stderr=agent_log,
                env=env,
            )
            wait_for(lambda: on_disk(out) == 1, 300, "version 1 on disk")
            rss, peak = memory(agent.pid)
            print(f"version 1 on disk: agent VmRSS {rss:.1f} MB, VmHWM {peak:.1f} MB ({len(keys)} files)", flush=True)
            peaks = [peak]
            for version in range(2, args.versions + 2):
                for i, conf in enumerate(confs[: args.files]):
                    conf.write_text(conf.read_text() + f"\nbench_round_{version}_{i} = {version}\n")
                subprocess.run(
                    [
                        "git",
                        "-C",
                        str(repo),
                        "-c",
                        "user.name=bench",
                        "-c",
                        "user.email=bench@example.com",
                        "commit",
                        "-qam",
                        f"v{version}",
                    ],
                    check=True,
                )
                start = time.perf_counter()
                published = publish(repo, message=f"v{version}")
                tagged = time.time()
                wait_for(lambda v=published.version: on_disk(out) == v, 300, f"version {published.version}")
                landed = time.time() - tagged
                rss, peak = memory(agent.pid)
                peaks.append(peak)
                print(
                    f"version {published.version}: publish {time.perf_counter() - start - landed:.1f} s, on disk"
                    f" {landed:.2f} s after the tag, agent VmRSS {rss:.1f} MB, VmHWM {peak:.1f} MB",
                    flush=True,
                )
            print(f"agent peak resident memory: {max(peaks):.1f} MB (limit 50 MB); load {os.getloadavg()}")
            return 0 if max(peaks) <= 50 else 1
        finally:
            for proc in (agent, server):
                if proc is not None:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(60)


if __name__ == "__main__":
    raise SystemExit(main())
