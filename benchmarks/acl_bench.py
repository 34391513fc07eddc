"""Authorizer speed: decisions per second over an ACL of 10,000 entries, and the cost of reading it.

Usage:
    python -m benchmarks.acl_bench [--entries 10000] [--decisions 200000] [--repeat 5]

The ACL has the shape of a large store's: a team per database with literal and prefixed entries for its
datasets, per-dataset readers, denies, `User:*` reads and store operations. Queries are a mix of keys the ACL
names literally, keys under a prefix, and keys it does not name, for users in and out of the groups. Prints the
median of `--repeat` runs of parsing (YAML + JSON Schema), building the indexes, and deciding.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from benchmarks.machine import print_machine
from cfgtool.access.acl import parse_acl
from cfgtool.access.authorizer import Authorizer


def make_acl(entries: int, rng: random.Random) -> str:
    teams = max(1, entries // 100)
    lines = ["super_users: [User:root]", "allow_everyone_if_no_acl_found: false", "groups:"]
    lines += [f"  Group:team{t}: [User:u{t}a, User:u{t}b]" for t in range(teams)]
    lines.append("acls:")
    for i in range(entries):
        t = i % teams
        kind = i % 10
        if kind < 4:
            lines.append(f"  - {{principal: Group:team{t}, operation: alter, key: /data/db{t}/t{i}, "
                         f"permission: allow}}")  # fmt: skip
        elif kind < 8:
            lines.append(f"  - {{principal: Group:team{t}, operation: all, key: /data/db{t}/p{i}/, pattern: prefixed, "
                         f"permission: allow}}")  # fmt: skip
        elif kind == 8:
            lines.append(f"  - {{principal: User:u{rng.randrange(teams)}a, operation: read, key: /data/db{t}/t{i - 8},"
                         f" permission: deny}}")  # fmt: skip
        else:
            lines.append(f"  - {{principal: 'User:*', operation: read, key: /data/db{t}/, pattern: prefixed, "
                         f"permission: allow}}")  # fmt: skip
    lines.append("  - {principal: Group:team0, operation: publish, resource: store, permission: allow}")
    return "\n".join(lines) + "\n"


def queries(entries: int, count: int, rng: random.Random) -> list[tuple[str, str, str | None]]:
    teams = max(1, entries // 100)
    out: list[tuple[str, str, str | None]] = []
    for _ in range(count):
        t, i = rng.randrange(teams), rng.randrange(entries)
        user = f"User:u{t}{'ab'[rng.randrange(2)]}" if rng.random() < 0.7 else f"User:stranger{rng.randrange(99)}"
        key = rng.choice([f"/data/db{t}/t{i}", f"/data/db{t}/p{i}/x/y", f"/data/db{t}/nothing{i}", f"/other/{i}"])
        operation = rng.choice(["read", "alter", "describe", "create"])
        out.append((user, operation, key) if rng.random() < 0.98 else (user, "publish", None))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--decisions", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_machine()
    rng = random.Random(14)
    text = make_acl(args.entries, rng)
    asked = queries(args.entries, args.decisions, rng)
    parse_s, build_s, rate, allowed = [], [], [], 0
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        acl, problems = parse_acl(text, "_ACL.yaml")
        t1 = time.perf_counter()
        authorizer = Authorizer(acl)
        t2 = time.perf_counter()
        allowed = sum(authorizer.authorize(p, o, k).allowed for p, o, k in asked)
        t3 = time.perf_counter()
        assert not [d for d in problems if d.code == "E_ACL"], problems[:3]
        parse_s.append(t1 - t0)
        build_s.append(t2 - t1)
        rate.append(len(asked) / (t3 - t2))
    print(f"ACL entries            {len(acl.entries)}")
    print(f"parse + check (median) {statistics.median(parse_s) * 1000:.0f} ms")
    print(f"build indexes (median) {statistics.median(build_s) * 1000:.1f} ms")
    print(f"decisions/s (median)   {statistics.median(rate):,.0f}  ({1e6 / statistics.median(rate):.1f} µs each; "
          f"{allowed} of {len(asked)} allowed)")  # fmt: skip


if __name__ == "__main__":
    main()
