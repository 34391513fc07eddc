"""Hostile input (docs/security.md): every input ends with a value or a diagnostic in bounded time and memory.

Each case runs in a subprocess with an address-space and CPU limit (tests/hostile/runner.py), so a runaway input
fails its test instead of taking the machine down. The limits are generous (the target is 5 s and 500 MB for
a megabyte of input; the tests allow 1.5 GB of address space and 20 s of CPU, or 30 s of wall time on a loaded
machine) so they cannot flake; the megabyte tests also check the measured CPU time and peak RSS against twice the
target. Exit 3 (an internal error), a traceback, MemoryError or RecursionError is always a failure.
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hostile import gen
from tests.hostile.runner import Outcome, cfgtool_command, engine_command, make_store, run_limited
from tests.machine import SLOW

MEM_MB = 1536  # address-space limit of each child (RSS stays well below its address space)
CPU_S = round(20 * SLOW)
WALL_S = 30.0 * SLOW
TARGET_CPU_S = 10.0 * SLOW  # twice the 5 s target for a megabyte of input (CPU time: unaffected by others' load)
TARGET_RSS_MB = 750.0  # 500 MB plus the margin a CPython process and its imports take

# Which diagnostics each standalone case may end with. None: a value (exit 0) or any diagnostic is fine, as long
# as it ends in bounds; a set: the case must end with exit 1 and one of these codes.
EXPECTED: dict[str, set[str] | None] = {
    "deep_braces": {"E_LIMIT"},
    "deep_arrays": {"E_LIMIT"},
    "spaces_backslash": {"E_SYNTAX"},
    "unterminated_string": {"E_SYNTAX"},
    "unterminated_triple": {"E_SYNTAX"},
    "unterminated_braces": {"E_SYNTAX", "E_LIMIT"},
    "unterminated_subst": {"E_SYNTAX"},
    "expansion_bomb": {"E_LIMIT"},
    "string_bomb": {"E_LIMIT"},
    "object_bomb": {"E_LIMIT"},
    "long_path_subst": {"E_UNRESOLVED_REF", "E_LIMIT"},
}


def assert_bounded(out: Outcome, expected: set[str] | None = None) -> None:
    """The process ended by itself, with a value or a diagnostic, never an internal error."""
    assert not out.timed_out, f"no answer within {WALL_S} s (killed)\n{out.report()}"
    assert out.signal is None, f"killed by a signal (CPU or memory limit)\n{out.report()}"
    assert out.returncode != 3, f"exit 3: an internal error\n{out.report()}"
    assert "Traceback" not in out.stderr, f"a traceback on stderr\n{out.report()}"
    for bad in ("MemoryError", "RecursionError", "internal error"):
        assert bad not in out.stderr, f"{bad} on stderr\n{out.report()}"
    assert out.returncode in (0, 1), f"unexpected exit status\n{out.report()}"
    if out.returncode == 1:
        assert out.codes, f"exit 1 without a diagnostic code\n{out.report()}"
    if expected is not None:
        assert out.returncode == 1 and set(out.codes) & expected, f"expected one of {sorted(expected)}\n{out.report()}"


def run_hocon(path: Path, *args: str) -> Outcome:
    return run_limited([*cfgtool_command(), "hocon", str(path), *args], mem_mb=MEM_MB, cpu_s=CPU_S, wall_s=WALL_S)


def write(tmp_path: Path, text: str, name: str = "hostile.conf") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return path


# -- standalone: `cfgtool hocon FILE` -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(gen.CASES))
def test_standalone_case(name: str, tmp_path: Path) -> None:
    """Each reported case (and the generic shapes) at the size it was reported at."""
    fn, size = gen.CASES[name]
    assert_bounded(run_hocon(write(tmp_path, fn(size))), EXPECTED.get(name))


@pytest.mark.parametrize("fmt", ["json", "hocon", "yaml", "properties"])
def test_standalone_deep_dotted_key_renders(fmt: str, tmp_path: Path) -> None:
    """A dotted key 600 segments deep (no brace: the parser's nesting limit does not see it), in every format."""
    assert_bounded(run_hocon(write(tmp_path, gen.case_deep_dotted_key(600)), "--format", fmt))


def test_standalone_deeper_dotted_key(tmp_path: Path) -> None:
    """2,000 segments: deeper than json.dumps's own recursion limit."""
    assert_bounded(run_hocon(write(tmp_path, gen.case_deep_dotted_key(2_000))))


def test_standalone_big_int_renders_as_hocon(tmp_path: Path) -> None:
    assert_bounded(run_hocon(write(tmp_path, gen.case_big_int(5_000)), "--format", "hocon"))


MEGABYTE_CASES = sorted(n for n in gen.CASES if n not in gen.NOT_SCALABLE)
MEGABYTE_BOMBS: dict[str, Callable[[int, int], str]] = {
    "expansion_bomb": gen.case_expansion_bomb,
    "string_bomb": gen.case_string_bomb,
    "object_bomb": gen.case_object_bomb,
}


def assert_within_target(out: Outcome) -> None:
    assert out.cpu <= TARGET_CPU_S, f"a megabyte took {out.cpu:.1f} s of CPU (target 5 s)\n{out.report()}"
    assert out.peak_rss_mb <= TARGET_RSS_MB, f"a megabyte took {out.peak_rss_mb:.0f} MB (target 500)\n{out.report()}"


@pytest.mark.parametrize("name", MEGABYTE_CASES)
def test_standalone_megabyte(name: str, tmp_path: Path) -> None:
    """The budget: a megabyte of any shape is answered in 5 s and 500 MB (checked here with a 2x margin)."""
    out = run_hocon(write(tmp_path, gen.megabyte_text(name)))
    assert_bounded(out, EXPECTED.get(name))
    assert_within_target(out)


@pytest.mark.parametrize("name", sorted(MEGABYTE_BOMBS))
def test_standalone_megabyte_bomb(name: str, tmp_path: Path) -> None:
    out = run_hocon(write(tmp_path, gen.megabyte_bomb(MEGABYTE_BOMBS[name])))
    assert_bounded(out, {"E_LIMIT"})
    assert_within_target(out)


def test_standalone_many_dotted_fields_is_linear(tmp_path: Path) -> None:
    """`a.kI = I`: ten times the fields must not take a hundred times as long (the dict copy per line)."""
    small = run_hocon(write(tmp_path, gen.case_many_dotted_fields(5_000), "small.conf"))
    large = run_hocon(write(tmp_path, gen.case_many_dotted_fields(50_000), "large.conf"))
    assert_bounded(small)
    assert_bounded(large)
    baseline = 0.4  # the interpreter's start-up, the same in both
    ratio = (large.cpu - baseline) / max(small.cpu - baseline, 0.05)
    assert ratio < 30, f"10x the input took {ratio:.0f}x the time: quadratic\n{small.summary()}\n{large.summary()}"


# -- the engine in-process, random shapes ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_random_shapes(seed: int, tmp_path: Path) -> None:
    """Random hostile shapes (seeded): parse + resolve + JSON in a limited subprocess, one per document."""
    rng = random.Random(seed)
    for i in range(6):
        shape, text = gen.random_document(rng, max_size=100_000)
        out = run_limited(
            engine_command(write(tmp_path, text, f"doc{i}.conf")), mem_mb=MEM_MB, cpu_s=CPU_S, wall_s=WALL_S
        )
        try:
            assert_bounded(out)
        except AssertionError as e:
            raise AssertionError(f"seed {seed} document {i} (shape {shape}, {len(text)} chars): {e}") from None


@pytest.mark.parametrize("seed", range(2))
def test_mutated_documents(seed: int, tmp_path: Path) -> None:
    rng = random.Random(1000 + seed)
    for i in range(6):
        text = gen.mutate(rng, rng.choice(gen.VALID_SEEDS), rounds=rng.randint(1, 6))
        out = run_limited(
            engine_command(write(tmp_path, text, f"doc{i}.conf")), mem_mb=MEM_MB, cpu_s=CPU_S, wall_s=WALL_S
        )
        try:
            assert_bounded(out)
        except AssertionError as e:
            raise AssertionError(f"seed {seed} document {i} ({len(text)} chars, {text[:200]!r}): {e}") from None


# -- stores: compile, get, explain -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scaffold(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One `cfgtool init` store per worker, copied by each test."""
    return make_store(tmp_path_factory.mktemp("scaffold") / "repo")


@pytest.fixture
def new_store(scaffold: Path, tmp_path: Path) -> Callable[..., Path]:
    def make(files: dict[str, str], name: str = "repo") -> Path:
        root = tmp_path / name
        shutil.copytree(scaffold, root, symlinks=True)
        for rel, text in files.items():
            path = root / "store" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return root

    return make


def run_store(root: Path, *args: str) -> Outcome:
    return run_limited([*cfgtool_command(), *args], cwd=root, mem_mb=MEM_MB, cpu_s=CPU_S, wall_s=WALL_S)


DEEP = gen.dotted_path(600)
STORE_COMMANDS = {
    "compile": ("compile",),
    "get": ("get", "/data/orders"),
    "get-json": ("get", "/data/orders", "-f", "json"),
    "get-yaml": ("get", "/data/orders", "-f", "yaml"),
    "get-path": ("get", "/data/orders", DEEP),
    "explain": ("explain", "/data/orders", DEEP),
}


@pytest.mark.parametrize("command", sorted(STORE_COMMANDS))
def test_store_deep_dotted_key(command: str, new_store: Callable[[dict[str, str]], Path]) -> None:
    """A dataset's main.conf with a dotted key 600 segments deep: compiled, cached, rendered and explained."""
    root = new_store(gen.store_deep_node(600))
    assert_bounded(run_store(root, *STORE_COMMANDS[command]))


def test_store_deep_array_explained(new_store: Callable[[dict[str, str]], Path]) -> None:
    """Arrays nested 395 deep (inside the parser's limit of 400): `explain` describes the value."""
    root = new_store(gen.store_node_text("x = " + "[" * 395 + "1" + "]" * 395 + "\n"))
    assert_bounded(run_store(root, "explain", "/data/orders", "x"))
    assert_bounded(run_store(root, "get", "/data/orders", "x"))


@pytest.mark.parametrize("command", ["compile", "get", "explain"])
def test_store_import_chain(command: str, new_store: Callable[[dict[str, str]], Path]) -> None:
    """Tags importing each other in a chain 1,000 long, imported by a dataset."""
    root = new_store(gen.store_import_chain(1_000))
    args = {"compile": ("compile",), "get": ("get", "/data/orders"), "explain": ("explain", "/data/orders", "chain0")}
    assert_bounded(run_store(root, *args[command]))


def test_store_import_chain_is_linear(new_store: Callable[[dict[str, str]], Path]) -> None:
    """Nodes each importing the one before: four times the depth must not take sixteen times as long (each node
    merged its whole L again, and the builder's memo hashed every suffix of it: cubic)."""
    none = new_store({}, "none")
    run_store(none, "compile")  # parses the scaffold's files into the parse cache, as they are for the two below
    base = run_store(none, "compile")  # start-up and the scaffold's own nodes, in all three
    small = run_store(new_store(gen.store_chain(400, "short"), "short"), "compile")
    large = run_store(new_store(gen.store_chain(1_600, "long"), "long"), "compile")  # one process: < 2,000 nodes
    for out in (base, small, large):
        assert_bounded(out)
    ratio = (large.cpu - base.cpu) / max(small.cpu - base.cpu, 0.05)
    # about 6 now (the scaffold's nodes cached alike in the three); quadratic is 16, the cubic merge it guards 64
    assert ratio < 12, f"4x the depth took {ratio:.0f}x the time: not linear\n{small.summary()}\n{large.summary()}"


@pytest.mark.parametrize("case", ["big_int", "spaces_backslash", "string_bomb", "append_repeated"])
def test_store_node_text(case: str, new_store: Callable[[dict[str, str]], Path]) -> None:
    """Standalone cases in a dataset's main.conf, through `cfgtool compile`."""
    fn, size = gen.CASES[case]
    root = new_store(gen.store_node_text(fn(size)))
    assert_bounded(run_store(root, "compile"))


@pytest.fixture
def embedded_store(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    return lambda files: make_store(tmp_path / "embedded", files, embedded=True)


@pytest.mark.parametrize(("width", "levels"), [(26, 4), (20, 5)])
def test_store_root_bomb(width: int, levels: int, embedded_store: Callable[[dict[str, str]], Path]) -> None:
    """A few hundred bytes at `/` that every one of the embedded store's 48 nodes inherits, expanding to
    width**levels values in each: a store-wide budget must end it with E_LIMIT (as reported: 547 bytes took 106 s
    and 8.1 GB)."""
    files = gen.store_root_bomb(width, levels)
    assert len(files["main.conf"]) < 700
    root = embedded_store(files)
    out = run_store(root, "compile")
    assert_bounded(out, {"E_LIMIT"})
    assert_within_target(out)
    out = run_store(root, "get", "/data/tracking/PageViewEvent")
    assert_bounded(out)
    assert_within_target(out)
