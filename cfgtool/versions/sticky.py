"""Rollbacks stick: the values a rolled-back version introduced are watched until a revert ships.

Take each rolled-back version N of a store with a good version G below it. N *introduced* every (key, path) whose
value differs between G and N. N's value is the rolled-back one, G's the good one. A value that is absent on one side
counts too (a node N added or deleted, a path it set or removed), as `cfgtool diff` shows it. The watch on a (key,
path) ends with a good version published after the rollback. That version holds another value there (the revert has
shipped), or was published with `--allow-rolled-back` over N.

- `publish` refuses a candidate that still holds a watched rolled-back value (`relapses`).
- `compile --base` lets policies see a path whose change returns from the rolled-back value to the good
  one as unchanged (`reverts`, `compile_checked`; W_POLICY_SKIPPED_REVERT).

Versions are read from their compiled artifacts in the cache, compiled once and written on a miss. One SQL join of
two artifacts finds the nodes whose stored JSON differs. So only those are decoded and walked. What a version
introduced over another is kept in a small JSON file of the cache, so the next publish reads only that. Values are
compared as values: a number is watched whatever its spelling (`5184000000.0` is `5184000000`), but `true` is not
`1`. Secrets are compared by their sealed envelopes and always shown as [hidden]. The same clear text sealed again is
another envelope, so it evades a watch. docs/versions.md says why that is a limit of a safety net, not a hole in a
boundary.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cfgtool._util.atomic import write_atomic_bytes
from cfgtool._util.cacheauth import seal, unseal
from cfgtool._util.cachedir import cache_root, private_dir
from cfgtool._util.plain import MISSING, value_at
from cfgtool._version import __version__
from cfgtool.hocon import split_path
from cfgtool.snapshot.hidden import HIDDEN
from cfgtool.snapshot.model import Snapshot
from cfgtool.versions.artifact import NodeDiff, differing
from cfgtool.versions.diff import ABSENT, changed_values, same
from cfgtool.versions.readers import marker_after
from cfgtool.versions.tags import History

if TYPE_CHECKING:
    from cfgtool.build.builder import Progress
    from cfgtool.compile.compiler import CompileResult


@dataclass(frozen=True)
class Sealed:
    """A secret's value, known only by its sealed envelope (None: a value that was not sealed)."""

    envelope: str | None


@dataclass(frozen=True)
class Watch:
    """A value rolled-back `version` introduced at (key, path): `bad` (N's value) and `good` (the good version's).
    ABSENT where unset, `Sealed` for a secret."""

    key: str
    path: str
    bad: Any
    good: Any
    version: int
    reason: str
    by: str

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "path": self.path}
        if self.bad is not ABSENT:
            out["rolled_back_value"] = shown(self.bad)
        if self.good is not ABSENT:
            out["good_value"] = shown(self.good)
        out.update(version=self.version, reason=self.reason, by=self.by)
        return out

    def value_line(self) -> str:
        """The key, the path, the rolled-back and the good values."""
        return f"{self.key} {self.path} = {_text(self.bad)} (good: {_text(self.good)})"


def shown(value: Any) -> Any:
    """A watched value as it may be shown: a secret is [hidden]."""
    return HIDDEN if isinstance(value, Sealed) else value


def _text(value: Any) -> str:
    if value is ABSENT:
        return "(unset)"
    return json.dumps(shown(value), ensure_ascii=False, sort_keys=True)


class _Version:
    """A published version's resolved values: its cached artifact (compiled and cached on a miss)."""

    def __init__(self, root: Path, store: str | Path, commit: str, cache: Path) -> None:
        from cfgtool.store.sources import _store_dir
        from cfgtool.versions.artifact import artifact_path
        from cfgtool.versions.reading import compile_at, open_version

        found = _store_dir(root, store)
        artifact = open_version(cache, commit, found, {})
        if artifact is None:
            compile_at(root, store, commit, {}, cache)
            artifact = open_version(cache, commit, found, {})
        self.path: Path | None = None
        if artifact is None:  # the cache cannot be written: the compile is all there is
            self.snapshot = compile_at(root, store, commit, {}, cache).snapshot
        else:
            recover = lambda: compile_at(root, store, commit, {}, cache).snapshot  # noqa: E731
            self.snapshot = artifact.reading(commit, recover).snapshot
            self.path = artifact_path(cache, commit, found, {})


