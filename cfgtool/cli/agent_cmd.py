"""`cfgtool agent` (docs/agent.md): write published configs as files, switched atomically, for programs that
read files."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

import typer

from cfgtool.errors import UsageError

STOP_TIMEOUT = 10.0  # seconds given to a swap or reload under way when the agent is told to stop


def agent_command(
    server: Annotated[
        str,
        typer.Option("--server", metavar="URL", help="The cfgtool server (`cfgtool serve`), e.g. http://configs:8750."),
    ],
    store: Annotated[str, typer.Option("--store", metavar="NAME", help="The store's name on the server.")],
    directory: Annotated[
        Path, typer.Option("--dir", metavar="DIR", help="The directory of the files (the kubelet's ..data layout).")
    ],
    files: Annotated[
        list[str] | None,
        typer.Option(
            "--file",
            metavar="NAME=KEY[:FORMAT]",
            help="A file of KEY's config, as json, yaml, properties, hocon or env (default: from NAME's suffix). "
            "Repeatable.",
            show_default=False,
        ),
    ] = None,
    templates: Annotated[
        list[str] | None,
        typer.Option(
            "--template",
            metavar="NAME=TEMPLATE[:KEY]",
            help="A file rendered from a Jinja2 template (sandboxed) with KEY's config as its context (default "
            "KEY: /). Repeatable.",
            show_default=False,
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option("--token-file", metavar="FILE", help="A file holding the bearer token.", show_default=False),
    ] = None,
    identity: Annotated[
        Path | None,
        typer.Option(
            "--identity",
            metavar="FILE",
            help="An age identity: secrets are opened into files of mode 0600 (without it they are shown as hidden).",
            show_default=False,
        ),
    ] = None,
    secrets_from: Annotated[
        list[str] | None,
        typer.Option(
            "--secrets-from",
            metavar="KEY",
            help="Also open secrets sealed for KEY (a tag the keys import); a secret opens only where it was "
            "sealed for the file's key or an ancestor otherwise. Repeatable.",
            show_default=False,
        ),
    ] = None,
    env_prefix: Annotated[
        str,
        typer.Option(
            "--env-prefix",
            metavar="PREFIX",
            help="Start every variable of env files with PREFIX (APP_): without one, a variable that a shell, "
            "the dynamic linker or a runtime reads as code (LD_PRELOAD, BASH_ENV, PYTHONPATH, ...) is refused.",
        ),
    ] = "",
    check: Annotated[
        str | None,
        typer.Option(
            "--check",
            metavar="CMD",
            help="A shell command run on the new files before the swap (in their directory, also "
            "$CFGTOOL_AGENT_DIR); unless it exits 0 the old files stay.",
            show_default=False,
        ),
    ] = None,
    reload: Annotated[
        str | None,
        typer.Option("--reload", metavar="CMD", help="A shell command run after each swap.", show_default=False),
    ] = None,
    signal_name: Annotated[
        str | None,
        typer.Option(
            "--signal",
            metavar="SIG",
            help="Send SIG (HUP, USR1, ...) after each swap to the process in --pid-file.",
            show_default=False,
        ),
    ] = None,
    pid_file: Annotated[
        Path | None, typer.Option("--pid-file", metavar="FILE", help="The pid file for --signal.", show_default=False)
    ] = None,
    webhook: Annotated[
        str | None,
        typer.Option(
            "--webhook", metavar="URL", help='POST {"version": N} to URL after each swap.', show_default=False
        ),
    ] = None,
    settle: Annotated[
        float,
        typer.Option(
            "--settle",
            metavar="SECONDS",
            min=0,
            help="Versions that come within SECONDS of a swap are applied once, at the end of that time (a "
            "rollback never waits).",
        ),
    ] = 2.0,
    nearest: Annotated[
        bool,
        typer.Option(
            "--nearest",
            help="Write a key without a node as its nearest ancestor's config, on purpose (else such a key is an "
            "error: a typo must not write its ancestor's config).",
        ),
    ] = False,
    once: Annotated[
        bool,
        typer.Option(
            "--once", help="Write the current version and exit (an init container); exit 1 when nothing can be written."
        ),
    ] = False,
    instance: Annotated[
        str | None,
        typer.Option(
            "--instance",
            metavar="ID",
            help="The name this agent reports to the server (default: host name and process id).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write published configs as files and keep them current.

    All files of one version appear together: they are written into a new
    directory, then the link DIR/..data is switched to it in one rename
    (the kubelet's layout). The agent follows the server's change feed and
    each key's `current` answer, so it switches at the key's checkpoint and
    at once on a rollback. While the server is away the files stay as they
    are. Stop it with SIGTERM or Ctrl-C.

    Examples:
      cfgtool agent --server http://configs:8750 --store demo --dir /etc/app \\
        --file app.json=/data/tracking/PageViewEvent --reload 'systemctl reload app'
      cfgtool agent --server http://configs:8750 --store demo --dir /config --once \\
        --file app.properties=/services/web --file app.env=/services/web
      cfgtool agent --server http://configs:8750 --store demo --dir /etc/nginx/cfgtool \\
        --template nginx.conf=nginx.conf.j2:/services/web \\
        --check 'nginx -t -q -c "$CFGTOOL_AGENT_DIR/nginx.conf"' --signal HUP --pid-file /run/nginx.pid
    """
    from cfgtool.agent import Agent, Options, Reload, parse_file, parse_signal, parse_template
    from cfgtool.snapshot.formats import check_env_prefix
    from cfgtool.store.keys import normalize_key

    specs = [parse_file(text) for text in files or ()] + [parse_template(text) for text in templates or ()]
    if not specs:
        raise UsageError("nothing to write", hint="name files: --file app.json=/data/tracking/PageViewEvent")
    names = [spec.name for spec in specs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise UsageError(f"{', '.join(twice)} named more than once", hint="give each file its own name")
    token = None
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"--token-file {token_file}: {exc.strerror}", hint="check the path") from exc
    check_env_prefix(env_prefix)
    if identity is not None and not identity.is_file():
        raise UsageError(f"--identity {identity}: no such file", hint="pass an age identity file")
    action = Reload(
        command=reload,
        sig=None if signal_name is None else parse_signal(signal_name),
        pid_file=pid_file,
        webhook=webhook,
    )
    options = Options(
        server=server,
        store=store,
        directory=directory,
        files=specs,
        token=token,
        identity=identity,
        secrets_from=tuple(normalize_key(key, store) for key in secrets_from or ()),
        env_prefix=env_prefix,
        check=check,
        reload=action,
        settle=settle,
        instance=instance,
        nearest=nearest,
    )
    _log_to_stderr()
    agent = Agent(options)
    if once:
        agent.once()
        agent.close()
        return
    stop = threading.Event()

    def stopping(signum: int, frame: object) -> None:
        stop.set()
        agent.interrupt()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    # the main thread only waits, so a signal never lands in the middle of a swap; a swap under way when
    # the signal comes is finished, a long poll is cut
    failed: list[BaseException] = []

    def follow() -> None:
        try:
            agent.follow(stop)
        except BaseException as exc:  # raised again in the main thread: the one place that reports errors
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
