"""Version tags: read every version and rollback marker with ONE `git for-each-ref`, and derive each version's
status.

Version N is the annotated tag `<version_tag_prefix>N` (default `config/vN`). Its rollback marker is the annotated
tag `<rollback_tag_prefix>N` (default `config/rolledback/vN`). The marker that cancels that rollback is
`config/restored/vN`: the rollback prefix with `restored` for `rolledback`. All carry machine-readable metadata in
the last line of their message: `cfgtool-metadata: {json}` (see `messages.py`). A version is rolled back while it has
a rollback marker and no restored marker. The current version is the highest N that is not rolled back: what
writers (publish, rollback) build on. A reader's `current` differs while a version rolls out under a plan
(`cfgtool.versions.current`). Nothing here writes: creating tags is `refs.py`'s job.

Several stores in one repository each have their own versions (`StoreTags`). The plain spelling `config/vN` belongs
to one store. It is the store named by the metadata of the lowest plain version tag that names a store. Before any
plain tag exists, it is the repository's only store. With several, it is the one at `store/`, where `cfgtool init`
puts it, else the first by path. Every other store uses `config/<name>/vN`, `config/<name>/rolledback/vN` and
`config/<name>/restored/vN`. A store that has such tags keeps them, so no tag is ever renamed. A store whose
`_CONFIG_STORE` sets the prefixes uses those. A tag whose metadata names another store is never taken for one's own.

One `for-each-ref` lists 10,000 tags with their targets, taggers, dates and messages in a few tens of milliseconds.
Reading tag objects one by one (or through GitPython) takes seconds.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple

from cfgtool.errors import SourceError
from cfgtool.store import git
from cfgtool.store.settings import SETTINGS_FILE, Settings, parse_settings
from cfgtool.store.stores import DEFAULT_STORE_DIR, store_dirs, store_name, tag_name_part
from cfgtool.versions.messages import decode_all, split_message
from cfgtool.versions.names import CURRENT, DEFAULT_SHOWN, PREVIOUS, version_number

Status = Literal["current", "good", "rolled_back"]


# `%(creator)` is the tagger line of an annotated tag (the committer of a lightweight tag's commit): name,
# email, timestamp and zone in one field, cheaper than three. Fields end with NUL, which a message cannot
# hold; for-each-ref ends each record with a newline, which thus starts the next refname and is stripped.
_FIELDS = (
    "%(refname)",
    "%(objecttype)",
    "%(objectname)",
    "%(*objecttype)",
    "%(*objectname)",
    "%(creator)",
    "%(contents)",
)
_FORMAT = "%00".join(_FIELDS) + "%00"
_REF, _TYPE, _OID, _PEELED_TYPE, _PEELED, _CREATOR, _CONTENTS = range(len(_FIELDS))


class VersionNotFound(SourceError):
    """A version number names no version tag (exit 2)."""


@dataclass(frozen=True)
class TagScheme:
    """How one store's versions are named in git: `version_prefix` + N, `rollback_prefix` + N and `restored_prefix` +
    N. These are tag names, without refs/tags/. The restored prefix follows the rollback one unless given. `path` and
    `name` identify the store: its repo-relative directory and its `_CONFIG_STORE` name. A tag whose metadata names
    another store is not one of its versions. None: any tag is."""

    version_prefix: str = "config/v"
    rollback_prefix: str = "config/rolledback/v"
    path: str | None = None
    name: str | None = None
    restored_prefix: str = ""
    rollout_prefix: str = ""

    def __post_init__(self) -> None:
        if not self.restored_prefix:
            object.__setattr__(self, "restored_prefix", marker_prefix(self.version_prefix, self.rollback_prefix))
        if not self.rollout_prefix:
            found = marker_prefix(self.version_prefix, self.rollback_prefix, "rollout")
            object.__setattr__(self, "rollout_prefix", found)

    @classmethod
    def of(cls, settings: Settings) -> TagScheme:
        return cls(settings.version_tag_prefix, settings.rollback_tag_prefix)

    def version_tag(self, n: int) -> str:
        return f"{self.version_prefix}{n}"

    def rollback_tag(self, n: int) -> str:
        return f"{self.rollback_prefix}{n}"

    def restored_tag(self, n: int) -> str:
        return f"{self.restored_prefix}{n}"

    def rollout_tag(self, n: int, seq: int) -> str:
        """The `seq`th step of version N's staged rollout (docs/rollout.md)."""
        return f"{self.rollout_prefix}{n}/{seq}"

    @property
    def prefixes(self) -> tuple[str, str, str]:
        """The version, rollback and restored prefixes."""
        return self.version_prefix, self.rollback_prefix, self.restored_prefix

    def patterns(self) -> tuple[str, ...]:
        """The refs to read: every tag under any of the prefixes, and every rollout step (`vN/<seq>`: git's `*`
        stops at a slash here)."""
        return (*(f"refs/tags/{prefix}*" for prefix in self.prefixes), f"refs/tags/{self.rollout_prefix}*/*")

    def fetch_patterns(self) -> tuple[str, ...]:
        """The refs to fetch: the same tags as `patterns`, spelled as refspecs (where `*` crosses slashes)."""
        return tuple(f"refs/tags/{prefix}*" for prefix in (*self.prefixes, self.rollout_prefix))

    def claims_all(self, text: str) -> bool:
        """Whether every `"store":` in `text` is followed by this store's path, and every `"name":` by null or its
        name. `text` holds tag messages and metadata as compact JSON. Then no tag in it names another store, and none
        needs decoding to find out. Any other occurrence, even in a message's text, only means "look closer"."""
        if self.path is None:
            return True
        names = text.count('"name":null') + (text.count(f'"name":{_json(self.name)}') if self.name is not None else 0)
        return text.count('"store":') == text.count(f'"store":{_json(self.path)}') and text.count('"name":') == names

    def owns(self, metadata: Mapping[str, Any]) -> bool:
        """Whether a tag with this metadata may be one of this store's. It names no store, or this one: by directory,
        or by the explicit name, which survives a move."""
        if self.path is None:
            return True
        path, name = metadata.get("store"), metadata.get("name")
        if not isinstance(path, str) and not isinstance(name, str):
            return True
        return path == self.path or (self.name is not None and name == self.name)


