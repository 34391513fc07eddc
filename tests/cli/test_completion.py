"""Tab completion of keys, tags, versions and `--var` values, as bash asks for it: a real `cfgtool` process with
COMP_WORDS, COMP_CWORD and _CFGTOOL_COMPLETE=complete_bash (zsh's _TYPER_COMPLETE_ARGS once), in a real
git repository with published versions."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from cfgtool.versions import publish
from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]

STORE = {
    "_CONFIG_STORE": "name: shop\nvariables:\n  dc:\n    values: [east, west]\n  tier:\n    values: [gold]\n",
    "data/orders/main.conf": "owner = sales\n",
    "data/orders/eu/main.conf": "region = eu\n",
    "data/refunds/main.conf": "owner = sales\n",
    "data/invoices/main.conf": "owner = billing\n",
    "data/_drafts/main.conf": "ignored = true\n",  # `_` names no node
    "tags/retention/LONG/main.conf": "days = 90\n",
    "tags/retention/SHORT/main.conf": "days = 7\n",
    "tags/gold/main.conf": "tier = 1\n",
}


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> GitRepo:
    """The shop store, committed and published twice; built once for the module, whose tests only read it."""
    repo = GitRepo(tmp_path_factory.mktemp("shop") / "repo")
    repo.write(STORE, under="store/")
    repo.commit("shop")
    assert publish(repo.root, message="one").version == 1
    repo.write({"data/orders/main.conf": "owner = checkout\n"}, under="store/")
    repo.commit("orders change hands")
    assert publish(repo.root, message="two").version == 2
    return repo


def complete(run_cfgtool: Run, cwd: Path, line: str) -> list[str]:
    """The candidates bash gets for the last word of `line` (an empty word when it ends with a space)."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = {"_CFGTOOL_COMPLETE": "complete_bash", "COMP_WORDS": line, "COMP_CWORD": str(cword)}
    proc = run_cfgtool(cwd=cwd, env=env)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout.split()


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("cfgtool get ", ["/data", "/tags"]),
        ("cfgtool get /data/", ["/data/invoices", "/data/orders", "/data/refunds"]),
        ("cfgtool get /data/or", ["/data/orders", "/data/orders/"]),  # one with nodes below: the shell stops there
        ("cfgtool get /data/re", ["/data/refunds"]),
        ("cfgtool explain shop:/data/i", ["shop:/data/invoices"]),
        ("cfgtool imports data/orders/e", ["data/orders/eu"]),
        ("cfgtool audit --key /data/inv", ["/data/invoices"]),
        ("cfgtool get /nowhere/", []),
    ],
)
def test_keys_complete_one_segment_at_a_time(run_cfgtool: Run, shop: GitRepo, line: str, expected: list[str]) -> None:
    assert complete(run_cfgtool, shop.root, line) == expected


def test_tags_complete_under_the_tag_roots_only(run_cfgtool: Run, shop: GitRepo) -> None:
    assert complete(run_cfgtool, shop.root, "cfgtool datasets ") == ["/tags", "/tags/"]
    assert complete(run_cfgtool, shop.root, "cfgtool datasets /tags/") == ["/tags/gold", "/tags/retention"]
    assert complete(run_cfgtool, shop.root, "cfgtool datasets /tags/retention/") == [
        "/tags/retention/LONG",
        "/tags/retention/SHORT",
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("cfgtool get /data --version ", ["current", "previous", "2", "1"]),
        ("cfgtool get /data -V p", ["previous"]),
        ("cfgtool diff ", ["current", "previous", "2", "1", "worktree"]),
        ("cfgtool diff 1 w", ["worktree"]),
        ("cfgtool rollback ", ["2", "1"]),
        ("cfgtool rollback --to ", ["2", "1"]),
        ("cfgtool get /data --ref config/", ["config/v2", "config/v1"]),
        ("cfgtool publish --ref ", ["current", "previous", "config/v2", "config/v1"]),
    ],
)
def test_versions_complete_by_number_or_tag(run_cfgtool: Run, shop: GitRepo, line: str, expected: list[str]) -> None:
    assert complete(run_cfgtool, shop.root, line) == expected


def test_variable_values_complete_as_name_and_value(run_cfgtool: Run, shop: GitRepo) -> None:
    assert complete(run_cfgtool, shop.root, "cfgtool get /data --var ") == ["dc=east", "dc=west", "tier=gold"]
    assert complete(run_cfgtool, shop.root, "cfgtool compile --var dc=w") == ["dc=west"]


def test_completion_follows_global_options_and_zsh(run_cfgtool: Run, shop: GitRepo, tmp_path: Path) -> None:
    own = tmp_path / "shop"  # a copy: the shared shop stays as the other tests read it
    shutil.copytree(shop.root, own, symlinks=True)
    (own / "other/elsewhere").mkdir(parents=True)
    (own / "other/_CONFIG_STORE").write_text("", encoding="utf-8")
    (own / "other/elsewhere/main.conf").write_text("x = 1\n", encoding="utf-8")
    assert complete(run_cfgtool, tmp_path, f"cfgtool --repo {own} --store other get ") == ["/elsewhere"]
    assert complete(run_cfgtool, tmp_path, f"cfgtool get --repo {own} /data/inv") == ["/data/invoices"]
    env = {"_CFGTOOL_COMPLETE": "complete_zsh", "_TYPER_COMPLETE_ARGS": "cfgtool get /data/inv"}
    zsh = run_cfgtool(cwd=own, env=env)
    assert '"/data/invoices"' in zsh.stdout, zsh.stdout + zsh.stderr


def test_completion_outside_a_repository_offers_nothing_and_prints_no_error(run_cfgtool: Run, tmp_path: Path) -> None:
    assert complete(run_cfgtool, tmp_path, "cfgtool get /da") == []
    assert complete(run_cfgtool, tmp_path, "cfgtool diff ") == ["worktree"]
    assert complete(run_cfgtool, tmp_path, "cfgtool g") == ["get"]  # commands still complete
