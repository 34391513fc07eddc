"""A seeded random generator of small, LAYERED HOCON cases for the differential test against Lightbend.

`case(seed)` gives 1 to 3 document texts, highest priority first (the order `cfgtool.hocon.resolve` and
Lightbend's `withFallback` chain take). Documents are small (a few to ~15 statements) and draw keys from a
tiny alphabet, so duplicate keys, references, self-references and cross-layer overrides actually collide.

Covered: objects, nested objects, dotted and quoted keys (also quoted keys holding a dot), `=`, `:` and the
`key {` form, `+=`, arrays, value concatenation of strings, of objects (`{..} {..}`, `${a} {..}`) and of
arrays (`[..] [..]`, `${a} [..]`), self-references (`a = ${a} "x"`, `a = ${?a} [..]`), forward and backward
references, optional substitutions defined and undefined, duplicate keys, `null` over objects across layers,
`#` and `//` comments (own line and trailing), triple-quoted strings, numbers in many spellings (some that
JSON does not allow: `-.5`, `1.`, `01`, huge integers), booleans, unquoted strings with inner spaces, and
now and then a concatenation that mixes kinds (`[1] x`), which is an error or a known Lightbend bug.
"""

from __future__ import annotations

import random

KEYS = ("a", "b", "c", "x", "y")
QUOTED_KEYS = ('"a.b"', '"x y"', '"a"', '"b"', '""')  # "a" is the same key as a; "" is the empty key

NUMBERS = (
    "0",
    "1",
    "2",
    "-1",
    "42",
    "-7",
    "1.5",
    "-0.25",
    "0.0",
    "-0",
    "1e3",
    "1E-2",
    "1e+2",
    "2.5e1",
    "-1.5E2",
    "9223372036854775807",
    "-9223372036854775808",
    "2147483648",
    "1.0",
)
ODD_NUMBERS = ("-.5", "-.25e1", "1.", ".5", "01", "9223372036854775808", "123456789012345678901234", "1e999", "-0.0")
QUOTED = ('"hello"', '"a b"', '""', '"1"', '"true"', '"q\\"x"', '"caf\\u00e9"', '"tab\\tx"', '"x.y"', '"${a}"')
TRIPLE = ('"""raw "quoted" text"""', '"""two\nlines"""', '""""""', '"""ends with quotes""""', '"""${a}\\n"""')
UNQUOTED = ("foo", "foo bar", "hello  world", "foo-bar", "x.y", "ab1", "true", "false", "null", "yes", "on", "a b c")
COMMENTS = ("# a comment", "// another", "#", "//x = 1", "# ${a}")


def _balanced(value: str) -> bool:
    """True when `value` is one `{...}` (its first brace closes at the end): `key {..}` takes no concatenation."""
    level = 0
    for i, ch in enumerate(value):
        level += {"{": 1, "}": -1}.get(ch, 0)
        if level == 0:
            return i == len(value) - 1
    return False


