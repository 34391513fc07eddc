"""`Arguments` is what `cfgtool agent` is asked, as its options are written. `start` checks them, builds the agent's
`Options` and runs it. It runs once, or follows the server until SIGTERM or SIGINT."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from cfgtool.agent.actions import Reload, parse_signal
from cfgtool.agent.agent import Agent, Options
from cfgtool.agent.files import FileSpec, parse_file, parse_template
from cfgtool.errors import UsageError
from cfgtool.snapshot.formats import check_env_prefix
from cfgtool.store.keys import normalize_key

STOP_TIMEOUT = 10.0  # seconds given to a swap or reload under way when the agent is told to stop


@dataclass(frozen=True)
class Arguments:
    """The options of `cfgtool agent` as given (docs/agent.md). File and template specs, signal names and keys are
    still text. The token is the file that holds it."""

    server: str
    store: str
    directory: Path
    files: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()
    token_file: Path | None = None
    identity: Path | None = None
    secrets_from: tuple[str, ...] = ()
    env_prefix: str = ""
    check: str | None = None
    reload: str | None = None
    signal_name: str | None = None
    pid_file: Path | None = None
    webhook: str | None = None
    settle: float = 2.0
    nearest: bool = False
    once: bool = False
    instance: str | None = None

    def options(self) -> Options:
        """The agent's options; UsageError for nothing to write, a file named twice, an unreadable token file,
        a missing identity, --secrets-from without one, or a spec, signal, key or env prefix that does not parse."""
        specs, token = self._specs(), self._token()
        check_env_prefix(self.env_prefix)
        if self.identity is not None and not self.identity.is_file():
            raise UsageError(f"--identity {self.identity}: no such file", hint="pass an age identity file")
        if self.secrets_from and self.identity is None:
            raise UsageError(
                "--secrets-from names where secrets may be opened, but the agent has no --identity to open them",
                hint="add --identity FILE, or drop --secrets-from",
            )
        action = Reload(
            command=self.reload,
            sig=None if self.signal_name is None else parse_signal(self.signal_name),
            pid_file=self.pid_file,
            webhook=self.webhook,
        )
        return Options(
            server=self.server,
            store=self.store,
            directory=self.directory,
            files=specs,
            token=token,
            identity=self.identity,
            secrets_from=tuple(normalize_key(key, self.store) for key in self.secrets_from),
            env_prefix=self.env_prefix,
            check=self.check,
            reload=action,
            settle=self.settle,
            instance=self.instance,
            nearest=self.nearest,
        )

    def _specs(self) -> list[FileSpec]:
        specs = [parse_file(text) for text in self.files] + [parse_template(text) for text in self.templates]
        if not specs:
            raise UsageError("nothing to write", hint="name files: --file app.json=/data/tracking/PageViewEvent")
        names = [spec.name for spec in specs]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise UsageError(f"{', '.join(twice)} named more than once", hint="give each file its own name")
        return specs

    def _token(self) -> str | None:
        if self.token_file is None:
            return None
        try:
            return self.token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"--token-file {self.token_file}: {exc.strerror}", hint="check the path") from exc


def start(arguments: Arguments) -> None:
    """Check `arguments` and run the agent, logging to stderr. With `once`, write the current version and return.
    Else follow the server until SIGTERM or SIGINT: a swap under way is finished, a long poll cut."""
    options = arguments.options()
    _log_to_stderr()
    agent = Agent(options)
    if arguments.once:
        agent.once()
        agent.close()
        return
    _follow(agent)


def _follow(agent: Agent) -> None:
    """Follow the server on a worker thread while the main thread only waits. So a signal never lands in the middle
    of a swap. The worker's error is raised again here, the one place that reports errors."""
    stop = threading.Event()

    def stopping(signum: int, frame: object) -> None:
        stop.set()
        agent.interrupt()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    failed: list[BaseException] = []

    def follow() -> None:
        try:
            agent.follow(stop)
        except BaseException as exc:  # raised again in the main thread
            failed.append(exc)

    worker = threading.Thread(target=follow, name="cfgtool-agent", daemon=True)
    worker.start()
    while worker.is_alive() and not stop.is_set():
        worker.join(1.0)
    worker.join(STOP_TIMEOUT)
    if failed:
        raise failed[0]
    if not worker.is_alive():
        agent.close()


def _log_to_stderr() -> None:
    """The agent's log: one line per event on stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("cfgtool agent: %(levelname)s %(message)s"))
    log = logging.getLogger("cfgtool.agent")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
