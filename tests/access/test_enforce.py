"""Where the ACL is enforced (docs/access.md#the-acl), run as CI runs it: pull requests simulated as a base commit and a
change (`compile --base HEAD~1 --principal P`, what config-pr.yml runs), publish and rollback with a
principal, and `cfgtool acl check` / `acl list`. The store is a copy of the embedded one, whose `_ACL.yaml`
gives the tracking team `/data/tracking/`, the databases team `/data/databases/`, the release group publish
and rollback, and nobody but the super user `platform-admin` the rules."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]

ACL = "store/_ACL.yaml"


def pr(work: GitRepo, run_cfgtool: Run, principal: str, files: dict[str, str | None]) -> list[dict[str, Any]]:
    """Commit `files` on top of the base and check the change as config-pr.yml does; the diagnostics."""
    work.write(files)
    work.commit("a pull request")
    proc = run_cfgtool("compile", "--base", "HEAD~1", "--principal", principal, "--format", "json", cwd=work.root)
    assert proc.returncode in (0, 1), proc.stderr
    diags: list[dict[str, Any]] = json.loads(proc.stdout)["diagnostics"]
    return diags


def denied(diags: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(file, the start of the message) of each E_ACCESS_DENIED."""
    return sorted((d["file"], d["message"].split(": ")[0]) for d in diags if d["code"] == "E_ACCESS_DENIED")


def test_a_team_changes_its_own_datasets(work: GitRepo, run_cfgtool: Run) -> None:
    conf = "store/data/tracking/PageViewEvent/main.conf"
    diags = pr(work, run_cfgtool, "alice", {
        conf: (work.root / conf).read_text(encoding="utf-8").replace("partitions = 128", "partitions = 256"),
        "store/data/tracking/NewEvent/main.conf": 'description = "new"\n',
    })  # fmt: skip
    assert denied(diags) == []
    assert not [d for d in diags if d["severity"] == "error"]


def test_a_change_outside_the_team_s_prefix_is_denied_at_the_changed_file(work: GitRepo, run_cfgtool: Run) -> None:
    diags = pr(work, run_cfgtool, "User:alice", {
        "store/data/tracking/PageViewEvent/main.conf": "owner = tracking-team\n",
        "store/data/databases/ads/main.conf": "owner = alice\n",
        "store/data/databases/jobs/postings/main.conf": None,
        "store/data/databases/jobs/postings/includes": None,
        "store/data/databases/newdb/main.conf": "owner = alice\n",
    })  # fmt: skip
    assert denied(diags) == [
        ("store/data/databases/ads/main.conf", "User:alice may not alter /data/databases/ads"),
        ("store/data/databases/jobs/postings/includes", "User:alice may not delete /data/databases/jobs/postings"),
        ("store/data/databases/newdb/main.conf", "User:alice may not create /data/databases/newdb"),
    ]


def test_rule_files_need_alter_store_and_the_acl_alter_acl(work: GitRepo, run_cfgtool: Run) -> None:
    acl = (work.root / ACL).read_text(encoding="utf-8")
    granted = acl.replace("super_users: [User:platform-admin]", "super_users: [User:platform-admin, User:alice]")
    diags = pr(work, run_cfgtool, "alice", {
        ACL: granted,
        "schemas/partitions.yaml": (work.root / "schemas/partitions.yaml").read_text().replace("1024", "4096"),
    })  # fmt: skip
    assert denied(diags) == [
        ("schemas/partitions.yaml", "User:alice may not change schemas/partitions.yaml (alter_store)"),
        (ACL, "User:alice may not change store/_ACL.yaml (alter_acl)"),
    ]
    assert {d["file"] for d in diags if d["code"] == "W_RULES_CHANGED"} >= {ACL, "schemas/partitions.yaml"}
    # the super user of the base may; the change's own ACL (alice a super user) counts only after the merge
    proc = run_cfgtool("compile", "--base", "HEAD~1", "--principal", "platform-admin", "--format", "json",
                       cwd=work.root)  # fmt: skip
    assert denied(json.loads(proc.stdout)["diagnostics"]) == []


