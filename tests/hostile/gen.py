"""Generators of hostile HOCON input (docs/security.md: hostile input ends with a diagnostic in bounded time and
memory).

Each `case_*` function returns HOCON text and takes its size as a parameter, so the same shape can be measured at
several sizes (to see whether time grows linearly). `store_*` functions return a mapping of store-relative paths to
file contents, for cases that need a store (import chains, text every node inherits). `random_document` draws one
document of a random hostile shape from a seeded `random.Random`; `mutate` damages a valid document.

Nothing here imports cfgtool: the fuzzer and the tests run the engine in subprocesses with resource limits.
"""

from __future__ import annotations

import itertools
import random
import string
from collections.abc import Callable

# ---------------------------------------------------------------------------------------------------------------
# The reported cases, each parametrized by its size.


def case_big_int(digits: int = 5_000) -> str:
    """An integer literal longer than Python's int-to-string limit (4,300 digits): `str(int)` raises ValueError."""
    return "a = 1" + "2" * (digits - 1) + "\n"


def case_big_negative_float(digits: int = 5_000) -> str:
    """A number with a huge integer part and an exponent (parsed as float, or as an int then overflowing)."""
    return "a = -" + "9" * digits + ".5e" + "9" * 8 + "\n"


def case_big_int_in_concat(digits: int = 5_000) -> str:
    """A huge integer used in a string concatenation (rendered to text during resolution, not output)."""
    return "a = 1" + "3" * (digits - 1) + "\nb = x${a}\n"


def case_deep_dotted_key(depth: int = 600) -> str:
    """One dotted key `k.k.k....k = 1` with `depth` segments: objects nested `depth` deep without a brace."""
    return ".".join(["k"] * depth) + " = 1\n"


def dotted_path(depth: int) -> str:
    return ".".join(["k"] * depth)


def case_deep_braces(depth: int = 10_000) -> str:
    """Objects nested with braces far past the parser's limit."""
    return "a = " + "{b:" * depth + "1" + "}" * depth + "\n"


def case_deep_arrays(depth: int = 10_000) -> str:
    return "a = " + "[" * depth + "1" + "]" * depth + "\n"


def case_spaces_backslash(spaces: int = 20_000) -> str:
    """A long run of spaces followed by a lone backslash (a lexer error at the end of a long unquoted run)."""
    return " " * spaces + "\\"


def case_run_then_bad(count: int = 20_000, run: str = " ", bad: str = "\\") -> str:
    """A long run of one character followed by one that ends in an error: the general form of the above."""
    return run * count + bad


def case_many_dotted_fields(count: int = 100_000) -> str:
    """`a.kI = I` for I below `count`: many fields under one dotted prefix (each line merges into `a`)."""
    return "".join(f"a.k{i} = {i}\n" for i in range(count))


def case_subst_chain(links: int = 14_000) -> str:
    """`k0 = 0`, `kI = ${kI-1}`: one long chain of substitutions, each through the previous."""
    return "k0 = 0\n" + "".join(f"k{i} = ${{k{i - 1}}}\n" for i in range(1, links))


def case_subst_chain_reversed(links: int = 14_000) -> str:
    """The same chain written last link first, so resolution meets the deepest reference first."""
    lines = [f"k{i} = ${{k{i - 1}}}\n" for i in range(links - 1, 0, -1)]
    return "".join(lines) + "k0 = 0\n"


def case_expansion_bomb(width: int = 10, levels: int = 8) -> str:
    """`a = [1,...]`, `b = [${a},...]`, `c = [${b},...]`, ...: width**levels values from a few hundred bytes."""
    names = [f"l{i}" for i in range(levels)]
    lines = [f"{names[0]} = [" + ",".join(["1"] * width) + "]"]
    for prev, name in itertools.pairwise(names):
        lines.append(f"{name} = [" + ",".join([f"${{{prev}}}"] * width) + "]")
    return "\n".join(lines) + "\n"


def case_string_bomb(width: int = 10, levels: int = 8) -> str:
    """A string doubling through concatenation: `s1 = ${s0}${s0}...`: width**levels characters."""
    lines = ['s0 = "' + "x" * width + '"']
    for i in range(1, levels):
        lines.append(f"s{i} = " + "".join([f"${{s{i - 1}}}"] * width))
    return "\n".join(lines) + "\n"


