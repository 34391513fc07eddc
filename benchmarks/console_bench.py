"""The console's pages at 10,000 datasets: server time (p95) and HTML size of each, and time to usable in Chromium.

    python -m benchmarks.console_bench                      # 10,000 datasets, 40 requests per page
    python -m benchmarks.console_bench --requests 100 --browser-runs 9
    python -m benchmarks.console_bench --datasets 100000 --pages tree   # the tree opens without rendering it whole
    python -m benchmarks.console_bench --settle 60   # after the work a start sets off (indexes, diffs ahead) is done

Builds a store with benchmarks/gen_store.py, publishes version 1, changes one widely imported tag and one dataset
and publishes version 2, changes another dataset and publishes version 3, starts `cfgtool serve` (no tokens: no
sign-in) on a loopback port and, for every console page (of version 3, the current one), asks once (the cold time:
the page's first request, which may wait for what the server computes for it: a key's queries, an explain) and
then --requests times in a row, printing the median and p95 of the time to the last byte (the server's time plus
loopback), the HTML size, the status and the load average. Three diffs: 2..3 (the latest, computed ahead when
version 3 loads), 1..2 (the timeline links it: computed ahead too) and 1..3 (no page links it: computed when first
asked). A diff not ready answers a "being computed" page (202) at once, and so do a search or a history whose index is
being built; the table then also gives the seconds until the answer is there (asked again every 0.2 s), and the cold
views (key, explain, history, search, the three diffs) are summed up after it. Then Playwright drives Debian's
/usr/bin/chromium-headless-shell: for each page, the median of --browser-runs times from navigation to `load` (HTML,
CSS and htmx parsed and run: the page answers clicks).

The script first prints the time of a pure-Python loop (`for i in range(10_000_000): s += i`, median of 3), to
compare machines. Without --settle the pages are measured from the moment the server is ready, while what a start sets
off in the background still runs (the current version's search index, the diffs computed ahead and the resolver's
snapshot in worker processes; the history index on a thread of the server): the first pages measured share the machine
with it. A page answered by a "being computed" or "being indexed" page (202) is asked again until it is there.
Targets (docs/console.md): p95 <= 50 ms and HTML <= 200 KB per page; usable within 1 s.
"""

from __future__ import annotations

import argparse
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from benchmarks.machine import load, python_loop
from benchmarks.server import start_server

HERE = Path(__file__).resolve().parent

STORE = "bench"
CHROMIUM = "/usr/bin/chromium-headless-shell"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def build(repo: Path, datasets: int) -> list[str]:
    """Generate, commit and publish version 1; change a tag imported widely and one dataset, publish version 2;
    change another dataset, publish version 3. The dataset keys."""
    from benchmarks.gen_store import generate, git_commit
    from cfgtool.versions import publish

    stats = generate(datasets, repo)
    git_commit(repo, stats.written, "bench store")
    for name, value in (("user.name", "Bench"), ("user.email", "bench@example.com")):
        git(repo, "config", name, value)
    publish(repo, message="v1")
    keys = sorted(
        "/" + str(Path(path).parent.relative_to("store"))
        for path, _ in stats.written
        if path.startswith("store/data/") and path.endswith("/main.conf") and path.count("/") == 5
    )
    tag_file = sorted((repo / "store" / "tags" / "platform").rglob("main.conf"))[0]  # every domain imports one
    with open(tag_file, "a", encoding="utf-8") as out:
        out.write("\nbench.console = true\n")
    with open(repo / "store" / keys[0].lstrip("/") / "main.conf", "a", encoding="utf-8") as out:
        out.write("\nbench.owner = console\n")
    git(repo, "commit", "-qam", "bench: a tag and a dataset change")
    publish(repo, message="v2")
    with open(repo / "store" / keys[1].lstrip("/") / "main.conf", "a", encoding="utf-8") as out:
        out.write("\nbench.owner = search\n")
    git(repo, "commit", "-qam", "bench: another dataset change")
    publish(repo, message="v3")
    return keys


def get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    except OSError:
        return 0, b""
    finally:
        conn.close()