def test_without_a_principal_or_an_acl_nothing_is_enforced(work: GitRepo, run_cfgtool: Run) -> None:
    work.write({"store/data/databases/ads/main.conf": "owner = alice\n"})
    work.commit("change")
    proc = run_cfgtool("compile", "--base", "HEAD~1", "--format", "json", cwd=work.root)
    assert denied(json.loads(proc.stdout)["diagnostics"]) == []
    work.write({ACL: None})
    work.commit("no ACL")
    diags = pr(work, run_cfgtool, "alice", {"store/data/databases/ads/main.conf": "owner = mallory\n"})
    assert denied(diags) == []


def test_a_broken_acl_fails_closed_and_says_where(work: GitRepo, run_cfgtool: Run) -> None:
    work.write({ACL: "super_users: [User:platform-admin]\nacls:\n  - {principal: alice, operation: rede}\n"})
    work.commit("a broken ACL")
    proc = run_cfgtool("compile", "--format", "json", cwd=work.root)
    assert proc.returncode == 1
    acl_errors = [d for d in json.loads(proc.stdout)["diagnostics"] if d["code"] == "E_ACL"]
    assert acl_errors and all(d["file"] == ACL and d["line"] == 3 for d in acl_errors)
    check = run_cfgtool("acl", "check", "User:alice", "read", "/data/tracking/PageViewEvent", cwd=work.root)
    assert check.returncode == 1 and check.stdout.startswith("DENIED")
    assert run_cfgtool("acl", "check", "User:platform-admin", "alter_acl", cwd=work.root).returncode == 0
    diags = pr(work, run_cfgtool, "alice", {"store/data/tracking/PageViewEvent/main.conf": "owner = t\n"})
    assert denied(diags) == [("store/data/tracking/PageViewEvent/main.conf",
                              "User:alice may not alter /data/tracking/PageViewEvent")]  # fmt: skip


def test_a_prefix_without_a_slash_warns(work: GitRepo, run_cfgtool: Run) -> None:
    acl = (work.root / ACL).read_text(encoding="utf-8").replace("key: /data/tracking/,", "key: /data/track,")
    work.write({ACL: acl})
    proc = run_cfgtool("compile", "--format", "json", cwd=work.root)
    warnings = [d for d in json.loads(proc.stdout)["diagnostics"] if d["code"] == "W_ACL_PREFIX"]
    assert [(d["file"], d["line"]) for d in warnings] == [(ACL, 15)]


def tags(work: GitRepo) -> list[str]:
    return work.git("tag", "--list", "config/*").split()


def test_publish_and_rollback_need_the_right_under_the_current_version_s_acl(work: GitRepo, run_cfgtool: Run) -> None:
    refused = run_cfgtool("publish", "-m", "v1", "--principal", "User:bob", cwd=work.root)
    assert refused.returncode == 1
    assert "User:bob may not publish this store: no ACL entry allows User:bob to publish store" in refused.stderr
    assert tags(work) == []
    assert run_cfgtool("publish", "-m", "v1", "--principal", "release-bot", cwd=work.root).returncode == 0
    # a commit that makes bob a releaser cannot be published by bob: version 1's ACL decides
    acl = (work.root / ACL).read_text(encoding="utf-8")
    work.write({
        ACL: acl.replace("[User:release-bot, User:carol, User:dave]", "[User:release-bot, User:bob]"),
        "store/data/tracking/NewEvent/main.conf": 'description = "new"\n',
    })  # fmt: skip
    work.commit("bob releases now")
    assert run_cfgtool("publish", "-m", "v2", "--principal", "bob", cwd=work.root).returncode == 1
    assert run_cfgtool("publish", "-m", "v2", "--principal", "dave", cwd=work.root).returncode == 0
    # version 2 is current: its ACL now decides, and bob may roll it back while dave no longer may
    assert run_cfgtool("rollback", "-m", "bad", "--principal", "dave", cwd=work.root).returncode == 1
    assert tags(work) == ["config/v1", "config/v2"]
    assert run_cfgtool("rollback", "-m", "bad", "--principal", "bob", cwd=work.root).returncode == 0
    assert "config/rolledback/v2" in tags(work)
    # cancelling that rollback takes the same right, judged by the now current version 1's ACL
    cancel = ("rollback", "--cancel", "2", "-m", "fine after all", "--principal")
    refused = run_cfgtool(*cancel, "bob", cwd=work.root)
    assert refused.returncode == 1 and "User:bob may not rollback" in refused.stderr, refused.stderr
    assert run_cfgtool(*cancel, "dave", cwd=work.root).returncode == 0
    assert "config/restored/v2" in tags(work)


