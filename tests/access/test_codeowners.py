"""`cfgtool acl codeowners [--check]` in real subprocesses on real repositories: .github/CODEOWNERS written from
the ACL (prefixes with their `alter` principals, the rule files with alter_store / alter_acl), stale files
found, the `github:` map validated."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]  # the run_cfgtool fixture (conftest.py)

ACL = """\
super_users: [User:root]
groups:
  Group:tracking: [User:alice, User:bob]
  Group:billing: [User:carol]
github:
  Group:tracking: "@org/tracking"
  User:carol: "@carol"
  User:root: "@org/platform"
  User:dave: "@dave"
acls:
  - {principal: Group:tracking, operation: alter, key: /data/tracking/, pattern: prefixed, permission: allow}
  - {principal: User:dave, operation: all, key: /data/tracking/, pattern: prefixed, permission: allow}
  - {principal: Group:billing, operation: alter, key: /data/billing, permission: allow}
  - {principal: User:erin, operation: alter, key: /data/misc/, pattern: prefixed, permission: allow}
  - {principal: "User:*", operation: alter, key: /data/scratch/, pattern: prefixed, permission: allow}
  - {principal: User:dave, operation: alter, key: /data/tracking/secret, permission: deny}
  - {principal: User:dave, operation: alter_store, resource: store, permission: allow}
  - {principal: "User:*", operation: read, key: "*", permission: allow}
"""


def _store(repo: GitRepo, acl: str = ACL) -> None:
    repo.write({"_CONFIG_STORE": "name: demo\nschemas: ../schemas\n", "_ACL.yaml": acl}, under="store/")
    repo.write({"data/tracking/Page/main.conf": "a = 1\n", "data/billing/main.conf": "b = 2\n"}, under="store/")
    repo.write({"schemas/any.yaml": "type: object\n"})
    repo.commit("store")


def test_codeowners_writes_each_prefix_with_its_alter_principals(run_cfgtool: Run, repo: GitRepo) -> None:
    _store(repo)
    proc = run_cfgtool("--repo", str(repo.root), "acl", "codeowners")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "wrote .github/CODEOWNERS\n"
    assert "warning: User:erin has no GitHub name: add it to `github:` in the ACL" in proc.stderr
    lines = [ln for ln in (repo.root / ".github/CODEOWNERS").read_text().splitlines() if ln and ln[0] != "#"]
    assert lines == [
        "/store/data/billing/* @carol",  # a literal key: the node's own files; the group is its members
        "/store/data/scratch/",  # everyone may alter it: no review required
        "/store/data/tracking/ @dave @org/tracking",
        "/store/_CONFIG_STORE @dave @org/platform",
        "/store/_RECIPIENTS @dave @org/platform",
        "/schemas/ @dave @org/platform",
        "/.github/ @dave @org/platform",
        "/.gitlab/ @dave @org/platform",
        "/.circleci/ @dave @org/platform",
        "/requirements*.txt @dave @org/platform",
        "/constraints*.txt @dave @org/platform",
        "/pyproject.toml @dave @org/platform",
        "/setup.py @dave @org/platform",
        "/setup.cfg @dave @org/platform",
        "/poetry.lock @dave @org/platform",
        "/uv.lock @dave @org/platform",
        "/Pipfile @dave @org/platform",
        "/Pipfile.lock @dave @org/platform",
        "/tox.ini @dave @org/platform",
        "/noxfile.py @dave @org/platform",
        "/Makefile @dave @org/platform",
        "/.pre-commit-config.yaml @dave @org/platform",
        "/.gitlab-ci.yml @dave @org/platform",
        "/Jenkinsfile @dave @org/platform",
        "/CODEOWNERS @dave @org/platform",
        "/docs/CODEOWNERS @dave @org/platform",
        "/store/_ACL.yaml @org/platform",  # alter_acl: the super user only
    ]
    text = (repo.root / ".github/CODEOWNERS").read_text()
    assert "# /store/data/misc/ (no GitHub name for its owners)" in text  # never an owner-less line
    again = run_cfgtool("--repo", str(repo.root), "acl", "codeowners")
    assert again.stdout == "unchanged: .github/CODEOWNERS\n"


def test_codeowners_check_is_0_when_fresh_and_1_with_the_difference_when_stale(run_cfgtool: Run, repo: GitRepo) -> None:
    _store(repo)
    missing = run_cfgtool("--repo", str(repo.root), "acl", "codeowners", "--check")
    assert missing.returncode == 1
    assert "+/store/data/tracking/ @dave @org/tracking" in missing.stdout
    assert not (repo.root / ".github/CODEOWNERS").exists()  # --check never writes

    assert run_cfgtool("--repo", str(repo.root), "acl", "codeowners").returncode == 0
    fresh = run_cfgtool("--repo", str(repo.root), "acl", "codeowners", "--check")
    assert (fresh.returncode, fresh.stdout) == (0, ".github/CODEOWNERS is up to date with the ACL\n")

    grant = "  - {principal: User:carol, operation: alter, key: /data/tracking/, pattern: prefixed, permission: allow}"
    repo.write({"store/_ACL.yaml": ACL + grant + "\n"})
    stale = run_cfgtool("--repo", str(repo.root), "acl", "codeowners", "--check")
    assert stale.returncode == 1
    assert "-/store/data/tracking/ @dave @org/tracking\n+/store/data/tracking/ @carol @dave @org/tracking\n" in (
        stale.stdout
    )
    assert "cfgtool: error: .github/CODEOWNERS is stale: run `cfgtool acl codeowners` and commit it" in stale.stderr


def test_the_github_map_is_validated_with_its_position(run_cfgtool: Run, repo: GitRepo) -> None:
    _store(repo, ACL.replace('User:carol: "@carol"', "User:carol: carol").replace('Group:tracking: "@', 'Team:x: "@'))
    compiled = run_cfgtool("--repo", str(repo.root), "compile")
    assert compiled.returncode == 1
    assert "store/_ACL.yaml:7:15: E_ACL github.User:carol: 'carol' must be a GitHub @user or @org/team" in (
        compiled.stdout
    )
    assert "store/_ACL.yaml:6:3: E_ACL github: 'Team:x' must be User:NAME or Group:NAME" in compiled.stdout
    proc = run_cfgtool("--repo", str(repo.root), "acl", "codeowners")
    assert proc.returncode == 1
    assert "store/_ACL.yaml has errors, so no CODEOWNERS is written from it" in proc.stderr
    assert not (repo.root / ".github/CODEOWNERS").exists()
