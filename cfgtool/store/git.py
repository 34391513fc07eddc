"""The one way cfgtool reaches git (ARCHITECTURE.md). It wraps GitPython's `Git` command runner in the few calls
cfgtool needs. They locate a repository, resolve refs, list trees, read blobs in bulk and run plumbing commands.

The git commands run through `gitpython.Git.execute`, one process each. `cat-file --batch --buffer` is one streaming
process for any number of blobs. GitPython's object model is not used: one `ls-tree -r -z` plus one
`cat-file --batch` reads a 20,000-file tree about 15x faster. GitPython's exceptions become cfgtool's here, once.
Inherited `GIT_*` variables could point git at another repository; a git hook sets them. They are kept from every git
process. Nothing else in cfgtool starts a process (a test checks).
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cfgtool.errors import SourceError
from cfgtool.store.urls import redact, stall_bound

if TYPE_CHECKING:
    import git as gitpython

# GIT_* variables that configure how git runs rather than which repository it reads (as pre-commit keeps).
_KEEP_GIT_ENV = {
    "GIT_EXEC_PATH",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_SSL_CAINFO",
    "GIT_SSL_NO_VERIFY",
    "GIT_CONFIG_COUNT",
    "GIT_HTTP_PROXY_AUTHMETHOD",
    "GIT_ALLOW_PROTOCOL",
    "GIT_ASKPASS",
}


# Added to every git command: git takes no lock it can do without. A read such as `git status` otherwise
# rewrites the index under `.git/index.lock` to refresh it, and a process killed then (a CI runner cancelling a
# job) leaves that lock behind, so the user's next `git commit` fails.
_NO_OPTIONAL_LOCKS = {"GIT_OPTIONAL_LOCKS": "0"}


class GitError(SourceError):
    """git failed, or is not installed (exit 2)."""


class StalledError(GitError):
    """A clone or fetch received nothing for its bound and was stopped (exit 2)."""


class NotAGitRepoError(SourceError):
    """The path is not inside a git repository (exit 2)."""


class UnknownRefError(SourceError):
    """A ref names no commit (exit 2)."""


def git_env() -> dict[str, str]:
    """The environment minus inherited `GIT_*` variables that would point git elsewhere."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GIT_") or k in _KEEP_GIT_ENV or k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
    }


@dataclass(frozen=True)
class Completed:
    """A finished git command: its exit status and its raw output."""

    returncode: int
    stdout: bytes
    stderr: bytes


_ENV_LOCK = threading.Lock()


@contextlib.contextmanager
def _clean_environ() -> Iterator[None]:
    """Keep inherited `GIT_*` variables that redirect git from the git process about to start.

    GitPython builds a child's environment from `os.environ` and can only add to it. So the few variables `git_env`
    drops leave `os.environ` while the process starts, under a lock, and are then put back. When none is set (the
    usual case), nothing is touched.
    """
    drop = [k for k in os.environ if k.startswith("GIT_") and k not in git_env()]
    if not drop:
        yield
        return
    with _ENV_LOCK:
        saved = {k: os.environ.pop(k) for k in drop if k in os.environ}
        try:
            yield
        finally:
            os.environ.update(saved)


def _gitpython() -> Any:
    """GitPython, imported on first use. Importing it looks for the git executable and raises ImportError when there
    is none. That is an environment error (exit 2) like any other missing git, not a crash."""
    try:
        import git as gitpython
    except ImportError as err:
        raise GitError(f"git is not installed or not on PATH ({str(err).splitlines()[0]})", hint="install git") from err
    return gitpython


def _runner(cwd: Path) -> gitpython.Git:
    """GitPython's command runner for `cwd`, which must be an existing directory. Given a missing one, GitPython
    would run git in the current directory instead."""
    if not cwd.is_dir():
        raise NotAGitRepoError(f"not a directory: {cwd}", hint="pass --repo PATH")
    runner: gitpython.Git = _gitpython().Git(cwd)
    return runner


