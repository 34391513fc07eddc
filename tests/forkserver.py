"""A fork server for the CLI runs of the tests: one process per pytest worker imports the cfgtool library once,
and each `cfgtool` run is a fork of it that runs the CLI's `main` as the installed `cfgtool` script does.

A run of the CLI spends about two thirds of its CPU time starting the interpreter and importing cfgtool and
its dependencies (about 0.6 s of a 0.9 s `cfgtool compile` of the embedded store on a loaded 2-core machine);
the suite runs the CLI a few thousand times. A forked child is still a process of its own: it has its own
standard streams (the caller's, passed over a Unix socket), working directory, environment, arguments and
exit status, and it ends as the script ends (SystemExit, then the interpreter's shutdown). What it shares with
its siblings is only what importing the modules built (no command has run in the server) and the hash seed.

`CLIENT` is the program the test starts instead of the script (`python -I -S -c CLIENT SOCKET ARGS...`: no site
packages, so it starts in milliseconds): it hands the server its streams, arguments, directory and environment,
forwards SIGTERM and SIGINT to the child and exits as the child exited (the same status, or the same signal).
When the client goes away (a test's timeout killed it), the server kills the child. With CFGTOOL_TESTS_PID_FILE
in its environment (not passed on) the client writes the child's pid there, for a test that watches the process.

Run as a script (`python tests/forkserver.py SOCKET`), so that `__main__` is a plain script as in `cfgtool`.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import os
import pkgutil
import selectors
import signal
import socket
import sys
import types
from pathlib import Path
from typing import Any

NOT_PRELOADED = ("cfgtool.agent", "cfgtool.spark", "cfgtool.__main__")
"""Packages a run of the tests rarely needs: a child that needs them imports them itself, as a fresh process does.
The server and its console are preloaded: the tests start `cfgtool serve` about 150 times (`tests/processes.py`)."""

MAX_REQUEST = 1 << 20
SCRIPT_DIR = Path(sys.executable).parent
"""Where the installed `cfgtool` script is, the first entry of its `sys.path`."""

CLIENT = """
import json, os, signal, socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
server.connect(sys.argv[1])
pid_file = os.environ.pop("CFGTOOL_TESTS_PID_FILE", None)
request = {"argv": sys.argv[2:], "cwd": os.getcwd(), "env": dict(os.environ)}
socket.send_fds(server, [json.dumps(request).encode()], [0, 1, 2])
pid = int(server.recv(64))
if pid_file:
    with open(pid_file + ".part", "w") as out:
        out.write(str(pid))
    os.replace(pid_file + ".part", pid_file)
def forward(signum, frame):
    os.kill(pid, signum)
signal.signal(signal.SIGTERM, forward)
signal.signal(signal.SIGINT, forward)
answer = server.recv(64)
if not answer:
    sys.exit("the cfgtool fork server went away")
status = int(answer)
if status < 0:
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
os._exit(status)
"""


def preload() -> None:
    """Import the CLI and the library it drives, as the commands of the tests import them."""
    import cfgtool

    for module in pkgutil.walk_packages(cfgtool.__path__, "cfgtool."):
        if not module.name.startswith(NOT_PRELOADED):
            # an optional dependency missing: the child that needs it fails as a fresh process does
            with contextlib.suppress(ImportError):
                importlib.import_module(module.name)


def serve(path: str) -> None:
    """Accept runs on the Unix socket `path` until killed or the process that started it ends; each run is a
    forked child (see `child`)."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    running: dict[int, tuple[socket.socket, int, int]] = {}  # pidfd -> (client connection, pid, pidfd)
    gc.collect()
    gc.freeze()  # the children share the imported modules' pages instead of copying them on the first collection
    print("ready", flush=True)
    parent = os.getppid()
    while os.getppid() == parent:  # a pytest worker that died (killed, crashed) leaves no fork server behind
        for key, _ in selector.select(timeout=5):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    listener.close()
                    for other, _, pidfd in running.values():
                        other.close()
                        os.close(pidfd)
                    conn.close()
                    child(json.loads(message), fds)  # never returns
                for fd in fds:
                    os.close(fd)
                pidfd = os.pidfd_open(pid)
                running[pidfd] = (conn, pid, pidfd)
                selector.register(pidfd, selectors.EVENT_READ, "exit")
                selector.register(conn, selectors.EVENT_READ, pidfd)
                conn.sendall(str(pid).encode())
            elif key.data == "exit":  # a child ended: its status to its client
                conn, pid, pidfd = running.pop(key.fd)
                _, status = os.waitpid(pid, 0)
                selector.unregister(pidfd)
                selector.unregister(conn)
                os.close(pidfd)
                with contextlib.suppress(OSError):  # unless the client is gone
                    conn.sendall(str(os.waitstatus_to_exitcode(status)).encode())
                conn.close()
            else:  # a client closed its end before its child ended: the test gave up on it
                conn, pid, _ = running[key.data]
                if not conn.recv(1):
                    os.kill(pid, signal.SIGKILL)  # its exit is reported like any other


def child(request: dict[str, Any], fds: list[int]) -> None:
    """In the forked child: take the client's streams, directory, environment and arguments, run the CLI as
    the `cfgtool` script does, and end as a process ends (SystemExit runs the interpreter's shutdown)."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    script = str(SCRIPT_DIR / "cfgtool")
    sys.argv = [script, *request["argv"]]
    main_module = types.ModuleType("__main__")  # the script's, as multiprocessing and click look it up
    main_module.__file__ = script
    sys.modules["__main__"] = main_module
    sys.stdin, sys.stdout, sys.stderr = (_stream(fd, like) for fd, like in enumerate(_STREAMS))
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
    from cfgtool.cli import main

    raise SystemExit(main())


_STREAMS = (sys.stdin, sys.stdout, sys.stderr)


def _stream(fd: int, like: io.TextIOWrapper) -> io.TextIOWrapper:  # type: ignore[type-arg]
    """A standard stream on `fd` made as the interpreter makes it at start-up (encoding and errors as in this
    process, which was started with the same interpreter settings; line buffered on a terminal, and stderr
    always)."""
    raw = io.FileIO(fd, "r" if fd == 0 else "w", closefd=False)
    raw.name = ("<stdin>", "<stdout>", "<stderr>")[fd]  # type: ignore[misc]
    buffered: io.BufferedIOBase = io.BufferedReader(raw) if fd == 0 else io.BufferedWriter(raw)
    return io.TextIOWrapper(
        buffered,
        encoding=like.encoding,
        errors=like.errors,
        newline="\n",
        line_buffering=fd == 2 or raw.isatty(),
        write_through=like.write_through,
    )


if __name__ == "__main__":
    sys.path[0] = str(SCRIPT_DIR)  # as for the script, not tests/ (whose folders would import as namespace packages)
    preload()
    serve(sys.argv[1])
