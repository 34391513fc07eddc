"""`cfgtool agent` (docs/agent.md): write published configs as files, switched atomically, for programs that
read files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

Server = Annotated[
    str,
    typer.Option("--server", metavar="URL", help="The cfgtool server (`cfgtool serve`), e.g. http://configs:8750."),
]

Store = Annotated[str, typer.Option("--store", metavar="NAME", help="The store's name on the server.")]

Directory = Annotated[
    Path, typer.Option("--dir", metavar="DIR", help="The directory of the files (the kubelet's ..data layout).")
]

Files = Annotated[
    list[str] | None,
    typer.Option(
        "--file",
        metavar="NAME=KEY[:FORMAT]",
        help="A file of KEY's config, as json, yaml, properties, hocon or env (default: from NAME's suffix). "
        "Repeatable.",
        show_default=False,
    ),
]

Templates = Annotated[
    list[str] | None,
    typer.Option(
        "--template",
        metavar="NAME=TEMPLATE[:KEY]",
        help="A file rendered from a Jinja2 template (sandboxed) with KEY's config as its context (default "
        "KEY: /). Repeatable.",
        show_default=False,
    ),
]

TokenFile = Annotated[
    Path | None,
    typer.Option("--token-file", metavar="FILE", help="A file holding the bearer token.", show_default=False),
]

Identity = Annotated[
    Path | None,
    typer.Option(
        "--identity",
        metavar="FILE",
        help="An age identity: secrets are opened into files of mode 0600 (without it they are shown as hidden).",
        show_default=False,
    ),
]

SecretsFrom = Annotated[
    list[str] | None,
    typer.Option(
        "--secrets-from",
        metavar="KEY",
        help="Also open secrets sealed for KEY (a tag the keys import); a secret opens only where it was "
        "sealed for the file's key or an ancestor otherwise. Repeatable.",
        show_default=False,
    ),
]

EnvPrefix = Annotated[
    str,
    typer.Option(
        "--env-prefix",
        metavar="PREFIX",
        help="Start every variable of env files with PREFIX (APP_): without one, a variable that a shell, "
        "the dynamic linker or a runtime reads as code (LD_PRELOAD, BASH_ENV, PYTHONPATH, ...) is refused.",
    ),
]

Check = Annotated[
    str | None,
    typer.Option(
        "--check",
        metavar="CMD",
        help="A shell command run on the new files before the swap (in their directory, also "
        "$CFGTOOL_AGENT_DIR); unless it exits 0 the old files stay.",
        show_default=False,
    ),
]

Reload = Annotated[
    str | None,
    typer.Option("--reload", metavar="CMD", help="A shell command run after each swap.", show_default=False),
]

SignalName = Annotated[
    str | None,
    typer.Option(
        "--signal",
        metavar="SIG",
        help="Send SIG (HUP, USR1, ...) after each swap to the process in --pid-file.",
        show_default=False,
    ),
]

PidFile = Annotated[
    Path | None, typer.Option("--pid-file", metavar="FILE", help="The pid file for --signal.", show_default=False)
]

Webhook = Annotated[
    str | None,
    typer.Option("--webhook", metavar="URL", help='POST {"version": N} to URL after each swap.', show_default=False),
]

Settle = Annotated[
    float,
    typer.Option(
        "--settle",
        metavar="SECONDS",
        min=0,
        help="Versions that come within SECONDS of a swap are applied once, at the end of that time (a "
        "rollback never waits).",
    ),
]

Nearest = Annotated[
    bool,
    typer.Option(
        "--nearest",
        help="Write a key without a node as its nearest ancestor's config, on purpose (else such a key is an "
        "error: a typo must not write its ancestor's config).",
    ),
]

Once = Annotated[
    bool,
    typer.Option(
        "--once", help="Write the current version and exit (an init container); exit 1 when nothing can be written."
    ),
]

Instance = Annotated[
    str | None,
    typer.Option(
        "--instance",
        metavar="ID",
        help="The name this agent reports to the server (default: host name and process id).",
        show_default=False,
    ),
]


def agent_command(
    server: Server,
    store: Store,
    directory: Directory,
    files: Files = None,
    templates: Templates = None,
    token_file: TokenFile = None,
    identity: Identity = None,
    secrets_from: SecretsFrom = None,
    env_prefix: EnvPrefix = "",
    check: Check = None,
    reload: Reload = None,
    signal_name: SignalName = None,
    pid_file: PidFile = None,
    webhook: Webhook = None,
    settle: Settle = 2.0,
    nearest: Nearest = False,
    once: Once = False,
    instance: Instance = None,
) -> None:
    """Write published configs as files and keep them current.

    All files of one version appear together. They are written into a new
    directory, then the link DIR/..data is switched to it in one rename (the
    kubelet's layout). The agent follows the server's change feed and each
    key's `current` answer. So it switches at the key's checkpoint, and at
    once on a rollback. While the server is away the files stay as they are.
    Stop it with SIGTERM or Ctrl-C.

    Examples:
      cfgtool agent --server http://configs:8750 --store demo --dir /etc/app \\
        --file app.json=/data/tracking/PageViewEvent --reload 'systemctl reload app'
      cfgtool agent --server http://configs:8750 --store demo --dir /config --once \\
        --file app.properties=/services/web --file app.env=/services/web
      cfgtool agent --server http://configs:8750 --store demo --dir /etc/nginx/cfgtool \\
        --template nginx.conf=nginx.conf.j2:/services/web \\
        --check 'nginx -t -q -c "$CFGTOOL_AGENT_DIR/nginx.conf"' --signal HUP --pid-file /run/nginx.pid
    """
    from cfgtool.agent.start import Arguments, start

    arguments = Arguments(
        server=server,
        store=store,
        directory=directory,
        files=tuple(files or ()),
        templates=tuple(templates or ()),
        token_file=token_file,
        identity=identity,
        secrets_from=tuple(secrets_from or ()),
        env_prefix=env_prefix,
        check=check,
        reload=reload,
        signal_name=signal_name,
        pid_file=pid_file,
        webhook=webhook,
        settle=settle,
        nearest=nearest,
        once=once,
        instance=instance,
    )
    start(arguments)