def case_object_bomb(width: int = 10, levels: int = 8) -> str:
    """Objects that each hold `width` copies of the previous level (`o1 = {a: ${o0}, b: ${o0}, ...}`)."""
    lines = ["o0 = {x: 1, y: 2}"]
    for i in range(1, levels):
        lines.append(f"o{i} = {{" + ", ".join(f"f{j}: ${{o{i - 1}}}" for j in range(width)) + "}")
    return "\n".join(lines) + "\n"


def case_array_of_objects(count: int = 1_000_000) -> str:
    """One array of `count` small objects."""
    return "a = [" + ",".join(["{x:1}"] * count) + "]\n"


def case_append_repeated(count: int = 100_000) -> str:
    """`a += 1` repeated `count` times: each `+=` is `a = ${?a} [1]`, a chain through the previous value."""
    return "a = []\n" + "a += 1\n" * count


def case_self_ref_repeated(count: int = 100_000) -> str:
    """`a = ${a}x` repeated: a self-referential chain of string concatenations."""
    return 'a = "x"\n' + "a = ${a}x\n" * count


def case_long_line(size: int = 1_000_000) -> str:
    """One unquoted value a megabyte long on one line."""
    return "a = " + "x" * size + "\n"


def case_long_quoted_string(size: int = 1_000_000) -> str:
    return 'a = "' + "y" * size + '"\n'


def case_long_comment(size: int = 1_000_000) -> str:
    return "#" + "c" * size + "\na = 1\n"


def case_unterminated_string(size: int = 1_000_000) -> str:
    return 'a = "' + "z" * size


def case_unterminated_triple(size: int = 1_000_000) -> str:
    return 'a = """' + "z" * size


def case_unterminated_braces(count: int = 300) -> str:
    return "a = " + "{b = " * count


def case_unterminated_subst(size: int = 100_000) -> str:
    return "a = ${" + "b." * size


def case_many_keys(count: int = 100_000) -> str:
    """`kI = I` at the root: many top-level fields (the linear baseline for the dotted-prefix case)."""
    return "".join(f"k{i} = {i}\n" for i in range(count))


def case_many_substitutions(count: int = 100_000) -> str:
    """Many independent substitutions of one value."""
    return "x = 1\n" + "".join(f"k{i} = ${{x}}\n" for i in range(count))


def case_many_same_key(count: int = 100_000) -> str:
    """The same key assigned `count` times (each overrides the previous)."""
    return "".join(f"a = {i}\n" for i in range(count))


def case_many_object_merges(count: int = 100_000) -> str:
    """The same object assigned `count` times: each merges into the previous."""
    return "".join(f"a {{ k{i % 100} = {i} }}\n" for i in range(count))


