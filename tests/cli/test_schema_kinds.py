"""A schema's `applies_to.kinds` (docs/schemas.md): `cfgtool compile` run as a real subprocess on a real git
repository whose store has datasets, groups and tags."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]

STORE = {
    "store/_CONFIG_STORE": "schemas: ../schemas\n",
    "store/data/orders/main.conf": "owner = sales\n",
    "store/data/refunds/main.conf": "tier = 1\n",  # a dataset without an owner
    "store/data/eu/main.conf": "region = eu\n",  # a group: it has a node below it
    "store/data/eu/invoices/main.conf": "owner = billing\n",
    "store/tags/gold/main.conf": "tier = 1\n",
}


def schema(applies_to: str) -> str:
    return f"x-cfgtool:\n  applies_to: {applies_to}\ntype: object\nrequired: [owner]\n"


def compiled(run_cfgtool: Run, repo: GitRepo, applies_to: str) -> tuple[int, list[dict[str, Any]]]:
    repo.write({**STORE, "schemas/owner.yaml": schema(applies_to)})
    repo.commit()
    proc = run_cfgtool("compile", "--format", "json", cwd=repo.root)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["diagnostics"]


def test_kinds_dataset_leaves_out_the_groups_a_key_glob_also_matches(run_cfgtool: Run, repo: GitRepo) -> None:
    code, diags = compiled(run_cfgtool, repo, '{keys: ["/data/*"], kinds: [dataset]}')
    assert code == 1
    assert [(d["code"], d["key"]) for d in diags] == [("E_SCHEMA", "/data/refunds")]  # not the group /data/eu


def test_kinds_alone_selects_every_node_of_those_kinds(run_cfgtool: Run, repo: GitRepo) -> None:
    code, diags = compiled(run_cfgtool, repo, "{kinds: [tag, group]}")
    assert code == 1
    assert sorted(d["key"] for d in diags) == ["/", "/data", "/data/eu", "/tags", "/tags/gold"]


@pytest.mark.parametrize(
    ("applies_to", "message", "col"),
    [
        (
            "{kinds: [datasets]}",
            "applies_to.kinds[0]: 'datasets' is not a kind of node (known: dataset, group, "
            "tag); did you mean 'dataset'?",
            24,
        ),
        ("{kinds: dataset}", "applies_to.kinds must be a list of strings", 23),
    ],
    ids=["unknown-kind", "not-a-list"],
)
def test_a_bad_kind_is_reported_at_its_line_and_column(
    run_cfgtool: Run, repo: GitRepo, applies_to: str, message: str, col: int
) -> None:
    code, diags = compiled(run_cfgtool, repo, applies_to)
    assert code == 1
    assert [(d["file"], d["line"], d["col"]) for d in diags] == [("schemas/owner.yaml", 2, col)], diags
    assert message in diags[0]["message"]


def test_kinds_that_select_nothing_are_reported(run_cfgtool: Run, repo: GitRepo) -> None:
    code, diags = compiled(run_cfgtool, repo, '{keys: ["/data/orders"], kinds: [group]}')
    assert code == 1
    assert "applies_to selects no node once kinds is applied" in diags[0]["message"]
