"""A version is the store's configs and its rules: a commit that only changes a rule file (here the ACL) is a
new version to publish, and `diff` names the rule files and the ACL statements that changed. Real git, a bare
remote, the CLI in subprocesses."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.conftest import GitRepo
    from tests.remotes import RemoteWatch

Run = Callable[..., subprocess.CompletedProcess[str]]  # the run_cfgtool fixture (conftest.py)

GRANT = "  - {principal: User:dave, operation: alter, key: /data/tracking/, pattern: prefixed, permission: allow}\n"
RELEASE = "  - {principal: Group:release, operation: rollback, resource: store, permission: allow}\n"


def test_a_commit_that_only_changes_the_acl_is_a_new_version(
    run_cfgtool: Run, work: GitRepo, remote: RemoteWatch
) -> None:
    first = run_cfgtool("--repo", str(work.root), "publish", "--remote", "origin", "-m", "first", "--format", "json")
    assert first.returncode == 0, first.stderr
    acl = work.root / "store" / "_ACL.yaml"
    acl.write_text(acl.read_text(encoding="utf-8").replace(RELEASE, GRANT), encoding="utf-8")
    work.commit("dave alters tracking; release no longer rolls back")
    work.git("push", "-q", "origin", "main")

    second = run_cfgtool("--repo", str(work.root), "publish", "--remote", "origin", "-m", "acl", "--format", "json")
    assert second.returncode == 0, second.stderr
    published = json.loads(second.stdout)
    assert (published["published"], published["version"]) == (True, 2), published["reason"]
    assert published["digest"] != json.loads(first.stdout)["digest"]
    assert remote.tags() == ["config/v1", "config/v2"]

    text = run_cfgtool("--repo", str(work.root), "diff", "v1", "v2")
    assert text.returncode == 0, text.stderr
    assert "no differences in resolved configs" in text.stdout
    assert "Rules: 1 file changed\n  ~ store/_ACL.yaml\n" in text.stdout
    assert "      + allow User:dave alter /data/tracking/ (prefixed)\n" in text.stdout
    assert "      - allow Group:release rollback store\n" in text.stdout

    doc = json.loads(run_cfgtool("--repo", str(work.root), "diff", "v1", "v2", "--format", "json").stdout)
    assert doc["rules"] == [
        {
            "path": "store/_ACL.yaml",
            "kind": "changed",
            "acl": {
                "added": ["allow User:dave alter /data/tracking/ (prefixed)"],
                "removed": ["allow Group:release rollback store"],
            },
        }
    ]
    assert doc["changes"] == []

    md = run_cfgtool("--repo", str(work.root), "diff", "v1", "v2", "--format", "markdown").stdout
    assert "**Rules**: 1 file changed" in md and "- changed `store/_ACL.yaml`" in md
    assert "  + allow User:dave alter /data/tracking/ (prefixed)" in md

    same = run_cfgtool("--repo", str(work.root), "diff", "v2", "HEAD", "--exit-code")
    assert same.returncode == 0 and "Rules" not in same.stdout
    differs = run_cfgtool("--repo", str(work.root), "diff", "v1", "v2", "--exit-code")
    assert differs.returncode == 1


def test_a_schema_only_commit_is_listed_as_a_rule_change(run_cfgtool: Run, work: GitRepo) -> None:
    schema = sorted((work.root / "schemas").glob("*.yaml"))[0]
    schema.write_text(schema.read_text(encoding="utf-8") + "\n# reviewed\n", encoding="utf-8")
    work.commit("a comment in a schema")
    doc = json.loads(run_cfgtool("--repo", str(work.root), "diff", "HEAD~1", "HEAD", "--format", "json").stdout)
    assert doc["rules"] == [{"path": f"schemas/{schema.name}", "kind": "changed", "acl": None}]
    compiled = [
        json.loads(run_cfgtool("--repo", str(work.root), "compile", "--ref", ref, "--format", "json").stdout)["digest"]
        for ref in ("HEAD~1", "HEAD")
    ]
    assert compiled[0] != compiled[1]
