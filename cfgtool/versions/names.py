"""Names the CLI shows in its help before any version is read: kept apart from the modules that read git, so
that building the CLI does not import them."""

from cfgtool.errors import UsageError

DEFAULT_SHOWN = 20  # versions() without `all`: the newest this many (plus the current one)
WORKTREE = "worktree"  # the side of a diff that is the working tree
CURRENT = "current"  # the current version: the highest without a rollback marker
PREVIOUS = "previous"  # the good version below the current one
VERSION_NAMES = (CURRENT, PREVIOUS)


def version_spec(text: str) -> int | str:
    """A version as people write it: `N`, `vN`, `current` or `previous`; UsageError for anything else."""
    word = text.strip().lower()
    if word in (CURRENT, PREVIOUS):
        return word
    digits = word.removeprefix("v")
    if digits.isascii() and digits.isdigit() and digits[0] != "0" and len(digits) <= 9:
        return int(digits)
    raise UsageError(
        f"{text!r} is not a version", hint=f"name a version by its number (5 or v5), {CURRENT!r} or {PREVIOUS!r}"
    )