@dataclass(frozen=True)
class StoreTags:
    """The spellings a store's version tags may have (module doc). Which one applies depends on the tags that exist.
    So `read_history` decides it from the same `for-each-ref` that reads them."""

    path: str  # the store's directory relative to the repository root ('' = the root)
    name: str | None  # the `name` of its _CONFIG_STORE
    custom: TagScheme | None = None  # the prefixes its _CONFIG_STORE sets: always these

    @classmethod
    def of(cls, settings: Settings, path: str) -> StoreTags:
        defaults = Settings()
        set_here = (settings.version_tag_prefix, settings.rollback_tag_prefix) != (
            defaults.version_tag_prefix,
            defaults.rollback_tag_prefix,
        )
        custom = TagScheme(settings.version_tag_prefix, settings.rollback_tag_prefix, path, settings.name)
        return cls(path, settings.name, custom if set_here else None)

    @property
    def label(self) -> str:
        """The store's name as its own tags spell it."""
        return store_name(self.name, self.path)

    @property
    def plain(self) -> TagScheme:
        return TagScheme(path=self.path, name=self.name)

    def named(self) -> TagScheme:
        """`config/<name>/vN`; SourceError when the name cannot be part of a tag name."""
        part = tag_name_part(self.label, self.path)
        return TagScheme(f"config/{part}/v", f"config/{part}/rolledback/v", self.path, self.name)

    def candidates(self) -> tuple[TagScheme, ...]:
        """The schemes whose tags decide which one applies (the named one only when the name can be one)."""
        if self.custom is not None:
            return (self.custom,)
        try:
            return self.plain, self.named()
        except SourceError:
            return (self.plain,)

    def patterns(self) -> tuple[str, ...]:
        """The refs to read to find this store's tags, whichever spelling applies."""
        return tuple(p for scheme in self.candidates() for p in scheme.patterns())

    def fetch_patterns(self) -> tuple[str, ...]:
        """The same refs as refspecs to fetch."""
        return tuple(p for scheme in self.candidates() for p in scheme.fetch_patterns())