def run_git(
    cwd: Path, *args: str, input: bytes | None = None, check: bool = True, env: Mapping[str, str] | None = None
) -> Completed:
    """Run `git args...` in `cwd` and capture its output; raises GitError when it fails (if `check`). `env` adds
    variables to the git process alone. So a credential for one fetch stays out of files and of `os.environ`."""
    runner = _runner(cwd)
    with contextlib.ExitStack() as stack:
        stdin: Any = None
        if input is not None:  # GitPython passes stdin as a file: a temporary one holds the input
            stdin = stack.enter_context(tempfile.TemporaryFile())
            stdin.write(input)
            stdin.seek(0)
        try:
            with _clean_environ():
                status, out, err = runner.execute(
                    ["git", *args],
                    istream=stdin,
                    env={**_NO_OPTIONAL_LOCKS, **(env or {})},
                    with_extended_output=True,
                    with_exceptions=False,
                    stdout_as_string=False,
                    strip_newline_in_stdout=False,
                )
        except _gitpython().GitCommandNotFound as exc:
            raise GitError("git is not installed or not on PATH", hint="install git") from exc
    stdout = out if isinstance(out, bytes) else str(out).encode()
    stderr = err.encode(errors="surrogateescape") if isinstance(err, str) else bytes(err)
    if check and status != 0:
        raise GitError(f"git {args[0]} failed in {cwd}: {stderr.decode(errors='replace').strip()}")
    return Completed(int(status), stdout, stderr)


# A progress report of a transfer ("Receiving objects:  50% (1/2)", "remote: Enumerating objects: 5, done.",
# "Total 3 (delta 0), ..."): git's own titles only, so that no line a remote's hook prints is taken for one.
_PROGRESS = re.compile(
    r"^(?:remote: )?(?:(?:(?:Enumerating|Counting|Compressing|Writing|Receiving|Unpacking|Indexing|Checking) objects"
    r"|Resolving deltas|Checking connectivity|Finding sources|Updating files): +\d|Total \d+ \(delta|Delta compression)"
)
# git's stderr kept for a message and for the callers that read it (a fetch's `[rejected]` lines, a hook's
# `remote:` lines): the tail past this is all a fetch of very many tags (a line each) could outgrow.
_STDERR_KEPT = 16 << 20
_TICK = 0.2  # seconds between two looks at a transfer's `cancel` while git says nothing


def has_terminal() -> bool:
    """Whether this process has a controlling terminal; a CI job has none. On a terminal, git may ask for a password
    or an ssh passphrase."""
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY))
    except OSError:
        return False
    return True


_WITH_PROGRESS = {"clone", "fetch", "push"}  # the subcommands that report progress with --progress


def transfer(
    cwd: Path,
    *args: str,
    url: str,
    env: Mapping[str, str],
    cancel: threading.Event | None = None,
    check: bool = True,
    own_session: bool = True,
) -> Completed:
    """Run a git command that talks to `url`, in `cwd`. `args` starts with the subcommand: clone, fetch, push,
    ls-remote. `env` carries `url`'s credentials, if any. A failure raises GitError (if `check`). Its stderr
    comes back without progress reports.

    Where `urls.stall_bound(url)` watches the transfer, git is stopped after that long without progress. That raises
    StalledError naming the URL. Progress is anything git reports with `--progress`. That is the remote's counting
    and compressing, then the objects and bytes sent or received, once a second while any move. Any packet git traces
    is progress too. Those are the refs, and the keepalives a server sends every few seconds. A server sends them
    while it prepares a large pack or runs a hook in silence. The bound is on silence, not on the whole command. So a
    large clone that keeps receiving is never cut short. With `own_session` (a server, a library), git runs in a
    session of its own. It then has no terminal to prompt on, and stopping it reaches every process it started (ssh,
    a remote helper). Without it, git stays in this process's group. Whatever stops the group (a CI runner cancelling
    a job) then stops git too. Stopping git then reaches its descendants (`_stop`). Once `cancel` is set
    (a server stopping), git is stopped within `_TICK` seconds: GitError.
    """
    stall_s, shown = stall_bound(url), redact(url)
    watched = stall_s is not None
    progress = ["--progress"] if watched and args[0] in _WITH_PROGRESS else []
    command = ["git", args[0], *progress, *args[1:]]
    trace, traced = os.pipe() if watched else (-1, -1)
    extra = {"GIT_TRACE_PACKET": f"/dev/fd/{traced}"} if watched else {}
    try:
        with _clean_environ():
            # keep GitPython's handle alive while reading: dropping it terminates the process
            handle = _runner(cwd).execute(
                command,
                as_process=True,
                env={**env, **_NO_OPTIONAL_LOCKS, **extra},
                start_new_session=own_session,
                pass_fds=(traced,) if watched else (),
            )
    except _gitpython().GitCommandNotFound as err:
        raise GitError("git is not installed or not on PATH", hint="install git") from err
    finally:
        if watched:
            os.close(traced)
    proc = handle.proc
    assert proc is not None
    outputs: tuple[bytes, bytes] | None = None
    try:
        outputs = _read_until_silent(proc, trace, stall_s, cancel)
        if outputs is not None:
            proc.wait(stall_s)
    except subprocess.TimeoutExpired:  # its output closed, yet it never ended
        outputs = None
    finally:
        if watched:
            os.close(trace)
        if proc.poll() is None:  # silent too long, or this thread was interrupted
            _stop(proc, own_session)
    if cancel is not None and cancel.is_set():
        raise GitError(f"{shown}: git {args[0]} was stopped: cfgtool is stopping")
    if outputs is None:
        raise StalledError(
            f"{shown} stalled: git {args[0]} received nothing for {stall_s:g} s and was stopped",
            hint="check that the remote is up and reachable; the next fetch tries again",
        )
    stdout, stderr = outputs[0], _without_progress(outputs[1])
    if check and proc.returncode != 0:
        raise GitError(f"git {args[0]} failed in {cwd}: {stderr}")
    return Completed(proc.returncode, stdout, stderr.encode(errors="surrogateescape"))


