"""Names the CLI shows in its help before any version is read: kept apart from the modules that read git, so
that building the CLI does not import them."""

DEFAULT_SHOWN = 20  # versions() without `all`: the newest this many (plus the current one)
WORKTREE = "worktree"  # the side of a diff that is the working tree
