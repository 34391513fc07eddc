"""Generate a synthetic cfgtool config repository for benchmarks.

    python -m benchmarks.gen_store --datasets 10000 --out /tmp/bench-repo --git

writes ``OUT/store`` (a store with ``_CONFIG_STORE``) and ``OUT/schemas`` (one JSON Schema), and with
``--git`` makes OUT a git repository with one commit, so a benchmark can compile from a ref.

The store:

- a 3-level hierarchy ``/data/<domain>/<group>/<dataset>`` (at most 100 datasets per group, 10
  groups per domain), with defaults at ``/``, ``/data``, each domain and each group;
- 27 leaf tags under ``/tags`` in 8 categories; some import other tags (``/tags/compliance/GDPR``
  imports ``/tags/acl/restricted`` and ``/tags/retention/SHORT``, ...), domains import a platform tag;
- about 20 values per dataset (nested objects, lists, numbers, strings, booleans);
- 30% of datasets with ``${...}`` references, 10% with dynamic includes
  (``/tags/cluster/${local_cluster.name}`` with 3 values, ``/tags/env/${deploy.env}`` with 2);
- every node valid: every reference defined for every variable value, every dataset passing the
  schema, no warning (no duplicate, redundant or out-of-order import).

A benchmark can also call ``generate(datasets, out, seed)`` and ``git_commit(out, stats.written, message)``.

The output depends only on the arguments: the same ``--datasets`` and ``--seed`` give the same bytes
(and with ``--git`` the same commit id, for a given git version).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

MARKER = ".gen_store.json"
DATASETS_PER_GROUP = 100
GROUPS_PER_DOMAIN = 10
REFERENCE_SHARE = 0.30
DYNAMIC_SHARE = 0.10
STATIC_INCLUDE_SHARE = 0.60
DAY_MS = 86_400_000

DOMAIN_WORDS = [
    "tracking",
    "identity",
    "ads",
    "jobs",
    "messaging",
    "search",
    "feed",
    "media",
    "payments",
    "learning",
    "sales",
    "security",
    "notifications",
    "graph",
    "metrics",
    "infra",
]
GROUP_WORDS = [
    "core",
    "events",
    "audit",
    "profile",
    "billing",
    "ranking",
    "ingest",
    "serving",
    "export",
    "quality",
]
NOUNS = [
    "Page",
    "Profile",
    "Member",
    "Click",
    "Impression",
    "Search",
    "Message",
    "Job",
    "Video",
    "Feed",
    "Login",
]
VERBS = ["View", "Update", "Create", "Delete", "Send", "Open", "Play", "Apply", "Share", "Score"]
FIELDS = [
    "memberId",
    "time",
    "pageKey",
    "trackingId",
    "sessionId",
    "ipAddress",
    "userAgent",
    "itemId",
    "score",
]
CONSUMERS = ["etl", "search", "ads", "feed", "abuse", "reporting", "ml", "archive"]
COMPAT = ["BACKWARD", "FORWARD", "FULL", "NONE"]
TIERS = ["gold", "silver", "bronze"]

# Variables declared in _CONFIG_STORE and the tag family each one selects.
VARIABLES: dict[str, tuple[str, list[str]]] = {
    "local_cluster.name": ("/tags/cluster", ["ltx1", "lva1", "lor1"]),
    "deploy.env": ("/tags/env", ["prod", "staging"]),
}


@dataclass(frozen=True)
class Tag:
    key: str
    conf: str
    imports: tuple[str, ...] = ()


def _tags() -> list[Tag]:
    """The tag library: 27 leaf tags in 8 categories. Tags only reference values they define themselves."""
    tags: list[Tag] = []
    for name, days in (("SHORT", 3), ("MEDIUM", 14), ("LONG", 90)):
        tags.append(
            Tag(
                f"/tags/retention/{name}",
                f"retention {{\n  class = {name}\n  ms = {days * DAY_MS}\n}}\n"
                'kafka.config."retention.ms" = ${retention.ms}\n',
            )
        )
    for name, tier, fresh in (("LOW", 3, 1440), ("MEDIUM", 2, 240), ("HIGH", 1, 60)):
        tags.append(
            Tag(
                f"/tags/priority/{name}",
                f"priority = {name}\nsla {{\n  tier = {tier}\n  freshness_minutes = {fresh}\n"
                f"  pagerduty = {'true' if tier == 1 else 'false'}\n}}\n",
            )
        )
    tags.append(
        Tag(
            "/tags/priority/CRITICAL",
            'priority = CRITICAL\nsla.freshness_minutes = 15\nalerts.channels += "#critical"\n',
            ("/tags/priority/HIGH",),
        )
    )
    tags.append(Tag("/tags/acl/public", 'acl { restricted = false, readers = ["group:everyone"] }\n'))
    tags.append(Tag("/tags/acl/internal", 'acl.readers += "group:employees"\n'))
    tags.append(Tag("/tags/acl/restricted", 'acl {\n  restricted = true\n  readers = ["group:reviewed"]\n}\n'))
    secret = "acl.encryption = required\nacl.audit_reads = true\n"
    tags.append(Tag("/tags/acl/secret", secret, ("/tags/acl/restricted",)))
    for name in ("avro", "orc", "parquet", "json"):
        tags.append(Tag(f"/tags/format/{name}", f'storage {{ format = {name}, compression = "snappy" }}\n'))
    for name in ("kafka", "espresso", "mysql", "hdfs"):
        tags.append(Tag(f"/tags/platform/{name}", f"platform {{ name = {name}, managed = true }}\n"))
    for i, name in enumerate(VARIABLES["local_cluster.name"][1]):
        tags.append(
            Tag(
                f"/tags/cluster/{name}",
                f"cluster {{\n  name = {name}\n  id = {i + 1}\n"
                f'  kafka.bootstrap = "kafka.{name}.example.com:9092"\n'
                f'  hdfs.namenode = "hdfs://nn.{name}.example.com:8020"\n}}\n',
            )
        )
    for name, replicas in (("prod", 3), ("staging", 1)):
        tags.append(Tag(f"/tags/env/{name}", f"env {{ name = {name}, replicas = {replicas} }}\n"))
    tags.append(
        Tag(
            "/tags/compliance/GDPR",
            "compliance { gdpr = true, purge_on_request = true }\n",
            ("/tags/acl/restricted", "/tags/retention/SHORT"),
        )
    )
    tags.append(Tag("/tags/compliance/SOX", "compliance.sox = true\n", ("/tags/retention/LONG",)))
    tags.append(Tag("/tags/compliance/PCI", "compliance.pci = true\n", ("/tags/acl/secret",)))
    return tags


# Categories a dataset may import from directly (at most one tag each).
STATIC_CATEGORIES = ["/tags/retention", "/tags/priority", "/tags/acl", "/tags/format", "/tags/compliance"]


def _closures(tags: Sequence[Tag]) -> dict[str, frozenset[str]]:
    """Every tag with the tags it imports, transitively (including itself)."""
    by_key = {t.key: t for t in tags}
    out: dict[str, frozenset[str]] = {}

    def walk(key: str) -> frozenset[str]:
        if key not in out:
            acc = {key}
            for imp in by_key[key].imports:
                acc |= walk(imp)
            out[key] = frozenset(acc)
        return out[key]

    for t in tags:
        walk(t.key)
    return out


@dataclass
class Stats:
    datasets: int = 0
    domains: int = 0
    groups: int = 0
    tags: int = 0
    nodes: int = 0
    files: int = 0
    size: int = 0  # bytes
    dataset_values: int = 0
    with_references: int = 0
    with_dynamic_includes: int = 0
    with_static_includes: int = 0
    seconds: float = 0.0
    commit: str | None = None
    written: list[tuple[str, bytes]] = field(default_factory=list, repr=False)  # (path in OUT, content)


class _Writer:
    """Writes files under `out` and remembers them (path relative to `out`, bytes) for `git fast-import`."""

    def __init__(self, out: Path, stats: Stats) -> None:
        self.out = out
        self.stats = stats
        self.files: list[tuple[str, bytes]] = []

    def node(self, key: str, conf: str | None, includes: Sequence[str] = ()) -> None:
        rel = "store" if key == "/" else "store" + key
        (self.out / rel).mkdir(parents=True, exist_ok=True)
        self.stats.nodes += 1
        if conf is not None:
            self.file(f"{rel}/main.conf", conf)
        if includes:
            self.file(f"{rel}/includes", "".join(f"{line}\n" for line in includes))

    def file(self, rel: str, text: str, *, count: bool = True) -> None:
        data = text.encode()
        with open(self.out / rel, "wb") as f:
            f.write(data)
        self.files.append((rel, data))
        if count:
            self.stats.files += 1
            self.stats.size += len(data)


def _config_store(with_policies: bool) -> str:
    lines = [
        "# Synthetic store generated by benchmarks/gen_store.py",
        "name: bench",
        "tag_roots: [/tags]",
        "variables:",
    ]
    for var, (_, values) in VARIABLES.items():
        lines += [f"  {var}:", f"    values: [{', '.join(values)}]", f"    default: {values[0]}"]
    lines.append("schemas: ../schemas")
    if with_policies:
        lines += [
            "policies:",
            "  - class: cfgtool.policies:MonotonicPaths",
            "    config: {paths: [kafka.partitions]}",
            "  - class: cfgtool.policies:FrozenPaths",
            "    config: {paths: [kafka.topic]}",
            "  - class: cfgtool.policies:ProtectedDeletes",
            "    config: {tags: [/tags/priority/CRITICAL]}",
        ]
    return "\n".join(lines) + "\n"


SCHEMA = """\
# Every dataset has an owner and a retention (generated by benchmarks/gen_store.py).
$schema: https://json-schema.org/draft/2020-12/schema
title: Synthetic dataset
x-cfgtool:
  applies_to:
    keys: ["/data/*/*/*"]
    tags: []
    exclude: []