def pages(keys: list[str], which: str) -> dict[str, str]:
    """The console's pages at version 3 (the current one), by name."""
    key, other = keys[0], keys[len(keys) // 2]
    domain = "/".join(key.split("/")[:3])
    s = f"/ui/{STORE}"
    found = {
        "stores": "/ui/",
        "timeline": f"{s}/",
        "tree": f"{s}/v/3/tree/",
        "tree-domain": f"{s}/v/3/tree{domain}",
        "key": f"{s}/v/3/key{key}",
        "explain": f"{s}/v/3/explain{key}?path=bench.owner",
        "history": f"{s}/history{key}",
        "search": f"{s}/v/3/search?q=console",
        "diff": f"{s}/diff/2..3",
        "diff-1..2": f"{s}/diff/1..2",
        "diff-1..3": f"{s}/diff/1..3",
        "compare": f"{s}/v/3/compare?a={quote(key)}&b={quote(other)}",
        "access": f"{s}/v/3/access{key}",
        "consumers": f"{s}/consumers",
    }
    return {name: path for name, path in found.items() if which == "all" or name in which.split(",")}


COLD = ("key", "explain", "history", "search", "diff", "diff-1..2", "diff-1..3")  # the cold views summed up after it


def measure(port: int, named: dict[str, str], requests: int) -> None:
    print(f"\n{'page':<12} {'cold ms':>8} {'ready s':>8} {'median ms':>10} {'p95 ms':>8} {'HTML KB':>8}  status")
    colds: dict[str, str] = {}
    for name, path in named.items():
        t0 = time.perf_counter()
        status, body = get(port, path)
        cold = (time.perf_counter() - t0) * 1000
        first, ready = status, ""
        while status == 202 and time.perf_counter() - t0 < 600:  # being computed or indexed: until it is there
            time.sleep(0.2)
            status, body = get(port, path)
        if first == 202:
            ready = f"{time.perf_counter() - t0:.1f}"
        colds[name] = f"{cold:8.1f} ms, status {first}" + (f", there after {ready} s" if ready else "")
        times = []
        for _ in range(requests):
            t0 = time.perf_counter()
            status, body = get(port, path)
            times.append((time.perf_counter() - t0) * 1000)
        p95 = statistics.quantiles(times, n=20, method="inclusive")[18]
        print(f"{name:<12} {cold:8.1f} {ready:>8} {statistics.median(times):10.1f} {p95:8.1f} "
              f"{len(body) / 1024:8.1f}  {status}  {load()}", flush=True)  # fmt: skip
    print("\ncold views (each page's first request):")
    for name in (n for n in COLD if n in colds):
        label = f"diff {named[name].rsplit('/', 1)[1]}" if name.startswith("diff") else name
        print(f"  {label:<10} {colds[name]}")


def browser(port: int, named: dict[str, str], runs: int) -> None:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("\nno Playwright (pip install -e '.[dev]'): time to usable not measured")
        return
    if not Path(CHROMIUM).exists():
        print(f"\nno {CHROMIUM} (apt install chromium-headless-shell): time to usable not measured")
        return
    print(f"\n{'page':<12} {'to load ms (median of ' + str(runs) + ')':>28}")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM)
        context = chromium.new_context()
        tab = context.new_page()
        for name, path in named.items():
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                tab.goto(f"http://127.0.0.1:{port}{path}", wait_until="load")
                times.append((time.perf_counter() - t0) * 1000)
            print(f"{name:<12} {statistics.median(times):28.0f}  {load()}", flush=True)
        chromium.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=40, help="requests per page after the cold one")
    parser.add_argument("--browser-runs", type=int, default=5)
    parser.add_argument("--pages", default="all", help="comma-separated page names (default all)")
    parser.add_argument("--settle", type=float, default=0, help="seconds to wait once the server is ready")
    args = parser.parse_args()
    print(f"pure-Python loop of 10M additions: {python_loop():.2f} s (median of 3)  {load()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="cfgtool-console-bench-") as name:
        tmp = Path(name)
        env = {**os.environ, "CFGTOOL_CACHE_DIR": str(tmp / "cache"), "PYTHONPATH": str(HERE.parent)}
        os.environ["CFGTOOL_CACHE_DIR"] = env["CFGTOOL_CACHE_DIR"]
        t0 = time.perf_counter()
        keys = build(tmp / "repo", args.datasets)
        print(f"built and published 3 versions of a {len(keys):,}-dataset store in {time.perf_counter() - t0:.0f} s  "
              f"{load()}")  # fmt: skip
        t0 = time.perf_counter()
        proc, port = start_server(tmp / "repo", env, "--fetch-interval", "1")
        print(f"server pid {proc.pid} ready in {time.perf_counter() - t0:.1f} s", flush=True)
        try:
            if args.settle:
                time.sleep(args.settle)
                print(f"waited {args.settle:g} s  {load()}", flush=True)
            named = pages(keys, args.pages)
            measure(port, named, args.requests)
            browser(port, named, args.browser_runs)
        finally:
            proc.terminate()
            proc.wait(30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
