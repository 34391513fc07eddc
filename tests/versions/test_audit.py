"""`audit` and `audit_key` (`cfgtool/versions/audit.py`) on real repositories with annotated version tags and
rollback markers (built as in test_diff.py), and one built through `publish` and `rollback`."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cfgtool.errors import UsageError
from cfgtool.store import git
from cfgtool.versions import publish, rollback
from cfgtool.versions.audit import (
    audit,
    audit_key,
    parse_since,
    render_events_text,
    render_history_text,
)
from cfgtool.versions.diff import ABSENT

if TYPE_CHECKING:
    from tests.conftest import GitRepo
    from tests.versions.conftest import Versioned

SEARCH = "/data/tracking/SearchQueryEvent"
DAYS_60 = 5_184_000_000
DAYS_90 = 7_776_000_000


def at(text: str) -> datetime:
    return datetime.fromisoformat(text)


# ------------------------------------------------------------------------------------------ events


def test_audit_lists_publish_and_rollback_events_newest_first(versioned: Versioned) -> None:
    events = audit(versioned.root).events
    assert [(e.kind, e.version) for e in events] == [("rollback", 3), ("publish", 3), ("publish", 2), ("publish", 1)]
    rollback_event, v3 = events[0], events[1]
    assert rollback_event.message == "NewEvent broke the consumers"
    assert rollback_event.by == "Test <test@example.com>"
    assert rollback_event.date == at("2024-03-04T11:00:00+00:00")
    assert (v3.message, v3.commit, v3.tag) == ("March release", versioned.c4, "config/v3")
    assert events[-1].date == at("2024-01-01T11:00:00+00:00")


def test_audit_since_keeps_later_events(versioned: Versioned) -> None:
    events = audit(versioned.root, since=at("2024-02-01T11:00:00+00:00")).events
    assert [(e.kind, e.version) for e in events] == [("rollback", 3), ("publish", 3), ("publish", 2)]


def test_audit_json_follows_the_contract(versioned: Versioned) -> None:
    data = audit(versioned.root).to_json()
    assert list(data) == ["events"]
    for event in data["events"]:
        assert set(event) >= {"kind", "version", "by", "date", "message"}
        assert datetime.fromisoformat(event["date"]).tzinfo is not None


def test_audit_without_versions_is_empty(store_repo: GitRepo) -> None:
    store_repo.commit()
    assert audit(store_repo.root).events == ()
    assert render_events_text(audit(store_repo.root)) == "no version has been published or rolled back\n"


def test_audit_reads_who_and_why_from_publish_and_rollback(repo: GitRepo, embedded_repo: GitRepo) -> None:
    for part in ("store", "schemas", "policies"):
        if (embedded_repo.root / part).is_dir():
            shutil.copytree(embedded_repo.root / part, repo.root / part, ignore=shutil.ignore_patterns("__pycache__"))
    repo.commit("store")
    publish(repo.root, message="first", publisher="alice")
    (repo.root / "store/data/tracking/PageViewEvent/main.conf").open("a").write("sla.freshness_minutes = 10\n")
    repo.commit("fresher")
    publish(repo.root, message="fresher page views", publisher="bob")
    rollback(repo.root, reason="dashboards lag", by="carol")
    events = audit(repo.root).events
    assert [(e.kind, e.version, e.by, e.message) for e in events] == [
        ("rollback", 2, "carol", "dashboards lag"),
        ("publish", 2, "bob", "fresher page views"),
        ("publish", 1, "alice", "first"),
    ]


# ------------------------------------------------------------------------------------------ one value


def test_audit_key_path_lists_each_version_that_changed_it_with_the_commits(versioned: Versioned) -> None:
    found = audit_key(versioned.root, SEARCH, "retention.ms")
    assert (found.key, found.path) == (SEARCH, "retention.ms")
    assert [(h.version, h.old, h.new, h.previous) for h in found.history] == [
        (2, DAYS_90, DAYS_60, 1),
        (1, ABSENT, DAYS_90, None),
    ]
    v2, v1 = found.history
    assert [c.sha for c in v2.commits] == [versioned.c2]
    assert (v2.commits[0].subject, v2.commits[0].author) == ("Shorter LONG retention", "Test <test@example.com>")
    assert v2.commits[0].date == at("2024-02-01T10:00:00+00:00")
    assert v2.date == at("2024-02-01T11:00:00+00:00")
    assert [c.sha for c in v1.commits] == [versioned.c1]


def test_audit_key_commits_are_only_those_touching_the_keys_files(versioned: Versioned) -> None:
    """v3 holds two commits; only the one that edited SearchQueryEvent's main.conf is listed for it."""
    found = audit_key(versioned.root, SEARCH, "description")
    undone, v3 = found.history[:2]
    assert (undone.kind, undone.version, undone.previous, undone.current, undone.commits) == ("rollback", 3, 3, 2, ())
    assert (undone.old, undone.new) == (v3.new, v3.old)  # readers read v2's description again
    assert (v3.kind, v3.version, v3.previous, v3.rolled_back) == ("publish", 3, 2, True)
    assert v3.new.startswith("One search") and v3.old.startswith("A search")
    assert [c.sha for c in v3.commits] == [versioned.c4]