class Gen:
    """One case's generator: `rng` drives every choice."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        # A wild case mixes kinds in concatenations and references random paths (mostly errors); a tame one
        # (most cases) keeps to its anchors, so that most tame cases resolve to a value.
        self.wild = rng.random() < 0.25
        # Anchors: a few paths the case defines (somewhere, in some layer) with a value of a known kind, so
        # most substitutions resolve and most concatenations are of one kind; the rest stay random.
        self.anchors: dict[str, list[list[str]]] = {"scalar": [], "object": [], "array": []}
        for head in rng.sample(KEYS, rng.randint(2, 4)):  # distinct heads: no anchor is inside another
            path = [head] if rng.random() < 0.6 else [head, self.key()]
            self.anchors[rng.choice(("scalar", "scalar", "object", "array"))].append(path)

    # --- small pieces ------------------------------------------------------------------------------

    def key(self) -> str:
        """One path element as written in a key or in a substitution."""
        r = self.rng.random()
        return self.rng.choice(QUOTED_KEYS) if r < 0.12 else self.rng.choice(KEYS)

    def path(self, max_len: int = 2) -> list[str]:
        return [self.key() for _ in range(self.rng.randint(1, max_len))]

    def subst(self, path: list[str] | None = None, optional: bool | None = None, kind: str | None = None) -> str:
        if path is None:
            pool = self.anchors[kind] if kind else [p for paths in self.anchors.values() for p in paths]
            if pool and self.rng.random() < (0.7 if self.wild else 0.9):
                path = self.rng.choice(pool)
            else:
                path = self.path()
                if optional is None and not self.wild:
                    optional = self.rng.random() < 0.7
        if optional is None:
            optional = self.rng.random() < 0.3
        spelled = ".".join(path)
        if self.rng.random() < 0.05:
            spelled = f" {spelled} "  # whitespace inside ${ }
        return "${" + ("?" if optional else "") + spelled + "}"

    def number(self) -> str:
        return self.rng.choice(ODD_NUMBERS) if self.rng.random() < 0.15 else self.rng.choice(NUMBERS)

    def scalar(self) -> str:
        r = self.rng.random()
        if r < 0.30:
            return self.number()
        if r < 0.40:
            return self.rng.choice(("true", "false"))
        if r < 0.47:
            return "null"
        if r < 0.67:
            return self.rng.choice(QUOTED)
        if r < 0.72:
            return self.rng.choice(TRIPLE)
        return self.rng.choice(UNQUOTED)

    def ws(self) -> str:
        return self.rng.choice((" ", " ", " ", "", "  "))

    # --- values ------------------------------------------------------------------------------------

    def value(self, here: list[str] | None, depth: int) -> str:
        """A value for the field at full path `here` (used for self-references)."""
        r = self.rng.random()
        if depth >= 3:
            r = r * 0.5  # scalars, substitutions and string concatenations only
        if r < 0.25:
            return self.scalar()
        if r < 0.37:
            return self.subst()
        if r < 0.47:
            return self.string_concat()
        if r < 0.53:
            return self.self_reference(here, depth)
        if r < 0.73:
            return self.obj(here, depth + 1)
        if r < 0.85:
            return self.array(here, depth + 1)
        if r < 0.91:
            return self.object_concat(here, depth + 1)
        if r < 0.97 or not self.wild:
            return self.array_concat(here, depth + 1)
        return self.mixed_concat(here, depth + 1)

    def string_concat(self) -> str:
        """Scalars and substitutions side by side: `${a} foo`, `"x"${?b}1.5`, `foo bar ${c}`."""
        parts = []
        for _ in range(self.rng.randint(2, 3)):
            parts.append(self.subst(kind="scalar") if self.rng.random() < 0.45 else self.scalar())
        out = parts[0]
        for part in parts[1:]:
            out += self.ws() + part
        return out

    def self_reference(self, here: list[str] | None, depth: int) -> str:
        if here is None:
            return self.subst()
        me = self.subst(here, optional=self.rng.random() < 0.5)
        kind = next((k for k, paths in self.anchors.items() if here in paths), None)
        r = self.rng.random()
        if kind == "scalar" or (kind is not None and not self.wild):
            r = {"scalar": 0.0, "array": 0.5, "object": 0.8}[kind]
        if r < 0.4:
            return me + self.ws() + self.rng.choice((self.scalar(), self.subst(kind="scalar")))
        if r < 0.7:
            return me + self.ws() + self.array(here, depth + 1)
        if r < 0.85:
            return me + self.ws() + self.obj(here, depth + 1)
        return self.scalar() + self.ws() + me  # the reference second

    def obj(self, here: list[str] | None, depth: int) -> str:
        n = self.rng.randint(0, 3)
        body = self.statements(here, depth, n, inline=self.rng.random() < 0.6)
        return "{" + body + "}"

    def array(self, here: list[str] | None, depth: int) -> str:
        items = [self.element(here, depth) for _ in range(self.rng.randint(0, 3))]
        sep = self.rng.choice((", ", ",", "\n"))
        trailing = "," if items and self.rng.random() < 0.15 else ""
        return "[" + sep.join(items) + trailing + "]"

    def element(self, here: list[str] | None, depth: int) -> str:
        r = self.rng.random()
        if depth >= 3 or r < 0.55:
            return self.scalar()
        if r < 0.7:
            return self.subst()
        if r < 0.85:
            return self.obj(None, depth + 1)  # inside arrays: no self-references, no `+=` (Lightbend rejects it)
        return self.array(None, depth + 1)

    def object_concat(self, here: list[str] | None, depth: int) -> str:
        r = self.rng.random()
        if r < 0.5:
            return self.obj(here, depth) + self.ws() + self.obj(here, depth)
        if r < 0.8:
            return self.subst(kind="object") + self.ws() + self.obj(here, depth)
        return self.obj(here, depth) + self.ws() + self.subst(kind="object")

    def array_concat(self, here: list[str] | None, depth: int) -> str:
        r = self.rng.random()
        if r < 0.5:
            return self.array(here, depth) + self.ws() + self.array(here, depth)
        if r < 0.8:
            return self.subst(kind="array") + self.ws() + self.array(here, depth)
        return self.array(here, depth) + self.ws() + self.subst(kind="array")

    def mixed_concat(self, here: list[str] | None, depth: int) -> str:
        """A concatenation of different kinds: an error in HOCON (or a known Lightbend bug)."""
        return self.rng.choice(
            (
                self.array(here, depth) + " " + self.scalar(),
                self.scalar() + " " + self.array(here, depth),
                self.obj(here, depth) + " " + self.scalar(),
                self.obj(here, depth) + " " + self.array(here, depth),
            )
        )

    # --- statements and documents ------------------------------------------------------------------

    def statement(self, prefix: list[str] | None, depth: int) -> str:
        r = self.rng.random()
        if r < 0.06:
            return self.rng.choice(COMMENTS)
        path = self.path(2 if depth < 2 else 1)
        here = None if prefix is None else prefix + path  # as spelled (quoted keys quoted), for self-references
        key = ".".join(path)
        if r < 0.10:
            return f"{key}{self.ws()}={self.ws()}null"  # null over (or under) objects of other layers
        if r < 0.20 and here is not None:
            added = self.rng.choice((self.scalar(), self.subst(), self.array(here, depth + 1)))
            return f"{key}{self.ws()}+={self.ws()}{added}"
        value = self.value(here, depth)
        if value.startswith("{") and value.endswith("}") and _balanced(value) and self.rng.random() < 0.4:
            sep = " "
        else:
            sep = self.ws() + self.rng.choice(("=", "=", ":")) + self.ws()
        line = key + sep + value
        if self.rng.random() < 0.06:
            line += " " + self.rng.choice(("# trailing", "// trailing"))
        return line

    def statements(self, prefix: list[str] | None, depth: int, n: int, inline: bool) -> str:
        lines = [self.statement(prefix, depth) for _ in range(n)]
        if inline:
            joined = ", ".join(line for line in lines)
            return joined if not any("#" in ln or "//" in ln for ln in lines) else "\n" + "\n".join(lines) + "\n"
        return "\n" + "\n".join(lines) + "\n"

    def anchor(self, kind: str, path: list[str]) -> str:
        if kind == "scalar":
            value = self.rng.choice((self.number(), self.rng.choice(QUOTED), self.rng.choice(UNQUOTED)))
        elif kind == "object":
            value = (
                "{" + ", ".join(f"{k} = {self.scalar()}" for k in self.rng.sample(KEYS, self.rng.randint(1, 2))) + "}"
            )
        else:
            value = "[" + ", ".join(self.scalar() for _ in range(self.rng.randint(0, 2))) + "]"
        return ".".join(path) + " = " + value

    def document(self, anchors: list[str]) -> str:
        n = self.rng.randint(1, 5) if self.rng.random() < 0.75 else self.rng.randint(6, 10)
        lines = [self.statement([], 0) for _ in range(n)]
        for line in anchors:
            lines.insert(self.rng.randint(0, len(lines)), line)
        body = "\n".join(lines)
        if self.rng.random() < 0.1:
            return "{\n" + body + "\n}"
        return body


def case(seed: int) -> list[str]:
    """1 to 3 document texts, highest priority first; the same `seed` always gives the same case."""
    rng = random.Random(seed)
    gen = Gen(rng)
    layers = rng.choice((1, 1, 2, 2, 2, 3, 3))
    placed: list[list[str]] = [[] for _ in range(layers)]
    for kind, paths in gen.anchors.items():
        for path in paths:  # the lowest layer most often: higher layers then reference, override or extend it
            placed[min(layers - 1, rng.choice((layers - 1, layers - 1, rng.randrange(layers))))].append(
                gen.anchor(kind, path)
            )
    return [gen.document(placed[i]) for i in range(layers)]


if __name__ == "__main__":
    import sys

    for s in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
        print(f"--- seed {s}")
        for i, text in enumerate(case(s)):
            print(f"[layer {i}]\n{text}")
