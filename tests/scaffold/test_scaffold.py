"""`cfgtool init [DIR]` in real subprocesses: the scaffold compiles cleanly, nothing is ever overwritten, a store
is refused unless --add-missing, and its pre-commit hook really runs `cfgtool compile`."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from cfgtool._util.atomic import write_atomic_bytes
from cfgtool.scaffold import UNSET_REQUIREMENT, scaffold_files
from cfgtool.store.git import git_env

Run = Callable[..., subprocess.CompletedProcess[str]]
CHECKOUT = Path(__file__).resolve().parents[2]
SCAFFOLD = sorted([*(rel for rel, _ in scaffold_files("cfgtool")), ".github/CODEOWNERS"])  # written from the ACL


def test_init_scaffolds_a_repository_that_compiles_cleanly(run_cfgtool: Run, tmp_path: Path) -> None:
    proc = run_cfgtool("init", "configs")
    assert proc.returncode == 0, proc.stderr
    root = (tmp_path / "configs").resolve()
    assert proc.stdout.startswith(f"scaffolded a config repository in {root} (new git repository, branch main)\n")
    assert "  cd configs\n  cfgtool compile\n" in proc.stdout
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and ".git" not in p.parts) == (
        SCAFFOLD
    )
    assert {
        ".github/workflows/config-pr.yml",
        ".github/workflows/config-publish.yml",
        ".github/workflows/config-rollback.yml",
        ".pre-commit-config.yaml",
        "README.md",
        "requirements.txt",
        "store/_CONFIG_STORE",
    } <= set(SCAFFOLD)
    assert subprocess.run(["git", "symbolic-ref", "HEAD"], cwd=root, capture_output=True, text=True).stdout == (
        "refs/heads/main\n"
    )
    # an editable install has no git URL to pin, and `cfgtool==X` would fetch PyPI's unrelated cfgtool
    assert (root / "requirements.txt").read_text(encoding="utf-8").endswith(f"\n{UNSET_REQUIREMENT}\n")
    assert "set how CI installs cfgtool in requirements.txt" in proc.stdout
    readme = (root / "README.md").read_text(encoding="utf-8")  # pip stops at the placeholder: edit it first
    first, install = readme.index("replace the last line of requirements.txt"), readme.index("pip install -r")
    assert first < install and UNSET_REQUIREMENT in readme[first:install]
    assert '  git add -A && git commit -m "Start the config repository"\n' in proc.stdout

    compiled = run_cfgtool("compile", "--strict", "--format", "json", cwd=root)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    report = json.loads(compiled.stdout)
    assert (report["errors"], report["warnings"], report["nodes"]) == (0, 0, 6)
    got = run_cfgtool("get", "/data/orders", "retention.days", "--format", "json", cwd=root)
    assert got.stdout.strip() == "90"  # the example tag wins over /data's default
    owners = run_cfgtool("acl", "codeowners", "--check", cwd=root)  # what config-pr.yml runs
    assert owners.returncode == 0, owners.stdout + owners.stderr


def test_the_scaffold_schema_checks_datasets_at_any_depth_and_no_group(run_cfgtool: Run, tmp_path: Path) -> None:
    assert run_cfgtool("init", "configs").returncode == 0
    root = tmp_path / "configs"
    (root / "store/data/eu/invoices").mkdir(parents=True)
    (root / "store/data/eu/main.conf").write_text("region = eu\n", encoding="utf-8")  # a group: no owner of its own
    (root / "store/data/eu/invoices/main.conf").write_text("owner = billing\n", encoding="utf-8")
    clean = run_cfgtool("compile", "--strict", cwd=root)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (root / "store/data/eu/invoices/main.conf").write_text("partitions = 2\n", encoding="utf-8")
    broken = run_cfgtool("compile", "--format", "json", cwd=root)
    assert broken.returncode == 1
    assert {d["key"] for d in json.loads(broken.stdout)["diagnostics"]} == {"/data/eu/invoices"}


def test_init_refuses_a_store_and_add_missing_never_overwrites(run_cfgtool: Run, tmp_path: Path) -> None:
    assert run_cfgtool("init").returncode == 0
    mine = "# our own settings\nname: ours\n"
    (tmp_path / "store/_CONFIG_STORE").write_text(mine, encoding="utf-8")
    (tmp_path / "README.md").unlink()

    refused = run_cfgtool("init")
    assert refused.returncode == 2
    assert "already holds a store (store/_CONFIG_STORE)" in refused.stderr
    assert "hint: pass --add-missing" in refused.stderr
    assert not (tmp_path / "README.md").exists()

    added = run_cfgtool("init", "--add-missing", "--format", "json")
    assert added.returncode == 0, added.stderr
    result = json.loads(added.stdout)
    assert result["created"] == ["README.md"]
    store_files = [rel for rel in SCAFFOLD if rel.startswith(("store/", "schemas/"))]
    assert result["left_out"] == store_files
    assert result["skipped"] == [rel for rel in SCAFFOLD if rel != "README.md" and rel not in store_files]
    assert result["git_initialized"] is False
    assert (tmp_path / "store/_CONFIG_STORE").read_text(encoding="utf-8") == mine

    text = run_cfgtool("init", "--add-missing")
    assert text.stdout.startswith("nothing to add: every file init would add exists")
    assert "  skipped  requirements.txt (exists; left as it is)\n" in text.stdout
    assert f"  left out {len(store_files)} scaffold files of store/ and schemas/: the existing store" in text.stdout


def test_add_missing_never_writes_under_an_existing_store(run_cfgtool: Run, tmp_path: Path) -> None:
    """The store keeps its digest: no sample node comes back (a deleted dataset stays deleted), no root
    main.conf gives every node new values, no ACL or schema changes its rules."""
    assert run_cfgtool("init").returncode == 0
    for rel in ("store/main.conf", "store/data/orders/main.conf", "store/data/orders/includes", "store/_ACL.yaml",
                "schemas/dataset.yaml", ".github/workflows/config-pr.yml", "README.md"):  # fmt: skip
        (tmp_path / rel).unlink()
    for directory in ("store/data/orders", "schemas"):
        (tmp_path / directory).rmdir()
    (tmp_path / "store/_CONFIG_STORE").write_text("name: ours\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True, env=git_env())
    before = run_cfgtool("compile", "--format", "json")
    assert before.returncode == 0, before.stdout + before.stderr
    listed = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "store").rglob("*"))

    added = run_cfgtool("init", ".", "--add-missing", "--format", "json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["created"] == [".github/workflows/config-pr.yml", "README.md"]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "store").rglob("*")) == listed
    assert not (tmp_path / "store/data/orders").exists() and not (tmp_path / "schemas").exists()
    after = run_cfgtool("compile", "--format", "json")
    assert json.loads(after.stdout)["digest"] == json.loads(before.stdout)["digest"]


def test_init_at_a_repository_root_adds_to_it_and_refuses_a_subdirectory(run_cfgtool: Run, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "master", str(tmp_path)], check=True, env=git_env())
    inside = run_cfgtool("init", "configs")
    assert inside.returncode == 2
    assert f"is inside the git repository {tmp_path.resolve()}" in inside.stderr
    assert not (tmp_path / "configs").exists()

    spec = "cfgtool @ git+https://example.com/org/cfgtool@v1"
    proc = run_cfgtool("--repo", str(tmp_path), "init", "--requirement", spec)
    assert proc.returncode == 0, proc.stderr
    assert "new git repository" not in proc.stdout
    assert f"  CI installs cfgtool as {spec} (requirements.txt)\n" in proc.stdout
    assert "  git add .github/CODEOWNERS .github/workflows/config-pr.yml " in proc.stdout  # only what init created
    assert "note: config-publish.yml publishes pushes to main; this repository is on master" in proc.stdout
    assert (tmp_path / "requirements.txt").read_text(encoding="utf-8").endswith(f"\n{spec}\n")
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")  # works as written: nothing to edit first
    assert "pip install -r requirements.txt" in readme and "requirements.txt, " not in readme


def test_init_refuses_before_writing_when_a_file_blocks_a_path(run_cfgtool: Run, tmp_path: Path) -> None:
    (tmp_path / "store").write_text("not a directory", encoding="utf-8")
    proc = run_cfgtool("init")
    assert proc.returncode == 2
    assert f"{tmp_path.resolve() / 'store'} is a file, so store/_ACL.yaml cannot be created" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--store", "conf", "init"), "init always scaffolds store/"),
        (("init", "a-file"), "is a file, not a directory"),
    ],
)
def test_init_usage_errors_exit_2(run_cfgtool: Run, tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    proc = run_cfgtool(*args)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert not (tmp_path / "store").exists()


def test_create_without_replacing_keeps_an_existing_file(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    assert write_atomic_bytes(path, b"first", replace=False) is True
    assert write_atomic_bytes(path, b"second", replace=False) is False
    assert path.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]  # no temporary file left behind
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # an ordinary file, not mkstemp's private one


def test_create_without_replacing_where_the_file_system_has_no_hard_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(src: object, dst: object) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)  # as on FAT or some network file systems
    path = tmp_path / "f.txt"
    assert write_atomic_bytes(path, b"first", replace=False) is True
    assert write_atomic_bytes(path, b"second", replace=False) is False
    assert path.read_bytes() == b"first"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


def pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run pre-commit in `cwd`, with its cache in `home`."""
    scripts = sysconfig.get_path("scripts")
    exe = shutil.which("pre-commit", path=f"{scripts}{os.pathsep}{os.environ['PATH']}")
    assert exe, "pre-commit is not installed: pip install -e '.[dev]'"
    env = {**git_env(), "PATH": f"{scripts}{os.pathsep}{os.environ['PATH']}", "PRE_COMMIT_HOME": str(home)}
    return subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)


