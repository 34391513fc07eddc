"""Fuzz the HOCON engine with hostile shapes and mutated valid documents (docs/security.md: bounded, never exit 3).

    python -m benchmarks.hocon_fuzz --seconds 300 --seed 1 --out fuzz-findings

Each document is drawn from tests/hostile/gen.py: a random hostile shape (deep nesting, long lines, many keys,
long strings, substitutions, expansion bombs, comments, huge numbers, odd unicode, unterminated constructs) or a
mutation of a valid document. Small, tame documents run in this process: parse, resolve, `.value` and every output
format, under a time check (SIGALRM) and an address-space limit. Dangerous ones (bombs, chains, large or repeated
text) run in a subprocess through `cfgtool hocon FILE` with memory and CPU limits. A finding is an input that
produced exit 3 / an uncaught exception (not a HoconError) / a signal or limit kill / more than the time budget;
each is saved to --out with a .txt note, and printed. Exit status: 0 no findings, 1 findings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import resource
import signal
import sys
import time
import traceback
from pathlib import Path
from types import FrameType

from benchmarks.machine import print_machine
from cfgtool import hocon
from cfgtool.snapshot.formats import Format, render
from tests.hostile import gen
from tests.hostile.runner import cfgtool_command, run_limited

DANGEROUS_SHAPES = {
    "expansion_bomb",
    "self_chain",
    "many_substitutions",
    "deep_nesting",
    "huge_number",
    "dotted_depth",
    "many_keys",
    "long_line",
}
IN_PROCESS_MAX = 20_000  # characters: larger documents run in a subprocess
IN_PROCESS_MEM = 3 * 1024 * 1024 * 1024  # this process's own address-space limit


class _Alarm(BaseException):
    """Raised by SIGALRM: the in-process document took far too long (a BaseException, so no `except` eats it)."""


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise _Alarm


def in_process(text: str, budget: float) -> tuple[str, float, str]:
    """(verdict, seconds, detail); verdict is ok, diagnostic, exception, over-budget or hung."""
    start = time.perf_counter()
    signal.setitimer(signal.ITIMER_REAL, max(1.0, budget * 5))
    try:
        doc = hocon.parse(text, "fuzz.conf")
        value = hocon.resolve([doc]).value
        for fmt in Format:
            render(value, fmt)
        verdict, detail = "ok", ""
    except hocon.HoconError as e:
        verdict, detail = "diagnostic", f"{e.code} {str(e)[:200]}"
        if not e.code.startswith("E_"):
            verdict, detail = "exception", f"HoconError without a code: {e}"
    except _Alarm:
        verdict, detail = "hung", f"interrupted after {budget * 5:.1f} s"
    except BaseException as e:
        verdict, detail = "exception", "".join(traceback.format_exception(type(e), e, e.__traceback__)[-6:])
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    elapsed = time.perf_counter() - start
    if verdict in ("ok", "diagnostic") and elapsed > budget:
        verdict, detail = "over-budget", f"{elapsed:.2f} s ({verdict})"
    return verdict, elapsed, detail


def in_subprocess(text: str, budget: float, work: Path) -> tuple[str, float, str]:
    path = work / "doc.conf"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    out = run_limited(
        [*cfgtool_command(), "hocon", str(path)],
        env={"CFGTOOL_DEBUG": "1"},
        mem_mb=1536,
        cpu_s=int(budget * 4) + 2,
        wall_s=budget * 6 + 5,
    )
    if out.timed_out or out.signal:
        return "hung", out.wall, out.summary()
    if out.returncode not in (0, 1) or ("Traceback" in out.stderr and "HoconError" not in out.stderr):
        return "exception", out.wall, f"{out.summary()} {out.exception()} at {out.deepest_cfgtool_frame()}"
    if out.returncode == 1 and not out.codes:
        return "exception", out.wall, f"exit 1 without a code: {out.stderr[-300:]}"
    if out.cpu > budget + 0.5:  # the interpreter's start-up is about 0.4 s
        return "over-budget", out.wall, out.summary()
    return ("ok" if out.returncode == 0 else "diagnostic"), out.wall, ""


def draw(rng: random.Random, max_size: int) -> tuple[str, str, bool]:
    """(label, text, dangerous)."""
    if rng.random() < 0.5:
        shape, text = gen.random_document(rng, max_size)
        return shape, text, shape in DANGEROUS_SHAPES or len(text) > IN_PROCESS_MAX
    rounds = rng.randint(1, 8)
    text = gen.mutate(rng, rng.choice(gen.VALID_SEEDS), rounds)
    return f"mutation x{rounds}", text, len(text) > IN_PROCESS_MAX


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to fuzz")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"), help="where findings are saved")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds one document may take")
    parser.add_argument("--max-size", type=int, default=300_000, help="largest generated document (characters)")
    args = parser.parse_args(argv)
    print_machine()

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY or soft > IN_PROCESS_MEM:
        resource.setrlimit(resource.RLIMIT_AS, (IN_PROCESS_MEM, hard))
    signal.signal(signal.SIGALRM, _on_alarm)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    args.out.mkdir(parents=True, exist_ok=True)
    work = args.out / ".work"
    work.mkdir(exist_ok=True)

    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.seconds
    counts: dict[str, int] = {}
    findings = 0
    n = 0
    while time.monotonic() < deadline:
        n += 1
        label, text, dangerous = draw(rng, args.max_size)
        mode = "subprocess" if dangerous else "in-process"
        verdict, elapsed, detail = (
            in_subprocess(text, args.budget, work) if dangerous else in_process(text, args.budget)
        )
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict in ("ok", "diagnostic"):
            continue
        findings += 1
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        (args.out / f"{digest}.conf").write_text(text, encoding="utf-8", errors="surrogatepass")
        note = {
            "verdict": verdict,
            "shape": label,
            "mode": mode,
            "seconds": round(elapsed, 2),
            "chars": len(text),
            "seed": args.seed,
            "index": n,
            "detail": detail,
        }
        (args.out / f"{digest}.json").write_text(json.dumps(note, indent=2) + "\n", encoding="utf-8")
        first = detail.strip().splitlines()[-1] if detail.strip() else ""
        print(
            f"[{n}] {verdict:11} {label:18} {len(text):>8} chars {elapsed:6.2f} s {mode:10} "
            f"-> {args.out / digest}.conf  {first[:160]}",
            flush=True,
        )
    print(
        f"{n} documents in {args.seconds:.0f} s, seed {args.seed}: {json.dumps(counts, sort_keys=True)}; "
        f"{findings} findings in {args.out}"
    )
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