def value_of(snapshot: Snapshot, key: str, path: str) -> Any:
    """The value at (key, path) in `snapshot`: ABSENT without a node or a value there, `Sealed` for a secret."""
    node = snapshot.nodes.get(key)
    if node is None or node.config is None:
        return ABSENT
    sealed = snapshot.secrets.get(key)
    if sealed and path in sealed:
        return Sealed(sealed[path])
    found = value_at(node.config, split_path(path))
    return ABSENT if found is MISSING else found


def introduced(good: _Version, bad: _Version) -> list[tuple[str, str, Any, Any]]:
    """(key, path, good value, bad value) for every value that differs between two versions."""
    rows = differing(good.path, bad.path) if good.path is not None and bad.path is not None else None
    if rows is None:
        rows = _differing(good.snapshot, bad.snapshot)
    out: list[tuple[str, str, Any, Any]] = []
    for key, g_config, b_config, g_sealed, b_sealed in sorted(rows, key=lambda row: row[0]):
        seen = set()
        for path, old, new in changed_values(g_config, b_config):
            seen.add(path)
            old = Sealed(g_sealed[path]) if path in g_sealed else old
            new = Sealed(b_sealed[path]) if path in b_sealed else new
            if not same(old, new, by_value=True):  # `5` written as `5.0` introduced nothing to watch
                out.append((key, path, old, new))
        for path in sorted(g_sealed.keys() | b_sealed.keys()):
            if path not in seen and g_sealed.get(path) != b_sealed.get(path):
                old = Sealed(g_sealed[path]) if path in g_sealed else ABSENT
                new = Sealed(b_sealed[path]) if path in b_sealed else ABSENT
                out.append((key, path, old, new))
    return out


def _differing(good: Snapshot, bad: Snapshot) -> list[NodeDiff]:
    """`differing` from two snapshots (when the cache holds no artifact of them): every node compared."""
    out: list[NodeDiff] = []
    for key in good.nodes.keys() | bad.nodes.keys():
        g, b = good.nodes.get(key), bad.nodes.get(key)
        g_config, b_config = (n.config if n is not None else None for n in (g, b))
        g_sealed, b_sealed = good.secrets.get(key, {}), bad.secrets.get(key, {})
        if g_config is None or b_config is None or not same(g_config, b_config) or g_sealed != b_sealed:
            out.append((key, g_config, b_config, g_sealed, b_sealed))
    return out


def watches(
    root: Path, store: str | Path, known: History, *, active: bool = True, cache: Path | None = None
) -> list[Watch]:
    """What the store's rolled-back versions introduced; with `active`, only the watches that have not ended.

    Only `known`'s own versions are read (one store's tags). A rolled-back version without a good version
    below it introduced nothing that can be told apart, so it has no watch.
    """
    cache = cache if cache is not None else cache_root()
    load = _loader(root, store, cache)

    markers = known.markers
    numbers = known.numbers
    found: list[Watch] = []
    for n in numbers:
        if n not in markers:
            continue
        below = [m for m in numbers if m < n and m not in markers]
        if not below:
            continue
        version = known.require(n)
        rolled = version.rolled_back
        assert rolled is not None
        pairs = _introduced_over(cache, store, known.tag(below[-1]).commit, version.commit, load)
        entries = [Watch(key, path, bad, good, n, rolled.reason, rolled.by) for key, path, good, bad in pairs]
        if active:
            for later in published_after(known, n):
                if not entries:
                    break
                allowed = known.tag(later).metadata.get("allow_rolled_back")
                if isinstance(allowed, list) and n in allowed:
                    entries = []
                    break
                snapshot = load(known.tag(later).commit).snapshot
                entries = [w for w in entries if same(value_of(snapshot, w.key, w.path), w.bad, by_value=True)]
        found += entries
    return found


