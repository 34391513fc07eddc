"""The git layer's cost: cfgtool reaches git only through GitPython (`cfgtool/store/git.py`); this
prints, in one run, what that costs against raw git driven by `subprocess`.

Usage:
    python -m benchmarks.git_bench [--files 20000] [--tags 10000] [--repeat 5]

Builds a repository with a `--files` tree and `--tags` annotated tags (git fast-import), then times, median of
`--repeat` runs each, interleaved: every blob of the tree read through `cat_blobs` (one `cat-file --batch
--buffer` stream), and `read_history` (the version listing, one `for-each-ref`), each through GitPython and
with GitPython's `Git` swapped for plain `subprocess` (the same cfgtool code otherwise, parsing included). The
target: the layer within 1.2x of raw git.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import git as gitpython

from benchmarks.machine import print_machine
from cfgtool.store import git
from cfgtool.versions.tags import TagScheme, read_history


def build(root: Path, files: int, tags: int) -> str:
    """A repository with one commit of `files` files and `tags` annotated version tags on it; the commit."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    parts = [b"commit refs/heads/main\nmark :1\ncommitter B <b@example.com> 1700000000 +0000\ndata 5\nbench\n"]
    for i in range(files):
        data = f"value = {i}\nowner = team-{i % 97}\n".encode()
        parts.append(f"M 100644 inline store/d{i % 300}/n{i}/main.conf\ndata {len(data)}\n".encode() + data + b"\n")
    for n in range(1, tags + 1):
        meta = f'{{"kind":"version","version":{n},"digest":"sha256:{n:064x}"}}'
        message = f"config version {n}\n\ncfgtool-metadata: {meta}\n"
        parts.append(f"tag config/v{n}\nfrom :1\ntagger B <b@example.com> {1700000000 + n} +0000\n"
                     f"data {len(message.encode())}\n{message}\n".encode())  # fmt: skip
    body = b"".join(parts)
    subprocess.run(["git", "fast-import", "--quiet"], cwd=root, input=body, check=True)
    return subprocess.run(["git", "rev-parse", "main"], cwd=root, capture_output=True, text=True).stdout.strip()


class _RawHandle:
    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc


class RawGit:
    """A stand-in for GitPython's `Git` that starts git with plain `subprocess`: swapped in, the same cfgtool
    code (parsing included) runs over raw git, so the difference is what GitPython costs."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    def execute(self, command: list[str], istream: Any = None, as_process: bool = False, **_: Any) -> Any:
        proc = subprocess.Popen(command, cwd=self.cwd, stdin=istream if istream is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
        if as_process:
            return _RawHandle(proc)
        out, err = proc.communicate()
        return proc.returncode, out, err


@contextlib.contextmanager
def raw_git() -> Iterator[None]:
    saved = gitpython.Git
    gitpython.Git = RawGit  # type: ignore[misc, assignment]
    try:
        yield
    finally:
        gitpython.Git = saved  # type: ignore[misc]


def timed(func: Callable[[], object], repeat: int) -> tuple[float, float]:
    """Median seconds of `func` through GitPython and through raw git, interleaved run by run."""
    layer, raw = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        func()
        layer.append(time.perf_counter() - t0)
        with raw_git():
            t0 = time.perf_counter()
            func()
            raw.append(time.perf_counter() - t0)
    return statistics.median(layer), statistics.median(raw)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--tags", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print_machine()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "repo"
        commit = build(root, args.files, args.tags)
        oids = list(git.ls_tree(root, commit, "").values())
        scheme = TagScheme()
        assert len(oids) == args.files and len(read_history(root, scheme)) == args.tags
        rows = [
            (f"blobs of a {len(oids):,}-file tree", *timed(lambda: git.cat_blobs(root, oids), args.repeat)),
            (f"version listing over {args.tags:,} tags", *timed(lambda: read_history(root, scheme), args.repeat)),
        ]
    print(f"medians of {args.repeat}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'what':<34}  {'GitPython layer':>15}  {'raw git':>9}  ratio  (target <= 1.2x)")
    for what, layer, raw in rows:
        verdict = "PASS" if layer / raw <= 1.2 else "MISS"
        print(f"{what:<34}  {layer * 1000:>12.0f} ms  {raw * 1000:>6.0f} ms  {layer / raw:.2f}x  {verdict}")


if __name__ == "__main__":
    main()
