"""Differential run of cfgtool's HOCON engine against Lightbend Typesafe Config 1.4.1, on many generated cases.

Usage:
    python -m benchmarks.hocon_diff                          # 20,000 cases, seed 0
    python -m benchmarks.hocon_diff --cases 5000 --seed 7    # cases are seeds S, S+1, ... of tests/hocon/hocon_gen
    python -m benchmarks.hocon_diff --examples 3 --budget 1500   # more (and more shrunk) examples per class

Prints the agreement rate (cases where Lightbend is known wrong, see `lightbend.LIGHTBEND_WRONG`, are set
apart), the outcome mix, the count per disagreement class (`tests/hocon/lightbend.py`, KNOWN) and for each
class a minimal example: the first case of the class, shrunk (layers, statements and pieces deleted while
it stays a disagreement of the same class), with both answers. Needs java, javac and the Lightbend jar.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import time

from benchmarks.machine import print_machine
from tests.hocon import hocon_gen
from tests.hocon import lightbend as lb


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0, help="the first case's seed")
    parser.add_argument("--examples", type=int, default=1, help="shrunk examples per class")
    parser.add_argument("--budget", type=int, default=800, help="oracle calls per shrink")
    args = parser.parse_args()
    print_machine()
    reason = lb.unavailable()
    if reason:
        print(f"cannot run: {reason}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    seeds = range(args.seed, args.seed + args.cases)
    cases = [hocon_gen.case(s) for s in seeds]
    with lb.Oracle() as oracle:
        theirs = oracle.ask_many(cases)
        mix: collections.Counter[str] = collections.Counter()
        found: dict[str, list[lb.Case]] = collections.defaultdict(list)
        counts: collections.Counter[str] = collections.Counter()
        for texts, answer in zip(cases, theirs, strict=True):
            ours = lb.run_cfgtool(texts)
            mix[f"cfgtool {ours[0]} / lightbend {answer[0]}"] += 1
            if lb.agree(ours, answer):
                continue
            case = lb.Case(tuple(texts), ours, answer)
            name = lb.classify(case, oracle.ask)
            counts[name] += 1
            if len(found[name]) < args.examples:
                found[name].append(case)
        checked = time.perf_counter()
        apart = sum(counts[n] for n in lb.LIGHTBEND_WRONG)
        wrong = sum(counts.values()) - apart
        print(f"{args.cases} cases (seeds {seeds.start}..{seeds.stop - 1}) in {checked - start:.1f} s")
        print(
            f"agreement: {1 - wrong / max(1, args.cases - apart):.2%} of {args.cases - apart} cases "
            f"({wrong} disagree; {apart} set apart where Lightbend is known wrong)"
        )
        print(f"raw agreement (nothing set apart): {1 - sum(counts.values()) / args.cases:.2%}")
        print("outcomes: " + ", ".join(f"{k}: {v}" for k, v in sorted(mix.items())))
        print("\nclasses (who is right per HOCON.md):")
        for name, n in counts.most_common():
            known = lb.KNOWN_BY_NAME.get(name)
            print(f"  {n:6d}  {name}  [{known.right if known else '?'}]")
        for name, _ in counts.most_common():
            known = lb.KNOWN_BY_NAME.get(name)
            print(f"\n=== {name} ({counts[name]}) [{known.right if known else '?'} is right]")
            if known:
                print(f"    {known.description}")
            for case in found[name]:
                small = lb.shrink_case(case, name, oracle.ask, args.budget)
                for i, text in enumerate(small.texts):
                    print(f"  layer {i}: {json.dumps(text)}")
                print(f"  cfgtool:   {small.ours}")
                print(f"  lightbend: {small.theirs}")
        print(f"\nshrinking took {time.perf_counter() - checked:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
