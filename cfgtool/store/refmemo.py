"""Answers about a repository's refs, remembered between processes for as long as no ref can have changed.

A read of a cached version (`cfgtool get --ref HEAD`, `ConfigClient(path)`) needs three answers from git before it
can open the version's artifact. Where is the repository? Which commit does a ref or version name? Which version is
current? Each costs a git process, and the first one GitPython's import: a large part of such a read
(docs/scaling.md). A `RefMemo` keeps those answers in a small JSON file in the cache. Beside them it keeps the state
of every directory they depend on. Those are the directories from the starting path up to the repository root. A new
`.git` on the way would move the repository. Then its `.git` entry, the git directory and the common directory (HEAD,
packed-refs). Then every directory under their `refs/` and `reftable/`. And the store's working-tree settings file:
the version tag prefixes come from it before a first commit. git changes a ref by writing a lock file beside it and
renaming it into place. Each of those steps changes its directory's inode change time and modification time. So while
every watched path keeps its inode, size and times, the refs are the ones the answers came from. Any difference
discards the whole memo, and git answers again.

Only answers that depend on refs alone are kept: plain ref names and full object names. Not kept are `@{...}`
(reflogs, dates), `~`/`^` (history), and abbreviated object names, which can become ambiguous.

A memo is written only when every watched time is at least `SETTLED_NS` old when the state is taken. That is git's
"racy" rule: a later change then gets a later time even on a coarse file system clock. The file holds plain JSON,
written atomically. It is sealed with the user's cache key (`cacheauth`), since it decides which commit a version
names. One that is damaged, forged or of another shape is a miss (docs/security.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

FORMAT = 3  # 2: sealed with the user's cache key (cacheauth); 3: `current` as a staged rollout has it
SETTLED_NS = 1_000_000_000
_MEMO_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*")
_ABBREVIATED = re.compile(r"[0-9a-fA-F]{4,39}")

Stat = tuple[int, int, int, int, int] | None  # inode, mode, size, mtime_ns, ctime_ns; None: absent


class Located(NamedTuple):
    """Where the repository is: `root` is its work tree (or the git directory of a bare repository)."""

    root: Path
    bare: bool


def memoizable(ref: str) -> bool:
    """Whether what `ref` names depends on the refs alone (not on reflogs, dates, history or the objects)."""
    return bool(_MEMO_REF.fullmatch(ref)) and ".." not in ref and not _ABBREVIATED.fullmatch(ref)


class RefMemo:
    """Remembered answers for one starting path (a `--repo` or the current directory), see the module doc."""

    def __init__(self, start: Path, cache: Path) -> None:
        self.start = Path(os.path.abspath(start))
        self._file = cache / f"refs-v{FORMAT}" / (hashlib.sha256(str(self.start).encode()).hexdigest()[:32] + ".json")
        self._root: Located | None = None
        self._watched: dict[str, Stat] = {}
        self._answers: dict[str, Any] = {}
        self._dirty = False
        self._load()

    def _load(self) -> None:
        from cfgtool._util.cacheauth import unseal

        try:
            text = unseal(f"refs {self._file.name}", self._file.read_bytes())
            if text is None:
                return  # no memo yet, damaged or forged: a miss
            data = json.loads(text)
            if data.get("format") != FORMAT or data.get("start") != str(self.start):
                return
            root, bare, watched, answers = data["root"], data["bare"], data["watched"], data["answers"]
            if not (isinstance(root, str) and isinstance(bare, bool) and isinstance(answers, dict)):
                return
            state = {path: _stat(path) for path in watched}
            if any(state[path] != (tuple(want) if want is not None else None) for path, want in watched.items()):
                return  # something changed since: every answer may be stale
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
            return  # no memo yet, or damaged: a miss
        self._root, self._watched, self._answers = Located(Path(root), bare), state, answers

    @property
    def repo(self) -> Located:
        """The repository containing the starting path (git.locate's answer, remembered)."""
        if self._root is None:
            from cfgtool.store import git  # only when git must answer: GitPython is not imported otherwise

            found = git.locate(self.start)
            located = Located(found.root, found.bare)
            gitdir, common = git.git_dirs(located.root)
            self._watched = {path: _stat(path) for path in _watch_list(self.start, located, gitdir, common)}
            self._root, self._answers, self._dirty = located, {}, True
        return self._root

    def add_file(self, path: Path) -> None:
        """Watch one more file (before asking anything that depends on it)."""
        name = str(path)
        if name not in self._watched:
            self.repo  # noqa: B018 -- locating the repository first fixes the watched state
            self._watched[name], self._answers, self._dirty = _stat(name), {}, True

    def answer(self, question: str, compute: Callable[[], Any]) -> Any:
        """The remembered answer to `question`, else `compute()` (remembered unless it is None)."""
        self.repo  # noqa: B018 -- the watched state is taken before any answer is computed
        if question in self._answers:
            return self._answers[question]
        found = compute()
        if found is not None:
            self._answers[question] = found
            self._dirty = True
        return found

    def save(self) -> None:
        """Write the memo (atomically) if it learned something and its watched state is settled. A cache that cannot
        be written is skipped."""
        if not self._dirty or self._root is None:
            return
        limit = time.time_ns() - SETTLED_NS
        if any(s is not None and max(s[3], s[4]) > limit for s in self._watched.values()):
            return  # changed a moment ago: a change in the same clock tick could go unseen
        data = {
            "format": FORMAT,
            "start": str(self.start),
            "root": str(self._root.root),
            "bare": self._root.bare,
            "watched": self._watched,
            "answers": self._answers,
        }
        from cfgtool._util.atomic import write_atomic_bytes
        from cfgtool._util.cacheauth import seal
        from cfgtool._util.cachedir import private_dir

        sealed = seal(f"refs {self._file.name}", json.dumps(data).encode("utf-8"))
        try:
            if sealed is None:
                return
            private_dir(self._file.parent)
            write_atomic_bytes(self._file, sealed)
        except OSError:
            return
        self._dirty = False


def _stat(path: str) -> Stat:
    try:
        s = os.lstat(path)
    except OSError:
        return None
    return (s.st_ino, s.st_mode, s.st_size, s.st_mtime_ns, s.st_ctime_ns)


def _watch_list(start: Path, located: Located, gitdir: Path, common: Path) -> list[str]:
    """Every path whose change can change an answer (see the module doc)."""
    root = located.root
    paths: list[Path] = []
    here = start
    while True:
        paths.append(here)
        if here == root or here.parent == here:
            break
        here = here.parent
    if not located.bare:
        paths.append(root / ".git")
    paths += [gitdir, common]
    for base in dict.fromkeys([common / "refs", gitdir / "refs", common / "reftable"]):
        for folder, _, _ in os.walk(base):  # never follows links
            paths.append(Path(folder))
    return [str(p) for p in dict.fromkeys(paths)]
