"""The state of one served store: its versions, which of them can be served, the versions in memory, its
change feed's events and its ACL.

`refresh()` runs on the loader thread. It re-reads the tags (one `git for-each-ref`) and loads each new version once.
A version whose store does not compile is recorded as unservable and never served. It then numbers the new events and
publishes a new immutable `View`. Request handlers read `view` once per request, so they never see half an update.
The versions kept in memory are those some key can see now or within the next `T` seconds. That is Keystone's window
(`timeline.window`). Any other version is loaded on demand into a small LRU.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cfgtool.access.acl import Acl
from cfgtool.access.authorizer import Authorizer
from cfgtool.access.enforce import authorizer_at
from cfgtool.errors import CfgtoolError
from cfgtool.serve.answers import Answer, Bounded, answer
from cfgtool.serve.cohorts import Cohorts, cohorts, reader
from cfgtool.serve.feed import Event
from cfgtool.serve.loaded import LoadedVersion
from cfgtool.serve.mirror import StoreRef
from cfgtool.serve.timeline import Published, effective_by, window
from cfgtool.serve.worker import Resolver, VersionLoad, Worker
from cfgtool.versions import History, Version, history
from cfgtool.versions.names import CURRENT
from cfgtool.versions.readers import Step, StepKind, seen_before, steps
from cfgtool.versions.rollout import Selection, listing, selection
from cfgtool.versions.tags import Tag

EMPTY = answer([])
log = logging.getLogger("cfgtool.serve")


@dataclass(frozen=True)
class View:
    """What requests read: replaced whole by each refresh, never changed in place."""

    versions: Mapping[int, Version] = field(default_factory=dict)
    published: tuple[Published, ...] = ()  # the timeline of readers without an instance id, newest first
    servable: tuple[Published, ...] = ()  # servable versions at their tag dates, newest first
    selection: Selection | None = None  # the staged rollouts' selection (None: before the first refresh)
    tags: History | None = None  # the tags the view was read from (a rollout's status reads them)
    cohorts: Cohorts | None = None  # while a rollout is live: each instance's timeline (`cohorts.py`)
    unservable: Mapping[int, str] = field(default_factory=dict)
    pinned: Mapping[int, LoadedVersion] = field(default_factory=dict)
    versions_answer: Answer = EMPTY
    versions_uncounted: Answer = EMPTY  # the same without node counts, for who may not see them (`Visibility.counts`)
    authorizer: Authorizer | None = None  # the current version's ACL (with access control on)
    public: bool = False  # answers may be kept by shared caches (`--public-cache`, and User:* reads every key)
    acl_problem: str | None = None  # no current version, or its ACL does not load: 503 E_NO_ACL for this store
    steps: tuple[Step, ...] = ()  # what readers of the servable versions saw, oldest first (`readers.steps`)

    @property
    def current(self) -> int | None:
        """The highest servable version without a rollback marker that a reader without an instance id may see."""
        good = [p.version for p in self.published if p.rolled_back_at is None]
        return max(good) if good else None

    def published_for(self, instance: bytes | None) -> tuple[Published, ...]:
        """The timeline of the instance (its `Cfgtool-Instance`; None: none sent) for `current` reads."""
        return self.published if self.cohorts is None else self.cohorts.published(instance)

    def current_for(self, instance: bytes | None) -> int | None:
        """`current` for the instance: the highest servable version without a rollback marker it may see."""
        return self.current if self.cohorts is None else self.cohorts.current(instance)

    def named(self, name: str, instance: bytes | None = None) -> int | None:
        """The servable version `current` or `previous` names for the instance; None: none. `previous` is the good
        one below the current among those the instance may see (`Selection.joined`)."""
        current = self.current_for(instance)
        if name == CURRENT or current is None:
            return current
        chosen, ident = self.selection, reader(instance)
        good = (
            p.version
            for p in self.servable
            if p.rolled_back_at is None
            and p.version < current
            and (chosen is None or chosen.joined(p.version, ident) is not None)
        )
        return next(good, None)  # `servable` is newest first: the first that fits, without asking of the others


class StoreState:
    """One store of the repository, as served."""

    def __init__(
        self, ref: StoreRef, root: Path, cache: Path, cache_time: int, with_acl: bool, public: bool = False
    ) -> None:
        self.name = ref.name
        self.path = ref.path
        self._root = root
        self._cache = cache
        self.cache_time = cache_time
        self._with_acl = with_acl
        self._public = public  # --public-cache: answers are public while the current ACL lets everyone read
        self.view = View()
        self.ready = False
        self._seen: set[int] = set()
        self._markers: set[int] = set()  # versions whose rollback marker was read
        self._restored: set[int] = set()  # versions whose restored marker was read
        self._steps: set[str] = set()  # rollout tags read
        self._counts: dict[int, int] = {}  # each loaded version's changed keys at its publish
        self._worker = Worker()
        self._resolver = Resolver()
        self._others: Bounded[int, LoadedVersion] = Bounded(4)  # versions asked for outside the window
        self._load_lock = threading.Lock()
        self._acls: Bounded[str, tuple[Authorizer, str | None]] = Bounded(64)  # commit -> its ACL

    @property
    def root(self) -> Path:
        """The repository (or its bare mirror) the store's versions are read from."""
        return self._root

    # -- loading ------------------------------------------------------------------------------------------
    def _load(self, versions: list[int], keep: set[int], bases: list[int | None] | None = None) -> list[VersionLoad]:
        """Load `versions` (ascending) in a worker: each one's error or changed-key count against its base, and
        answers for `keep`. There is one base per version; None means every key counts."""
        args = (str(self._root), self.path, self.name, str(self._cache), versions, sorted(keep))
        return self._worker.load(*args, bases if bases is not None else [None] * len(versions))

    def _loaded(self, entry: VersionLoad) -> LoadedVersion:
        assert entry.answers is not None  # asked to keep it, and it loaded
        authorizer = self.acl(entry.answers.commit)[0] if self._with_acl else None
        return LoadedVersion(self.name, entry.version, entry.answers, authorizer)

    def acl(self, commit: str) -> tuple[Authorizer, str | None]:
        """The authorizer under the ACL at `commit`, and why it fails closed (None: it loaded). An ACL that
        cannot be read or has errors lets only its super users pass (none when it cannot be read)."""
        found = self._acls.get(commit)
        if found is not None:
            return found
        problem: str | None
        try:
            authorizer, problems, _ = authorizer_at(self._root, self.path or ".", commit)
        except CfgtoolError as exc:
            problem = f"the ACL of commit {commit[:7]} cannot be read: {exc.message}"
            found = Authorizer(Acl(present=True, broken=True)), problem
        else:
            errors = [p for p in problems if p.severity == "error"]
            problem = f"the ACL has errors: {errors[0].location}: {errors[0].message}" if errors else None
            found = authorizer, problem
        return self._acls.put(commit, found)

    async def resolve(self, version: int, key: str) -> bytes:
        """The config (canonical JSON) of `key`, which has no node, under a node that uses the intrinsics. It is
        resolved again for the key, in the resolver process. CfgtoolError when it does not resolve."""
        return await self._resolver.config(str(self._root), self.path, version, str(self._cache), key)

    def close(self) -> None:
        """Stop the resolver process (at shutdown)."""
        self._resolver.close()

    async def explain(self, version: int, key: str, path: str) -> dict[str, Any]:
        """`cfgtool explain --format json` of `key` at `path` in version N, from the resolver process. It keeps the
        current version's snapshot; another version is loaded there first."""
        return await self._resolver.explain(str(self._root), self.path, version, str(self._cache), key, path)

    def loaded(self, version: int) -> LoadedVersion:
        """Version N in memory (loaded now if needed, which takes a while: call it off the event loop).
        CfgtoolError when it is not servable."""
        view = self.view
        found = view.pinned.get(version) or self._others.get(version)
        if found is not None:
            return found
        if version in view.unservable:
            raise CfgtoolError(f"version {version} of store {self.name} does not compile: {view.unservable[version]}")
        with self._load_lock:
            found = self._others.get(version)
            if found is not None:
                return found
            [entry] = self._load([version], {version})
            if entry.error is not None:
                raise CfgtoolError(f"version {version} of store {self.name} does not compile: {entry.error}")
            return self._others.put(version, self._loaded(entry))

    # -- refresh (the loader thread) ----------------------------------------------------------------------
    def refresh(self, now: float) -> list[Event]:
        """Re-read the tags, load what is new, publish a new view; the new events, oldest first."""
        hist = history(self._root, self.path or ".")
        chosen = selection(hist, self.name)
        unservable = dict(self.view.unservable)
        events: list[Event] = []
        new = sorted(set(hist.numbers) - self._seen)
        if new:
            bases = seen_before(hist, unservable)  # what readers had before each (docs/versions.md)
            hot = self._window(chosen, _published(hist, unservable), now)
            counts: dict[int, int] = {}
            for entry in self._load(new, hot & set(new), [bases.get(n) for n in new]):
                n = entry.version
                if entry.error is not None:
                    unservable[n] = entry.error
                elif n in hot:
                    self._others.put(n, self._loaded(entry))
                self._seen.add(n)
                counts[n] = entry.changed
            counts.update(self._recounted(hist, unservable, bases, new))
            self._counts.update(counts)
            for n in new:
                date = hist.tag(n).date.timestamp()
                events.append(Event("publish", n, date, counts[n], effective_by(date, self.cache_time)))
        events += self._marker_events(hist, unservable)
        steps_taken = self._rollout_events(chosen)
        self._publish(hist, chosen, unservable, now)
        self.ready = True
        if not events and not steps_taken:
            return events
        # as they happened, not by date
        order: dict[tuple[str, int], int] = {(s.kind, s.version): i for i, s in enumerate(steps(hist))}
        placed = [((order.get((e.kind, e.version), -1), 0), e) for e in events]
        placed += [((order.get(("publish", e.version), -1), seq), e) for seq, e in steps_taken]  # after its publish
        return [e for _, e in sorted(placed, key=lambda pair: pair[0])]

    def _rollout_events(self, chosen: Selection) -> list[tuple[int, Event]]:
        """A `rollout` event, with its sequence number, for each rollout tag not seen yet of a version that was
        served: a step, pause, resume or done of its staged rollout. Its changed keys are its version's publish's.
        Readers who join its cohort move as readers did at that publish."""
        found = []
        for n, rollout in sorted(chosen.rollouts.items()):
            for step in rollout.events:
                if step.tag not in self._steps and n in self._seen:
                    date = step.date.timestamp()
                    count = self._counts.get(n, 0)
                    found.append((step.seq, Event("rollout", n, date, count, effective_by(date, self.cache_time))))
                self._steps.add(step.tag)
        return found

    def _window(self, chosen: Selection, servable: tuple[Published, ...], now: float) -> set[int]:
        """Every version some key of some instance can see from `now` until `now + T` (`timeline.window`)."""
        anonymous, live = cohorts(chosen, servable, now, self.cache_time)
        return set(window(anonymous, now, self.cache_time)) | (live.window(now, self.cache_time) if live else set())

    def _recounted(
        self, hist: History, unservable: Mapping[int, str], bases: Mapping[int, int | None], new: list[int]
    ) -> dict[int, int]:
        """The changed-key counts of the new versions whose base turned out not to be servable as they loaded (it was
        new too). They are counted again against the version readers had instead."""
        now = seen_before(hist, unservable)
        pairs = [(b, n) for n in new if n not in unservable and (b := now.get(n)) is not None and b != bases.get(n)]
        return {n: count for (_, n), count in zip(pairs, self._changes(pairs), strict=True)}

    def _marker_events(self, hist: History, unservable: Mapping[int, str]) -> list[Event]:
        """A rollback or restore event for each marker not seen yet of a version that was served. Its changed keys
        are those between the version readers had before and after it (0 when they stayed on one)."""
        fresh: list[tuple[StepKind, int, Tag]] = []
        kinds: list[tuple[StepKind, Mapping[int, Tag], set[int]]] = [
            ("rollback", hist.rollback_markers, self._markers),
            ("restore", hist.restorations, self._restored),
        ]
        for kind, markers, seen in kinds:
            fresh += [(kind, n, marker) for n, marker in sorted(markers.items()) if n not in seen and n in self._seen]
            seen.update(markers)  # a marker of a version never served is never an event
        if not fresh:
            return []
        by = {(s.kind, s.version): s for s in steps(hist, unservable)}
        moves = [by.get((kind, n)) for kind, n, _ in fresh]
        pairs = [(s.before, s.after) for s in moves if s and s.before and s.after and s.before != s.after]
        counted = dict(zip(pairs, self._changes(pairs), strict=True))
        events = []
        for (kind, n, marker), s in zip(fresh, moves, strict=True):
            date = marker.date.timestamp()
            count = counted.get((s.before, s.after), 0) if s is not None and s.before and s.after else 0
            events.append(Event(kind, n, date, count, date))
        return events

    def _changes(self, pairs: list[tuple[int, int]]) -> list[int]:
        """For each pair of versions, the keys whose config differs (in a worker process; none: no call)."""
        if not pairs:
            return []
        found: list[int] = self._worker.changes_between(str(self._root), self.path, str(self._cache), pairs)
        return found

    def _publish(self, hist: History, chosen: Selection, unservable: dict[int, str], now: float) -> None:
        pinned: dict[int, LoadedVersion] = {}
        for n in sorted(self._window(chosen, _published(hist, unservable), now)):
            try:
                pinned[n] = self.view.pinned.get(n) or self.loaded(n)
            except CfgtoolError as exc:  # did not compile after all (it is then never served)
                unservable[n] = exc.message
        servable = _published(hist, unservable)
        memo = self.view.cohorts.memo if self.view.cohorts is not None else None
        published, live = cohorts(chosen, servable, now, self.cache_time, memo)
        versions = listing(hist, self.name, all=True)
        body = [{**v.to_json(), "servable": v.version not in unservable} for v in versions]
        current = max((p.version for p in published if p.rolled_back_at is None), default=None)
        authorizer, problem = None, None
        if current is None:  # nothing to judge by (with or without tokens): every request but /healthz is refused
            problem = f"store {self.name} has no current version (none published, or none that can be served)"
        elif self._with_acl and current is not None:
            authorizer, problem = self.acl(hist.tag(current).commit)
            if problem is not None:
                problem = f"the current version ({current}) of store {self.name} cannot be judged: {problem}"
        if current is not None and current != self.view.current:  # keys without a node and explain read it
            self._resolver.warm(str(self._root), self.path, current, str(self._cache))
        public = False
        if self._public and current is not None:
            why = self.public_problem(hist.tag(current).commit)
            if why is not None and (self.view.public or not self.ready):
                log.warning("store %s: answers are private (not for shared caches): %s", self.name, why)
            public = why is None
        self.view = View(
            versions={v.version: v for v in versions},
            published=published,
            servable=servable,
            selection=chosen,
            tags=hist,
            cohorts=live,
            unservable=unservable,
            pinned=pinned,
            versions_answer=answer(body),
            versions_uncounted=answer([{**v, "nodes": None} for v in body]) if self._with_acl else EMPTY,
            authorizer=authorizer,
            acl_problem=problem,
            public=public,
            steps=tuple(steps(hist, unservable)),
        )

    def public_problem(self, commit: str) -> str | None:
        """Why answers of the store under the ACL at `commit` may not go to shared caches (None: they may)."""
        authorizer, problem = self.acl(commit)
        return problem if problem is not None else public_refusal(authorizer.acl)

    def current_commit(self) -> str | None:
        """The commit of the newest version without a rollback marker (read now from the tags)."""
        hist = history(self._root, self.path or ".")
        good = [n for n in hist.numbers if not hist.is_rolled_back(n)]
        return hist.tag(max(good)).commit if good else None