def marker_prefix(version_prefix: str, rollback_prefix: str, word: str = "restored") -> str:
    """The prefix of the tags beside the rollback markers: `restored` ones cancel rollbacks, `rollout` ones are the
    steps of a staged rollout. It is the rollback prefix with its `rolledback` part spelled `word`
    (`config/rolledback/v` -> `config/restored/v`). Else it has a `word/` part before its last one. A prefix that
    would take the version prefix's place gets `word-` appended instead."""
    head, slash, last = rollback_prefix.rpartition("/")
    parts = head.split("/") if slash else []
    if "rolledback" in parts:
        i = len(parts) - 1 - parts[::-1].index("rolledback")
        parts[i] = word
        found = "/".join(parts) + "/" + last
    else:
        found = "/".join([*parts, word, last])
    return found if found != version_prefix else f"{rollback_prefix}{word}-"


class Tag(NamedTuple):
    """One annotated (or lightweight) tag as read from git: `object` is the tag object (lightweight: the commit)."""

    name: str
    object: str
    commit: str
    tagger: str | None  # the tagger's name (None for a lightweight tag)
    tagger_email: str | None
    date: datetime
    text: str  # the human part of the message (the metadata line removed)
    metadata: Mapping[str, Any]  # {} when the message carries none (a tag made by hand)


@dataclass(frozen=True)
class RolledBack:
    """Who rolled a version back, when, and why (from its rollback marker)."""

    by: str
    date: datetime
    reason: str
    tag: str

    def to_json(self) -> dict[str, Any]:
        return {"by": self.by, "date": self.date.isoformat(), "reason": self.reason, "tag": self.tag}


@dataclass(frozen=True)
class Restored:
    """Who cancelled a version's rollback, when, and why (from its restored marker), and that rollback."""

    by: str
    date: datetime
    reason: str
    tag: str
    rolled_back: RolledBack

    def to_json(self) -> dict[str, Any]:
        out = {"by": self.by, "date": self.date.isoformat(), "reason": self.reason, "tag": self.tag}
        return {**out, "rolled_back": self.rolled_back.to_json()}


@dataclass(frozen=True)
class Version:
    """A published version: the tag, the commit it names, its date (the tagger date) and what was published."""

    version: int
    tag: str
    commit: str
    date: datetime
    status: Status
    publisher: str | None
    message: str | None
    digest: str | None
    rolled_back: RolledBack | None
    store: str | None = None
    nodes: int | None = None
    cfgtool_version: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    principal: str | None = None  # who released it (`publish --principal`), next to the git identity
    restored: Restored | None = None  # a rollback of it that was cancelled (it is good again)
    rollout: Mapping[str, Any] | None = None  # its staged rollout's state and percent (`versions.rollout.listing`)

    @property
    def good(self) -> bool:
        return self.rolled_back is None

    @property
    def allow_rolled_back(self) -> list[int]:
        """The rolled-back versions whose values this one re-released on purpose (`publish --allow-rolled-back`). The
        tag's metadata records them. Empty for a tag made by hand or without the flag."""
        found = self.metadata.get("allow_rolled_back")
        return [n for n in found if type(n) is int] if isinstance(found, list) else []

    def to_json(self) -> dict[str, Any]:
        """docs/versions.md's `versions` object, plus the store, node count and cfgtool version that published it."""
        return {
            "version": self.version,
            "tag": self.tag,
            "commit": self.commit,
            "date": self.date.isoformat(),
            "status": self.status,
            "publisher": self.publisher,
            "principal": self.principal,
            "message": self.message,
            "digest": self.digest,
            "rolled_back": self.rolled_back.to_json() if self.rolled_back else None,
            "store": self.store,
            "nodes": self.nodes,
            "cfgtool_version": self.cfgtool_version,
            "allow_rolled_back": self.allow_rolled_back,
            "restored": self.restored.to_json() if self.restored else None,
            "rollout": dict(self.rollout) if self.rollout is not None else None,
        }