def _read_until_silent(
    proc: subprocess.Popen[bytes], trace: int, stall_s: float | None, cancel: threading.Event | None
) -> tuple[bytes, bytes] | None:
    """`proc`'s stdout and the tail of its stderr once both close. None when `cancel` is set, or when for `stall_s`
    seconds no byte comes from either or from the packet trace `trace` (-1: none). The trace only counts as progress.
    Its writers (git's children too) may keep it open longer."""
    assert proc.stdout is not None and proc.stderr is not None
    out, kept = bytearray(), bytearray()
    outputs = {proc.stdout.fileno(), proc.stderr.fileno()}
    with selectors.DefaultSelector() as pipes:
        for fd in (*outputs, *([trace] if trace >= 0 else [])):
            pipes.register(fd, selectors.EVENT_READ)
        quiet_since = time.monotonic()
        while outputs:
            ready = pipes.select(stall_s if cancel is None else _TICK)
            if cancel is not None and cancel.is_set():
                return None
            if not ready:
                if stall_s is not None and time.monotonic() - quiet_since >= stall_s:
                    return None
                continue
            quiet_since = time.monotonic()
            for key, _ in ready:
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    pipes.unregister(key.fd)
                    outputs.discard(key.fd)
                elif key.fd == proc.stderr.fileno():
                    kept += chunk
                    del kept[:-_STDERR_KEPT]
                elif key.fd == proc.stdout.fileno():
                    out += chunk
    return bytes(out), bytes(kept)


def _stop(proc: subprocess.Popen[bytes], session: bool) -> None:
    """End git and every process it started (ssh, a remote helper). With `session`, that is its session. Else it is
    git and its descendants, found before any of them ends. An ssh whose git ended is no longer git's child. One that
    waits on a silent server may never end by itself. SIGTERM comes first, so git removes its lock and temporary
    files. SIGKILL follows when git has not ended within 5 s."""
    family = [] if session else _descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            if session:
                os.killpg(proc.pid, sig)
            else:
                proc.send_signal(sig)
        for pid in family:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
            return


def _descendants(pid: int) -> list[int]:
    """The processes below `pid`, from the parent of each process in /proc. None where there is no /proc."""
    children: dict[int, list[int]] = {}
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = Path(entry.path, "stat").read_bytes()  # "pid (comm) state ppid ..."
                    children.setdefault(int(stat[stat.rindex(b")") + 2 :].split()[1]), []).append(int(entry.name))
    found, pending = [], [pid]
    while pending:
        below = children.get(pending.pop(), [])
        found += below
        pending += below
    return found