@pytest.mark.parametrize(
    ("args", "status", "first_line", "reason"),
    [
        (("User:alice", "alter", "/data/tracking/PageViewEvent"), 0,
         "ALLOWED  User:alice alter /data/tracking/PageViewEvent",
         "allow Group:tracking all /data/tracking/ (prefixed), store/_ACL.yaml:15"),
        (("intern", "read", "/data/databases/identity"), 1, "DENIED  User:intern read /data/databases/identity",
         "deny User:intern read /data/databases/identity (literal), store/_ACL.yaml:21"),
        (("User:platform-admin", "alter_acl"), 0, "ALLOWED  User:platform-admin alter_acl store", "super user"),
        (("User:alice", "describe", "/data/tracking/X"), 0, "ALLOWED  User:alice describe /data/tracking/X",
         "allow Group:tracking all /data/tracking/ (prefixed), store/_ACL.yaml:15"),
        (("User:release-bot", "publish", "--host", "10.0.0.1"), 0, "ALLOWED  User:release-bot publish store",
         "allow Group:release publish store, store/_ACL.yaml:24"),
    ],
)  # fmt: skip
def test_acl_check_says_which_rule_decided(
    embedded_repo: GitRepo, run_cfgtool: Run, args: tuple[str, ...], status: int, first_line: str, reason: str
) -> None:
    proc = run_cfgtool("acl", "check", *args, cwd=embedded_repo.root)
    assert proc.returncode == status, proc.stderr
    assert proc.stdout.splitlines() == [first_line, f"  {reason}"]
    data = json.loads(run_cfgtool("acl", "check", *args, "--format", "json", cwd=embedded_repo.root).stdout)
    assert data["allowed"] is (status == 0) and data["reason"] == reason
    assert set(data) == {"principal", "operation", "resource", "allowed", "reason", "rule"}


def test_acl_check_usage_errors_exit_2(embedded_repo: GitRepo, run_cfgtool: Run) -> None:
    for args in (("User:alice", "fly", "/data/x"), ("User:alice", "read"), ("Team:x", "read", "/data/x")):
        proc = run_cfgtool("acl", "check", *args, cwd=embedded_repo.root)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr


def test_a_principal_no_acl_entry_could_name_is_a_usage_error_not_an_answer(
    work: GitRepo, run_cfgtool: Run, tmp_path: Path
) -> None:
    """ "bad principal" reads as User:bad principal, which the store's `allow User:* read *` would allow."""
    assert run_cfgtool("publish", cwd=work.root).returncode == 0
    for command in (
        ("acl", "check", "bad principal", "read", "/data/x"),
        ("acl", "list", "--principal", "bad principal"),
        ("token", "add", "bad principal", "--tokens", str(tmp_path / "tokens.json")),
        ("publish", "--principal", "bad principal"),
        ("rollback", "-m", "x", "--principal", "bad principal"),
    ):
        proc = run_cfgtool(*command, cwd=work.root)
        assert proc.returncode == 2, (command, proc.stdout, proc.stderr)
        assert "'bad principal' cannot be a principal" in proc.stderr, proc.stderr
        assert "for example User:alice or Group:ops" in proc.stderr and "ALLOWED" not in proc.stdout
    assert not (tmp_path / "tokens.json").exists()
    assert work.git("tag", "--list").split() == ["config/v1"]  # nothing published or rolled back