class History:
    """Every version and rollback marker of one tag scheme, as printed by one `git for-each-ref`.

    The fields git printed are kept as columns. A `Tag` (message split, metadata decoded) is built only when asked
    for. Listing every version decodes all their metadata lines with one `json.loads`.
    """

    def __init__(
        self,
        scheme: TagScheme,
        columns: Sequence[Sequence[str]],
        tags: dict[int, int],
        markers: dict[int, int],
        highest: int = 0,
        metadata: Mapping[int, Mapping[str, Any]] | None = None,
        restored: dict[int, int] | None = None,
        rollouts: Mapping[int, Mapping[int, int]] | None = None,
    ) -> None:
        self.scheme = scheme
        self._columns = columns
        self._tag_rows = tags  # N -> row of its version tag
        self._rollback_rows = markers  # N -> row of its rollback marker (a marker may exist without its version)
        self._restored_rows = {n: r for n, r in (restored or {}).items() if n in markers}  # N -> its restored marker
        # N -> the rollback marker in force: not cancelled by a restored marker
        self._marker_rows = {n: r for n, r in markers.items() if n not in self._restored_rows}
        self._highest = highest  # the highest N under the prefixes, another store's tags included
        self._metadata = metadata or {}  # row -> its decoded metadata, where already decoded
        self._built: dict[int, Tag] = {}  # row -> Tag
        self._rollout_rows = rollouts or {}  # N -> {seq: row} of its rollout steps

    def __iter__(self) -> Iterator[Version]:
        """Every version, newest first."""
        return iter(self.listing(all=True))

    def __len__(self) -> int:
        return len(self._tag_rows)

    def listing(self, *, all: bool = False) -> list[Version]:
        """Versions newest first: every one with `all`, else the newest `DEFAULT_SHOWN` and the current one."""
        numbers = sorted(self._tag_rows, reverse=True)
        current = self.current_number
        if not all and len(numbers) > DEFAULT_SHOWN:
            older = [current] if current is not None and current not in numbers[:DEFAULT_SHOWN] else []
            numbers = numbers[:DEFAULT_SHOWN] + older
        markers = [self._rollback_rows, self._restored_rows]
        self._build([self._tag_rows[n] for n in numbers] + [m[n] for m in markers for n in numbers if n in m])
        return [self._version(n, current) for n in numbers]

    @property
    def numbers(self) -> list[int]:
        """Every version number, ascending."""
        return sorted(self._tag_rows)

    @property
    def tags(self) -> Mapping[int, Tag]:
        """Every version tag by N."""
        self._build(list(self._tag_rows.values()))
        return {n: self._built[r] for n, r in self._tag_rows.items()}

    @property
    def markers(self) -> Mapping[int, Tag]:
        """Every rollback marker in force by N; a marker may exist without its version tag. Those are the markers of
        the versions rolled back now, not the ones a restored marker cancelled."""
        self._build(list(self._marker_rows.values()))
        return {n: self._built[r] for n, r in self._marker_rows.items()}

    @property
    def rollback_markers(self) -> Mapping[int, Tag]:
        """Every rollback marker by N, cancelled or not."""
        self._build(list(self._rollback_rows.values()))
        return {n: self._built[r] for n, r in self._rollback_rows.items()}

    @property
    def restorations(self) -> Mapping[int, Tag]:
        """Every restored marker (a rollback cancelled) by N."""
        self._build(list(self._restored_rows.values()))
        return {n: self._built[r] for n, r in self._restored_rows.items()}

    def rollout_tags(self, n: int) -> list[Tag]:
        """The steps of version N's staged rollout (docs/rollout.md), by their sequence number."""
        rows = self._rollout_rows.get(n, {})
        self._build(list(rows.values()))
        return [self._built[rows[seq]] for seq in sorted(rows)]

    def tag(self, n: int) -> Tag:
        """The version tag of N (KeyError when there is none)."""
        return self._tag(self._tag_rows[n])

    def is_rolled_back(self, n: int) -> bool:
        return n in self._marker_rows

    @cached_property
    def current_number(self) -> int | None:
        """The newest good version: what publish and rollback compare with and build on. Readers read
        `cfgtool.versions.current.reading`, which differs while a version rolls out."""
        good = [n for n in self._tag_rows if n not in self._marker_rows]
        return max(good) if good else None

    @property
    def highest(self) -> int:
        """The highest N used by any version tag or marker under this store's prefixes (0 when none). Another store's
        count too, since their names are taken. The next version is one more."""
        return max(self._highest, *self._tag_rows, *self._rollback_rows, 0)

    @property
    def current(self) -> Version | None:
        n = self.current_number
        return None if n is None else self._version(n, n)

    def get(self, n: int) -> Version | None:
        return self._version(n, self.current_number) if n in self._tag_rows else None

    def require(self, n: int) -> Version:
        """Version N, or VersionNotFound naming the versions that exist."""
        found = self.get(n)
        if found is None:
            raise VersionNotFound(
                f"version {n} does not exist: there is no tag {self.scheme.version_tag(n)} ({self.describe_range()})",
                hint="`cfgtool versions --all` lists every version; fetch tags first if it was published elsewhere",
            )
        return found

    def named(self, name: str, current: int | None = None) -> Version:
        """The version `current` or `previous` names; `previous` is the good version below the current one.
        VersionNotFound saying why when there is none. `current` is the version counted as current: by default the
        newest good one, as writers mean it; readers name versions through `cfgtool.versions.current`."""
        current = self.current_number if current is None else current
        if current is None:
            raise VersionNotFound(
                f"there is no {name} version: {self._no_good()}",
                hint="publish one with `cfgtool publish`; `cfgtool versions --all` lists every version",
            )
        if name == CURRENT:
            return self._version(current, current)
        if name != PREVIOUS:
            raise VersionNotFound(f"{name!r} names no version", hint=f"use a number, {CURRENT!r} or {PREVIOUS!r}")
        below = [n for n in self._tag_rows if n < current and n not in self._marker_rows]
        if not below:
            raise VersionNotFound(
                f"there is no previous version: no good version is below the current version {current}",
                hint="`cfgtool versions --all` lists every version and which are rolled back",
            )
        return self._version(max(below), current)

    def _no_good(self) -> str:
        if not self._tag_rows:
            return "no version has been published yet"
        return "every version is rolled back"

    def describe_range(self) -> str:
        if not self._tag_rows:
            return "no version has been published yet"
        return f"versions are {min(self._tag_rows)} to {max(self._tag_rows)}"

    def _version(self, n: int, current: int | None) -> Version:
        tag = self.tag(n)
        marker_row = self._marker_rows.get(n)
        meta = tag.metadata
        rolled_back = restored = None
        status: Status = "current" if n == current else "good"
        if marker_row is not None:
            status = "rolled_back"
            rolled_back = _rolled_back(self._tag(marker_row))
        elif n in self._restored_rows:
            marker = self._tag(self._restored_rows[n])
            undone = _rolled_back(self._tag(self._rollback_rows[n]))
            restored = Restored(date=marker.date, tag=marker.name, rolled_back=undone, **_said(marker))
        nodes = meta.get("nodes")
        return _new_version(
            version=n,
            tag=tag.name,
            commit=tag.commit,
            date=tag.date,
            status=status,
            publisher=_str(meta.get("publisher")) or _person(tag),
            message=_str(meta.get("message")) if meta else (tag.text or None),
            digest=_str(meta.get("digest")),
            rolled_back=rolled_back,
            store=_str(meta.get("store")),
            nodes=nodes if isinstance(nodes, int) else None,
            cfgtool_version=_str(meta.get("cfgtool_version")),
            metadata=meta,
            principal=_str(meta.get("principal")),
            restored=restored,
            rollout=None,
        )

    def _tag(self, row: int) -> Tag:
        if row not in self._built:
            self._build([row])
        return self._built[row]

    def _build(self, rows: Sequence[int]) -> None:
        """Build the Tags of `rows`, decoding all their metadata lines (not decoded yet) with one json.loads."""
        todo = [r for r in rows if r not in self._built]
        if not todo:
            return
        cols = self._columns
        known = self._metadata
        split = [split_message(cols[_CONTENTS][r]) if cols[_TYPE][r] == "tag" else ("", None) for r in todo]
        decoded = iter(decode_all([line for r, (_, line) in zip(todo, split, strict=True)
                                   if line is not None and r not in known]))  # fmt: skip
        zones: dict[str, timezone] = {}
        for r, (text, line) in zip(todo, split, strict=True):
            meta = known[r] if r in known else next(decoded) if line is not None else None
            self._built[r] = _make_tag(cols, r, text, meta if isinstance(meta, Mapping) else {}, zones)