def case_odd_unicode(count: int = 50_000) -> str:
    """Keys and values of surrogate-escapes, combining marks, RTL marks, NULs and BOMs."""
    pieces = ["\u202e", "\u0301", "\ufeff", "\x00", "\u2028", "\U0001f600", "\ud7ff", "\u200b", "\\u0000"]
    lines = []
    for i in range(count // 10):
        p = pieces[i % len(pieces)]
        lines.append(f'"k{i}{p}" = "v{p}{i}"')
    return "\n".join(lines) + "\n"


def case_long_key(size: int = 1_000_000) -> str:
    return "k" * size + " = 1\n"


def case_long_path_subst(depth: int = 100_000) -> str:
    """A substitution with a path of many segments."""
    return "a = ${" + ".".join(["p"] * depth) + "}\n"


def case_includes(count: int = 10_000) -> str:
    """Many include statements of files that do not exist (or a reader that refuses them)."""
    return "".join(f'include "f{i}.conf"\n' for i in range(count))


# The reported cases and the generic shapes: (name, generator, the size the tests use, a megabyte size).
# The megabyte size makes the text about 1 MB, the size the budget speaks of (5 s, 500 MB).
Generator = Callable[[int], str]
CASES: dict[str, tuple[Generator, int]] = {
    "big_int": (case_big_int, 5_000),
    "big_float": (case_big_negative_float, 5_000),
    "big_int_concat": (case_big_int_in_concat, 5_000),
    "deep_dotted_key": (case_deep_dotted_key, 600),
    "deep_braces": (case_deep_braces, 10_000),
    "deep_arrays": (case_deep_arrays, 10_000),
    "spaces_backslash": (case_spaces_backslash, 20_000),
    "many_dotted_fields": (case_many_dotted_fields, 100_000),
    "subst_chain": (case_subst_chain, 14_000),
    "subst_chain_reversed": (case_subst_chain_reversed, 14_000),
    "array_of_objects": (case_array_of_objects, 1_000_000),
    "append_repeated": (case_append_repeated, 100_000),
    "self_ref_repeated": (case_self_ref_repeated, 100_000),
    "long_line": (case_long_line, 1_000_000),
    "long_quoted_string": (case_long_quoted_string, 1_000_000),
    "long_comment": (case_long_comment, 1_000_000),
    "unterminated_string": (case_unterminated_string, 1_000_000),
    "unterminated_triple": (case_unterminated_triple, 1_000_000),
    "unterminated_braces": (case_unterminated_braces, 300),
    "unterminated_subst": (case_unterminated_subst, 100_000),
    "many_keys": (case_many_keys, 100_000),
    "many_substitutions": (case_many_substitutions, 100_000),
    "many_same_key": (case_many_same_key, 100_000),
    "many_object_merges": (case_many_object_merges, 50_000),
    "odd_unicode": (case_odd_unicode, 50_000),
    "long_key": (case_long_key, 1_000_000),
    "long_path_subst": (case_long_path_subst, 100_000),
    "expansion_bomb": (lambda n: case_expansion_bomb(10, n), 9),
    "string_bomb": (lambda n: case_string_bomb(10, n), 9),
    "object_bomb": (lambda n: case_object_bomb(10, n), 9),
}


# The cases whose size does not scale the text (bombs: the text stays small, the value explodes; depth: bounded by
# the parser) are left out of the megabyte set: their own size already is the hostile part.
NOT_SCALABLE = {"expansion_bomb", "string_bomb", "object_bomb", "unterminated_braces", "deep_dotted_key"}
MEGABYTE = 1_000_000


def megabyte_size(name: str, target: int = MEGABYTE) -> int:
    """The size parameter that makes case `name` about `target` characters long (the generators are linear)."""
    fn, size = CASES[name]
    probe = max(1, size // 100)
    per_unit = (len(fn(2 * probe)) - len(fn(probe))) / probe
    fixed = len(fn(probe)) - per_unit * probe
    return max(1, int((target - fixed) / max(per_unit, 1e-9)))


def megabyte_text(name: str, target: int = MEGABYTE) -> str:
    return CASES[name][0](megabyte_size(name, target))


def megabyte_bomb(kind: Callable[[int, int], str], target: int = MEGABYTE) -> str:
    """A bomb that is itself a megabyte: very wide levels (the expansion is astronomical)."""
    probe = len(kind(100, 6))
    return kind(max(2, 100 * target // probe), 6)


# ---------------------------------------------------------------------------------------------------------------
# Store cases: a mapping of paths under the store directory to their contents, to write over a scaffolded store.


def root_bomb(width: int = 20, levels: int = 4) -> str:
    """A few hundred bytes that expand to width**levels values; at the store root, every node inherits them."""
    return case_expansion_bomb(width, levels)


def store_root_bomb(width: int = 20, levels: int = 4) -> dict[str, str]:
    """The expansion bomb in the root node's main.conf (`/`): every node of the store inherits it."""
    return {"main.conf": root_bomb(width, levels)}


def store_import_chain(depth: int = 1_000) -> dict[str, str]:
    """Tags /tags/chain/tI, each importing tI-1, and the dataset /data/orders importing the last: a chain `depth`
    imports long."""
    files: dict[str, str] = {}
    for i in range(depth):
        files[f"tags/chain/t{i}/main.conf"] = f"chain{i} = {i}\n"
        if i:
            files[f"tags/chain/t{i}/includes"] = f"/tags/chain/t{i - 1}\n"
    files["data/orders/includes"] = f"/tags/retention/LONG\n/tags/chain/t{depth - 1}\n"
    return files


def store_chain(depth: int, name: str = "link") -> dict[str, str]:
    """Tags /tags/NAME/nI, each setting `link = I` and importing nI-1: the input grows linearly with `depth`,
    and so does the output (every L(K) holds the nodes before it, but the config is one value)."""
    files: dict[str, str] = {}
    for i in range(depth):
        files[f"tags/{name}/n{i}/main.conf"] = f"link = {i}\n" + ("copy = ${link}\n" if i % 10 == 0 else "")
        if i:
            files[f"tags/{name}/n{i}/includes"] = f"/tags/{name}/n{i - 1}\n"
    return files


def store_many_imports(count: int = 2_000) -> dict[str, str]:
    """One dataset importing `count` tags (wide rather than deep)."""
    files: dict[str, str] = {f"tags/wide/t{i}/main.conf": f"w{i} = {i}\n" for i in range(count)}
    files["data/orders/includes"] = "".join(f"/tags/wide/t{i}\n" for i in range(count))
    return files


def store_deep_node(depth: int = 600) -> dict[str, str]:
    """A dataset whose main.conf holds a dotted key `depth` segments deep."""
    return store_node_text(case_deep_dotted_key(depth))


ORDERS_HEADER = 'description = "Orders"\nowner = checkout-team\npartitions = 16\n'


def store_node_text(text: str, node: str = "data/orders") -> dict[str, str]:
    """`text` as the main.conf of the scaffold's dataset (after the fields its schema requires)."""
    return {f"{node}/main.conf": ORDERS_HEADER + text}


# ---------------------------------------------------------------------------------------------------------------
# Random shapes, for the fuzzer and the property-style tests.

_UNICODE = ["\u202e", "\u0301", "\ufeff", "\x00", "\u2028", "\U0001f600", "\u200b", "é", "\t", "\r", "\x7f", "\\"]
_PUNCT = [*list("{}[]()=:+,.$?\"'#/\\\n\t "), "${", "+=", '"""', "//", "${?"]


def _ident(rng: random.Random) -> str:
    return rng.choice(string.ascii_lowercase) + "".join(rng.choices(string.ascii_lowercase + string.digits, k=3))


def _shape_deep_nesting(rng: random.Random, size: int) -> str:
    depth = rng.randint(10, max(11, size // 4))
    opener, closer = rng.choice([("{a:", "}"), ("[", "]"), ("{", "}"), ("a {", "}")])
    closed = rng.random() < 0.7
    return "x = " + opener * depth + "1" + (closer * depth if closed else "") + "\n"


def _shape_long_line(rng: random.Random, size: int) -> str:
    ch = rng.choice([" ", "x", "\t", "a.", "1", "${a}", "\\"])
    return "x = " + ch * (size // len(ch)) + rng.choice(["", "\\", "\n", '"', "$", "{"])


def _shape_many_keys(rng: random.Random, size: int) -> str:
    n = max(1, size // 12)
    prefix = rng.choice(["", "a.", "a.b.", "a.b.c.d."])
    return "".join(f"{prefix}k{i} = {i}\n" for i in range(n))


def _shape_long_string(rng: random.Random, size: int) -> str:
    quote = rng.choice(['"', '"""'])
    body = "".join(rng.choices(string.printable.replace('"', "").replace("\\", ""), k=size))
    return f"x = {quote}{body}{quote if rng.random() < 0.8 else ''}\n"


def _shape_many_substitutions(rng: random.Random, size: int) -> str:
    n = max(2, size // 16)
    lines = ["k0 = 1"]
    for i in range(1, n):
        ref = rng.randrange(i) if rng.random() < 0.5 else i - 1
        lines.append(f"k{i} = ${{k{ref}}}" + rng.choice(["", " x", "[1]", "{}"]) * (rng.random() < 0.2))
    return "\n".join(lines) + "\n"


def _shape_expansion_bomb(rng: random.Random, size: int) -> str:
    kind = rng.choice([case_expansion_bomb, case_string_bomb, case_object_bomb])
    return kind(rng.randint(2, 30), rng.randint(2, 12))


def _shape_long_comment(rng: random.Random, size: int) -> str:
    marker = rng.choice(["#", "//"])
    return marker + "c" * size + rng.choice(["", "\na = 1\n"])


def _shape_huge_number(rng: random.Random, size: int) -> str:
    digits = rng.randint(4_000, max(4_001, size))
    body = "".join(rng.choices(string.digits, k=digits))
    form = rng.choice(["{d}", "-{d}", "{d}.5", "0.{d}", "{d}e10", "1e{d}", "{d}E-{d}"])
    return "x = " + form.format(d=body[: max(1, digits // 2)] if "e" in form.lower() else body) + "\ny = ${x}\n"


def _shape_odd_unicode(rng: random.Random, size: int) -> str:
    n = max(1, size // 20)
    out = []
    for i in range(n):
        a, b = rng.choice(_UNICODE), rng.choice(_UNICODE)
        out.append(rng.choice([f'"k{a}{i}" = "{b}"', f"k{i} = v{b}", f'k{i} = "\\u{rng.randrange(0x10000):04x}"']))
    return "\n".join(out) + "\n"


def _shape_unterminated(rng: random.Random, size: int) -> str:
    start = rng.choice(['x = "', 'x = """', "x = ${", "x = ${?a.b", "x = {", "x = [", "include ", 'include file("'])
    return start + "a" * rng.randint(0, size)


def _shape_self_chain(rng: random.Random, size: int) -> str:
    n = max(1, size // 10)
    stmt = rng.choice(["a += 1\n", "a = ${a}x\n", "a = ${a} [1]\n", "a = ${?a}{b: 1}\n", "a.b += {c: 1}\n"])
    return rng.choice(["a = []\n", 'a = "s"\n', "a = {}\n", ""]) + stmt * n


def _shape_dotted_depth(rng: random.Random, size: int) -> str:
    depth = rng.randint(50, max(51, size // 2))
    key = ".".join(rng.choice(["k", '"q"', "a b", "1"]) for _ in range(depth))
    return key + rng.choice([" = 1\n", " = ${x}\nx = 1\n", " += 1\n", " { a = 1 }\n"])


def _shape_mixed_garbage(rng: random.Random, size: int) -> str:
    return "".join(rng.choice(_PUNCT + list(string.ascii_letters[:6]) + _UNICODE) for _ in range(size))


SHAPES: dict[str, Callable[[random.Random, int], str]] = {
    "deep_nesting": _shape_deep_nesting,
    "long_line": _shape_long_line,
    "many_keys": _shape_many_keys,
    "long_string": _shape_long_string,
    "many_substitutions": _shape_many_substitutions,
    "expansion_bomb": _shape_expansion_bomb,
    "long_comment": _shape_long_comment,
    "huge_number": _shape_huge_number,
    "odd_unicode": _shape_odd_unicode,
    "unterminated": _shape_unterminated,
    "self_chain": _shape_self_chain,
    "dotted_depth": _shape_dotted_depth,
    "mixed_garbage": _shape_mixed_garbage,
}


def random_document(rng: random.Random, max_size: int = 200_000) -> tuple[str, str]:
    """(shape name, text) of one random hostile document of at most about `max_size` characters."""
    name = rng.choice(sorted(SHAPES))
    size = int(max_size ** rng.random())  # log-uniform: many small documents, some large
    return name, SHAPES[name](rng, max(1, size))


VALID_SEEDS = [
    'a = 1\nb = "two"\nc = [1, 2, ${a}]\nd { e = ${b}" three", f = ${?missing} }\n',
    "x { y { z = 1 } }\nx.y.w = ${x.y.z}\nlist = [{a: 1}, {b: ${x}}]\nlist += {c: 3}\n",
    's = "hello"\nt = ${s} world\nu = """raw\n  text"""\nv = 1.5e3\nw = true\nn = null\n',
    "base { a = 1, b = 2 }\nderived = ${base} { b = 3 }\nderived.c = ${derived.a}\n",
    "// comment\n# another\narr = [1,2,3]\narr2 = ${arr} [4]\nobj = { k: ${arr2} }\n",
]


def mutate(rng: random.Random, text: str, rounds: int = 3) -> str:
    """Damage a valid document: duplicate, delete, insert punctuation, repeat a slice many times."""
    for _ in range(rounds):
        if not text:
            text = rng.choice(VALID_SEEDS)
        i = rng.randrange(len(text) + 1)
        j = min(len(text), i + rng.randint(0, 40))
        op = rng.randrange(6)
        if op == 0:  # delete
            text = text[:i] + text[j:]
        elif op == 1:  # insert punctuation
            text = text[:i] + rng.choice(_PUNCT) + text[i:]
        elif op == 2:  # insert odd unicode
            text = text[:i] + rng.choice(_UNICODE) + text[i:]
        elif op == 3:  # repeat a slice many times (blow-ups)
            text = text[:i] + text[i:j] * rng.choice([2, 10, 100, 1000, 10_000]) + text[j:]
        elif op == 4:  # splice another seed in
            text = text[:i] + rng.choice(VALID_SEEDS) + text[i:]
        else:  # duplicate whole document (re-definitions, merges)
            text = text * rng.choice([2, 3, 50])
        if len(text) > 2_000_000:
            text = text[:2_000_000]
    return text
