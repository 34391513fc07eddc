"""Work split with a forked child process. The build's resolution and the schema checks use it the same way. POSIX
only. The child's answer comes back as bytes through a pipe, never through a cache."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


def can_fork() -> bool:
    """Whether a worker process may be forked: POSIX, two CPUs or more, and no other thread. A lock held by another
    thread at the fork would stay locked in the child."""
    return hasattr(os, "fork") and (os.cpu_count() or 1) > 1 and threading.active_count() == 1


def fork(work: Callable[[], bytes]) -> Callable[[], bytes | None]:
    """Run `work` in a forked child; the returned function waits for its bytes. None if the child failed, or could
    not be started (out of memory or processes). The caller then does the work itself."""
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return lambda: None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return lambda: None
    if pid == 0:  # the child: never returns into the caller's code
        status = 1
        try:
            os.close(read_end)
            data = work()
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)

    def join() -> bytes | None:
        with os.fdopen(read_end, "rb") as pipe:
            data = pipe.read()
        _, status = os.waitpid(pid, 0)
        return data if status == 0 else None

    return join