# ------------------------------------------------------------------------------------------ public lookups


def versions(repo: Path | None = None, store: str | Path = "store", *, all: bool = False) -> list[Version]:
    """Versions newest first: every one with `all`, else the newest `DEFAULT_SHOWN` and the current one."""
    return history(repo, store).listing(all=all)


def history(
    repo: Path | None = None, store: str | Path = "store", scheme: TagScheme | StoreTags | None = None
) -> History:
    """Every version of the store in `repo` (default: the repository containing the current directory).

    The tag names come from the store's `_CONFIG_STORE` at HEAD and the tags that exist, unless `scheme` is given.
    Before the first commit, `_CONFIG_STORE` is read in the working tree.
    """
    root = git.locate(repo if repo is not None else Path.cwd()).root
    return read_history(root, scheme or scheme_for(root, store))


def read_history(root: Path, scheme: TagScheme | StoreTags) -> History:
    """Every version tag and rollback marker of the store, from one `git for-each-ref`. With `StoreTags`, the
    spelling that applies is decided from the same output (module doc)."""
    candidates = scheme.candidates() if isinstance(scheme, StoreTags) else (scheme,)
    patterns = [p for s in candidates for p in s.patterns()]
    out = git.run_git(root, "for-each-ref", f"--format={_FORMAT}", "--end-of-options", *patterns).stdout
    text = out.decode("utf-8", "replace")
    fields = text.split("\0")
    width = len(_FIELDS)
    count = len(fields) // width
    columns = [fields[k : count * width : width] for k in range(width)]
    columns[_REF] = [ref.lstrip("\n") for ref in columns[_REF]]
    numbered = _numbered(columns, candidates)
    meta = _Metadata(columns, text)
    chosen = 0
    if isinstance(scheme, StoreTags) and len(candidates) > 1:
        chosen = _choose(root, scheme, candidates, numbered, meta)
    elif isinstance(scheme, StoreTags) and scheme.custom is None and not _owns_plain(root, scheme, numbered[0], meta):
        scheme.named()  # raises: the store needs its own tags, and its name cannot spell them
    picked, (tags, markers, restored) = candidates[chosen], numbered[chosen]
    highest = max((*tags, *markers), default=0)
    owned = [meta.owned(picked, rows) for rows in (tags, markers, restored)]
    rollouts = _rollout_rows(columns, picked, meta)
    return History(picked, columns, owned[0], owned[1], highest, meta.decoded, owned[2], rollouts)