def _loader(root: Path, store: str | Path, cache: Path) -> Callable[[str], _Version]:
    """A reader of the version at a commit that opens each commit once."""
    loaded: dict[str, _Version] = {}

    def load(commit: str) -> _Version:
        if commit not in loaded:
            loaded[commit] = _Version(root, store, commit, cache)
        return loaded[commit]

    return load


def _introduced_over(
    cache: Path, store: str | Path, good: str, bad: str, load: Callable[[str], _Version]
) -> list[tuple[str, str, Any, Any]]:
    """`introduced` between the versions at commits `good` and `bad`, from the cache or computed (and kept)."""
    pairs = _cached(cache, store, good, bad)
    if pairs is None:
        pairs = introduced(load(good), load(bad))
        _save(cache, store, good, bad, pairs)
    return pairs


def still_held(root: Path, store: str | Path, known: History, n: int, *, cache: Path | None = None) -> list[Watch]:
    """The values good version N introduced (over the good version below it) that the current version still holds.
    Rolling N back would make the next publish refuse them, unless a revert ships first. Empty when N has no good
    version below it or is the current version itself."""
    current = known.current_number
    below = [m for m in known.numbers if m < n and not known.is_rolled_back(m)]
    if current is None or current == n or not below:
        return []
    cache = cache if cache is not None else cache_root()
    load = _loader(root, store, cache)

    pairs = _introduced_over(cache, store, known.tag(below[-1]).commit, known.tag(n).commit, load)
    snapshot = load(known.tag(current).commit).snapshot
    return [
        Watch(key, path, bad, good, n, "", "")
        for key, path, good, bad in pairs
        if same(value_of(snapshot, key, path), bad, by_value=True)
    ]


# -- the cache of what one version introduced over another: plain JSON, sealed (cacheauth) ---------------------

_CACHE_FORMAT = 2  # 2: sealed with the user's cache key instead of a checksum


def _cache_file(cache: Path, store: str | Path, good: str, bad: str) -> tuple[Path, dict[str, Any]]:
    head = {"format": _CACHE_FORMAT, "cfgtool": __version__, "store": str(store), "good": good, "bad": bad}
    name = hashlib.sha256(json.dumps(head, sort_keys=True).encode()).hexdigest()
    return cache / f"watches-v{_CACHE_FORMAT}" / f"{name}.json", head


def _encode(value: Any) -> dict[str, Any]:
    if value is ABSENT:
        return {}
    if isinstance(value, Sealed):
        return {"sealed": value.envelope}
    return {"value": value}


def _decode(item: Any) -> Any:
    if type(item) is not dict or (not set(item) <= {"value"} and set(item) != {"sealed"}):
        raise ValueError("not a value")
    if "sealed" in item:
        if not (item["sealed"] is None or type(item["sealed"]) is str):
            raise ValueError("not an envelope")
        return Sealed(item["sealed"])
    return item.get("value", ABSENT)


def _save(cache: Path, store: str | Path, good: str, bad: str, pairs: list[tuple[str, str, Any, Any]]) -> None:
    """Remember what `bad` introduced over `good` (one small sealed file; a failure to write only costs a
    recompute)."""
    path, head = _cache_file(cache, store, good, bad)
    body = json.dumps([[k, p, _encode(g), _encode(b)] for k, p, g, b in pairs], ensure_ascii=False)
    with contextlib.suppress(OSError, ValueError, TypeError):
        sealed = seal(f"watches {path.name}", (json.dumps(head) + "\n" + body).encode("utf-8"))
        if sealed is not None:
            private_dir(path.parent)
            write_atomic_bytes(path, sealed)


