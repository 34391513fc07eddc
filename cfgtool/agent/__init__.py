"""`cfgtool agent`: published configs as files on disk, switched atomically, for any process (docs/agent.md).

`layout` writes versions in the kubelet's `..data` layout. `files` renders a key's config in a format or through a
sandboxed Jinja2 template. `actions` runs the check before a swap and the reload after it. `agent` decides which
version to apply and follows the server. `start` checks the options of `cfgtool agent` and runs it.
"""

from __future__ import annotations

from cfgtool.agent.actions import CheckFailed, Reload, parse_signal
from cfgtool.agent.agent import Agent, NothingToWrite, Options
from cfgtool.agent.files import FileSpec, RenderError, parse_file, parse_template
from cfgtool.agent.layout import LayoutError

__all__ = [
    "Agent",
    "CheckFailed",
    "FileSpec",
    "LayoutError",
    "NothingToWrite",
    "Options",
    "Reload",
    "RenderError",
    "parse_file",
    "parse_signal",
    "parse_template",
]