def test_audit_key_whole_config_and_text(versioned: Versioned) -> None:
    found = audit_key(versioned.root, SEARCH)
    assert [(h.kind, h.version) for h in found.history] == [
        ("rollback", 3),
        ("publish", 3),
        ("publish", 2),
        ("publish", 1),
    ]
    assert found.history[2].new["retention"]["ms"] == DAYS_60
    text = render_history_text(found)
    assert text.startswith(f"{SEARCH}: changed in 3 versions and 1 rollback\n")
    assert "v3 rolled back  2024-03-04 11:00 +0000  (readers went from v3 to v2)" in text
    assert f"retention.ms: {DAYS_90} -> {DAYS_60}" in text
    assert "(rolled back)" in text and "Shorter LONG retention" in text


def test_audit_key_of_a_new_dataset_starts_from_what_it_inherited(versioned: Versioned) -> None:
    found = audit_key(versioned.root, "/data/tracking/NewEvent", "owner")
    assert [(h.kind, h.version, h.old, h.new, h.exists) for h in found.history] == [
        ("rollback", 3, "new-team", "tracking-infra", True),
        ("publish", 3, "tracking-infra", "new-team", True),
        ("publish", 1, ABSENT, "tracking-infra", False),
    ]
    assert [c.subject for c in found.history[1].commits] == ["Add NewEvent, drop ConnectionInviteEvent"]


def test_audit_key_since_compares_with_the_version_before(versioned: Versioned) -> None:
    found = audit_key(versioned.root, SEARCH, "retention.ms", since=at("2024-01-15T00:00:00+00:00"))
    assert [(h.version, h.old, h.new) for h in found.history] == [(2, DAYS_90, DAYS_60)]
    assert [c.sha for c in found.history[0].commits] == [versioned.c2]
    later = audit_key(versioned.root, SEARCH, "retention.ms", since=at("2025-01-01T00:00:00+00:00"))
    assert later.history == ()


def test_audit_key_restoring_an_old_version_has_no_new_commits(versioned: Versioned) -> None:
    versioned.tag("2024-04-01T00:00:00+00:00", "config/v4", versioned.c1, "restore v1")
    found = audit_key(versioned.root, SEARCH, "retention.ms")
    assert [(h.version, h.old, h.new, h.commits) for h in found.history[:1]] == [(4, DAYS_60, DAYS_90, ())]


def test_audit_key_json_follows_the_contract(versioned: Versioned) -> None:
    data = audit_key(versioned.root, SEARCH, "retention.ms").to_json()
    assert set(data) >= {"key", "path", "history"}
    first, oldest = data["history"][0], data["history"][-1]
    assert set(first) >= {"version", "date", "old", "new", "commits"}
    assert "old" not in oldest and oldest["new"] == DAYS_90
    assert set(first["commits"][0]) >= {"sha", "author", "date", "subject"}


def test_audit_key_reads_history_in_one_git_log_and_one_diff_tree(versioned: Versioned, monkeypatch: Any) -> None:
    calls: list[str] = []
    real = git.run_git

    def counting(cwd: Path, *args: str, **kwargs: Any) -> Any:
        calls.append(args[0])
        return real(cwd, *args, **kwargs)

    monkeypatch.setattr(git, "run_git", counting)
    audit_key(versioned.root, SEARCH)
    assert calls.count("log") == 1 and calls.count("diff-tree") == 1 and calls.count("for-each-ref") == 1


def test_audit_key_bad_path_is_a_usage_error(versioned: Versioned) -> None:
    with pytest.raises(UsageError, match="not a HOCON path"):
        audit_key(versioned.root, SEARCH, "a..b")


def test_audit_key_without_versions_is_empty(store_repo: GitRepo) -> None:
    store_repo.commit()
    assert audit_key(store_repo.root, "/x").history == ()


# ------------------------------------------------------------------------------------------ --since


def test_parse_since_accepts_iso_dates_and_relative_times(versioned: Versioned) -> None:
    assert parse_since("2024-05-01T12:00:00+02:00") == at("2024-05-01T12:00:00+02:00")
    local = parse_since("2024-05-01")
    assert local.tzinfo is not None and (local.year, local.month, local.day, local.hour) == (2024, 5, 1, 0)
    ago = parse_since("3 weeks ago", versioned.root)
    assert 20 <= (datetime.now(UTC) - ago).days <= 21


def test_parse_since_refuses_anything_else() -> None:
    with pytest.raises(UsageError, match="not a date"):
        parse_since("last tuesday-ish")


def test_audit_key_first_version_lists_only_commits_that_touched_its_files(tmp_path: Path) -> None:
    from cfgtool.versions import publish
    from cfgtool.versions.audit import audit_key
    from tests.conftest import copy_embedded

    repo = copy_embedded(tmp_path / "repo")
    (repo.root / "NOTES.md").write_text("unrelated\n")
    subprocess.run(["git", "-C", str(repo.root), "add", "NOTES.md"], check=True)
    subprocess.run(["git", "-C", str(repo.root), "commit", "-qm", "unrelated notes"], check=True)
    publish(repo.root, message="v1")
    [first] = audit_key(repo.root, "/data/tracking/AdClickEvent", "owner").history
    subjects = [c.subject for c in first.commits]
    assert subjects and "unrelated notes" not in subjects
