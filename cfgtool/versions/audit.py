"""Who changed what, when and why (docs/versions.md `cfgtool audit`).

- `audit`: every publish and rollback, from the version tags and rollback markers (ONE `git for-each-ref`,
  through `tags.history`): who, when, why.
- `audit_key`: every version in which the resolved config of a key (or one value in it) changed, old -> new,
  with the commits since the previous version that touched the files the key resolves from (its layers'
  main.conf and includes files, files included from them, `_CONFIG_STORE`).

`audit_key` compiles only the versions that can differ. ONE `git diff-tree --stdin` lists the files changed between
every pair of consecutive versions. A version may change none of the files the key resolved from at the last compiled
version, nor the directories that would create a node above it. Such a version keeps the previous value. The commits
come from ONE `git log --name-only -z` pass over the whole range. Which commits lie between two versions is worked
out from the parent links it prints: reachable from the new version, not from the old one. It never takes one git
call per version or per file.
"""

from __future__ import annotations

import difflib
import itertools
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from cfgtool.compile.compiler import compile_store
from cfgtool.diagnostics import plural
from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.hocon import HoconError, split_path
from cfgtool.snapshot.model import Snapshot
from cfgtool.snapshot.provenance import path_name
from cfgtool.store import git
from cfgtool.store.includes import INCLUDES_FILES
from cfgtool.store.keys import normalize_key, parent
from cfgtool.store.nodes import MAIN_FILE
from cfgtool.versions.diff import ABSENT, changed_values, same
from cfgtool.versions.diff_render import value_text
from cfgtool.versions.readers import Step, StepKind, steps
from cfgtool.versions.tags import Version, history, store_path

_RELATIVE = re.compile(r"\d+\s+(second|minute|hour|day|week|month|year)s?\s+ago", re.IGNORECASE)
_NODE_FILES = frozenset((MAIN_FILE, *INCLUDES_FILES))


@dataclass(frozen=True)
class AuditEvent:
    """A publish, a rollback or the cancelling of one (`restore`): which version, by whom, when, and the message
    or reason."""

    kind: Literal["publish", "rollback", "restore"]
    version: int
    by: str
    date: datetime
    message: str | None
    tag: str
    commit: str

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "version": self.version,
            "by": self.by,
            "date": self.date.isoformat(),
            "message": self.message,
            "tag": self.tag,
            "commit": self.commit,
        }


@dataclass(frozen=True)
class AuditEvents:
    events: tuple[AuditEvent, ...]  # newest first

    def to_json(self) -> dict[str, Any]:
        return {"events": [e.to_json() for e in self.events]}


@dataclass(frozen=True)
class Commit:
    sha: str
    author: str
    date: datetime
    subject: str

    def to_json(self) -> dict[str, Any]:
        return {"sha": self.sha, "author": self.author, "date": self.date.isoformat(), "subject": self.subject}


@dataclass(frozen=True)
class ValueChangeEvent:
    """What readers read went from `old` to `new` (ABSENT: not set). Version `version` was published over `previous`,
    the version readers had before it. Or (`kind` rollback / restore) it was rolled back or restored, and readers
    went from `previous` to `current`. `commits` are, for a publish, the commits since `previous` that touched the
    files the key resolves from, newest first."""

    version: int
    tag: str
    commit: str
    date: datetime
    old: Any
    new: Any
    commits: tuple[Commit, ...]
    previous: int | None  # the version readers had before (None: none)
    exists: bool  # whether the key has a node of its own at this version
    rolled_back: bool  # whether the version is rolled back now
    kind: StepKind = "publish"
    current: int | None = None  # the version readers had after (a publish: `version`)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": self.version, "date": self.date.isoformat()}
        if self.old is not ABSENT:
            out["old"] = self.old
        if self.new is not ABSENT:
            out["new"] = self.new
        out["commits"] = [c.to_json() for c in self.commits]
        out.update(
            kind=self.kind, tag=self.tag, commit=self.commit, previous=self.previous,
            current=self.version if self.kind == "publish" else self.current, exists=self.exists,
            rolled_back=self.rolled_back,
        )  # fmt: skip
        return out


