"""The rules of a compile come from the trusted ref (docs/security.md): a pull request that weakens a rule is still
checked by the rule it weakens, and a policy module it adds never runs. Each scenario is a real merge commit,
compiled as `config-pr.yml` does: `cfgtool compile --base HEAD^1` in the checkout of the merge."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

from cfgtool.compile.compiler import compile_store
from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]

TOO_LONG = "retention.ms = 8640000000   # 100 days: MaxRetention allows 90\n"
TOO_MANY = "kafka.partitions = 2000   # partitions.yaml allows 1024\n"
EVENT = "store/data/tracking/PageViewEvent/main.conf"


def pull_request(repo: GitRepo, files: Mapping[str, str | None], append: Mapping[str, str] = {}) -> None:
    """Commit `files` (and lines appended to existing files) on a branch, then merge it into main with a
    merge commit, as GitHub checks a pull request: HEAD^1 is the target branch, HEAD the merge."""
    repo.git("checkout", "-q", "-b", "pr")
    repo.write(files)
    for path, text in append.items():
        with (repo.root / path).open("a", encoding="utf-8") as handle:
            handle.write(text)
    repo.commit("the pull request")
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "Merge pull request", "pr")


def pr_check(run_cfgtool: Run, repo: GitRepo) -> tuple[int, list[dict[str, object]]]:
    proc = run_cfgtool("compile", "--base", "HEAD^1", "--format", "json", cwd=repo.root)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["diagnostics"]


def codes(diags: list[dict[str, object]]) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for d in diags:
        out.setdefault(str(d["code"]), []).append(d["file"])
    return out


def settings_text(repo: GitRepo) -> str:
    return (repo.root / "store/_CONFIG_STORE").read_text(encoding="utf-8")


def test_rules_a_pr_that_drops_a_policy_from_the_settings_is_still_checked_by_it(
    work: GitRepo, run_cfgtool: Run
) -> None:
    weakened = settings_text(work).replace("  - class: policies.retention:MaxRetention", "  - class: x:Y", 1)
    weakened = weakened.split("  - class: x:Y")[0]  # the MaxRetention entry and everything after it are gone
    pull_request(work, {"store/_CONFIG_STORE": weakened}, {EVENT: TOO_LONG})
    status, diags = pr_check(run_cfgtool, work)
    found = codes(diags)
    assert status == 1
    assert EVENT in found["E_POLICY"]
    assert found["W_RULES_CHANGED"] == ["store/_CONFIG_STORE"]


def test_rules_a_pr_that_makes_its_policy_return_early_is_still_checked_by_the_base_code(
    work: GitRepo, run_cfgtool: Run
) -> None:
    code = (work.root / "policies/retention.py").read_text(encoding="utf-8")
    header = "    def validate(self, request: NodeRequest) -> None:\n"
    gutted = code.replace(header, header + "        return\n")
    assert gutted != code
    pull_request(work, {"policies/retention.py": gutted}, {EVENT: TOO_LONG})
    status, diags = pr_check(run_cfgtool, work)
    found = codes(diags)
    assert status == 1
    assert EVENT in found["E_POLICY"]
    assert found["W_RULES_CHANGED"] == ["policies/retention.py"]


def test_rules_a_pr_that_raises_a_schema_maximum_is_still_checked_by_the_base_schema(
    work: GitRepo, run_cfgtool: Run
) -> None:
    schema = (work.root / "schemas/partitions.yaml").read_text(encoding="utf-8")
    pull_request(work, {"schemas/partitions.yaml": schema.replace("maximum: 1024", "maximum: 4096")}, {EVENT: TOO_MANY})
    status, diags = pr_check(run_cfgtool, work)
    found = codes(diags)
    assert status == 1
    assert EVENT in found["E_SCHEMA"]
    assert found["W_RULES_CHANGED"] == ["schemas/partitions.yaml"]


def test_rules_a_pr_that_unsets_the_schemas_setting_is_still_checked_by_the_schemas(
    work: GitRepo, run_cfgtool: Run
) -> None:
    weakened = settings_text(work).replace("schemas: ../schemas", "")
    pull_request(work, {"store/_CONFIG_STORE": weakened}, {EVENT: TOO_MANY})
    status, diags = pr_check(run_cfgtool, work)
    assert status == 1
    assert EVENT in codes(diags)["E_SCHEMA"]


def test_rules_a_pr_that_drops_a_variable_value_is_still_compiled_for_it(work: GitRepo, run_cfgtool: Run) -> None:
    """Dropping `lva1` would skip checking the lva1 cluster tag that the PR breaks."""
    weakened = settings_text(work).replace("values: [ltx1, lva1]", "values: [ltx1]")
    pull_request(work, {"store/_CONFIG_STORE": weakened}, {"store/tags/cluster/lva1/main.conf": "x = ${nowhere}\n"})
    status, diags = pr_check(run_cfgtool, work)
    assert status == 1
    assert "store/tags/cluster/lva1/main.conf" in codes(diags)["E_UNRESOLVED_REF"]


def test_rules_a_policy_module_added_by_a_pr_never_runs(work: GitRepo, run_cfgtool: Run, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    evil = f"from pathlib import Path\nPath({str(marker)!r}).write_text('pwned')\n\nclass Evil:\n    pass\n"
    settings = settings_text(work) + "  - policies.evil:Evil\n"
    pull_request(work, {"policies/evil.py": evil, "store/_CONFIG_STORE": settings})
    status, diags = pr_check(run_cfgtool, work)
    assert not marker.exists()
    assert status == 0, diags
    assert sorted(codes(diags)["W_RULES_CHANGED"]) == ["policies/evil.py", "store/_CONFIG_STORE"]


def test_rules_a_pr_that_adds_the_store_uses_its_own_rules_and_flags_them(
    store_repo: GitRepo, run_cfgtool: Run
) -> None:
    """The first PR of a repository adopting cfgtool has no trusted rules to use: every rule file is flagged."""
    (store_repo.root / "store/_CONFIG_STORE").unlink()
    store_repo.write({"README.md": "x"})
    store_repo.commit("before cfgtool")
    pull_request(store_repo, {"store/_CONFIG_STORE": "name: first\n", "store/main.conf": "a = 1\n"})
    status, diags = pr_check(run_cfgtool, store_repo)
    assert status == 0
    assert codes(diags)["W_RULES_CHANGED"] == ["store/_CONFIG_STORE"]


def test_rules_a_ref_imports_its_own_committed_policy_not_the_working_tree(work: GitRepo, run_cfgtool: Run) -> None:
    work.write({EVENT: (work.root / EVENT).read_text(encoding="utf-8") + TOO_LONG})
    work.commit("too long")
    code = (work.root / "policies/retention.py").read_text(encoding="utf-8")
    (work.root / "policies/retention.py").write_text(code.replace("raise PolicyViolation", "return  #"))
    proc = run_cfgtool("compile", "--ref", "HEAD", "--format", "json", cwd=work.root)
    assert proc.returncode == 1
    assert EVENT in codes(json.loads(proc.stdout)["diagnostics"])["E_POLICY"]
    dry = run_cfgtool("publish", "--dry-run", cwd=work.root)
    assert dry.returncode == 1 and "E_POLICY" in dry.stdout + dry.stderr


def test_rules_materialized_policy_code_is_private_and_rebuilt_when_tampered(work: GitRepo) -> None:
    work.write({EVENT: (work.root / EVENT).read_text(encoding="utf-8") + TOO_LONG})
    work.commit("too long")
    first = compile_store(work.root, ref="HEAD")
    assert any(d.code == "E_POLICY" for d in first.diagnostics)
    code_root = first.rules.policy_root()
    assert code_root != work.root and (code_root / "policies/retention.py").is_file()
    assert stat.S_IMODE(os.stat(code_root.parent).st_mode) == 0o700
    tampered = code_root / "policies/retention.py"
    tampered.write_text("class MaxRetention:\n    def configure(self, s): pass\n    def validate(self, r): pass\n"
                        "    def close(self): pass\n")  # fmt: skip
    (code_root / "policies/__pycache__").mkdir(exist_ok=True)
    again = compile_store(work.root, ref="HEAD")
    assert any(d.code == "E_POLICY" for d in again.diagnostics)
    assert "raise PolicyViolation" in tampered.read_text(encoding="utf-8")
    assert not (code_root / "policies/__pycache__").exists()


def test_rules_dirty_covers_schemas_and_policies(work: GitRepo, run_cfgtool: Run) -> None:
    def dirty() -> bool:
        proc = run_cfgtool("compile", "--format", "json", cwd=work.root)
        return bool(json.loads(proc.stdout)["source"]["dirty"])

    assert not dirty()
    schema = work.root / "schemas/partitions.yaml"
    original = schema.read_text(encoding="utf-8")
    schema.write_text(original.replace("maximum: 1024", "maximum: 4096"), encoding="utf-8")
    assert dirty()
    schema.write_text(original, encoding="utf-8")
    (work.root / "policies/retention.py").write_text("# emptied\n", encoding="utf-8")
    assert dirty()
    work.git("checkout", "-q", "policies")
    (work.root / "store/_ACL.yaml").write_text("super_users: []\n", encoding="utf-8")
    assert dirty()


@pytest.mark.parametrize("variant", ["unknown", "typo"])
def test_settings_an_unknown_setting_keeps_the_valid_ones(store_repo: GitRepo, variant: str) -> None:
    extra = "colour: blue\n" if variant == "unknown" else "tag_rots: [/x]\n"
    store_repo.write({"store/_CONFIG_STORE": f"name: kept\n{extra}tag_roots: [/labels]\n"})
    store_repo.commit()
    result = compile_store(store_repo.root, ref="HEAD")
    assert [d.code for d in result.diagnostics] == ["E_SETTINGS"]
    assert result.snapshot.name == "kept"
    assert result.snapshot.tag_roots == ("/labels",)