def test_acl_list_filters_by_principal_and_key(embedded_repo: GitRepo, run_cfgtool: Run) -> None:
    proc = run_cfgtool("acl", "list", "--principal", "User:alice", "--key", "/data/tracking/X", cwd=embedded_repo.root)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "super users: User:platform-admin",
        "allow Group:tracking all /data/tracking/ (prefixed), store/_ACL.yaml:15",
        "allow User:* read * (literal), store/_ACL.yaml:18",
    ]
    data = json.loads(run_cfgtool("acl", "list", "--format", "json", cwd=embedded_repo.root).stdout)
    assert len(data["entries"]) == 7 and data["super_users"] == ["User:platform-admin"]


def test_the_scaffolded_acl_starts_open_and_its_examples_work_once_uncommented(
    run_cfgtool: Run, tmp_path: Path
) -> None:
    assert run_cfgtool("init", "configs").returncode == 0
    root = tmp_path / "configs"
    assert run_cfgtool("acl", "check", "User:anyone", "publish", cwd=root).returncode == 0
    text = (root / ACL).read_text(encoding="utf-8")
    examples = [line for line in text.splitlines() if line.startswith("#  ") and not line.startswith("#  #")]
    assert len(examples) >= 6, "the scaffolded ACL has no commented examples"
    uncommented = text.replace("groups: {}", "groups:").replace("acls: []", "acls:").replace("github: {}", "github:")
    for line in examples:
        uncommented = uncommented.replace(line + "\n", line[1:] + "\n")
    (root / ACL).write_text(uncommented.replace("true  #", "false  #"), encoding="utf-8")
    compiled = run_cfgtool("compile", "--strict", "--format", "json", cwd=root)
    assert compiled.returncode == 0, compiled.stdout
    for args, status in [
        (("User:alice", "alter", "/data/orders"), 0),
        (("User:alice", "create", "/data/orders/returns"), 0),
        (("User:alice", "alter", "/data/payments"), 1),
        (("User:alice", "publish"), 1),
        (("User:release-bot", "publish"), 0),
        (("User:release-bot", "alter_store"), 1),
    ]:
        assert run_cfgtool("acl", "check", *args, cwd=root).returncode == status, args


INTERN_ON_TRACKING = (
    "  - {principal: User:intern, operation: all, key: /data/tracking/, pattern: prefixed, permission: allow}\n"
)


def test_importing_a_key_needs_read_on_it(work: GitRepo, run_cfgtool: Run) -> None:
    """An import copies the imported key's config into a node others read: the author must be able to read it."""
    work.write({ACL: (work.root / ACL).read_text(encoding="utf-8") + INTERN_ON_TRACKING})
    work.commit("interns work on tracking")
    includes = "store/data/tracking/PageViewEvent/includes"
    diags = pr(work, run_cfgtool, "intern", {
        includes: "/tags/priority/HIGH\n/data/databases/identity/members   # the members' config\n",
        "store/data/tracking/NewEvent/includes": "data/databases/identity\n",
        "store/data/tracking/OtherEvent/includes": "/data/databases/jobs\n",
    })  # fmt: skip
    found = sorted((d["file"], d["line"], d["key"], d["message"].split(": ")[0])
                   for d in diags if d["code"] == "E_ACCESS_DENIED")  # fmt: skip
    assert found == [
        (
            "store/data/tracking/NewEvent/includes",
            1,
            "/data/tracking/NewEvent",
            "User:intern may not import "
            "/data/databases/identity into /data/tracking/NewEvent (it needs read on /data/databases/identity)",
        ),
        (
            includes,
            2,
            "/data/tracking/PageViewEvent",
            "User:intern may not import /data/databases/identity/members "
            "into /data/tracking/PageViewEvent (it needs read on /data/databases/identity/members)",
        ),
    ]
    # an import that was already there is no new copy: moving it or commenting beside it is no problem
    work.write({includes: "/data/databases/identity/members\n/tags/priority/HIGH  # first\n"})
    work.commit("the import was there before")
    work.write({includes: "# reordered\n/tags/priority/HIGH\n/data/databases/identity/members\n"})
    work.commit("reorder")
    proc = run_cfgtool("compile", "--base", "HEAD~1", "--principal", "intern", "--format", "json", cwd=work.root)
    assert denied(json.loads(proc.stdout)["diagnostics"]) == []


