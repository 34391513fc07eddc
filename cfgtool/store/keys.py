"""Keys: the paths of config nodes (`/`, `/data`, `/data/tracking/PageViewEvent`), their validation and globs.

A key is `/` or `/` followed by segments joined by `/`; a segment matches `[A-Za-z0-9][A-Za-z0-9._~-]*`
(docs/store-format.md#nodes-and-keys). Keys may be written with the store's scheme (`demo:/data/x`) and without the
leading `/`.
"""

from __future__ import annotations

import difflib
import re
from bisect import bisect_left
from collections.abc import Callable, Container, Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

from cfgtool.errors import UsageError

ROOT = "/"
MAX_KEY = 1024  # characters of a normalized key, its leading `/` included (the server answers 414 beyond)
SEGMENT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~-]*")
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):(?=/)")
_CANONICAL_RE = re.compile(f"(?:/{SEGMENT_RE.pattern})+")  # a key `normalize_key` returns as it is, but `/`


class BadKeyError(UsageError):
    """A key given by the user is not a valid key (exit 2)."""


class KeyTooLongError(BadKeyError):
    """A key longer than `MAX_KEY` characters (exit 2; the server's 414)."""


def is_valid_segment(name: str) -> bool:
    """Whether `name` can be a key segment (a node's directory name)."""
    return SEGMENT_RE.fullmatch(name) is not None


def key_problem(text: str, store_name: str | None = None) -> str | None:
    """Why `text` is not a key (a sentence for messages), or None when `normalize_key` accepts it."""
    try:
        normalize_key(text, store_name)
    except BadKeyError as err:
        return err.message
    return None


def normalize_key(text: str, store_name: str | None = None) -> str:
    """The canonical form of a key: scheme `store_name:` stripped, leading `/` added, trailing `/` removed.

    Raises BadKeyError (with a hint) for other schemes, empty segments and invalid segment names. Raises
    KeyTooLongError past `MAX_KEY` characters.
    """
    if len(text) <= MAX_KEY and _CANONICAL_RE.fullmatch(text):
        return text  # already canonical, as most keys a program reads are: one match instead of a check per segment
    key = text
    scheme = _SCHEME_RE.match(key)
    if scheme:
        if scheme.group(1) != store_name:
            expected = f"'{store_name}:'" if store_name else "none (the store has no name)"
            raise BadKeyError(
                f"key {text!r} has scheme '{scheme.group(1)}:', but this store's scheme is {expected}",
                hint="write the key as a path such as /data/x",
            )
        key = key[scheme.end() :]
    if not key.startswith("/"):
        key = "/" + key
    if key != ROOT and key.endswith("/"):
        key = key[:-1]
    if key == ROOT:
        return ROOT
    if len(key) > MAX_KEY:
        raise KeyTooLongError(
            f"key {key[:40]}... has {len(key):,} characters, more than {MAX_KEY:,}",
            hint=f"a key has at most {MAX_KEY:,} characters, its leading / included",
        )
    for segment in key[1:].split("/"):
        if not segment:
            raise BadKeyError(f"key {text!r} has an empty segment", hint="separate segments with a single /")
        if not is_valid_segment(segment):
            raise BadKeyError(
                f"key {text!r} has an invalid segment {segment!r}",
                hint="a segment starts with a letter or digit and contains only letters, digits and . _ ~ -",
            )
    return key


def segments(key: str) -> tuple[str, ...]:
    """The segments of a normalized key: `()` for the root."""
    return () if key == ROOT else tuple(key[1:].split("/"))


def join(parent_key: str, segment: str) -> str:
    """The key of child `segment` of `parent_key`."""
    return f"/{segment}" if parent_key == ROOT else f"{parent_key}/{segment}"


def parent(key: str) -> str | None:
    """The parent key, None for the root."""
    if key == ROOT:
        return None
    head = key.rsplit("/", 1)[0]
    return head or ROOT


def nearest(key: str, nodes: Container[str], deepest: int) -> str:
    """`key` if it is in `nodes`, else its nearest ancestor in `nodes` (which holds the root). `deepest` is the most
    segments any key of `nodes` has. The search starts no deeper, so it is linear in the key's length. Walking up
    from a deep hostile key one parent at a time would be quadratic."""
    if key in nodes:
        return key
    end = 0
    for _ in range(deepest):
        end = key.find("/", end + 1)
        if end < 0:
            break
    found = key if end < 0 else key[:end] or ROOT
    while found not in nodes:
        found = parent(found) or ROOT
    return found


