"""`python -m cfgtool`: the same as the `cfgtool` command."""

from __future__ import annotations

from cfgtool.cli import main

raise SystemExit(main())