@dataclass(frozen=True)
class KeyHistory:
    key: str
    path: str | None
    history: tuple[ValueChangeEvent, ...]  # newest first

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "path": self.path, "history": [h.to_json() for h in self.history]}


# ------------------------------------------------------------------------------------------ events


def audit(repo: Path | None = None, since: datetime | None = None, store: str | Path = "store") -> AuditEvents:
    """Every publish, rollback and cancelled rollback (on or after `since`), newest first."""
    events = []
    order = {"publish": 0, "rollback": 1, "restore": 2}
    for v in history(repo, store).listing(all=True):
        events.append(AuditEvent("publish", v.version, v.publisher or "unknown", v.date, v.message, v.tag, v.commit))
        rb = v.rolled_back or (v.restored.rolled_back if v.restored is not None else None)
        if rb is not None:
            events.append(AuditEvent("rollback", v.version, rb.by, rb.date, rb.reason or None, rb.tag, v.commit))
        if v.restored is not None:
            rs = v.restored
            events.append(AuditEvent("restore", v.version, rs.by, rs.date, rs.reason or None, rs.tag, v.commit))
    if since is not None:
        events = [e for e in events if e.date >= _aware(since)]
    events.sort(key=lambda e: (e.date, e.version, order[e.kind]), reverse=True)
    return AuditEvents(tuple(events))


def _aware(when: datetime) -> datetime:
    """A naive date-time is local time."""
    return when if when.tzinfo is not None else when.astimezone()


