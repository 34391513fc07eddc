"""MaxRetention: an example of a repository-local policy (DESIGN 8.2).

Writing your own policy
-----------------------
A policy is a plain class with three methods, named in ``store/_CONFIG_STORE`` as ``module:Class``.
The root of the config repository is importable, so this file is ``policies.retention`` and the
store enables it with::

    policies:
      - class: policies.retention:MaxRetention
        config: {max_days: 90}

1. ``configure(settings)`` is called once per compile with the ``config`` mapping from
   ``_CONFIG_STORE`` (``{}`` when the entry is just ``"module:Class"``). Check the settings here and
   raise ``ValueError`` on bad ones: cfgtool reports that as E_POLICY_ERROR naming the policy.
2. ``validate(request)`` is called once per node with a ``NodeRequest``: the key, how it changed
   against ``cfgtool compile --base REF`` (``created``, ``altered``, ``deleted``, or ``unchanged``
   without a base), its own and resolved configs, its resolved config at the base
   (``previous_config``), its imports and tags, and who asks (``principal``). Return to accept the
   node; raise ``PolicyViolation(message, path=...)`` to reject it. A violation is E_POLICY for that
   node only; every other node is still checked. Any other exception is E_POLICY_ERROR: a bug in
   the policy, not in the config.
3. ``close()`` is called at the end of the run, also after failures: release what configure opened.

Policies see plain JSON-like data (dicts, lists, str, int, float, bool, None) and must not modify
it. Keep them deterministic and offline: the same commit must always give the same verdict.
Test a policy by building ``NodeRequest`` objects by hand, or by compiling a small store in a
temporary git repository.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cfgtool.policies import NodeRequest, Policy, PolicyViolation

DAY_MS = 24 * 60 * 60 * 1000


def _lookup(config: Mapping[str, Any], path: str) -> Any:
    """The value at a dotted path (``retention.ms``), or None when any part is missing."""
    value: Any = config
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


class MaxRetention(Policy):
    """Reject datasets that keep data longer than ``max_days``.

    Settings (the ``config`` mapping in _CONFIG_STORE):

    - ``max_days`` (int, required): the longest retention allowed, in days.
    - ``path`` (str, default ``retention.ms``): where the retention is, in milliseconds.
    - ``exempt_tags`` (list of tag keys, default none): nodes importing one of them are not checked,
      e.g. a legal-hold tag.

    Nodes without a value at ``path`` (tags, the root) are accepted: the retention schema decides
    where the value is required. Deleted nodes are always accepted.
    """

    def __init__(self) -> None:
        self.max_days = 0
        self.path = "retention.ms"
        self.exempt_tags: frozenset[str] = frozenset()

    def configure(self, settings: Mapping[str, Any]) -> None:
        unknown = set(settings) - {"max_days", "path", "exempt_tags"}
        if unknown:
            raise ValueError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        max_days = settings.get("max_days")
        if isinstance(max_days, bool) or not isinstance(max_days, int) or max_days <= 0:
            raise ValueError(f"max_days must be a positive integer, got {max_days!r}")
        path = settings.get("path", "retention.ms")
        if not isinstance(path, str) or not path:
            raise ValueError(f"path must be a non-empty string, got {path!r}")
        exempt = settings.get("exempt_tags", [])
        if not isinstance(exempt, list) or not all(isinstance(t, str) for t in exempt):
            raise ValueError("exempt_tags must be a list of tag keys")
        self.max_days = max_days
        self.path = path
        self.exempt_tags = frozenset(exempt)

    def validate(self, request: NodeRequest) -> None:
        if request.change == "deleted" or self.exempt_tags.intersection(request.tags):
            return
        value = _lookup(request.resolved_config, self.path)
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int | float):
            message = f"{self.path} must be a number of milliseconds, got {value!r}"
            raise PolicyViolation(message, path=self.path)
        if value > self.max_days * DAY_MS:
            message = (
                f"{self.path} is {value / DAY_MS:g} days ({value} ms); "
                f"the maximum is {self.max_days} days ({self.max_days * DAY_MS} ms)"
            )
            previous = _lookup(request.previous_config or {}, self.path)
            if request.change == "altered" and previous is not None and previous != value:
                message += f"; it was {previous} ms before this change"
            raise PolicyViolation(message, path=self.path)

    def close(self) -> None:
        """Nothing to release: this policy holds no files, connections or threads."""