def _cached(cache: Path, store: str | Path, good: str, bad: str) -> list[tuple[str, str, Any, Any]] | None:
    """What `bad` introduced over `good`, from the cache. None (a miss) for a missing, damaged, truncated, forged,
    foreign or stale entry. It decides what publish refuses, so only a sealed one is believed."""
    path, head = _cache_file(cache, store, good, bad)
    try:
        data = unseal(f"watches {path.name}", path.read_bytes())
        if data is None:
            return None
        first, _, body = data.decode("utf-8").partition("\n")
        if json.loads(first) != head:
            return None
        out = []
        for key, p, good_item, bad_item in json.loads(body):
            if type(key) is not str or type(p) is not str:
                return None
            out.append((key, p, _decode(good_item), _decode(bad_item)))
        return out
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return None


def published_after(known: History, n: int) -> list[int]:
    """The good versions published after N's rollback, oldest first: above the highest version the marker records.
    For a marker written before markers recorded it, those tagged at or after the marker's date."""
    after = marker_after(known, known.markers[n], n)
    return [m for m in known.numbers if m > after and not known.is_rolled_back(m)]


def relapses(active: Iterable[Watch], candidate: Snapshot) -> list[Watch]:
    """The watched rolled-back values `candidate` still holds, each (key, path, value) once: the earliest
    version that introduced it."""
    out: dict[tuple[str, str, str], Watch] = {}
    for w in active:
        if same(value_of(candidate, w.key, w.path), w.bad, by_value=True):
            ident = (w.key, w.path, _canonical(w.bad))
            if ident not in out or w.version < out[ident].version:
                out[ident] = w
    return sorted(out.values(), key=lambda w: (w.key, w.path, w.version))


def reverts(every: Sequence[Watch], base: Snapshot) -> dict[str, dict[str, tuple[Any, Any, int]]]:
    """key -> {path: (rolled-back value, good value, version)} for the watched values `base` still holds (MISSING
    where unset). A change returning such a path to the good value is a revert. The policies do not judge reverts
    (`cfgtool.validate.policy_runs`). Secrets read [hidden] on both sides, so a policy sees no change to revert
    there."""
    out: dict[str, dict[str, tuple[Any, Any, int]]] = {}
    for w in every:
        if not isinstance(w.bad, Sealed) and same(value_of(base, w.key, w.path), w.bad, by_value=True):
            plain = tuple(MISSING if v is ABSENT else v for v in (w.bad, w.good))
            out.setdefault(w.key, {}).setdefault(w.path, (*plain, w.version))
    return out


def compile_checked(
    repo: Path | None,
    store: str | Path,
    ref: str | None,
    variables: Mapping[str, str] | None = None,
    *,
    base: str | None = None,
    principal: str | None = None,
    progress: Progress | None = None,
) -> CompileResult:
    """The store at `ref` (None: the working tree) compiled and checked as `cfgtool compile` reports it: every value
    of every variable, schemas and policies (`compile_store`). Against `base`, policies let a change return from a
    rolled-back version's value to the good one (`store_reverts`)."""
    from cfgtool.compile.compiler import compile_store

    return compile_store(
        repo, store, ref, variables, check_variables=True, validate=True, base=base, principal=principal,
        progress=progress, reverts=store_reverts,
    )  # fmt: skip


def store_reverts(root: Path, store: str | Path, base: Snapshot) -> dict[str, dict[str, tuple[Any, Any, int]]]:
    """`reverts` for the store's rolled-back versions whose watches are active (none: nothing is read)."""
    from cfgtool.versions.tags import history

    known = history(root, store)
    if not known.markers:
        return {}
    return reverts(watches(root, store, known), base)


def _canonical(value: Any) -> str:
    """One text for values `same(..., by_value=True)` finds equal."""
    if value is ABSENT:
        return ""
    if isinstance(value, Sealed):
        return "sealed:" + (value.envelope or "")
    return json.dumps(_by_value(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _by_value(value: Any) -> Any:
    """`value` with every whole float as the int it equals (`5184000000.0` is `5184000000`)."""
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is dict:
        return {k: _by_value(v) for k, v in value.items()}
    if type(value) is list:
        return [_by_value(v) for v in value]
    return value
