"""Versions in git (DESIGN 9): numbered, immutable version tags; publish, rollback and the version listing.

- `tags`: read every version tag and rollback marker with one `git for-each-ref`; statuses; lookups.
- `refs`: create-only tag writes, pushes without force, fetches that never clobber.
- `publish`, `rollback`: the two commands that write tags. Nothing here ever moves or deletes a published tag.
"""

from cfgtool.versions.publish import PublishRaceLost, PublishRefused, PublishResult, publish
from cfgtool.versions.refs import RemoteError, RemoteUnavailable
from cfgtool.versions.rollback import RollbackRefused, RollbackResult, rollback
from cfgtool.versions.tags import (
    History,
    RolledBack,
    TagScheme,
    Version,
    VersionNotFound,
    current_version,
    history,
    resolve_version,
    versions,
)

__all__ = [
    "History",
    "PublishRaceLost",
    "PublishRefused",
    "PublishResult",
    "RemoteError",
    "RemoteUnavailable",
    "RollbackRefused",
    "RollbackResult",
    "RolledBack",
    "TagScheme",
    "Version",
    "VersionNotFound",
    "current_version",
    "history",
    "publish",
    "resolve_version",
    "rollback",
    "versions",
]