_Rows = tuple[dict[int, int], dict[int, int], dict[int, int]]  # {N: row} of version tags, rollback and restored markers


def _numbered(columns: Sequence[Sequence[str]], schemes: Sequence[TagScheme]) -> list[_Rows]:
    """For each scheme, `{N: row}` of its version tags, its rollback markers and its restored markers. It takes one
    pass over the rows."""
    refs, otypes, peeled_types = columns[_REF], columns[_TYPE], columns[_PEELED_TYPE]
    found: list[_Rows] = [({}, {}, {}) for _ in schemes]
    prefixes: list[tuple[str, dict[int, int]]] = []
    for scheme, rows in zip(schemes, found, strict=True):
        prefixes += [("refs/tags/" + prefix, into) for prefix, into in zip(scheme.prefixes, rows, strict=True)]
    for i, ref in enumerate(refs):
        if otypes[i] != "commit" and not (otypes[i] == "tag" and peeled_types[i] == "commit"):
            continue  # a tag of a tree, blob or another tag: not a version
        for prefix, into in prefixes:
            if ref.startswith(prefix):
                number = version_number(ref[len(prefix) :])
                if number is not None:
                    into[number] = i
    return found


def _rollout_rows(columns: Sequence[Sequence[str]], scheme: TagScheme, meta: _Metadata) -> dict[int, dict[int, int]]:
    """`{N: {seq: row}}` of the rollout steps of `scheme`'s versions (`<rollout_prefix>N/<seq>`, annotated)."""
    prefix = "refs/tags/" + scheme.rollout_prefix
    found: dict[tuple[int, int], int] = {}
    for i, ref in enumerate(columns[_REF]):
        if ref.startswith(prefix) and columns[_TYPE][i] == "tag" and columns[_PEELED_TYPE][i] == "commit":
            number, slash, seq = ref[len(prefix) :].partition("/")
            n, k = version_number(number), version_number(seq)
            if slash and n is not None and k is not None:
                found[n, k] = i
    owned = meta.owned(scheme, {r: r for r in found.values()})
    out: dict[int, dict[int, int]] = {}
    for (n, k), row in found.items():
        if row in owned:
            out.setdefault(n, {})[k] = row
    return out


