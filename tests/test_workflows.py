"""The GitHub workflows (`.github/workflows/`): actionlint passes on each, the config workflows are the ones
`cfgtool init` scaffolds, and every step that runs cfgtool is run here, as written, by bash against real
repositories (a bare `origin` and a clone, as actions/checkout leaves it), with the `${{ ... }}` expressions
replaced by what GitHub would pass. Only the install step is left out: the tests run the cfgtool under test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sysconfig
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from cfgtool.scaffold import scaffold_files
from cfgtool.store.git import git_env

if TYPE_CHECKING:
    from tests.conftest import GitRepo

CHECKOUT = Path(__file__).resolve().parents[1]
WORKFLOWS = CHECKOUT / ".github" / "workflows"
CONFIG_WORKFLOWS = ("config-pr.yml", "config-publish.yml", "config-rollback.yml")
SCRIPTS = Path(sysconfig.get_path("scripts"))
INSTALL = "pip install -r requirements.txt"
INSTALL_FROM_BASE = (  # config-pr.yml: the target branch's requirements, so a PR cannot choose its checker
    'git show HEAD^1:requirements.txt > "$RUNNER_TEMP/requirements.txt" || cp requirements.txt "$RUNNER_TEMP/"\n'
    'pip install -r "$RUNNER_TEMP/requirements.txt"\n'
)
_EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def tool(name: str) -> str:
    """A command-line tool of the dev extra: beside this interpreter, else on PATH."""
    found = shutil.which(name, path=f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}")
    assert found, f"{name} is not installed: pip install -e '.[dev]'"
    return found


def test_actionlint_passes_on_every_workflow_and_the_scaffolded_ones(tmp_path: Path) -> None:
    scaffolded = tmp_path / "workflows"
    scaffolded.mkdir()
    for rel, text in scaffold_files("cfgtool"):
        if rel.startswith(".github/workflows/"):
            (scaffolded / Path(rel).name).write_text(text, encoding="utf-8")
    files = sorted(WORKFLOWS.glob("*.yml")) + sorted(scaffolded.glob("*.yml"))
    assert {p.name for p in WORKFLOWS.glob("*.yml")} == {"ci.yml", *CONFIG_WORKFLOWS}
    proc = subprocess.run(
        [tool("actionlint"), "-shellcheck", tool("shellcheck"), *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_config_workflows_are_the_scaffolded_ones() -> None:
    scaffold = dict(scaffold_files("cfgtool"))
    for name in CONFIG_WORKFLOWS:
        assert (WORKFLOWS / name).read_text(encoding="utf-8") == scaffold[f".github/workflows/{name}"], name


def test_ci_runs_the_ci_entry_point_with_java_for_spark() -> None:
    steps = load(WORKFLOWS / "ci.yml")["jobs"]["test"]["steps"]
    assert [s["run"] for s in steps if "run" in s] == ["bash .ci/run"]
    assert any(s.get("uses", "").startswith("actions/setup-java@") for s in steps)


def checkout_step(workflow: str, job: str) -> dict[str, Any]:
    steps = load(WORKFLOWS / workflow)["jobs"][job]["steps"]
    found: dict[str, Any] = next(s for s in steps if s.get("uses", "").startswith("actions/checkout@"))
    return found


def test_what_the_harness_cannot_run_is_checked_here() -> None:
    """The `uses:` steps, permissions and triggers, which the step runner below leaves out."""
    pr, publish, rollback = (load(WORKFLOWS / name) for name in CONFIG_WORKFLOWS)
    assert checkout_step("config-pr.yml", "compile")["with"]["fetch-depth"] >= 2  # HEAD^1, the target side
    assert {"store/**", "schemas/**", "policies/**"} <= set(pr[True]["pull_request"]["paths"])
    assert pr["permissions"] == {"contents": "read"}
    for workflow, job in (("config-publish.yml", "publish"), ("config-rollback.yml", "rollback")):
        assert checkout_step(workflow, job)["with"]["fetch-depth"] == 0  # every version tag
    assert publish["permissions"] == rollback["permissions"] == {"contents": "write"}  # push tags
    assert publish[True] == {"push": {"branches": ["main"]}}  # YAML 1.1 reads the key `on` as True
    assert set(rollback[True]["workflow_dispatch"]["inputs"]) == {"version", "reason"}


def test_publishes_run_one_at_a_time_and_a_rollback_is_never_dropped() -> None:
    """GitHub lets a newer run replace a waiting one of the same concurrency group: fine for publishes (the
    newest main wins), never for a rollback, which therefore has no group (tags make it race-safe)."""
    publish, rollback = load(WORKFLOWS / "config-publish.yml"), load(WORKFLOWS / "config-rollback.yml")
    assert publish["concurrency"] == {"group": "config-publish", "cancel-in-progress": False}
    assert "concurrency" not in rollback
    assert all("concurrency" not in job for job in rollback["jobs"].values())


# ------------------------------------------------------------------------------ running the steps


@dataclass
class Job:
    """The outcome of a workflow job's steps: each step's name, exit status and output; the job summary."""

    steps: list[tuple[str, int, str]]
    summary: str

    @property
    def ok(self) -> bool:
        return all(status == 0 for _, status, _ in self.steps)

    def output(self, name: str) -> str:
        return next(out for step, _, out in self.steps if step == name)


def load(path: Path) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def run_job(workflow: str, job: str, cwd: Path, context: Mapping[str, str], env: Mapping[str, str]) -> Job:
    """Run the job's `run:` steps like a runner: bash -eo pipefail, the step's `env` with its expressions
    evaluated from `context`, `if:` honoured, the job summary in a file. The install step must be INSTALL."""
    summary = cwd.parent / f"{workflow}.summary.md"
    summary.write_text("", encoding="utf-8")
    base = {
        **git_env(),
        "PATH": f"{SCRIPTS}{os.pathsep}{os.environ['PATH']}",
        "CI": "true",
        "COLUMNS": "",  # a runner's log is no terminal: `versions` cuts nothing
        "GITHUB_STEP_SUMMARY": str(summary),
        **env,
    }
    done: list[tuple[str, int, str]] = []
    for step in load(WORKFLOWS / workflow)["jobs"][job]["steps"]:
        if "run" not in step:
            continue
        if step["name"] == "Install cfgtool":
            assert step["run"] in (INSTALL, INSTALL_FROM_BASE)
            assert (cwd / "requirements.txt").is_file()
            continue
        failed = any(status for _, status, _ in done)
        condition = step.get("if")
        assert condition in (None, "success() || failure()"), f"the harness does not know `if: {condition}`"
        if failed and condition is None:
            continue
        assert "${{" not in step["run"], "pass expressions through env: (no script injection)"
        step_env = {k: evaluate(str(v), context) for k, v in step.get("env", {}).items()}
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
            cwd=cwd,
            env={**base, **step_env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        done.append((step["name"], proc.returncode, proc.stdout + proc.stderr))
    return Job(done, summary.read_text(encoding="utf-8"))


def evaluate(value: str, context: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        assert match.group(1) in context, f"the test passes no value for ${{{{ {match.group(1)} }}}}"
        return context[match.group(1)]

    return _EXPRESSION.sub(one, value)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=git_env(), capture_output=True, text=True, check=True
    ).stdout.strip()


def remote_tags(bare: Path) -> dict[str, str]:
    out = git(bare, "for-each-ref", "--format=%(refname:short) %(contents:subject)|%(taggername)", "refs/tags")
    return dict(line.split(" ", 1) for line in out.splitlines())


@pytest.fixture
def origin(repo: GitRepo, tmp_path: Path) -> tuple[Path, Path]:
    """A repository scaffolded by `cfgtool init` and pushed to a bare `origin`; and a fresh clone of it, as
    actions/checkout with fetch-depth 0 leaves it (every branch and tag fetched, no git identity)."""
    subprocess.run([tool("cfgtool"), "init", str(repo.root)], check=True, capture_output=True, env=git_env())
    repo.commit("Start the config repository")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    repo.git("push", "-q", str(bare), "main")
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    return bare, clone


def edit(clone: Path, rel: str, line: str, message: str) -> str:
    path = clone / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((path.read_text(encoding="utf-8") if path.exists() else "") + line + "\n", encoding="utf-8")
    git(clone, "add", "-A")
    git(clone, "-c", "user.name=Bob", "-c", "user.email=bob@example.com", "commit", "-qm", message)
    return git(clone, "rev-parse", "HEAD")


def pull_request(clone: Path, branch: str, *changes: tuple[str, str]) -> None:
    """Commit `changes` ((file, line to append)) on `branch`, then check out what GitHub checks out for a
    pull_request event: a merge commit of the branch into main (HEAD^1 = main, HEAD^2 = the branch)."""
    git(clone, "checkout", "-q", "-b", branch)
    for rel, line in changes:
        edit(clone, rel, line, f"{branch}: {rel}")
    git(clone, "checkout", "-q", "--detach", "origin/main")
    git(clone, "-c", "user.name=GitHub", "-c", "user.email=noreply@github.com", "merge", "-q", "--no-ff", branch)


PR_CONTEXT = {"github.event.pull_request.user.login": "alice"}
PR_ENV = {"GITHUB_BASE_REF": "main", "GITHUB_ACTOR": "alice"}


def test_config_pr_passes_a_good_change_and_writes_the_diff_to_the_summary(origin: tuple[Path, Path]) -> None:
    _, clone = origin
    pull_request(clone, "more-partitions", ("store/data/orders/main.conf", "partitions = 32"))

    job = run_job("config-pr.yml", "compile", clone, PR_CONTEXT, PR_ENV)

    assert job.ok, job.steps
    assert job.output("Compile and validate against the target branch") == ""  # no annotations
    assert "### Resolved config diff: `HEAD^1" in job.summary
    assert "| `partitions`: `16` → `32` | 1 | own main.conf |" in job.summary


def test_config_pr_compares_with_the_target_as_merged_not_as_it_moved_on(origin: tuple[Path, Path]) -> None:
    """main gains a change after GitHub made the merge commit: the PR is not blamed for reverting it."""
    bare, clone = origin
    pull_request(clone, "more-partitions", ("store/data/orders/main.conf", "partitions = 32"))
    other = clone.parent / "other"
    git(clone.parent, "clone", "-q", str(bare), str(other))
    edit(other, "store/tags/retention/LONG/main.conf", "retention.days = 120", "LONG: 120 days")
    git(other, "push", "-q", "origin", "main")
    git(clone, "fetch", "-q", "origin")

    job = run_job("config-pr.yml", "compile", clone, PR_CONTEXT, PR_ENV)

    assert job.ok, job.steps
    assert "retention.days" not in job.summary
    assert "**1** keys changed" in job.summary


def test_config_pr_fails_a_policy_violation_with_an_annotation_and_still_writes_the_diff(
    origin: tuple[Path, Path],
) -> None:
    _, clone = origin
    pull_request(clone, "fewer-partitions", ("store/data/orders/main.conf", "partitions = 4"))

    job = run_job("config-pr.yml", "compile", clone, PR_CONTEXT, PR_ENV)

    name, status, output = job.steps[0]
    assert (name, status) == ("Compile and validate against the target branch", 1)
    assert re.search(r"^::error file=store/data/orders/main\.conf,line=5,col=\d+,title=E_POLICY::", output, re.M)
    assert job.steps[1][1] == 0  # the diff still reaches the summary
    assert "`partitions`: `16` → `4`" in job.summary


def test_config_pr_fails_while_codeowners_is_stale_and_passes_once_regenerated(origin: tuple[Path, Path]) -> None:
    _, clone = origin
    owner = "  - {principal: User:alice, operation: alter, key: /data/orders/, pattern: prefixed, permission: allow}"
    acl = clone / "store/_ACL.yaml"
    text = acl.read_text(encoding="utf-8").replace("acls: []", "acls:\n" + owner)
    acl.write_text(text.replace("github: {}", 'github: {"User:alice": "@alice"}'), encoding="utf-8")
    pull_request(clone, "alice-owns-orders", ("store/_ACL.yaml", "# alice owns the orders"))

    job = run_job("config-pr.yml", "compile", clone, PR_CONTEXT, PR_ENV)

    name, status, output = job.steps[1]
    assert (name, status) == ("CODEOWNERS matches the ACL", 1)
    assert "+/store/data/orders/ @alice" in output and "is stale" in output
    subprocess.run([tool("cfgtool"), "acl", "codeowners"], cwd=clone, check=True, capture_output=True)
    git(clone, "add", "-A")
    git(clone, "-c", "user.name=Bob", "-c", "user.email=bob@example.com", "commit", "-qm", "CODEOWNERS")
    assert run_job("config-pr.yml", "compile", clone, PR_CONTEXT, PR_ENV).steps[1][:2] == (
        "CODEOWNERS matches the ACL",
        0,
    )


def test_config_pr_fails_a_schema_error_in_a_new_dataset(origin: tuple[Path, Path]) -> None:
    _, clone = origin
    pull_request(clone, "new-dataset", ("store/data/payments/main.conf", 'description = "Payments"'))

    job = run_job("config-pr.yml", "compile", clone, PR_CONTEXT, PR_ENV)

    assert not job.ok
    assert "title=E_SCHEMA::owner" in job.steps[0][2]
    assert "/data/payments" in job.summary


def test_config_pr_passes_the_pull_request_that_adds_the_store(repo: GitRepo, tmp_path: Path) -> None:
    """A repository adopting cfgtool: the target branch has no store yet, so every node is created."""
    repo.write({"app.py": "print('hello')\n"})
    repo.commit("An application without configs")
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.git("push", "-q", "origin", "main")
    repo.git("checkout", "-q", "-b", "adopt-cfgtool")
    subprocess.run([tool("cfgtool"), "init", str(repo.root)], check=True, capture_output=True, env=git_env())
    repo.commit("Adopt cfgtool")
    repo.git("checkout", "-q", "--detach", "origin/main")
    repo.git("merge", "-q", "--no-ff", "adopt-cfgtool")

    job = run_job("config-pr.yml", "compile", repo.root, PR_CONTEXT, PR_ENV)

    assert job.ok, job.steps
    assert "**0** keys changed, **6** added, **0** removed" in job.summary
    assert '| `owner` |  | `"checkout-team"` | `store/data/orders/main.conf:3:9` |' in job.summary


def publish_context(clone: Path, message: str) -> tuple[dict[str, str], dict[str, str]]:
    sha = git(clone, "rev-parse", "HEAD")
    return {"github.event.head_commit.message": message}, {"GITHUB_SHA": sha, "GITHUB_ACTOR": "carol", **ACTOR_ID}


ACTOR_ID = {"GITHUB_ACTOR_ID": "1234"}


def test_config_publish_tags_each_new_snapshot_once_and_pushes_it(origin: tuple[Path, Path]) -> None:
    bare, clone = origin
    job = run_job("config-publish.yml", "publish", clone, *publish_context(clone, "Start the config repository"))
    assert job.ok, job.steps
    assert "published version 1 (config/v1)" in job.output("Publish the pushed commit")
    versions = job.output("Versions")
    assert re.search(r"^1 .* current +carol +Start the config repository$", versions, re.M)  # json: the email
    assert remote_tags(bare) == {"config/v1": "Start the config repository|carol"}

    again = run_job("config-publish.yml", "publish", clone, *publish_context(clone, "again"))
    assert again.ok
    assert "nothing to publish" in again.output("Publish the pushed commit")
    assert list(remote_tags(bare)) == ["config/v1"]

    edit(clone, "store/tags/retention/LONG/main.conf", "retention.days = 120", "Keep LONG data for 120 days")
    git(clone, "push", "-q", "origin", "main")
    third = run_job("config-publish.yml", "publish", clone, *publish_context(clone, "Keep LONG data for 120 days"))
    assert third.ok, third.steps
    assert list(remote_tags(bare)) == ["config/v1", "config/v2"]


def test_config_publish_refuses_a_broken_store(origin: tuple[Path, Path]) -> None:
    bare, clone = origin
    edit(clone, "store/data/orders/main.conf", "owner = Not A Team", "bad owner")
    job = run_job("config-publish.yml", "publish", clone, *publish_context(clone, "bad owner"))
    assert [status for _, status, _ in job.steps] == [1]  # the versions step is skipped after a failure
    assert "E_SCHEMA" in job.steps[0][2]
    assert remote_tags(bare) == {}


def test_config_rollback_marks_the_version_and_pushes_the_marker(origin: tuple[Path, Path]) -> None:
    bare, clone = origin
    assert run_job("config-publish.yml", "publish", clone, *publish_context(clone, "first")).ok
    edit(clone, "store/tags/retention/LONG/main.conf", "retention.days = 30", "Shorter LONG retention")
    assert run_job("config-publish.yml", "publish", clone, *publish_context(clone, "second")).ok

    inputs = {"inputs.version": "2", "inputs.reason": "consumers need 90 days; restore v1"}
    job = run_job("config-rollback.yml", "rollback", clone, inputs, {"GITHUB_ACTOR": "dave", **ACTOR_ID})

    assert job.ok, job.steps
    assert "current version is now 1" in job.output("Roll back")
    assert "rolled back by dave on " in job.output("Versions")  # the table shows the name; --format json the email
    tags = remote_tags(bare)
    assert tags["config/rolledback/v2"].endswith("|dave")
    assert set(tags) == {"config/v1", "config/v2", "config/rolledback/v2"}


def test_config_rollback_of_an_unknown_version_fails_and_pushes_nothing(origin: tuple[Path, Path]) -> None:
    bare, clone = origin
    assert run_job("config-publish.yml", "publish", clone, *publish_context(clone, "first")).ok
    job = run_job("config-rollback.yml", "rollback", clone, {"inputs.version": "7", "inputs.reason": "x"}, ACTOR_ID)
    assert job.steps[0][1] == 2
    assert "cfgtool: error: " in job.steps[0][2] and "7" in job.steps[0][2]
    assert set(remote_tags(bare)) == {"config/v1"}


ONLY_CAROL = """
from cfgtool.policies import NodeRequest, PolicyViolation


class OnlyCarol:
    def configure(self, settings: object) -> None:
        pass

    def validate(self, request: NodeRequest) -> None:
        if request.principal != "carol":
            raise PolicyViolation(f"only carol publishes, not {request.principal}")

    def close(self) -> None:
        pass
"""


def test_config_publish_passes_the_pusher_to_the_policies_as_principal(origin: tuple[Path, Path]) -> None:
    """The same kind of principal as the PR check (a login), not the git identity of the tagger."""
    bare, clone = origin
    edit(clone, "policies/who.py", ONLY_CAROL, "a policy on who publishes")
    edit(clone, "store/_CONFIG_STORE", "  - class: policies.who:OnlyCarol", "use it")
    context, env = publish_context(clone, "use it")

    refused = run_job("config-publish.yml", "publish", clone, context, {**env, "GITHUB_ACTOR": "mallory"})
    assert [status for _, status, _ in refused.steps] == [1]
    assert "E_POLICY" in refused.steps[0][2] and "only carol publishes, not mallory" in refused.steps[0][2]
    assert remote_tags(bare) == {}

    assert run_job("config-publish.yml", "publish", clone, context, env).ok
    assert list(remote_tags(bare)) == ["config/v1"]