def parse_since(text: str, repo: Path | None = None) -> datetime:
    """`--since`: an ISO 8601 date or date-time (local time unless it has an offset), or `N units ago`."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        parsed = None
    if parsed is not None:
        return _aware(parsed)
    if not _RELATIVE.fullmatch(text.strip()):
        raise UsageError(
            f"--since {text!r} is not a date",
            hint="write an ISO date such as 2024-05-01 (or 2024-05-01T12:00:00+02:00), or e.g. '3 weeks ago'",
        )
    root = git.locate(repo if repo is not None else Path.cwd()).root
    out = git.run_git(root, "rev-parse", f"--since={text.strip()}").stdout.decode().strip()
    return datetime.fromtimestamp(int(out.removeprefix("--max-age="))).astimezone()


# ------------------------------------------------------------------------------------------ one key


def audit_key(
    repo: Path | None,
    key: str,
    path: str | None = None,
    since: datetime | None = None,
    store: str | Path = "store",
    variables: Mapping[str, str] | None = None,
) -> KeyHistory:
    """Every change of what readers read for `key`, or of the value at `path` in it, newest first. Only changes on or
    after `since` count. A version's change is counted against the version readers had before it
    (`readers.seen_before`), never against a rolled-back one. A rollback or a restore that changed it is an event
    too. Rolled-back versions count: they were live. A key without a node reads what it inherits
    (docs/resolution.md#keys-without-a-node), as a client would."""
    root = git.locate(repo if repo is not None else Path.cwd()).root
    parts = _split(path)
    known = history(root, store)
    versions = {v.version: v for v in known}
    wanted = [s for s in steps(known) if since is None or s.date >= _aware(since)]
    reader = _Reader(root, store, variables, key, parts)
    shown_path = path_name(parts) if parts else None
    needed = {n for s in wanted for n in (s.version, s.before, s.after) if n is not None}
    if not needed:
        if known.current_number is not None:
            reader.read(known.tag(known.current_number).commit)  # still check the key
            reader.require_node()
        return KeyHistory(reader.key or key, shown_path, ())
    values = _values(root, reader, [v for n, v in sorted(versions.items()) if n >= min(needed)])
    reader.require_node()
    found = changed_steps(wanted, lambda n: values[n][0] if n in values else ABSENT)
    publishes = [(s, old, new) for s, old, new in found if s.kind == "publish"]
    ranges = [(versions[s.before].commit if s.before else None, versions[s.version].commit) for s, _, _ in publishes]
    between = iter(_commits_between(root, ranges, versions[min(needed)] if all(r[0] for r in ranges) else None))
    events = []
    for s, old, new in found:
        version, (_, exists, now) = versions[s.version], values[s.version]
        commits: tuple[Commit, ...] = ()
        if s.kind == "publish":
            relevant = now | values[s.before][2] if s.before is not None else now
            commits = tuple(c for c, files in next(between) if any(map(relevant, files)))
        events.append(ValueChangeEvent(
            version=s.version, tag=version.tag, commit=version.commit, date=s.date, old=old, new=new,
            commits=commits, previous=s.before, exists=exists, rolled_back=version.rolled_back is not None,
            kind=s.kind, current=s.after,
        ))  # fmt: skip
    return KeyHistory(reader.key or key, shown_path, tuple(reversed(events)))


def changed_steps(wanted: list[Step], value: Callable[[int], Any]) -> list[tuple[Step, Any, Any]]:
    """(step, old, new) for each of `wanted` after which readers read another value than before. `value(N)` is the
    value at version N (ABSENT where unset). The one rule `audit_key` and the console's history share."""
    out = []
    for s in wanted:
        if s.before == s.after and s.kind != "publish":
            continue  # readers went on reading the same version
        old = value(s.before) if s.before is not None else ABSENT
        new = value(s.after if s.kind != "publish" else s.version) if s.after is not None else ABSENT
        if not same(old, new):
            out.append((s, old, new))
    return out


def _values(root: Path, reader: _Reader, chain: list[Version]) -> dict[int, tuple[Any, bool, _Relevant]]:
    """Version N -> (the value at N or ABSENT, whether the key has a node there, the files it resolves from), for
    each version of `chain` (ascending). A version whose changes since the last one read touch none of those files
    keeps the last value unread. So does one where the key does not resolve (a broken publish)."""
    changes = _changed_files(root, [v.commit for v in chain], reader.store_dir)
    out: dict[int, tuple[Any, bool, _Relevant]] = {}
    last: tuple[Any, bool, _Relevant] = (ABSENT, False, _Relevant(everything=True))
    prev: Version | None = None
    pending: set[str] = set()
    for version in chain:
        if prev is not None and prev.commit != version.commit:
            pending |= changes.get((prev.commit, version.commit), set())
        prev = version
        if version is not chain[0] and not any(map(last[2], pending)):
            out[version.version] = last
            continue
        read = reader.read(version.commit)
        if read is not None:
            last, pending = read, set()
        out[version.version] = last
    return out


@dataclass(frozen=True)
class _Relevant:
    """The files a key resolves from: node files (main.conf, includes) in `dirs`, and `files`."""

    dirs: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()
    everything: bool = False

    def __call__(self, path: str) -> bool:
        if self.everything or path in self.files:
            return True
        directory, _, name = path.rpartition("/")
        return name in _NODE_FILES and directory in self.dirs

    def __or__(self, other: _Relevant) -> _Relevant:
        return _Relevant(self.dirs | other.dirs, self.files | other.files, self.everything or other.everything)


class _Reader:
    """Compiles the store at a commit and reads the key (and path) from it."""

    def __init__(
        self, root: Path, store: str | Path, variables: Mapping[str, str] | None, key: str, parts: tuple[str, ...]
    ) -> None:
        self.root, self.store, self.variables, self.raw, self.parts = root, store, variables, key, parts
        self.store_dir = store_path(root, store)
        self.key: str | None = None
        self.existed = False  # whether the key had a node in any version read
        self.nodes: list[str] = []  # the node keys of the last version read (for "did you mean")

    def read(self, commit: str) -> tuple[Any, bool, _Relevant] | None:
        """(value or ABSENT, whether the key has a node, the files it resolves from); None when it does not
        resolve."""
        result = compile_store(self.root, self.store, commit, self.variables, check_variables=False, validate=False)
        snapshot = result.snapshot
        if self.key is None:
            self.key = normalize_key(self.raw, snapshot.name)
        try:
            found = snapshot.lookup(self.key)
        except CfgtoolError:
            return None
        self.existed = self.existed or found.exists
        self.nodes = list(snapshot.nodes)
        value: Any = found.config
        for part in self.parts:
            value = value.get(part, ABSENT) if isinstance(value, dict) else ABSENT
        return value, found.exists, self._relevant(snapshot, self.key, result.store.settings_file)

    def require_node(self) -> None:
        """CfgtoolError when the key had no node in any version read; most likely it is a typo. Its history would
        only be inherited values, which reads as if someone had changed it."""
        if self.existed or not self.nodes:
            return
        key = self.key or self.raw
        close = difflib.get_close_matches(key, self.nodes, n=1, cutoff=0.6)
        raise CfgtoolError(
            f"{key} has no node in any published version: nothing was ever set for it",
            hint=f"did you mean {close[0]}?" if close else "`cfgtool versions` and `cfgtool get KEY` show what exists",
        )

    def _relevant(self, snapshot: Snapshot, key: str, settings_file: str) -> _Relevant:
        """Its layers' directories, and the directories that would create a node between it and its nearest node.
        Also files included from main.conf files, and `_CONFIG_STORE` (variables)."""
        layers = snapshot.nodes[snapshot.nearest_node(key)].layers
        dirs = {self._dir(k) for k in layers}
        k: str | None = key
        while k is not None:
            dirs.add(self._dir(k))
            k = parent(k)
        files = {settings_file, *(p for p in snapshot.texts if posixpath.basename(p) != MAIN_FILE)}
        return _Relevant(frozenset(dirs), frozenset(files))

    def _dir(self, key: str) -> str:
        if key == "/":
            return self.store_dir
        return f"{self.store_dir}/{key[1:]}" if self.store_dir else key[1:]


def _split(path: str | None) -> tuple[str, ...]:
    if path is None:
        return ()
    try:
        parts = split_path(path)
    except HoconError as exc:
        raise UsageError(f"--path {path!r} is not a HOCON path: {exc.message}", hint="write e.g. retention.ms") from exc
    return parts


# ------------------------------------------------------------------------------------------ git, in bulk


def _changed_files(root: Path, commits: list[str], store_dir: str) -> dict[tuple[str, str], set[str]]:
    """Files under the store that differ between each pair of consecutive `commits`, from ONE
    `git diff-tree --stdin`. Each input line `NEW OLD` compares OLD with NEW."""
    pairs = list(dict.fromkeys((a, b) for a, b in itertools.pairwise(commits) if a != b))
    if not pairs:
        return {}
    request = "".join(f"{b} {a}\n" for a, b in pairs).encode()
    spec = ["--", store_dir + "/"] if store_dir else []
    out = git.run_git(root, "diff-tree", "--stdin", "-r", "--name-only", "-z", *spec, input=request).stdout
    changed: dict[tuple[str, str], set[str]] = {pair: set() for pair in pairs}
    at = -1  # index of the pair whose files are being read; git prints a pair's NEW commit before its files
    for token in out.decode("utf-8", "surrogateescape").split("\0"):
        if not token:
            continue
        nxt = next((j for j in range(at + 1, len(pairs)) if pairs[j][1] == token), None) if "/" not in token else None
        if nxt is not None:
            at = nxt
        elif at >= 0:
            changed[pairs[at]].add(token)
    return changed


_LOG_FORMAT = "%x1e%H%x00%P%x00%an <%ae>%x00%aI%x00%s"


def _commits_between(
    root: Path, ranges: list[tuple[str | None, str]], baseline: Version | None
) -> list[list[tuple[Commit, tuple[str, ...]]]]:
    """For each (old, new) commit pair: the commits reachable from new but not from old, newest first, with the files
    each touched. All of new's history when old is None. It takes ONE `git log` pass."""
    if not ranges:
        return []
    tips = list(dict.fromkeys(c for pair in ranges for c in pair if c is not None))
    stop = ["--not", baseline.commit] if baseline is not None else []
    args = ["log", "--name-only", "-z", "--no-renames", f"--format={_LOG_FORMAT}", *tips, *stop]
    out = git.run_git(root, *args).stdout.decode("utf-8", "surrogateescape")
    order: list[Commit] = []
    parents: dict[str, list[str]] = {}
    files: dict[str, tuple[str, ...]] = {}
    for record in out.split("\x1e"):
        if not record:
            continue
        sha, parent_list, author, date, subject, *names = record.split("\0")
        commit = Commit(sha, author, datetime.fromisoformat(date), subject)
        order.append(commit)
        parents[sha] = parent_list.split()
        files[sha] = tuple(n.lstrip("\n") for n in names if n.strip("\n"))

    def reach(tip: str | None) -> set[str]:
        seen: set[str] = set()
        todo = [tip] if tip is not None and tip in parents else []
        while todo:
            sha = todo.pop()
            if sha in seen:
                continue
            seen.add(sha)
            todo.extend(p for p in parents[sha] if p in parents)
        return seen

    result = []
    for old, new in ranges:
        inside = reach(new) - reach(old)
        result.append([(c, files[c.sha]) for c in order if c.sha in inside])
    return result


# ------------------------------------------------------------------------------------------ text


def render_events_text(events: AuditEvents, since: datetime | None = None) -> str:
    if not events.events:
        if since is not None:
            return f"no version was published or rolled back since {_when(_aware(since))} (--since)\n"
        return "no version has been published or rolled back\n"
    lines = []
    for e in events.events:
        message = f"  {e.message}" if e.message else ""
        lines.append(f"{_when(e.date)}  {e.kind:<8}  v{e.version:<4} {e.commit[:7]}  by {e.by}{message}")
    return "\n".join(lines) + "\n"


def render_history_text(found: KeyHistory, since: datetime | None = None) -> str:
    what = f"{found.key} {found.path}" if found.path else found.key
    if not found.history:
        after = f" since {_when(_aware(since))} (--since)" if since is not None else ""
        return f"{what}: no version changed it{after}\n"
    kinds = [h.kind for h in found.history]
    counts = [
        plural(kinds.count(k), noun) for k, noun in (("rollback", "rollback"), ("restore", "restore")) if k in kinds
    ]
    lines = [f"{what}: changed in {' and '.join([plural(kinds.count('publish'), 'version'), *counts])}"]
    for h in found.history:
        if h.kind == "publish":
            base = f"since v{h.previous}" if h.previous is not None else "first version"
            flags = "  (rolled back)" if h.rolled_back else ""
            lines += ["", f"v{h.version}  {_when(h.date)}  {h.commit[:7]}  ({base}){flags}"]
        else:
            done = "rolled back" if h.kind == "rollback" else "restored"
            lines += ["", f"v{h.version} {done}  {_when(h.date)}  (readers went from v{h.previous} to v{h.current})"]
        if found.path is not None:
            lines.append(f"    {value_text(h.old)} -> {value_text(h.new)}")
        else:
            lines += [f"    {p}: {value_text(o)} -> {value_text(n)}" for p, o, n in changed_values(h.old, h.new)]
        lines += [f"    {c.sha[:7]} {_when(c.date)} {c.author}: {c.subject}" for c in h.commits]
        if not h.commits and h.kind == "publish":
            lines.append("    (no commit in between touched its files)")
    return "\n".join(lines) + "\n"


def _when(date: datetime) -> str:
    return date.strftime("%Y-%m-%d %H:%M %z")
