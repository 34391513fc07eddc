"""Is the engine's memory flat over a long life? Parse and resolve many varied documents, print RSS as it goes.

    python -m benchmarks.hocon_rss --docs 100000 --every 10000 [--tracemalloc]

Each document is small to medium (a few to a few hundred fields: nested objects, arrays, substitutions, `+=`,
concatenations, optional references, numbers, quoted and triple-quoted strings), each with its own origin name
(as a long-lived server parsing every store's files would see); about one in eight is broken (syntax error,
unresolved or cyclic reference, type error) and must raise HoconError. Nothing is kept between documents, so RSS
(VmRSS from /proc/self/status) should stay flat after warm-up. With --tracemalloc, the allocations that grew
between the first report and the end are listed by line (the module-level cache or structure that grows).
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
import tracemalloc
from pathlib import Path

from benchmarks.machine import print_machine
from cfgtool import hocon


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


WORDS = ["alpha", "beta", "gamma", "delta", "kafka", "retention", "owner", "partitions", "topic", "cluster"]


def document(rng: random.Random, i: int) -> tuple[str, bool]:
    """(text, broken): a varied document; the i makes names and values unique across the run."""
    lines: list[str] = []
    n = rng.choice([3, 5, 10, 20, 50, 100, 200])
    names: list[str] = []
    scalars: list[str] = []  # names with a scalar value: only these are concatenated with text
    for j in range(n):
        key = f"{rng.choice(WORDS)}{j}_{i % 977}"
        if rng.random() < 0.3:
            key = f"{rng.choice(WORDS)}.{key}"
        kind = rng.randrange(10)
        if kind == 0:
            value = str(rng.randrange(10 ** rng.randint(1, 15)))
        elif kind == 1:
            value = f'"{rng.choice(WORDS)} {i} {j}"'
        elif kind == 2:
            value = "[" + ", ".join(str(rng.randrange(100)) for _ in range(rng.randint(0, 8))) + "]"
        elif kind == 3:
            value = "{ a = 1, b { c = " + str(j) + ", d = [x, y] } }"
        elif kind == 4 and names:
            value = "${" + rng.choice(names) + "}"
        elif kind == 5 and scalars:
            value = "${" + rng.choice(scalars) + '} "-suffix-' + str(i) + '"'
        elif kind == 6:
            value = "${?missing" + str(j) + "}"
        elif kind == 7:
            value = '"""triple\n' + "line " * rng.randint(1, 20) + '"""'
        elif kind == 8:
            value = f"{rng.random() * 1000:.4f}"
        else:
            value = f"unquoted-{rng.choice(WORDS)}-{i}"
        lines.append(f"{key} = {value}")
        if kind not in (6,):
            names.append(key)
        if kind in (0, 1, 7, 8, 9):
            scalars.append(key)
    if rng.random() < 0.2:
        lines.append("list = [1]\n" + "list += 2\n" * rng.randint(1, 20))
    broken = rng.random() < 0.125
    if broken:
        lines.append(
            rng.choice(
                [
                    "bad = ${nowhere.at.all}",
                    "cyc1 = ${cyc2}\ncyc2 = ${cyc1}",
                    "t = [1] {a: 1}",
                    'u = "unterminated',
                    "v = { a = 1",
                    "w = ${",
                ]
            )
        )
    rng.shuffle(lines)
    return "\n".join(lines) + "\n", broken


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--every", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--tracemalloc", action="store_true", help="list what grew between the first report and the end"
    )
    args = parser.parse_args(argv)
    print_machine()

    rng = random.Random(args.seed)
    if args.tracemalloc:
        tracemalloc.start(5)
    first: tracemalloc.Snapshot | None = None
    start = time.perf_counter()
    print(f"{'docs':>8} {'VmRSS MB':>9} {'errors':>7} {'seconds':>8}  (start {rss_mb():.1f} MB)", flush=True)
    errors = unexpected = 0
    for i in range(1, args.docs + 1):
        text, broken = document(rng, i)
        try:
            resolved = hocon.resolve([hocon.parse(text, f"store/data/ds{i}/main.conf")])
            resolved.value  # noqa: B018 - forces the plain value
            if broken:
                unexpected += 1
        except hocon.HoconError:
            errors += 1
            if not broken:
                unexpected += 1
        if i % args.every == 0:
            gc.collect()
            print(f"{i:>8} {rss_mb():>9.1f} {errors:>7} {time.perf_counter() - start:>8.1f}", flush=True)
            if args.tracemalloc and first is None:
                first = tracemalloc.take_snapshot()
    if unexpected:
        print(f"note: {unexpected} documents did not end as generated (a broken one resolved or a valid one failed)")
    if args.tracemalloc and first is not None:
        gc.collect()
        last = tracemalloc.take_snapshot()
        keep = [tracemalloc.Filter(False, tracemalloc.__file__)]
        stats = last.filter_traces(keep).compare_to(first.filter_traces(keep), "traceback")
        print("\nlargest growth since the first report (tracemalloc, by traceback):")
        for stat in stats[:10]:
            print(f"  {stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+8d} blocks")
            for line in stat.traceback.format()[-6:]:
                print("      " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