def _without_progress(stderr: bytes) -> str:
    """git's stderr without its progress reports (updates ended by CR, the last one by a line break)."""
    parts = stderr.decode(errors="replace").replace("\r", "\n").splitlines()
    return "\n".join(p.strip() for p in parts if p.strip() and not _PROGRESS.match(p.strip()))


@dataclass(frozen=True)
class Repo:
    """A located repository: `root` is the work tree (or the git dir of a bare repository)."""

    root: Path
    bare: bool


def locate(path: Path) -> Repo:
    """The repository containing `path`; NotAGitRepoError with a hint when there is none."""
    if not path.is_dir():
        raise NotAGitRepoError(f"no such directory: {path}", hint="pass --repo PATH with an existing repository")
    both = run_git(path, "rev-parse", "--is-bare-repository", "--show-toplevel", check=False)
    lines = both.stdout.decode().splitlines()
    if both.returncode == 0 and len(lines) == 2 and lines[0] == "false":  # a work tree: one process, not two
        return Repo(Path(lines[1]), False)
    proc = run_git(path, "rev-parse", "--is-bare-repository", check=False)
    if proc.returncode != 0:
        raise NotAGitRepoError(
            f"not a git repository: {path}",
            hint="run cfgtool inside a config repository, or pass --repo PATH",
        )
    bare = proc.stdout.strip() == b"true"
    flag = "--absolute-git-dir" if bare else "--show-toplevel"
    root = run_git(path, "rev-parse", flag).stdout.decode().strip()
    return Repo(Path(root), bare)


def git_dir(root: Path) -> Path:
    """The absolute git directory of the repository at `root` (`.git` of a work tree, or the bare one)."""
    return Path(run_git(root, "rev-parse", "--absolute-git-dir").stdout.decode().strip())


def git_dirs(root: Path) -> tuple[Path, Path]:
    """(the repository's own git directory, its common directory). They are the same unless `root` is a linked work
    tree. Its HEAD lives in the first, its shared refs in the second."""
    out = run_git(root, "rev-parse", "--absolute-git-dir", "--git-common-dir").stdout.decode().splitlines()
    return Path(out[0]), (root / out[1]).resolve()


def resolve_commit(root: Path, ref: str) -> str | None:
    """The commit sha `ref` names (annotated tags peeled), or None when it names no commit."""
    if not ref or ref.startswith("-"):
        return None
    proc = run_git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    return proc.stdout.decode().strip() if proc.returncode == 0 else None


def ls_tree(root: Path, commit: str, directory: str) -> dict[str, str]:
    """`{path: blob id}` of every regular file under `directory` ('' = everything) at `commit`.

    Symlinks and submodules are left out (`tree_files` also names the symlinks).
    """
    return tree_files(root, commit, directory)[0]


def tree_files(root: Path, commit: str, directory: str) -> tuple[dict[str, str], list[str]]:
    """(`{path: blob id}` of the regular files, paths of the symbolic links) under `directory` at `commit`.

    A symlink blob (mode 120000) is never read or followed (docs/security.md); callers report it. Submodules
    (commits in the tree) are skipped.
    """
    args = ["ls-tree", "-r", "-z", "--full-tree", commit]
    if directory:
        args += ["--", directory + "/"]
    out = run_git(root, *args).stdout
    entries: dict[str, str] = {}
    links: list[str] = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.split(b" ")
        if kind != b"blob":
            continue
        name = path.decode("utf-8", "surrogateescape")
        if mode == b"120000":
            links.append(name)
        else:
            entries[name] = oid.decode()
    return entries, links


def tree_entries(root: Path, commit: str) -> list[tuple[str, str, str]]:
    """The top level of `commit`'s tree, not recursive: (kind 'blob' | 'tree' | ..., blob or tree id, name). Symlinks
    are left out."""
    out = run_git(root, "ls-tree", "-z", "--full-tree", commit).stdout
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, oid = meta.split(b" ")
        if mode != b"120000":
            entries.append((kind.decode(), oid.decode(), path.decode("utf-8", "surrogateescape")))
    return entries


def read_file(root: Path, commit: str, path: str) -> bytes | None:
    """The content of the regular file `path` at `commit`, None when there is none (no tree listing)."""
    meta, _, _ = run_git(root, "ls-tree", "-z", "--full-tree", commit, "--", path).stdout.partition(b"\t")
    if not meta:
        return None
    mode, kind, oid = meta.split(b" ")
    if kind != b"blob" or mode == b"120000":
        return None
    return cat_blobs(root, [oid.decode()])[oid.decode()]


