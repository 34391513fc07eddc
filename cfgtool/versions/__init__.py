"""Versions in git (docs/versions.md): numbered, immutable version tags; publish, rollback and the version listing.

- `tags`: read every version tag and rollback marker with one `git for-each-ref`; statuses; lookups.
- `current`: what a reader means by `current` and `previous` (during a staged rollout, not always the newest).
- `refs`: create-only tag writes, pushes without force, fetches that never clobber.
- `publish`, `rollback`: the two commands that write tags. Nothing here ever moves or deletes a published tag.
"""

import typing as _typing

from cfgtool._lazy import make_lazy as _make_lazy

if _typing.TYPE_CHECKING:
    from cfgtool.versions.current import current_version as current_version
    from cfgtool.versions.current import resolve_version as resolve_version
    from cfgtool.versions.publish import PublishRaceLost as PublishRaceLost
    from cfgtool.versions.publish import PublishRefused as PublishRefused
    from cfgtool.versions.publish import PublishResult as PublishResult
    from cfgtool.versions.publish import publish as publish
    from cfgtool.versions.refs import RemoteError as RemoteError
    from cfgtool.versions.refs import RemoteUnavailable as RemoteUnavailable
    from cfgtool.versions.rollback import RollbackRefused as RollbackRefused
    from cfgtool.versions.rollback import RollbackResult as RollbackResult
    from cfgtool.versions.rollback import rollback as rollback
    from cfgtool.versions.tags import History as History
    from cfgtool.versions.tags import RolledBack as RolledBack
    from cfgtool.versions.tags import TagScheme as TagScheme
    from cfgtool.versions.tags import Version as Version
    from cfgtool.versions.tags import VersionNotFound as VersionNotFound
    from cfgtool.versions.tags import history as history
    from cfgtool.versions.tags import versions as versions

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

_make_lazy(
    __name__,
    {
        "History": ("cfgtool.versions.tags", "History"),
        "PublishRaceLost": ("cfgtool.versions.publish", "PublishRaceLost"),
        "PublishRefused": ("cfgtool.versions.publish", "PublishRefused"),
        "PublishResult": ("cfgtool.versions.publish", "PublishResult"),
        "RemoteError": ("cfgtool.versions.refs", "RemoteError"),
        "RemoteUnavailable": ("cfgtool.versions.refs", "RemoteUnavailable"),
        "RollbackRefused": ("cfgtool.versions.rollback", "RollbackRefused"),
        "RollbackResult": ("cfgtool.versions.rollback", "RollbackResult"),
        "RolledBack": ("cfgtool.versions.tags", "RolledBack"),
        "TagScheme": ("cfgtool.versions.tags", "TagScheme"),
        "Version": ("cfgtool.versions.tags", "Version"),
        "VersionNotFound": ("cfgtool.versions.tags", "VersionNotFound"),
        "current_version": ("cfgtool.versions.current", "current_version"),
        "history": ("cfgtool.versions.tags", "history"),
        "publish": ("cfgtool.versions.publish", "publish"),
        "resolve_version": ("cfgtool.versions.current", "resolve_version"),
        "rollback": ("cfgtool.versions.rollback", "rollback"),
        "versions": ("cfgtool.versions.tags", "versions"),
    },
)