type: object
required: [owner, retention, kafka]
properties:
  owner: {type: string, pattern: "^[a-z][a-z0-9-]*$"}
  retention:
    type: object
    required: [ms]
    properties:
      ms: {type: integer, minimum: 3600000}
  kafka:
    type: object
    required: [partitions]
    properties:
      partitions: {type: integer, minimum: 1, maximum: 4096}
"""

ROOT_CONF = """\
# Defaults for every node (generated).
urn = "urn:bench:"${cfgtool.key}
status = active
retention {
  class = DEFAULT
  ms = 604800000
}
"""

DATA_CONF = """\
# Defaults for every dataset (generated).
name = ${cfgtool.name}
hdfs {
  path = "/data/"${cfgtool.name}
  format = avro
}
acl {
  restricted = false
  readers = ["group:data-analysts"]
}
alerts.channels = ["#data-alerts"]
kafka {
  topic = ${cfgtool.name}
  partitions = 8
  replication.factor = 3
  config { "cleanup.policy" = delete, "min.insync.replicas" = 2 }
}
"""


def _dataset_name(rng: random.Random, index: int) -> str:
    return f"{rng.choice(NOUNS)}{rng.choice(VERBS)}Event{index:06d}"


def _references(rng: random.Random, dynamic_var: str | None) -> list[str]:
    """1-3 assignments using ${...}; each reference is defined on every path to the dataset."""
    pool = [
        "consumer.parallelism = ${kafka.partitions}",
        'contacts.email = ${owner}"@example.com"',
        'hdfs.archive = ${hdfs.path}"/archive"',
        'acl.readers += "group:analysts-' + str(rng.randrange(100)) + '"',
        'alias = ${group.name}"."${cfgtool.name}',
        'kafka.config."retention.ms" = ${retention.ms}',
        'dashboard = "https://dash.example.com"${cfgtool.key}',
    ]
    picked = rng.sample(pool, rng.randint(1, 3))
    if dynamic_var == "local_cluster.name":
        picked.append("kafka.bootstrap = ${cluster.kafka.bootstrap}")
    elif dynamic_var == "deploy.env":
        picked.append("serving.replicas = ${env.replicas}")
    return picked


def _dataset_conf(rng: random.Random, name: str, group: str, refs: Sequence[str]) -> tuple[str, int]:
    """A dataset's main.conf and its number of leaf values (lists count as one)."""
    fields = rng.sample(FIELDS, rng.randint(2, 6))
    consumers = rng.sample(CONSUMERS, rng.randint(1, 4))
    partitions = rng.choice([4, 8, 16, 32, 64, 128, 256])
    lines = [
        f'description = "Synthetic dataset {name} of group {group}"',
        f"version = {rng.randint(1, 9)}",
        f"enabled = {'true' if rng.random() < 0.9 else 'false'}",
        "kafka {",
        f"  partitions = {partitions}",
        f"  replication.factor = {rng.choice([3, 3, 3, 4])}",
        "  config {",
        f'    "segment.bytes" = {rng.choice([268435456, 536870912, 1073741824])}',
        f'    "compression.type" = {rng.choice(["lz4", "zstd", "snappy"])}',
        "  }",
        "}",
        "schema {",
        f"  fields = [{', '.join(fields)}]",
        f"  key = {fields[0]}",
        f"  compatibility = {rng.choice(COMPAT)}",
        "}",
        f"sampling.rate = {rng.randint(1, 100) / 100}",
        "metrics {",
        f"  daily_rows = {rng.randint(1_000, 50_000_000)}",
        f"  avg_row_bytes = {rng.randint(64, 4096)}",
        f"  peak_mb_per_s = {rng.randint(1, 5000) / 10}",
        "}",
        f"consumers = [{', '.join(consumers)}]",
        f"labels {{ tier = {rng.choice(TIERS)}, cost_center = {rng.randint(1000, 9999)} }}",
        f"pii = {'true' if 'ipAddress' in fields or 'memberId' in fields else 'false'}",
        f'created = "20{rng.randint(15, 23)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"',
        f"quota.max_mb_per_day = {rng.randint(1, 1000) * 1024}",
    ]
    values = 20
    if rng.random() < 0.5:
        lines.insert(1, f"owner = team-{rng.randrange(200):03d}")
        values += 1
    lines += refs
    values += len(refs)
    return "\n".join(lines) + "\n", values


