"""The query commands (`get`, `explain`, `imports`, `imported-by`, `tags`, `datasets`), run as real subprocesses
of the installed script against real git repositories: purpose-built stores and the embedded example store."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from cfgtool.versions import publish
from tests.conftest import copy_embedded

if TYPE_CHECKING:
    from tests.conftest import GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]  # the run_cfgtool fixture (conftest.py)

SHOP = {
    "_CONFIG_STORE": "name: shop\nvariables:\n  dc:\n    values: [east, west]\n    default: east\n",
    "main.conf": 'urn = "urn:shop:"${cfgtool.key}\nname = ${cfgtool.name}\nretention = 30d\n',
    "data/main.conf": "retention = 7d\n",
    "data/includes": "/tags/dc/${dc}\n",
    "data/orders/main.conf": "owner = sales\n",
    "data/orders/includes": "/tags/gold\n",
    "data/refunds/includes": "/tags/gold/extra\n",
    "data/invoices/main.conf": "owner = billing\n",
    "tags/gold/main.conf": "tier = 1\nretention = 90d\n",
    "tags/gold/extra/main.conf": "extra = true\n",
    "tags/dc/east/main.conf": "region = us-east\n",
    "tags/dc/west/main.conf": "region = us-west\n",
}

ORDERS = {
    "urn": "urn:shop:/data/orders",
    "name": "orders",
    "retention": "90d",
    "region": "us-east",
    "tier": 1,
    "owner": "sales",
}


@pytest.fixture
def shop(store_repo: GitRepo) -> GitRepo:
    """A committed store with a variable, a default templated per key, tags, a child tag and plain datasets."""
    store_repo.write(SHOP, under="store/")
    store_repo.commit()
    return store_repo


@pytest.fixture
def make_repo(store_repo: GitRepo) -> Callable[[Mapping[str, str]], GitRepo]:
    def make(files: Mapping[str, str]) -> GitRepo:
        store_repo.write({"_CONFIG_STORE": "", **files}, under="store/")
        store_repo.commit()
        return store_repo

    return make


def ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(proc))


def failed(proc: subprocess.CompletedProcess[str], code: int) -> str:
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stderr


# ------------------------------------------------------------------------------------------ get


def test_get_json_prints_the_resolved_config(run_cfgtool: Run, shop: GitRepo) -> None:
    assert as_json(run_cfgtool("get", "/data/orders", "--format", "json", cwd=shop.root)) == ORDERS


def test_get_text_is_hocon(run_cfgtool: Run, shop: GitRepo) -> None:
    out = ok(run_cfgtool("get", "/data/orders", cwd=shop.root))
    assert 'urn = "urn:shop:/data/orders"\n' in out
    assert 'retention = "90d"\n' in out and "tier = 1\n" in out
    (shop.root.parent / "orders.conf").write_text(out, encoding="utf-8")
    assert as_json(run_cfgtool("hocon", str(shop.root.parent / "orders.conf"))) == ORDERS  # reads back the same
    hocon = ok(run_cfgtool("get", "/data/orders", "--format", "hocon", cwd=shop.root))
    assert hocon == out


def test_get_yaml_and_properties(run_cfgtool: Run, shop: GitRepo) -> None:
    assert yaml.safe_load(ok(run_cfgtool("get", "/data/orders", "-f", "yaml", cwd=shop.root))) == ORDERS
    props = ok(run_cfgtool("get", "/data/orders", "-f", "properties", cwd=shop.root))
    assert "urn=urn\\:shop\\:/data/orders\n" in props and "tier=1\n" in props


def test_get_path_prints_the_bare_value_as_text_and_json(run_cfgtool: Run, shop: GitRepo) -> None:
    assert ok(run_cfgtool("get", "/data/orders", "retention", cwd=shop.root)) == "90d\n"
    assert ok(run_cfgtool("get", "/data/orders", "tier", cwd=shop.root)) == "1\n"
    assert as_json(run_cfgtool("get", "/data/orders", "retention", "-f", "json", cwd=shop.root)) == "90d"


def test_get_path_to_an_object(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    repo = make_repo({"data/x/main.conf": 'kafka { partitions = 8, config { "retention.ms" = 5 } }\n'})
    assert as_json(run_cfgtool("get", "/data/x", "kafka", "-f", "json", cwd=repo.root)) == {
        "partitions": 8,
        "config": {"retention.ms": 5},
    }
    assert ok(run_cfgtool("get", "/data/x", 'kafka.config."retention.ms"', cwd=repo.root)) == "5\n"
    assert "partitions = 8\n" in ok(run_cfgtool("get", "/data/x", "kafka", cwd=repo.root))


def test_get_accepts_the_store_scheme_and_loose_key_forms(run_cfgtool: Run, shop: GitRepo) -> None:
    for key in ("shop:/data/orders", "data/orders", "/data/orders/"):
        assert as_json(run_cfgtool("get", key, "-f", "json", cwd=shop.root)) == ORDERS


def test_get_key_without_node_inherits_and_says_so(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("get", "/data/returns", "-f", "json", "--nearest", cwd=shop.root)
    assert as_json(proc) == {
        "urn": "urn:shop:/data/returns",  # ${cfgtool.key} and ${cfgtool.name} are the phantom key's own
        "name": "returns",
        "retention": "7d",
        "region": "us-east",
    }
    assert proc.stderr == "cfgtool: note: /data/returns has no node; it inherits everything from /data\n"


def test_get_key_without_node_is_exit_1_naming_a_close_node_unless_nearest(run_cfgtool: Run, shop: GitRepo) -> None:
    for args in (["/data/ordrs"], ["/data/ordrs", "region"]):
        proc = run_cfgtool("get", *args, cwd=shop.root)
        assert proc.returncode == 1 and proc.stdout == ""
        assert "/data/ordrs has no node in store 'shop' (it would read /data's config)" in proc.stderr
        assert "did you mean /data/orders?" in proc.stderr and "--nearest" in proc.stderr
        assert "Traceback" not in proc.stderr
    nearest = run_cfgtool("get", "/data/ordrs", "region", "--nearest", cwd=shop.root)
    assert ok(nearest) == "us-east\n" and "did you mean /data/orders?" in nearest.stderr
    explained = run_cfgtool("explain", "/data/ordrs", "region", cwd=shop.root)
    assert explained.returncode == 0 and "did you mean /data/orders?" in explained.stderr


def test_get_var_selects_the_dynamic_tag(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("get", "/data/orders", "region", "--var", "dc=west", cwd=shop.root)
    assert ok(proc) == "us-west\n"


def test_get_ref_reads_the_committed_state(run_cfgtool: Run, shop: GitRepo) -> None:
    shop.write({"store/data/orders/main.conf": "owner = returns-team\n"})
    assert ok(run_cfgtool("get", "/data/orders", "owner", cwd=shop.root)) == "returns-team\n"
    assert ok(run_cfgtool("get", "/data/orders", "owner", "--ref", "main", cwd=shop.root)) == "sales\n"


def test_get_missing_path_exits_1(run_cfgtool: Run, shop: GitRepo) -> None:
    err = failed(run_cfgtool("get", "/data/orders", "tier.level", cwd=shop.root), 1)
    assert err.startswith("cfgtool: error: tier.level is not set in the config of /data/orders\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("get", "/data/bad key"), "key '/data/bad key' has an invalid segment 'bad key'"),
        (("get", "other:/data/orders"), "has scheme 'other:', but this store's scheme is 'shop:'"),
        (("get", "/data//orders"), "has an empty segment"),
        (("get", "/data/orders", "a..b"), "PATH 'a..b' is not a HOCON path"),
        (("get", "/data/orders", "--var", "dc"), "--var 'dc' is not NAME=VALUE"),
        (("get", "/data/orders", "--var", "dc=north"), "allowed values are east, west"),
        (("get", "/data/orders", "--format", "xml"), "xml"),
        (("get", "/data/orders", "--ref", "v999"), "unknown ref 'v999'"),
        (("explain", "/data/orders"), "PATH"),
        (("imports", "x y"), "invalid segment"),
        (("imported-by", "other:/tags/gold"), "scheme"),
        (("tags", "/a//b"), "empty segment"),
        (("datasets", "/tags/bad tag"), "invalid segment"),
        (("get", "/a" * 1000), "has 2,000 characters, more than 1,024"),  # was a RecursionError, exit 3
        (("imports", "a/" * 600), "more than 1,024"),
    ],
)
def test_query_usage_errors_exit_2(run_cfgtool: Run, shop: GitRepo, args: tuple[str, ...], message: str) -> None:
    err = failed(run_cfgtool(*args, cwd=shop.root), 2)
    assert message in err


def test_get_a_key_of_1024_characters_is_no_recursion(run_cfgtool: Run, shop: GitRepo) -> None:
    deepest = "/a" * 512  # 512 segments, the most a key can have
    assert ok(run_cfgtool("get", deepest, "retention", "--nearest", cwd=shop.root)) == "30d\n"


# ------------------------------------------------------------------------------------------ explain


def test_explain_text_names_the_winner_and_what_it_overrode(run_cfgtool: Run, shop: GitRepo) -> None:
    out = ok(run_cfgtool("explain", "/data/orders", "retention", cwd=shop.root))
    lines = out.splitlines()
    assert lines[0] == "/data/orders retention"
    assert lines[1] == '  = "90d"'
    assert lines[2] == "  set at store/tags/gold/main.conf:2:13"
    assert '    /tags/gold: retention = "90d"  (store/tags/gold/main.conf:2:13; wins)' in lines
    assert '    /data: retention = "7d"  (store/data/main.conf:1:13; overridden)' in lines
    assert '    /: retention = "30d"  (store/main.conf:3:13; overridden)' in lines
    assert "    /tags/gold  [/data/orders includes /tags/gold (store/data/orders/includes:1)]" in lines


def test_explain_json(run_cfgtool: Run, shop: GitRepo) -> None:
    doc = as_json(run_cfgtool("explain", "shop:/data/orders", "retention", "--format", "json", cwd=shop.root))
    assert (doc["key"], doc["exists"], doc["found"], doc["value"]) == ("/data/orders", True, True, "90d")
    assert doc["origin"] == {"file": "store/tags/gold/main.conf", "line": 2, "col": 13}
    assert [o["layer"] for o in doc["overridden"]] == ["/data", "/"]
    assert [layer["layer"] for layer in doc["layers"]] == [
        "/data/orders",
        "/tags/gold",
        "/data",
        "/tags/dc/east",
        "/tags/dc",
        "/tags",
        "/",
    ]


def test_explain_key_without_node(run_cfgtool: Run, shop: GitRepo) -> None:
    doc = as_json(run_cfgtool("explain", "/data/returns", "name", "-f", "json", cwd=shop.root))
    assert (doc["exists"], doc["node"], doc["value"]) == (False, "/data", "returns")
    assert doc["origin"]["file"] == "store/main.conf"
    text = ok(run_cfgtool("explain", "/data/returns", "name", cwd=shop.root))
    assert text.startswith("/data/returns name  (no node: read from /data)\n")


def test_explain_names_the_intrinsics_a_value_was_built_from(run_cfgtool: Run, shop: GitRepo) -> None:
    """`${cfgtool.name}` and `${cfgtool.key}` are not in any file: explain names them and their values."""
    text = ok(run_cfgtool("explain", "/data/orders", "name", cwd=shop.root))
    assert '  built from cfgtool.name = "orders" (intrinsic)\n' in text
    assert "<extra>" not in text
    text = ok(run_cfgtool("explain", "/data/returns", "urn", cwd=shop.root))  # no node: the key's own values
    assert '  built from cfgtool.key = "/data/returns" (intrinsic)\n' in text
    doc = as_json(run_cfgtool("explain", "/data/orders", "urn", "-f", "json", cwd=shop.root))
    assert doc["sources"] == [  # `"urn:shop:"${cfgtool.key}`: the string, then the intrinsic
        {"file": "store/main.conf", "line": 1, "col": 7},
        {"file": "(intrinsic)", "line": 0, "col": 0, "intrinsic": "cfgtool.key", "value": "/data/orders"},
    ]


def test_explain_unset_path_exits_1_and_still_shows_the_layers(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("explain", "/data/orders", "nope", cwd=shop.root)
    assert proc.returncode == 1
    assert "  not set in any layer\n" in proc.stdout
    assert "  layers (L):\n" in proc.stdout


# ------------------------------------------------------------------------------------------ imports, tags


def test_imports_lists_explicit_imports(run_cfgtool: Run, shop: GitRepo) -> None:
    assert ok(run_cfgtool("imports", "/data/orders", cwd=shop.root)) == "/tags/gold\n"
    assert as_json(run_cfgtool("imports", "/data", "-f", "json", cwd=shop.root)) == {
        "key": "/data",
        "exists": True,
        "recursive": False,
        "imports": ["/tags/dc/east"],
    }
    assert ok(run_cfgtool("imports", "/data", "--var", "dc=west", cwd=shop.root)) == "/tags/dc/west\n"


def test_imports_recursive_is_the_linearization_without_the_key(run_cfgtool: Run, shop: GitRepo) -> None:
    out = ok(run_cfgtool("imports", "-r", "/data/orders", cwd=shop.root))
    assert out.splitlines() == ["/tags/gold", "/data", "/tags/dc/east", "/tags/dc", "/tags", "/"]
    doc = as_json(run_cfgtool("imports", "--recursive", "/data/orders", "-f", "json", cwd=shop.root))
    assert doc["recursive"] is True and doc["imports"] == out.splitlines()


def test_imports_none_prints_nothing_on_stdout(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("imports", "/data/invoices", cwd=shop.root)
    assert ok(proc) == ""
    assert proc.stderr == "cfgtool: note: none\n"


def test_imports_key_without_node(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("imports", "-r", "/data/returns", "-f", "json", cwd=shop.root)
    assert as_json(proc) == {
        "key": "/data/returns",
        "exists": False,
        "recursive": True,
        "imports": ["/data", "/tags/dc/east", "/tags/dc", "/tags", "/"],
    }
    assert "/data/returns has no node" in proc.stderr


def test_imports_recursive_design_example_1(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    """docs/resolution.md#linearization, example 1: the importer's own ancestors outrank the imported tag's
    ancestors."""
    repo = make_repo(
        {
            "main.conf": "retention = 30d\n",
            "data/main.conf": "retention = 7d\n",
            "data/x/includes": "/tags/t\n",
            "tags/t/main.conf": "other = 1\n",
        }
    )
    assert ok(run_cfgtool("imports", "-r", "/data/x", cwd=repo.root)).splitlines() == ["/tags/t", "/tags", "/data", "/"]
    assert ok(run_cfgtool("get", "/data/x", "retention", cwd=repo.root)) == "7d\n"


def test_imports_recursive_design_example_2(run_cfgtool: Run, make_repo: Callable[..., GitRepo]) -> None:
    """docs/resolution.md#linearization, example 2: later include lines outrank earlier ones; a tag's imports follow
    it."""
    repo = make_repo(
        {
            "_CONFIG_STORE": "tag_roots: [/tag, /tag2]\n",
            "data/databases/identity/includes": "/tag/espressoTag\n/tag/highPriorityTag\n",
            "tag/espressoTag/includes": "/tag2/nertzTag2\n",
            "tag/highPriorityTag/main.conf": "priority = HIGH\n",
            "tag2/nertzTag2/main.conf": "nertz = true\n",
        }
    )
    out = ok(run_cfgtool("imports", "-r", "/data/databases/identity", cwd=repo.root))
    assert out.splitlines() == [
        "/tag/highPriorityTag",
        "/tag/espressoTag",
        "/tag2/nertzTag2",
        "/tag2",
        "/tag",
        "/data/databases",
        "/data",
        "/",
    ]
    tags = ok(run_cfgtool("tags", "/data/databases/identity", cwd=repo.root))
    assert tags.splitlines() == ["/tag/highPriorityTag", "/tag/espressoTag", "/tag2/nertzTag2"]


def test_tags_include_those_imported_by_ancestors(run_cfgtool: Run, shop: GitRepo) -> None:
    assert ok(run_cfgtool("tags", "/data/orders", cwd=shop.root)).splitlines() == [
        "/tags/gold",
        "/tags/dc/east",
        "/tags/dc",
    ]
    assert as_json(run_cfgtool("tags", "/data/returns", "--var", "dc=west", "-f", "json", cwd=shop.root)) == {
        "key": "/data/returns",
        "exists": False,
        "tags": ["/tags/dc/west", "/tags/dc"],
    }


# ------------------------------------------------------------------------------------------ reverse queries


def test_imported_by_direct_and_recursive(run_cfgtool: Run, shop: GitRepo) -> None:
    assert ok(run_cfgtool("imported-by", "/tags/gold", cwd=shop.root)) == "/data/orders\n"
    assert as_json(run_cfgtool("imported-by", "-r", "/tags/gold", "-f", "json", cwd=shop.root)) == {
        "key": "/tags/gold",
        "recursive": True,
        "imported_by": ["/data/orders", "/data/refunds", "/tags/gold/extra"],
    }


def test_datasets_exclude_tags_and_child_tag_importers(run_cfgtool: Run, shop: GitRepo) -> None:
    assert ok(run_cfgtool("datasets", "/tags/gold", cwd=shop.root)) == "/data/orders\n"
    assert ok(run_cfgtool("datasets", "/tags/gold/extra", cwd=shop.root)) == "/data/refunds\n"
    doc = as_json(run_cfgtool("datasets", "shop:/tags/dc/west", "--var", "dc=west", "-f", "json", cwd=shop.root))
    assert doc == {
        "tag": "/tags/dc/west",
        "datasets": ["/data", "/data/invoices", "/data/orders", "/data/refunds"],
    }
    east = run_cfgtool("datasets", "/tags/dc/east", "--var", "dc=west", cwd=shop.root)
    assert ok(east) == "" and east.stderr == "cfgtool: note: none\n"


# ------------------------------------------------------------------------------------------ broken stores


def test_query_refuses_a_key_whose_layers_have_errors(run_cfgtool: Run, shop: GitRepo) -> None:
    shop.write({"store/tags/gold/main.conf": "tier = {\n"})
    for args in (("get", "/data/orders"), ("explain", "/data/orders", "tier"), ("tags", "/data/orders")):
        err = failed(run_cfgtool(*args, cwd=shop.root), 1)
        assert err.startswith(
            "cfgtool: error: /data/orders cannot be queried: 1 error affects it, the first: "
            "store/tags/gold/main.conf:2:1: E_SYNTAX unclosed object"
        ), err
        assert "hint: `cfgtool compile` lists every error of the store" in err


def test_query_refusal_says_how_many_of_the_stores_errors_affect_the_key(run_cfgtool: Run, shop: GitRepo) -> None:
    """A read of the whole store (here a commit) counts its errors, so the numbers of get and compile agree."""
    shop.write({"store/tags/gold/main.conf": "tier = {\n", "store/data/invoices/main.conf": "owner = ${nobody}\n"})
    shop.commit()
    err = failed(run_cfgtool("get", "/data/orders", "--ref", "HEAD", cwd=shop.root), 1)
    assert err.startswith("cfgtool: error: /data/orders cannot be queried: 1 of the store's 2 errors affects it"), err
    assert "`cfgtool compile` lists every error of the store" in err
    compiled = run_cfgtool("compile", cwd=shop.root)
    assert "2 errors" in compiled.stdout + compiled.stderr


def test_query_answers_keys_that_errors_elsewhere_do_not_affect(run_cfgtool: Run, shop: GitRepo) -> None:
    shop.write({"store/data/invoices/main.conf": "owner = ${nobody}\n"})
    assert ok(run_cfgtool("get", "/data/orders", "owner", cwd=shop.root)) == "sales\n"
    assert failed(run_cfgtool("get", "/data/invoices", cwd=shop.root), 1).startswith(
        "cfgtool: error: /data/invoices cannot be queried"
    )
    # a key without a node under a node that failed is refused too, never read from a further ancestor
    assert "/data/invoices/2024 cannot be queried" in failed(
        run_cfgtool("get", "/data/invoices/2024", cwd=shop.root), 1
    )
    # reverse queries read every node's includes, never a main.conf: its errors cannot change who imports what
    assert ok(run_cfgtool("datasets", "/tags/gold", cwd=shop.root)) == "/data/orders\n"
    # ... but any error of the import graph refuses them
    shop.write({"store/data/invoices/includes": "/tags/nothing\n"})
    err = failed(run_cfgtool("datasets", "/tags/gold", cwd=shop.root), 1)
    assert err.startswith("cfgtool: error: the store cannot be queried"), err
    assert "store/data/invoices/includes:1:1: E_MISSING_IMPORT" in err
    assert ok(run_cfgtool("datasets", "/tags/gold", "--ref", "HEAD", cwd=shop.root)) == "/data/orders\n"


# ------------------------------------------------------------------------------------------ embedded store


def test_embedded_get_templates_a_topic_without_a_node(run_cfgtool: Run, embedded_repo: GitRepo) -> None:
    proc = run_cfgtool("get", "demo:/data/tracking/NewEvent", "--format", "json", "--nearest", cwd=embedded_repo.root)
    config = as_json(proc)
    assert config["name"] == "NewEvent"
    assert config["kafka"]["topic"] == "NewEvent"
    assert config["urn"] == "urn:demo:/data/tracking/NewEvent"
    assert "has no node; it inherits everything from /data/tracking" in proc.stderr


def test_get_and_explain_suggest_the_quoted_path_of_a_dotted_name(run_cfgtool: Run, embedded_repo: GitRepo) -> None:
    key, dotted = "/data/tracking/PageViewEvent", "kafka.config.retention.ms"
    got = run_cfgtool("get", key, dotted, cwd=embedded_repo.root)
    assert got.returncode == 1 and 'did you mean kafka.config."retention.ms"?' in got.stderr
    explained = run_cfgtool("explain", key, dotted, cwd=embedded_repo.root)
    assert explained.returncode == 1 and '  did you mean kafka.config."retention.ms"?\n' in explained.stdout
    doc = json.loads(run_cfgtool("explain", key, dotted, "-f", "json", cwd=embedded_repo.root).stdout)
    assert doc["found"] is False and doc["did_you_mean"] == 'kafka.config."retention.ms"'


def test_embedded_queries(run_cfgtool: Run, embedded_repo: GitRepo) -> None:
    root = embedded_repo.root
    assert ok(run_cfgtool("get", "/data/tracking/PageViewEvent", "kafka.partitions", cwd=root)) == "128\n"
    assert "/tags/priority/HIGH" in ok(run_cfgtool("imports", "/data/tracking/PageViewEvent", cwd=root)).splitlines()
    west = ok(run_cfgtool("tags", "/data/tracking/PageViewEvent", "--var", "local_cluster.name=lva1", cwd=root))
    assert "/tags/cluster/lva1" in west.splitlines() and "/tags/cluster/ltx1" not in west
    assert "/data/tracking/PageViewEvent" in ok(run_cfgtool("datasets", "/tags/priority/HIGH", cwd=root)).splitlines()
    doc = as_json(run_cfgtool("explain", "/data/tracking/PageViewEvent", "kafka.partitions", "-f", "json", cwd=root))
    assert doc["origin"]["file"] == "store/data/tracking/PageViewEvent/main.conf"


@pytest.mark.parametrize("command", ["get", "explain", "imports", "imported-by", "tags", "datasets"])
def test_query_help_has_an_example_and_every_option(run_cfgtool: Run, command: str) -> None:
    out = ok(run_cfgtool(command, "--help", env={"COLUMNS": "200"}))
    assert f"cfgtool {command} " in out.split("Example", 1)[1]
    for option in ("--ref", "--var", "--format"):
        assert option in out


def test_query_reads_a_published_version_with_version_option(
    tmp_path: Path, run_cfgtool: Callable[..., subprocess.CompletedProcess[str]]
) -> None:
    repo = copy_embedded(tmp_path / "versioned")
    publish(repo.root, message="v1")
    conf = repo.root / "store/data/tracking/PageViewEvent/main.conf"
    conf.write_text(conf.read_text().replace("kafka.partitions = 128", "kafka.partitions = 256"))
    topic = "/data/tracking/PageViewEvent"
    got = run_cfgtool("--repo", str(repo.root), "get", "--version", "1", topic, "kafka.partitions")
    assert (got.returncode, got.stdout.strip()) == (0, "128")  # v1, not the edited working tree
    worktree = run_cfgtool("--repo", str(repo.root), "get", topic, "kafka.partitions")
    assert worktree.stdout.strip() == "256"
    missing = run_cfgtool("--repo", str(repo.root), "get", "--version", "9", "/")
    assert missing.returncode == 2 and "version 9 does not exist" in missing.stderr
    both = run_cfgtool("--repo", str(repo.root), "tags", "--version", "1", "--ref", "HEAD", "/data")
    assert both.returncode == 2 and "--ref and --version" in both.stderr


def test_get_from_a_working_tree_unlike_the_current_version_says_so_on_stderr(run_cfgtool: Run, shop: GitRepo) -> None:
    get = ("get", "/data/orders", "owner")
    assert run_cfgtool(*get, cwd=shop.root).stderr == ""  # nothing published: nothing to mistake it for
    publish(shop.root, message="v1")
    assert run_cfgtool(*get, cwd=shop.root).stderr == ""  # the working tree holds the current version's store
    shop.write({"data/orders/main.conf": "owner = finance\n"}, under="store/")
    edited = run_cfgtool(*get, cwd=shop.root)
    assert (edited.returncode, edited.stdout) == (0, "finance\n")
    assert edited.stderr == (
        "cfgtool: note: answered from the working tree (uncommitted changes); current version is 1:"
        " add --version current\n"
    )
    for pinned in (("--version", "current"), ("--ref", "HEAD")):
        asked = run_cfgtool(*get, *pinned, cwd=shop.root)
        assert (asked.stdout, asked.stderr) == ("sales\n", "")  # asked for a version or ref: no note
    head = shop.commit("finance owns orders")
    committed = run_cfgtool(*get, cwd=shop.root)
    assert f"working tree (HEAD {head[:7]}, not published); current version is 1" in committed.stderr
    publish(shop.root, message="v2")
    assert run_cfgtool(*get, cwd=shop.root).stderr == ""


def test_datasets_of_a_key_without_a_node_is_an_error_with_a_suggestion(run_cfgtool: Run, shop: GitRepo) -> None:
    proc = run_cfgtool("datasets", "/tags/dc/wesd", "--var", "dc=west", cwd=shop.root)
    assert proc.returncode == 1
    assert "/tags/dc/wesd has no node" in proc.stderr and "did you mean /tags/dc/west?" in proc.stderr
    by = run_cfgtool("imported-by", "/nowhere", cwd=shop.root)
    assert by.returncode == 1 and "/nowhere has no node" in by.stderr


# -- HOCON semantics seen through the store -------------------------------------------------------


def test_get_null_in_a_layer_clears_the_inherited_object_and_a_higher_object_starts_afresh(
    make_repo: Callable[[Mapping[str, str]], GitRepo], run_cfgtool: Run
) -> None:
    repo = make_repo(
        {
            "main.conf": "kafka { partitions = 8, retention = 7d }\nname = ${cfgtool.name}\n",
            "data/main.conf": "kafka = null\n",
            "data/x/main.conf": "kafka { owner = web }\n",
            "data/y/main.conf": "other = 1\n",
        }
    )
    # highest first: {owner} over null over {partitions, retention}: the null hides the root's object
    assert as_json(run_cfgtool("get", "/data/x", "-f", "json", cwd=repo.root)) == {
        "kafka": {"owner": "web"},
        "name": "x",
    }
    assert as_json(run_cfgtool("get", "/data/y", "-f", "json", cwd=repo.root)) == {
        "kafka": None,
        "name": "y",
        "other": 1,
    }
    # a key without a node: the snapshot merges its layers itself, since its config uses ${cfgtool.name}
    assert as_json(run_cfgtool("get", "/data/x/child", "-f", "json", "--nearest", cwd=repo.root)) == {
        "kafka": {"owner": "web"},
        "name": "child",
    }


CYCLE = {
    "tags/a/main.conf": "p = 1\n",
    "tags/a/includes": "/tags/b\n",
    "tags/b/main.conf": "q = 1\n",
    "tags/b/includes": "/tags/a\n",
    "data/x/main.conf": "r = 1\n",
    "data/x/includes": "/tags/a\n",
    "data/ok/main.conf": "s = 1\n",
}


@pytest.mark.parametrize("key", ["/tags/a", "/tags/b", "/data/x"])
@pytest.mark.parametrize("command", [["imports"], ["imports", "-r"], ["tags"], ["get"]])
def test_every_node_on_or_behind_an_import_cycle_reports_the_cycle(
    make_repo: Callable[[Mapping[str, str]], GitRepo], run_cfgtool: Run, key: str, command: list[str]
) -> None:
    repo = make_repo(CYCLE)
    proc = run_cfgtool(*command, key, cwd=repo.root)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout == ""
    assert f"{key} cannot be queried" in proc.stderr
    assert "E_CYCLE import cycle /tags/b -> /tags/a -> /tags/b" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_node_beside_an_import_cycle_is_still_answered(
    make_repo: Callable[[Mapping[str, str]], GitRepo], run_cfgtool: Run
) -> None:
    repo = make_repo(CYCLE)
    assert ok(run_cfgtool("imports", "-r", "/data/ok", cwd=repo.root)).split() == ["/data", "/"]
    assert as_json(run_cfgtool("get", "/data/ok", "-f", "json", cwd=repo.root)) == {"s": 1}
