"""The commands around a swap (docs/agent.md). Before it, `--check` runs on the new files. After it runs one of
`--reload` (a command), `--signal` (to the process in `--pid-file`) or `--webhook` (a POST).

Commands are the operator's own command lines, run by `/bin/sh -c` as confd runs its check and reload commands. Their
environment holds `CFGTOOL_AGENT_DIR` (the version's directory) and `CFGTOOL_AGENT_VERSION`.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from cfgtool.client.http import Connection
from cfgtool.errors import CfgtoolError, UsageError

log = logging.getLogger("cfgtool.agent")

COMMAND_TIMEOUT = 60.0  # seconds a check or reload command may run
WEBHOOK_TIMEOUT = 10.0
_TAIL = 500  # characters of a failing command's output quoted in the log


class CheckFailed(CfgtoolError):
    """`--check` refused a version: its files are not swapped in."""


def run_command(command: str, directory: Path, version: int) -> tuple[int, str]:
    """Run `command` by `/bin/sh -c` in `directory`; (exit status, the tail of its output). A command that
    does not end within COMMAND_TIMEOUT seconds is killed and counts as exit status 124 (as `timeout` says)."""
    env = {**os.environ, "CFGTOOL_AGENT_DIR": str(directory), "CFGTOOL_AGENT_VERSION": str(version)}
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=directory,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
        )
    except subprocess.TimeoutExpired as exc:
        output = (exc.stdout or b"") + (exc.stderr or b"")
        return 124, output.decode("utf-8", "replace")[-_TAIL:].strip() + f" (killed after {COMMAND_TIMEOUT:g} s)"
    output = done.stdout + done.stderr
    return done.returncode, output.decode("utf-8", "replace")[-_TAIL:].strip()


def check(command: str, directory: Path, version: int, secret: bool = False) -> None:
    """`--check`: CheckFailed unless `command` exits 0 on the staged files of `version`. When the files hold opened
    secrets (`secret`), the message leaves the command's output out. The message goes to the log and to the server's
    consumers report. Everyone who may read the files' keys reads that report, and the server serves them their
    secrets `[hidden]`. A checker quoting the line it refuses would quote a password."""
    status, output = run_command(command, directory, version)
    if status != 0:
        shown = "its output is not shown, as the files hold opened secrets" if secret else output or "no output"
        raise CheckFailed(f"the check failed on version {version} (exit {status}): {shown}")


def parse_signal(name: str) -> signal.Signals:
    """`--signal HUP`, `SIGHUP` or `1`."""
    text = name.strip().upper()
    try:
        return (
            signal.Signals(int(text))
            if text.isdigit()
            else signal.Signals[text if text.startswith("SIG") else "SIG" + text]
        )
    except (KeyError, ValueError):
        raise UsageError(f"--signal {name}: not a signal", hint="--signal HUP (or USR1, TERM, ...)") from None


@dataclass(frozen=True)
class Reload:
    """What to do after a swap: run `command`, send `sig` to the process in `pid_file`, or POST `webhook`."""

    command: str | None = None
    sig: signal.Signals | None = None
    pid_file: Path | None = None
    webhook: str | None = None

    def __post_init__(self) -> None:
        chosen = sum(x is not None for x in (self.command, self.sig, self.webhook))
        if chosen > 1:
            raise UsageError("--reload, --signal and --webhook exclude each other", hint="choose one")
        if (self.sig is None) != (self.pid_file is None):
            raise UsageError("--signal and --pid-file go together", hint="--signal HUP --pid-file /run/app.pid")
        if self.webhook is not None:
            parts = urlsplit(self.webhook)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise UsageError(
                    f"--webhook {self.webhook}: not an http(s) URL", hint="--webhook http://127.0.0.1:8080/-/reload"
                )

    def __call__(self, directory: Path, version: int) -> None:
        """Tell the program that version `version` is on disk. A failure is logged; the files stay swapped."""
        try:
            if self.command is not None:
                status, output = run_command(self.command, directory, version)
                if status != 0:
                    raise CfgtoolError(f"the reload command failed (exit {status}): {output or 'no output'}")
            elif self.sig is not None and self.pid_file is not None:
                self._send_signal(self.sig, self.pid_file)
            elif self.webhook is not None:
                self._post(self.webhook, version)
        except CfgtoolError as exc:
            log.error("version %d is on disk but the reload failed: %s", version, exc.message)

    @staticmethod
    def _send_signal(sig: signal.Signals, pid_file: Path) -> None:
        try:
            pid = int(pid_file.read_text(encoding="ascii").split()[0])
            os.kill(pid, sig)
        except (OSError, ValueError, IndexError) as exc:
            raise CfgtoolError(f"cannot send {sig.name} to the process in {pid_file}: {exc}") from exc

    @staticmethod
    def _post(url: str, version: int) -> None:
        """POST `{"version": N}` to `url` through cfgtool's HTTP client (bounded; no redirect followed). Any 2xx is
        success."""
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]  # user information is never sent on or logged
        connection = Connection(f"{parts.scheme}://{host}", WEBHOOK_TIMEOUT)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        body = json.dumps({"version": version}).encode()
        try:
            status, _, _ = connection.post(target, {"Content-Type": "application/json"}, body)
        finally:
            connection.close()
        if not 200 <= status < 300:
            raise CfgtoolError(f"the webhook answered HTTP {status}")


__all__ = ["CheckFailed", "Reload", "check", "parse_signal", "run_command"]