def cat_blobs(root: Path, oids: Iterable[str]) -> dict[str, bytes]:
    """Contents of many blobs from ONE `git cat-file --batch --buffer` process.

    A thread writes every id while this thread reads the whole output. So neither pipe can fill up and deadlock.
    `--buffer` lets git write large blocks instead of flushing after each object.
    """
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    request = "".join(f"{oid}\n" for oid in wanted).encode()
    runner = _runner(root)
    try:
        with _clean_environ():
            # keep GitPython's handle alive while reading: dropping it terminates the process
            batch = ["git", "cat-file", "--batch", "--buffer"]
            handle = runner.execute(batch, as_process=True, istream=subprocess.PIPE, env=_NO_OPTIONAL_LOCKS)
    except _gitpython().GitCommandNotFound as err:
        raise GitError("git is not installed or not on PATH", hint="install git") from err
    proc = handle.proc
    assert proc is not None and proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    stdin = proc.stdin

    def write() -> None:
        try:
            stdin.write(request)
        except BrokenPipeError:  # git died; its stderr says why
            pass
        finally:
            stdin.close()

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    out = proc.stdout.read()
    stderr = proc.stderr.read()
    writer.join()
    if proc.wait() != 0:
        raise GitError(f"git cat-file failed in {root}: {stderr.decode(errors='replace').strip()}")
    blobs: dict[str, bytes] = {}
    pos = 0
    for oid in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        if len(header) != 3:  # "<oid> missing"
            raise GitError(f"git object {oid} is missing from {root}", hint="run git fsck, or fetch again")
        size = int(header[2])
        blobs[oid] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1  # contents are followed by a newline
    return blobs


def ls_files(root: Path, directory: str) -> list[str]:
    """Work-tree files under `directory` that git would commit: tracked plus untracked, minus ignored."""
    return list(ls_files_tracked(root, directory))


def ls_files_tracked(root: Path, directory: str) -> dict[str, bool]:
    """`ls_files`, each path with whether git tracks it (False: untracked, not ignored)."""
    args = ["ls-files", "-z", "-t", "--cached", "--others", "--exclude-standard"]
    if directory:
        args += ["--", directory + "/"]
    out = run_git(root, *args).stdout
    found: dict[str, bool] = {}
    for record in out.split(b"\0"):
        if record:  # "<tag> <path>": '?' for an untracked file
            path = record[2:].decode("utf-8", "surrogateescape")
            found[path] = found.get(path, False) or record[:1] != b"?"
    return found


def differs_from_head(root: Path, directory: str) -> bool:
    """Whether the content of tracked files under `directory` ('' = everything) in the work tree differs from HEAD,
    staged or not. Untracked files are not looked at. Cheaper than `is_dirty`: git walks no directory for untracked
    files. Not `git diff --quiet HEAD`, which would stop at the first difference. It rewrites a stale index whatever
    GIT_OPTIONAL_LOCKS says. A kill then leaves `.git/index.lock` behind."""
    args = ["status", "--porcelain", "-z", "--untracked-files=no", "--ignore-submodules"]
    return bool(run_git(root, *args, *(["--", directory + "/"] if directory else [])).stdout.strip(b"\0"))


def listed(root: Path, paths: Sequence[str]) -> list[str]:
    """Those of `paths` (repo-relative, taken literally) that git would commit: tracked, or untracked and not
    ignored. Naming the paths keeps git from walking the rest of the working tree."""
    args = ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *(f":(literal){p}" for p in paths)]
    out = run_git(root, *args).stdout
    return list(dict.fromkeys(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p))


def is_dirty(root: Path, *paths: str) -> bool:
    """Whether the work tree differs from HEAD at any of `paths`: staged, modified or untracked files. `paths` are
    directories or files, repo-relative; none or '' is everything."""
    args: Sequence[str] = ["status", "--porcelain", "-z", "--untracked-files=all", "--ignore-submodules"]
    if paths and "" not in paths:
        args = [*args, "--", *paths]
    return bool(run_git(root, *args).stdout.strip(b"\0"))
