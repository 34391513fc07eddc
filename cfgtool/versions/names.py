"""Names the CLI shows in its help before any version is read. They are kept apart from the modules that read git, so
building the CLI does not import them."""

from cfgtool.errors import UsageError

DEFAULT_SHOWN = 20  # versions() without `all`: the newest this many (plus the current one)
WORKTREE = "worktree"  # the side of a diff that is the working tree
CURRENT = "current"  # what a reader reads: the highest good version, or the stable one during a rollout
PREVIOUS = "previous"  # the good version below the current one
VERSION_NAMES = (CURRENT, PREVIOUS)


def version_spec(text: str) -> int | str:
    """A version as people write it: `N`, `vN`, `current` or `previous`; UsageError for anything else."""
    word = text.strip().lower()
    if word in (CURRENT, PREVIOUS):
        return word
    number = version_number(word.removeprefix("v"))
    if number is not None:
        return number
    raise UsageError(
        f"{text!r} is not a version", hint=f"name a version by its number (5 or v5), {CURRENT!r} or {PREVIOUS!r}"
    )


def split_ref(ref: str | None, version: str | None) -> tuple[str | None, str | None]:
    """`--ref` and `--version` as given, as (ref, version): a ref that is `current` or `previous` names that
    version. UsageError for both at once: they name two states."""
    if ref is not None and version is not None:
        raise UsageError("--ref and --version name two states; give one", hint="drop one of them")
    if ref in VERSION_NAMES:
        return None, ref
    return ref, version


def version_number(digits: str) -> int | None:
    """`digits` as a version number, None when it is not one. A version number is 1 to 9 ASCII digits without a
    leading zero: the one rule for tag names and for what people type (see docs/versions.md). Anything longer would
    not fit the snapshots' integers nor the server's URLs. So a tag like `config/v99999999999999999999` is not a
    version at all, rather than a current version nothing can serve."""
    if 0 < len(digits) <= 9 and digits.isascii() and digits.isdigit() and digits[0] != "0":
        return int(digits)
    return None