def _static_includes(
    rng: random.Random, by_category: dict[str, list[str]], closures: dict[str, frozenset[str]]
) -> list[str]:
    """1-3 tags from distinct categories, never two whose import closures overlap (no W_* warnings)."""
    chosen: list[str] = []
    covered: set[str] = set()
    for category in rng.sample(STATIC_CATEGORIES, rng.randint(1, 3)):
        tag = rng.choice(by_category[category])
        if closures[tag] & covered:
            continue
        chosen.append(tag)
        covered |= closures[tag]
    return chosen


def generate(datasets: int, out: Path, seed: int = 0, *, with_policies: bool = False) -> Stats:
    """Write the repository into `out` (which must not exist or be empty) and return what was written."""
    start = time.perf_counter()
    rng = random.Random(seed)
    stats = Stats(datasets=datasets)
    out.mkdir(parents=True, exist_ok=True)
    marker = {"datasets": datasets, "seed": seed, "policies": with_policies}
    w = _Writer(out, stats)
    w.file(MARKER, json.dumps(marker) + "\n", count=False)
    (out / "store").mkdir()
    w.file("store/_CONFIG_STORE", _config_store(with_policies))
    (out / "schemas").mkdir()
    w.file("schemas/dataset.yaml", SCHEMA)

    tags = _tags()
    closures = _closures(tags)
    by_category: dict[str, list[str]] = {}
    for t in tags:
        by_category.setdefault(t.key.rsplit("/", 1)[0], []).append(t.key)
    w.node("/tags", None)
    for category in sorted(by_category):
        w.node(category, None)
    for t in tags:
        w.node(t.key, t.conf, t.imports)
    stats.tags = len(tags)

    w.node("/", ROOT_CONF)
    w.node("/data", DATA_CONF)

    n_groups = max(1, math.ceil(datasets / DATASETS_PER_GROUP))
    n_domains = math.ceil(n_groups / GROUPS_PER_DOMAIN)
    order = list(range(datasets))
    rng.shuffle(order)
    with_refs = set(order[: round(datasets * REFERENCE_SHARE)])
    rng.shuffle(order)
    dynamic = set(order[: round(datasets * DYNAMIC_SHARE)])
    platforms = by_category["/tags/platform"]

    index = 0
    for d in range(n_domains):
        word = DOMAIN_WORDS[d % len(DOMAIN_WORDS)]
        domain = word if d < len(DOMAIN_WORDS) else f"{word}{d // len(DOMAIN_WORDS)}"
        domain_key = f"/data/{domain}"
        w.node(
            domain_key,
            f"# Domain {domain} (generated)\nowner = {domain}-team\ndomain = {domain}\n"
            f'kafka.cluster = {domain}\nalerts.channels += "#{domain}-alerts"\n',
            [platforms[d % len(platforms)]],
        )
        stats.domains += 1
        for g in range(GROUPS_PER_DOMAIN):
            if index >= datasets:
                break
            group = f"{GROUP_WORDS[g % len(GROUP_WORDS)]}{g:02d}"
            group_key = f"{domain_key}/{group}"
            w.node(
                group_key,
                f"# Group {group} of {domain} (generated)\ngroup {{\n  name = {group}\n"
                f"  cost_center = {rng.randint(1000, 9999)}\n}}\n"
                f"kafka.partitions = {rng.choice([8, 16, 32])}\n"
                f'acl.readers = ["group:{domain}-readers", "group:data-analysts"]\n',
            )
            stats.groups += 1
            for _ in range(DATASETS_PER_GROUP):
                if index >= datasets:
                    break
                name = _dataset_name(rng, index)
                static = rng.random() < STATIC_INCLUDE_SHARE
                includes = _static_includes(rng, by_category, closures) if static else []
                if includes:
                    stats.with_static_includes += 1
                dynamic_var: str | None = None
                if index in dynamic:
                    dynamic_var = "local_cluster.name" if rng.random() < 0.7 else "deploy.env"
                    includes.append(f"{VARIABLES[dynamic_var][0]}/${{{dynamic_var}}}")
                    stats.with_dynamic_includes += 1
                refs = _references(rng, dynamic_var) if index in with_refs else []
                if refs:
                    stats.with_references += 1
                conf, values = _dataset_conf(rng, name, group, refs)
                stats.dataset_values += values
                w.node(f"{group_key}/{name}", conf, includes)
                index += 1
    stats.written = w.files
    stats.seconds = time.perf_counter() - start
    return stats


