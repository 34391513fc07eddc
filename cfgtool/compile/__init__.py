"""The one path from a source (a git ref or a working tree) to a `Snapshot` and its diagnostics (`compiler`). Also
the queries that compile only what one key needs (`query`), and standalone HOCON files (`standalone`).

`cfgtool.compile`, the function users call, is `compiler.compile_store`. The top-level package exports it under that
name. `cfgtool/_lazy.py` says why `cfgtool.compile` names the function, not this package.
"""
