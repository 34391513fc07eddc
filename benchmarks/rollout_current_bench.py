"""`current` reads during a staged rollout (docs/serving.md "Staged rollouts"): what each instance's own timeline
costs a read, beside the same read with no rollout.

    python -m benchmarks.rollout_current_bench [--keys 200] [--instances 1000] [--reads 20000] [--runs 7]

Builds two repositories of the same store (--keys keys) with versions 1 and 2, ten minutes apart. In one, version 2
went out at once; in the other, it is rolling out (published under a plan, a step to 25% five minutes ago), so
a quarter of the instances read it and the rest version 1. For each, a `Service` loads the versions in this
process and the server's application (`Api`, the same object uvicorn runs) is called directly: `GET
/v1/bench/current/keys/...` with `Cfgtool-Instance` cycling over --instances ids, with T = 60 (Keystone on). Each
run times --reads reads per repository, the two alternating; it prints the median and range of --runs runs of the
microseconds per read, and the rollout's extra cost. The same for --instances ids seen for the first time (during
the rollout their class costs one sha256; both servers also add each to their consumers), and for readers without
an id. The first line is the pure-Python loop time and the load average.

Target: during a rollout a `current` read costs at most 10% more than with no rollout.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, MutableMapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.machine import load, print_machine
from cfgtool.serve.app import Api
from cfgtool.serve.options import Options
from cfgtool.serve.routes import starlette_app
from cfgtool.serve.service import Service
from cfgtool.store.git import git_env
from cfgtool.versions.messages import format_message

PLAN = {"steps": [5, 25, 100], "step_time": 600, "bake": 600, "min_reports": 1, "gates": []}
Message = MutableMapping[str, Any]


def _git(root: Path, date: float | None, *args: str) -> None:
    env = dict(git_env())
    if date is not None:
        stamp = datetime.fromtimestamp(date, UTC).isoformat(timespec="seconds")
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    subprocess.run(("git", *args), cwd=root, env=env, check=True, capture_output=True)


def build(root: Path, keys: int, rolling: bool) -> None:
    """The store with version 1 published 15 minutes ago, and version 2 ten minutes ago: rolling out at 25%, or
    out at once. The tags are written as publish and the controller write them."""
    now = time.time()
    store = root / "store"
    for i in range(keys):
        (store / "data" / f"k{i}").mkdir(parents=True)
        (store / "data" / f"k{i}" / "main.conf").write_text(f"size = {i}\nowner = team{i % 7}\n")
    (store / "_CONFIG_STORE").write_text("name: bench\n")
    _git(root, None, "init", "-q", "-b", "main")
    _git(root, now - 900, "add", "-A")
    _git(root, now - 900, "commit", "-q", "-m", "v1")
    _git(root, now - 900, "tag", "-a", "config/v1", "-m", format_message("v1", {"kind": "version", "version": 1}))
    (store / "data" / "k0" / "main.conf").write_text("size = 1000\n")
    _git(root, now - 600, "commit", "-q", "-am", "v2")
    meta: dict[str, object] = {"kind": "version", "version": 2}
    if rolling:
        meta["rollout"] = {"plan": PLAN, "salt": "0123456789abcdef"}
    _git(root, now - 600, "tag", "-a", "config/v2", "-m", format_message("v2", meta))
    if rolling:
        step = {"action": "step", "percent": 25, "by": "bench", "evidence": [], "reason": None}
        _git(root, now - 300, "tag", "-a", "config/rollout/v2/1", "config/v2^{}", "-m", format_message("25%", step))


def serve(root: Path, cache: Path) -> tuple[Service, Api]:
    service = Service(Options(location=str(root), cache=cache, cache_time=60))
    for state in service.stores.values():
        state.refresh(time.time())
    return service, Api(service, starlette_app)


async def _reads(api: Api, paths: list[bytes], idents: list[bytes | None], count: int) -> float:
    """CPU seconds for `count` reads of `paths` by `idents`, each a full call of the application."""

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    statuses: list[int] = []

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    base = [(b"host", b"127.0.0.1"), (b"user-agent", b"cfgtool/0 (agent)"), (b"accept", b"application/json")]
    scopes = []
    for i in range(count):
        path, ident = paths[i % len(paths)], idents[i % len(idents)]
        headers = [*base, (b"cfgtool-instance", ident)] if ident is not None else base
        scopes.append({"type": "http", "method": "GET", "path": path.decode(), "raw_path": path,
                       "query_string": b"", "headers": headers, "client": ("127.0.0.1", 40000)})  # fmt: skip
    t0 = time.process_time()  # CPU time: the machine's other work blurs it less than the wall clock
    for scope in scopes:
        await api(scope, receive, send)
    seconds = time.process_time() - t0
    assert set(statuses) == {200}, set(statuses)
    return seconds


def _us(values: list[float], count: int) -> str:
    per = [v / count * 1e6 for v in values]
    return f"{statistics.median(per):6.2f} us/read ({min(per):.2f}-{max(per):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--reads", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory() as tmp:
        apps: dict[str, tuple[Service, Api]] = {}
        for name in ("no rollout", "rollout at 25%"):
            root = Path(tmp) / name.replace(" ", "-").replace("%", "")
            root.mkdir()
            build(root, args.keys, rolling=name != "no rollout")
            apps[name] = serve(root, Path(tmp) / "cache")
        paths = [f"/v1/bench/current/keys/data/k{i}".encode() for i in range(args.keys)]
        idents: list[bytes | None] = [f"web-{i}:{4000 + i}".encode() for i in range(args.instances)]
        rolling = apps["rollout at 25%"][1]
        cohorts = rolling.service.stores["bench"].view.cohorts
        assert cohorts is not None and apps["no rollout"][1].service.stores["bench"].view.cohorts is None
        share = sum(cohorts.current(i) == 2 for i in idents) / len(idents)
        print(f"{args.keys} keys, {args.instances} instances ({share:.0%} read version 2 during the rollout), T = 60")
        loop = asyncio.new_event_loop()
        run: Callable[..., float] = lambda api, who, n: loop.run_until_complete(_reads(api, paths, who, n))  # noqa: E731
        for _, api in apps.values():
            run(api, idents, args.reads)  # warm: every instance's class known, every answer built
        print(f"median of {args.runs} runs (range), microseconds per `current` read:")
        kinds = ("known instances", "new instances", "no instance id")
        times: dict[tuple[str, str], list[float]] = {(k, name): [] for k in kinds for name in apps}
        for r in range(args.runs):  # the two repositories alternate, so a change of load hits both
            for name, (_, api) in apps.items():
                times["known instances", name].append(run(api, idents, args.reads))
                new: list[bytes | None] = [f"new-{r}-{i}".encode() for i in range(args.instances)]
                times["new instances", name].append(run(api, new, args.instances))
                times["no instance id", name].append(run(api, [None], args.reads))
        for kind in kinds:
            count = args.instances if kind == "new instances" else args.reads
            figures = [f"{name}: {_us(times[kind, name], count)}" for name in apps]
            base, during = (statistics.median(times[kind, name]) for name in apps)
            print(f"{kind:15}  {'; '.join(figures)}; {100 * (during / base - 1):+.1f}%; {load()}")
        print("target: a read by a known instance during the rollout at most +10%")
        loop.close()
        for service, _ in apps.values():
            service.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