def git_commit(out: Path, files: Sequence[tuple[str, bytes]], message: str) -> str:
    """`git init` OUT and commit `files` (already written there) with a fixed identity and date.

    The commit is streamed through one `git fast-import` (a pack, not 16,000 loose objects), then the
    index is refreshed so the working tree is clean. Returns the commit id.
    """
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str, data: bytes | None = None) -> str:
        done = subprocess.run(["git", "-C", str(out), *args], env=env, input=data, check=True, capture_output=True)
        return done.stdout.decode().strip()

    git("init", "-q", "-b", "main")
    who = "gen_store <gen_store@example.com> 1704067200 +0000"
    msg = message.encode() + b"\n"
    stream = bytearray(f"commit refs/heads/main\nauthor {who}\ncommitter {who}\ndata {len(msg)}\n".encode())
    stream += msg
    for rel, content in sorted(files):
        stream += f"M 100644 inline {rel}\ndata {len(content)}\n".encode()
        stream += content
        stream += b"\n"
    git("fast-import", "--quiet", "--date-format=raw", data=bytes(stream))
    git("reset", "-q")
    git("update-index", "-q", "--refresh")
    return git("rev-parse", "HEAD")


def _prepare(out: Path, force: bool) -> None:
    if not out.exists() or not any(out.iterdir()):
        return
    if not force:
        raise SystemExit(f"error: {out} is not empty (use --force to replace a store made by this script)")
    if not (out / MARKER).is_file():
        raise SystemExit(f"error: {out} was not made by gen_store.py ({MARKER} is missing); not removing it")
    shutil.rmtree(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--datasets", type=int, default=10_000, metavar="N", help="datasets (default 10000)")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="repository to create")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--git", action="store_true", help="also git init DIR and commit the store")
    parser.add_argument("--policies", action="store_true", help="enable the built-in cfgtool policies")
    parser.add_argument("--force", action="store_true", help="replace DIR made by an earlier run")
    args = parser.parse_args(argv)
    if args.datasets < 1:
        parser.error("--datasets must be at least 1")
    out: Path = args.out
    _prepare(out, args.force)
    stats = generate(args.datasets, out, args.seed, with_policies=args.policies)
    git_seconds = 0.0
    if args.git:
        t0 = time.perf_counter()
        message = f"Synthetic store: {args.datasets} datasets, seed {args.seed}"
        stats.commit = git_commit(out, stats.written, message)
        git_seconds = time.perf_counter() - t0
    print(f"wrote {out}/store (seed {args.seed}) in {stats.seconds:.2f} s")
    print(
        f"  nodes      {stats.nodes:>9,}  ({stats.datasets:,} datasets, {stats.groups:,} groups, "
        f"{stats.domains:,} domains, {stats.tags} leaf tags, plus /, /data and tag categories)"
    )
    print(f"  files      {stats.files:>9,}  ({stats.size:,} bytes, {stats.size / 1_048_576:.1f} MiB)")
    print(f"  values     {stats.dataset_values / max(stats.datasets, 1):>9.1f}  per dataset (own main.conf)")
    n = stats.datasets
    print(f"  references {stats.with_references:>9,}  datasets ({stats.with_references / n:.0%})")
    print(f"  dynamic    {stats.with_dynamic_includes:>9,}  datasets ({stats.with_dynamic_includes / n:.0%})")
    print(f"  tagged     {stats.with_static_includes:>9,}  datasets with static imports")
    if stats.commit:
        print(f"  git        {stats.commit}  (commit in {git_seconds:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
