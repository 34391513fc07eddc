"""The did-you-mean of a key without a node (`keys.near_node`) in one huge folder: what a miss costs a reader.

Usage:
    python -m benchmarks.near_bench --names 100000 --runs 7

Builds the folder's `Siblings` once (what a version keeps per folder after its first miss), then times, per kind
of typo, `near_node` for 200 different misspelled keys (each a distinct key, as a client asking for many would
make them): the median and range of `--runs` rounds, per key. The kinds: a letter dropped near the start (which
sorts the name far from the one meant), a letter added at the end, a changed separator and case, and a name close
to none. Target: a few milliseconds per key at 100,000 names, on the machine the targets are set for.
"""

from __future__ import annotations

import argparse
import time

from benchmarks.machine import print_machine, spread
from cfgtool.store.keys import near_node, nearest, siblings

KINDS = {
    "dropped near the start": lambda n: f"evnt-{n:06d}",
    "added at the end": lambda n: f"event-{n:06d}x",
    "separator and case": lambda n: f"Event_{n:06d}",
    "close to none": lambda n: f"zq{n:06d}-unrelated",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--names", type=int, default=100_000, help="children of the folder (default 100,000)")
    parser.add_argument("--runs", type=int, default=7, help="rounds per kind of typo (default 7)")
    args = parser.parse_args()
    print_machine()
    nodes = {"/", "/data", *(f"/data/event-{i:06d}" for i in range(args.names))}
    start = time.perf_counter()
    names = {"/": siblings(["data"]), "/data": siblings(k[len("/data/") :] for k in nodes if k.startswith("/data/"))}
    print(f"siblings of {args.names:,} names: {time.perf_counter() - start:.3f} s (once per folder and version)")
    step = max(1, args.names // 200)
    for kind, typo in KINDS.items():
        rounds, found = [], 0
        for _ in range(args.runs):
            start = time.perf_counter()
            found = sum(
                near_node(f"/data/{typo(n)}", lambda k: nearest(k, nodes, 2), names.__getitem__) is not None
                for n in range(0, args.names, step)
            )
            rounds.append((time.perf_counter() - start) / len(range(0, args.names, step)))
        print(f"{kind:24} per key {spread(rounds)}; suggested for {found} of {len(range(0, args.names, step))}")


if __name__ == "__main__":
    main()