def test_the_scaffolded_pre_commit_hook_runs_cfgtool_compile(run_cfgtool: Run, tmp_path: Path) -> None:
    assert run_cfgtool("init", "repo").returncode == 0
    root, home = tmp_path / "repo", tmp_path / "pre-commit-home"
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=git_env())
    assert pre_commit(root, home, "validate-config", ".pre-commit-config.yaml").returncode == 0

    clean = pre_commit(root, home, "run", "--all-files")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "cfgtool compile" in clean.stdout and "Passed" in clean.stdout

    (root / "store/data/orders/main.conf").write_text("owner = [unclosed\n", encoding="utf-8")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=git_env())
    broken = pre_commit(root, home, "run", "--all-files")
    assert broken.returncode == 1
    assert "store/data/orders/main.conf:1:" in broken.stdout and "E_SYNTAX" in broken.stdout


def test_the_published_hook_manifest_is_valid_and_matches_the_scaffolded_hook(tmp_path: Path) -> None:
    assert pre_commit(CHECKOUT, tmp_path, "validate-manifest", ".pre-commit-hooks.yaml").returncode == 0
    (published,) = yaml.safe_load((CHECKOUT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    config = yaml.safe_load(dict(scaffold_files("cfgtool"))[".pre-commit-config.yaml"])
    (local,) = config["repos"][0]["hooks"]
    assert published.pop("language") == "python"  # installed by pre-commit from this repository
    assert local.pop("language") == "system"  # the cfgtool that requirements.txt installs
    assert published == local


def test_the_scaffold_offers_a_rollout_plan_that_compiles_once_uncommented(run_cfgtool: Run, tmp_path: Path) -> None:
    assert run_cfgtool("init", "configs").returncode == 0
    rules = tmp_path / "configs/store/_CONFIG_STORE"
    text = rules.read_text(encoding="utf-8")
    start = text.index("# rollout:\n")
    plan = "\n".join(line.removeprefix("# ") for line in text[start:].splitlines())
    assert yaml.safe_load(plan)["rollout"]["steps"] == [5, 25, 100]
    rules.write_text(text[:start] + plan + "\n", encoding="utf-8")
    compiled = run_cfgtool("compile", "--strict", cwd=rules.parent.parent)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