class _Metadata:
    """The rows' metadata, decoded only as far as a question needs. The raw output may show that no tag names another
    store (`TagScheme.claims_all`). Then listing 10,000 versions decodes nothing to find out."""

    def __init__(self, columns: Sequence[Sequence[str]], text: str) -> None:
        self._columns = columns
        self._text = text
        self._claimed: dict[TagScheme, bool] = {}
        self.decoded: dict[int, Mapping[str, Any]] = {}

    def get(self, r: int) -> Mapping[str, Any]:
        """Row `r`'s decoded metadata ({} when it has none or it is damaged)."""
        if r not in self.decoded:
            self._decode([r])
        return self.decoded[r]

    def owned(self, scheme: TagScheme, rows: Mapping[int, int]) -> dict[int, int]:
        """Those of `rows` ({N: row}) whose tags may be `scheme`'s (`TagScheme.owns`)."""
        if not rows:
            return {}
        if scheme not in self._claimed:
            self._claimed[scheme] = scheme.claims_all(self._text)
        if self._claimed[scheme]:
            return dict(rows)
        self._decode(list(rows.values()))
        return {n: r for n, r in rows.items() if scheme.owns(self.decoded[r])}

    def _decode(self, rows: Sequence[int]) -> None:
        cols = self._columns
        todo = [r for r in rows if r not in self.decoded]
        lines = [split_message(cols[_CONTENTS][r])[1] if cols[_TYPE][r] == "tag" else None for r in todo]
        decoded = iter(decode_all([line for line in lines if line is not None]))
        for r, line in zip(todo, lines, strict=True):
            found = next(decoded) if line is not None else None
            self.decoded[r] = found if isinstance(found, dict) else {}


def _choose(
    root: Path,
    store: StoreTags,
    candidates: Sequence[TagScheme],
    numbered: Sequence[_Rows],
    meta: _Metadata,
) -> int:
    """Which of (plain, named) applies. The named one, once the store has tags there. Else the plain one, when the
    store owns it."""
    named_tags, named_markers, _ = numbered[1]
    if meta.owned(candidates[1], named_tags) or meta.owned(candidates[1], named_markers):
        return 1
    return 0 if _owns_plain(root, store, numbered[0], meta) else 1


def _owns_plain(root: Path, store: StoreTags, plain: _Rows, meta: _Metadata) -> bool:
    """Whether `config/vN` is the store's: the lowest plain version tag that names a store names it. With none, the
    store is the repository's only one. With several, it is the one at `store/`, else the first."""
    tags = plain[0]
    for n in sorted(tags):
        found = meta.get(tags[n])
        if isinstance(found.get("store"), str) or isinstance(found.get("name"), str):
            return store.plain.owns(found)
    head = git.resolve_commit(root, "HEAD")
    dirs = store_dirs(git.ls_tree(root, head, "")) if head is not None else []
    if store.path not in dirs:
        dirs.append(store.path)
    owner = DEFAULT_STORE_DIR if DEFAULT_STORE_DIR in dirs else min(dirs)
    return store.path == owner