def public_refusal(acl: Acl) -> str | None:
    """Why a shared cache may not keep answers under `acl`, None when `User:*` may read every key. That holds with no
    ACL file. It holds with an allow of `read` (or `all`) for `User:*` on key `*` or prefix `/` from any host, and no
    deny of `User:*` on keys. allow_everyone_if_no_acl_found with no entry on keys counts too."""
    if not acl.present:
        return None
    if acl.broken:
        return f"the ACL file {acl.file} has errors"
    keyed = [e for e in acl.entries if e.key is not None]
    for entry in keyed:
        if entry.principal == "User:*" and entry.permission == "deny":
            return f"the ACL denies User:* ({entry.describe()})"
    for entry in keyed:
        if (
            entry.principal == "User:*"
            and entry.permission == "allow"
            and entry.operation in ("read", "all")
            and entry.host == "*"
            and (entry.key == "*" or (entry.prefixed and entry.key == "/"))
        ):
            return None
    if acl.allow_everyone_if_no_acl_found and not keyed:
        return None
    return "the ACL does not let User:* read every key (no allow of read for User:* on key * or prefix /)"


def _published(hist: History, unservable: Mapping[int, str]) -> tuple[Published, ...]:
    markers = hist.markers
    return tuple(
        Published(n, hist.tag(n).date.timestamp(), markers[n].date.timestamp() if n in markers else None)
        for n in sorted(hist.numbers, reverse=True)
        if n not in unservable
    )
