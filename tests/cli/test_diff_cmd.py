"""`cfgtool diff` and `cfgtool audit` (`cfgtool/cli/diff_cmd.py`), run as real subprocesses on a real repository."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]  # the run_cfgtool fixture (conftest.py)

SHOP = {
    "_CONFIG_STORE": "name: shop\n",
    "main.conf": "retention = 7d\nowner = nobody\n",
    "tags/gold/main.conf": "retention = 30d\n",
    "data/orders/includes": "/tags/gold\n",
    "data/refunds/includes": "/tags/gold\n",
    "data/invoices/main.conf": "owner = billing\n",
}


@pytest.fixture
def shop(store_repo: GitRepo) -> GitRepo:
    """v1: the shop store; v2: the gold tag keeps data 90 days (rolled back); HEAD: invoices gone."""
    store_repo.write(SHOP, under="store/")
    store_repo.commit("shop")
    store_repo.git("tag", "-a", "config/v1", "-m", "first")
    store_repo.write({"tags/gold/main.conf": "retention = 90d\n"}, under="store/")
    store_repo.commit("gold keeps 90 days")
    store_repo.git("tag", "-a", "config/v2", "-m", "longer gold")
    store_repo.git("tag", "-a", "config/rolledback/v2", "-m", "too expensive")
    store_repo.write({"data/invoices/main.conf": None}, under="store/")
    store_repo.commit("drop invoices")
    return store_repo


def test_diff_text_shows_the_grouped_summary_first(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("--repo", str(shop.root), "diff", "v1", "v2")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[1] == "keys: 3 changed, 0 added, 0 removed (3 values)"
    assert lines[3:6] == [
        "Summary:",
        '  retention "30d" -> "90d" in 2 keys, via /tags/gold',
        '  retention "30d" -> "90d" in 1 key, via its own main.conf',
    ]
    assert "~ /data/orders" in lines


def test_diff_json_contract(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("--repo", str(shop.root), "diff", "config/v1", "HEAD", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["from"]["version"] == 1 and data["to"]["ref"] == "HEAD" and data["to"]["version"] is None
    assert data["summary"]["changed"] == 3 and data["summary"]["removed"] == 1
    removed = next(c for c in data["changes"] if c["kind"] == "removed")
    assert removed == {
        "key": "/data/invoices",
        "kind": "removed",
        "values": [
            {"path": "retention", "old": "7d", "origin": None, "via": None, "file": None},
            {"path": "owner", "old": "billing", "origin": None, "via": None, "file": None},
        ],
    }
    group = data["groups"][0]
    assert group == {
        "path": "retention",
        "old": "30d",
        "new": "90d",
        "count": 2,
        "via": "/tags/gold",
        "file": None,
        "keys": ["/data/orders", "/data/refunds"],
    }


def test_diff_names_the_included_file_that_set_a_value(run_cfgtool: Run, shop: GitRepo) -> None:
    shop.write(
        {
            "data/orders/main.conf": 'include "limits.conf"\n',
            "data/orders/limits.conf": "quota = 1\n",
            "tags/gold/main.conf": 'include "gold-common.conf"\n',
            "tags/gold/gold-common.conf": "retention = 30d\n",
        },
        under="store/",
    )
    shop.commit("values in included files")
    shop.write({"data/orders/limits.conf": "quota = 2\n", "tags/gold/gold-common.conf": "retention = 60d\n"}, "store/")
    text = run_cfgtool("--repo", str(shop.root), "diff", "HEAD")
    assert text.returncode == 0, text.stderr
    assert "  quota 1 -> 2 in 1 key, via its own limits.conf" in text.stdout.splitlines()
    assert '  retention "30d" -> "60d" in 2 keys, via /tags/gold (store/tags/gold/gold-common.conf)' in text.stdout
    assert "main.conf" not in text.stdout.split("\n\n")[1]  # the summary
    data = json.loads(run_cfgtool("--repo", str(shop.root), "diff", "HEAD", "--format", "json").stdout)
    quota = next(g for g in data["groups"] if g["path"] == "quota")
    assert quota["via"] == "own" and quota["file"] == "limits.conf"
    orders = next(c for c in data["changes"] if c["key"] == "/data/orders")
    assert {v["path"]: v["file"] for v in orders["values"]} == {
        "quota": "limits.conf",
        "retention": "store/tags/gold/gold-common.conf",
    }
    markdown = run_cfgtool("--repo", str(shop.root), "diff", "HEAD", "-f", "markdown").stdout
    assert "| `quota`: `1` → `2` | 1 | own `limits.conf` |" in markdown


def test_diff_defaults_to_the_working_tree_and_markdown(run_cfgtool: Run, shop: GitRepo) -> None:
    shop.write({"data/orders/main.conf": "owner = sales\n"}, under="store/")
    proc = run_cfgtool("--repo", str(shop.root), "diff", "HEAD", "-f", "markdown")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("### Resolved config diff: `HEAD (")
    assert "`worktree (HEAD" in proc.stdout.splitlines()[0] and "modified)`" in proc.stdout.splitlines()[0]
    assert '| `owner`: `"nobody"` → `"sales"` | 1 | own main.conf |' in proc.stdout


def test_diff_exit_code_option(run_cfgtool: Run, shop: GitRepo) -> None:
    assert run_cfgtool("--repo", str(shop.root), "diff", "v1", "v2", "--exit-code").returncode == 1
    assert run_cfgtool("--repo", str(shop.root), "diff", "v2", "HEAD~1", "--exit-code").returncode == 0
    assert run_cfgtool("--repo", str(shop.root), "diff", "v1", "v2").returncode == 0


def test_diff_unknown_version_is_exit_2_with_a_hint(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("--repo", str(shop.root), "diff", "v9", "v1")
    assert proc.returncode == 2
    assert "version 9 does not exist" in proc.stderr and "hint:" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_diff_bad_var_is_exit_2(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("--repo", str(shop.root), "diff", "v1", "v2", "--var", "nope=1")
    assert proc.returncode == 2 and "is not declared" in proc.stderr


def test_audit_events_json(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("--repo", str(shop.root), "audit", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    events = json.loads(proc.stdout)["events"]
    assert [(e["kind"], e["version"], e["message"]) for e in events] == [
        ("rollback", 2, "too expensive"),
        ("publish", 2, "longer gold"),
        ("publish", 1, "first"),
    ]
    assert all(e["by"] == "Test <test@example.com>" for e in events)


def test_audit_key_path_json_and_text(run_cfgtool: Run, shop: GitRepo) -> None:
    args = ("--repo", str(shop.root), "audit", "--key", "shop:/data/orders", "--path", "retention")
    proc = run_cfgtool(*args, "-f", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["key"], data["path"]) == ("/data/orders", "retention")
    assert [(h["kind"], h["version"], h.get("old"), h["new"]) for h in data["history"]] == [
        ("rollback", 2, "90d", "30d"),  # readers went back to version 1's value
        ("publish", 2, "30d", "90d"),
        ("publish", 1, None, "30d"),
    ]
    assert [c["subject"] for c in data["history"][1]["commits"]] == ["gold keeps 90 days"]
    text = run_cfgtool(*args).stdout
    assert text.startswith("/data/orders retention: changed in 2 versions and 1 rollback")
    assert '"30d" -> "90d"' in text and "gold keeps 90 days" in text and "(rolled back)" in text


def test_audit_path_without_key_is_a_usage_error(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("--repo", str(shop.root), "audit", "--path", "retention")
    assert proc.returncode == 2 and "--path needs --key" in proc.stderr


def test_audit_bad_since_is_a_usage_error(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("--repo", str(shop.root), "audit", "--since", "whenever")
    assert proc.returncode == 2 and "not a date" in proc.stderr


def test_audit_since_in_the_future_is_empty(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("--repo", str(shop.root), "audit", "--since", "2999-01-01")
    assert proc.returncode == 0
    assert proc.stdout == "no version was published or rolled back since 2999-01-01 00:00 +0000 (--since)\n"


def test_diff_against_a_side_that_does_not_compile_fails(run_cfgtool: Run, shop: GitRepo) -> None:
    (shop.root / "store" / "main.conf").write_text("broken = {\n")
    proc = run_cfgtool("--repo", str(shop.root), "diff", "v2", "worktree")
    assert proc.returncode == 1
    assert "worktree did not compile cleanly" in proc.stderr