def scheme_for(root: Path, store: str | Path = "store") -> StoreTags:
    """The store's tag spellings, from `<store>/_CONFIG_STORE` at HEAD (the working tree's file before a first
    commit).

    StoreNotFound-style SourceError when neither has the file, so a wrong `--store` is not silently read
    with the default prefixes.
    """
    rel = store_path(root, store)
    path = posixpath.join(rel, SETTINGS_FILE) if rel else SETTINGS_FILE
    proc = git.run_git(root, "cat-file", "blob", f"HEAD:{path}", check=False)
    if proc.returncode == 0:
        text = proc.stdout.decode("utf-8-sig", "replace")
    else:
        try:
            text = (root / path).read_text(encoding="utf-8-sig")
        except OSError as err:
            raise SourceError(
                f"no store at {posixpath.dirname(path) or '.'}/ in {root}: {path} exists neither at HEAD nor in"
                " the working tree",
                hint="pass --store DIR to name the store directory (relative to the repository root)",
            ) from err
    settings, _ = parse_settings(text, path)  # invalid prefixes fall back to the defaults; compile reports them
    return StoreTags.of(settings, rel)


def store_path(root: Path, store: str | Path) -> str:
    """`store` as a normalized POSIX path relative to the repository root ('' = the root)."""
    path = Path(store)
    if path.is_absolute():
        try:
            path = path.resolve().relative_to(root.resolve())
        except ValueError as err:
            raise SourceError(f"store {store} is outside the repository {root}", hint="pass --store DIR") from err
    rel = posixpath.normpath(path.as_posix())
    return "" if rel == "." else rel


def _json(value: str) -> str:
    """`value` as the metadata line spells it (compact JSON, ASCII only)."""
    return json.dumps(value, ensure_ascii=True)


def _make_tag(
    cols: Sequence[Sequence[str]], r: int, text: str, meta: Mapping[str, Any], zones: dict[str, timezone]
) -> Tag:
    """A Tag from row `r`; a lightweight tag (made by hand) has no tagger, message or metadata."""
    lightweight = cols[_TYPE][r] == "commit"
    person, date = _split_creator(cols[_CREATOR][r], zones)
    name, email = ("", "") if lightweight else person
    return Tag(
        name=cols[_REF][r][len("refs/tags/") :],
        object=cols[_OID][r],
        commit=cols[_OID][r] if lightweight else cols[_PEELED][r],
        tagger=name or None,
        tagger_email=email or None,
        date=date,
        text=text,
        metadata=meta,
    )


LAST_YEAR = 9000  # a later tag date is unreadable: adding a step time or a bake to it would pass datetime's end
_UNREADABLE = datetime.fromtimestamp(0, UTC)


def _split_creator(creator: str, zones: dict[str, timezone]) -> tuple[tuple[str, str], datetime]:
    """`Name <email> 1700000000 +0200` as ((name, email), an aware datetime)."""
    ident, _, when = creator.rpartition("> ")
    name, _, email = ident.rpartition("<")
    stamp, _, zone = when.partition(" ")
    tz = zones.get(zone)
    if tz is None:
        try:
            sign = -1 if zone.startswith("-") else 1
            tz = timezone(sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5])))
        except ValueError:
            tz = UTC
        zones[zone] = tz
    try:
        date = datetime.fromtimestamp(int(stamp), tz)
    except (ValueError, OverflowError, OSError):
        date = _UNREADABLE
    return (name.strip(), email), date if date.year < LAST_YEAR else _UNREADABLE


def _new_version(**fields: Any) -> Version:
    """A Version without the frozen dataclass's generated __init__ (one setattr call per field): listing
    10,000 versions builds 10,000 of them. Every field is passed, so the result equals `Version(**fields)`."""
    version = object.__new__(Version)
    version.__dict__.update(fields)
    return version


def _said(marker: Tag) -> dict[str, str]:
    """Who wrote a marker and why: its metadata's `by` and `reason`, else its tagger and message."""
    meta = marker.metadata
    return {"by": _str(meta.get("by")) or _person(marker), "reason": _str(meta.get("reason")) or marker.text}


def _rolled_back(marker: Tag) -> RolledBack:
    return RolledBack(date=marker.date, tag=marker.name, **_said(marker))


def _person(tag: Tag) -> str:
    if tag.tagger and tag.tagger_email:
        return f"{tag.tagger} <{tag.tagger_email}>"
    return tag.tagger or tag.tagger_email or "unknown"


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