def test_editing_an_included_file_alters_every_node_that_includes_it(work: GitRepo, run_cfgtool: Run) -> None:
    shared = "store/data/databases/_shared/pool.conf"
    inner = "store/data/databases/_shared/limits.conf"
    work.write({
        shared: 'include "limits.conf"\npool.size = 10\n',
        inner: "pool.max = 20\n",
        "store/data/databases/jobs/main.conf": 'include "../_shared/pool.conf"\n',
        "store/data/databases/messaging/main.conf": 'include "../_shared/pool.conf"\n',
    })  # fmt: skip
    work.commit("the databases share a pool")
    diags = pr(work, run_cfgtool, "alice", {inner: "pool.max = 2000\n"})
    found = sorted((d["file"], d["key"], d["message"].split(": ")[0]) for d in diags if d["code"] == "E_ACCESS_DENIED")
    assert found == [
        (inner, "/data/databases/jobs", "User:alice may not alter /data/databases/jobs"),
        (inner, "/data/databases/messaging", "User:alice may not alter /data/databases/messaging"),
    ]
    # a file an include names but that does not exist yet is the node's too: creating it alters the node
    page_views = "store/data/tracking/PageViewEvent/main.conf"
    text = (work.root / page_views).read_text(encoding="utf-8")
    work.write({page_views: text + 'include "../../databases/_shared/extra.conf"\n'})
    work.commit("tracking includes a file that is not there")
    extra = "store/data/databases/_shared/extra.conf"
    assert denied(pr(work, run_cfgtool, "alice", {extra: "pool.min = 1\n"})) == []  # her team's node alone
    diags = pr(work, run_cfgtool, "carol", {extra: "pool.min = 2\n"})
    assert denied(diags) == [(extra, "User:carol may not alter /data/tracking/PageViewEvent")]


def test_including_another_node_s_file_needs_read_on_that_node(work: GitRepo, run_cfgtool: Run) -> None:
    """`include` of a file in another node's directory copies that node's config, as an import does."""
    work.write({ACL: (work.root / ACL).read_text(encoding="utf-8") + INTERN_ON_TRACKING})
    work.commit("interns work on tracking")
    conf = "store/data/tracking/PageViewEvent/main.conf"
    text = (work.root / conf).read_text(encoding="utf-8")
    diags = pr(work, run_cfgtool, "intern", {
        conf: text + 'include "../../databases/identity/members/main.conf"\n',
        "store/data/tracking/LoginEvent/main.conf": 'include "../../databases/jobs/main.conf"\n',  # readable
    })  # fmt: skip
    found = [(d["file"], d["key"], d["message"].split(": ")[0]) for d in diags if d["code"] == "E_ACCESS_DENIED"]
    assert found == [
        (
            conf,
            "/data/tracking/PageViewEvent",
            "User:intern may not include "
            "store/data/databases/identity/members/main.conf into /data/tracking/PageViewEvent (a file of "
            "/data/databases/identity/members, so it needs read on /data/databases/identity/members)",
        )
    ]


def test_deleting_a_node_is_denied_at_its_own_main_conf_not_at_a_file_it_included(
    work: GitRepo, run_cfgtool: Run
) -> None:
    conf = "store/data/databases/newdb/main.conf"
    work.write({"store/data/databases/_shared/pool.conf": "pool.size = 10\n", conf: 'include "../_shared/pool.conf"\n'})
    work.commit("a database that includes a shared file")
    diags = pr(work, run_cfgtool, "alice", {conf: None})
    assert denied(diags) == [(conf, "User:alice may not delete /data/databases/newdb")]