NEAR_CUTOFF = 0.75  # difflib's ratio a name must reach to be suggested for another
NEAR_COMPARED = 200  # sibling names compared per segment at most: in a larger folder, those nearest in sort order


class Siblings(NamedTuple):
    """The names of a node's children, sorted (`forward`). In a folder of more than `NEAR_COMPARED`, also each name
    reversed, sorted (`backward`). A misspelled name is looked up where it sorts by its start and by its end."""

    forward: Sequence[str]
    backward: Sequence[str] = ()


def siblings(names: Iterable[str]) -> Siblings:
    """The `Siblings` of the names of a node's children."""
    forward = sorted(names)
    return Siblings(forward, sorted(name[::-1] for name in forward) if len(forward) > NEAR_COMPARED else ())


def near_node(key: str, nearest: Callable[[str], str], names: Callable[[str], Siblings]) -> str | None:
    """A node whose key is close to `key` (which has no node), for a did-you-mean, or None. `nearest` gives a
    key's nearest node, `names` the `Siblings` of a node's children. From the nearest node down, each missing
    segment becomes its closest sibling name (case aside). That goes on until the key names a node. None when some
    segment has no close sibling. The work is bounded: at most `NEAR_COMPARED` names per segment, and no more
    segments than the deepest node has."""
    node = nearest(key)
    if node == key:
        return None
    while node != key:
        segment, _, rest = key[len(node) :].lstrip("/").partition("/")
        match = _closest(segment, names(node))
        if match is None:
            return None
        key, below = join(node, match) + (f"/{rest}" if rest else ""), node
        node = nearest(key)
        if len(node) <= len(below):  # a name given that is no node: nothing to suggest
            return None
    return key


def _closest(word: str, names: Siblings) -> str | None:
    """The name closest to `word` (ignoring case) at `NEAR_CUTOFF` or above, or None. In a huge folder, only the
    names around where `word` sorts by its start, and by its end. A typo rarely changes both."""
    found = names.forward
    if len(found) > NEAR_COMPARED:
        half = NEAR_COMPARED // 2
        found = [*_around(found, word, half), *(name[::-1] for name in _around(names.backward, word[::-1], half))]
    lowered = {name.lower(): name for name in reversed(found)}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=NEAR_CUTOFF)
    return lowered[close[0]] if close else None


def _around(names: Sequence[str], word: str, count: int) -> Sequence[str]:
    """The `count` names of sorted `names` around where `word` sorts."""
    start = max(0, min(bisect_left(names, word) - count // 2, len(names) - count))
    return names[start : start + count]


def depth(key: str) -> int:
    """The number of segments of a normalized key (0 for the root)."""
    return 0 if key == ROOT else key.count("/")


def ancestors(key: str) -> list[str]:
    """Strict ancestors, nearest first, ending with `/` (empty for the root)."""
    out: list[str] = []
    p = parent(key)
    while p is not None:
        out.append(p)
        p = parent(p)
    return out


def last_segment(key: str) -> str:
    """The key's own name (`PageViewEvent` for `/data/tracking/PageViewEvent`); '' for the root."""
    return key.rsplit("/", 1)[1]


def is_under(key: str, prefix: str) -> bool:
    """Whether `key` is `prefix` or a descendant (by segment: `/database` is not under `/data`)."""
    return prefix == ROOT or key == prefix or key.startswith(prefix + "/")


def is_strictly_under(key: str, prefix: str) -> bool:
    """Whether `key` is a descendant of `prefix` (not `prefix` itself)."""
    return key != prefix and is_under(key, prefix)


@lru_cache(maxsize=1024)
def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex for a key glob: `*` matches within one segment, `**` any number of whole segments.

    A `**` segment in the middle or at the start matches zero or more segments (`/a/**/b` matches `/a/b`). A trailing
    `/**` matches one or more: everything under the prefix but not the prefix itself. So `/data/**` matches `/data/x`
    but not `/data`, as in gitignore. `?` matches one character.
    """
    parts = [p for p in pattern.split("/") if p]
    regex = ""
    for i, part in enumerate(parts):
        if part == "**":
            regex += "(?:/[^/]+)+" if i == len(parts) - 1 else "(?:/[^/]+)*"
            continue
        regex += "/"
        for ch in part:
            regex += "[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch)
    return re.compile(regex or "/")


def glob_match(pattern: str, key: str) -> bool:
    """Whether normalized `key` matches the key glob `pattern` (see `compile_glob`)."""
    return compile_glob(pattern).fullmatch(key) is not None
