"""The policy runner: loading `module:Class` from the config repository, NodeRequests, per-node isolation."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cfgtool.compile.compiler import CompileResult, compile_store
from cfgtool.diagnostics import Diagnostic
from cfgtool.policies import BasePolicy, MonotonicPaths, NodeRequest
from cfgtool.store.settings import PolicySpec
from cfgtool.validate import LoadedPolicy, check_policies, close_policies, load_policies, run_policies

REPO_ROOT = Path(__file__).resolve().parents[2]  # the checkout: the embedded store and schemas

Compile = Callable[..., CompileResult]

RECORD = '''\
class Record:
    """Accepts everything and remembers what it saw."""

    def __init__(self):
        self.requests = []
        self.settings = None
        self.closed = 0

    def configure(self, settings):
        self.settings = dict(settings)

    def validate(self, request):
        self.requests.append(request)

    def close(self):
        self.closed += 1
'''

FAULTY = """\
from cfgtool.policies import PolicyViolation


class Faulty:
    def __init__(self):
        self.seen = []
        self.closed = False

    def configure(self, settings):
        self.fail_on = settings.get("fail_on")
        self.reject = settings.get("reject")

    def validate(self, request):
        self.seen.append(request.key)
        if request.key == self.fail_on:
            raise RuntimeError("boom")
        if request.key == self.reject:
            raise PolicyViolation("rejected on purpose", path=settings_path())

    def close(self):
        self.closed = True
        raise OSError("cannot close")


def settings_path():
    return "kafka.partitions"
"""


def policy_report(
    result: CompileResult, base: CompileResult | None = None, principal: str | None = None
) -> list[Diagnostic]:
    """check_policies as compile calls it, with the store's settings and the text of its _CONFIG_STORE."""
    store = result.store
    text = (store.source.repo_root / store.settings_file).read_text(encoding="utf-8")
    return check_policies(
        store.settings.policies,
        store.source.repo_root,
        result.snapshot,
        base.snapshot if base else None,
        principal,
        settings_file=store.settings_file,
        settings_text=text,
    )


# --------------------------------------------------------------------------------------------- requests


BASE_FILES = {
    "store/_CONFIG_STORE": "",
    "store/main.conf": "level = 1\n",
    "store/data/same/main.conf": "x = 1\n",
    "store/data/same/includes": "/tags/t\n",
    "store/data/changed/main.conf": "x = 1\ny = ${level}\n",
    "store/data/gone/main.conf": "x = 1\n",
    "store/data/gone/includes": "/tags/t\n",
    "store/tags/t/main.conf": "tagged = true\n",
    "policies/__init__.py": "",
    "policies/record.py": RECORD,
}


def recorded(repo: Any, compile_files: Compile, base: bool = True) -> tuple[dict[str, Any], Any]:
    compile_files(BASE_FILES)
    commit = repo.commit("base")
    new = compile_files(
        {
            "store/data/changed/main.conf": "x = 2\ny = ${level}\n",
            "store/data/gone/main.conf": None,
            "store/data/gone/includes": None,
            "store/data/new/main.conf": "x = 3\n",
        }
    )
    before = compile_store(repo.root, "store", commit) if base else None
    loaded, diags = load_policies([PolicySpec("policies.record:Record", {"k": "v"})], repo.root)
    assert diags == []
    out = run_policies(loaded, new.snapshot, before.snapshot if before else None, "alice")
    assert out == []
    policy: Any = loaded[0].policy
    return {r.key: r for r in policy.requests}, policy


def test_run_policies_classifies_created_altered_deleted_unchanged(repo: Any, compile_files: Compile) -> None:
    requests, policy = recorded(repo, compile_files)
    assert policy.settings == {"k": "v"}
    assert policy.closed == 1
    assert {k: r.change for k, r in requests.items()} == {
        "/": "unchanged",
        "/data": "unchanged",
        "/data/changed": "altered",
        "/data/gone": "deleted",
        "/data/new": "created",
        "/data/same": "unchanged",
        "/tags": "unchanged",
        "/tags/t": "unchanged",
    }
    changed = requests["/data/changed"]
    assert changed.own_config == {"x": 2, "y": 1}
    assert changed.resolved_config == {"level": 1, "x": 2, "y": 1}
    assert changed.previous_config == {"level": 1, "x": 1, "y": 1}
    assert changed.principal == "alice"
    gone = requests["/data/gone"]
    assert (gone.own_config, gone.resolved_config) == ({}, {})
    assert gone.previous_config == {"level": 1, "x": 1, "tagged": True}
    assert (gone.imports, gone.tags) == (("/tags/t",), ("/tags/t",))
    same = requests["/data/same"]
    assert same.previous_config == same.resolved_config == {"level": 1, "x": 1, "tagged": True}
    assert (same.imports, same.tags, same.own_config) == (("/tags/t",), ("/tags/t",), {"x": 1})
    assert requests["/data/new"].previous_config is None


def test_run_policies_without_base_everything_is_unchanged(repo: Any, compile_files: Compile) -> None:
    requests, _ = recorded(repo, compile_files, base=False)
    assert "/data/gone" not in requests
    assert {r.change for r in requests.values()} == {"unchanged"}
    assert {r.previous_config is None for r in requests.values()} == {True}


def test_run_policies_node_failing_to_compile_is_not_deleted(repo: Any, compile_files: Compile) -> None:
    compile_files({**BASE_FILES, "store/_CONFIG_STORE": "policies: [policies.record:Record]\n"})
    base = compile_store(repo.root, "store", repo.commit())
    new = compile_files({"store/data/same/main.conf": "x = ${nope}\n"})
    assert [d.code for d in new.diagnostics] == ["E_UNRESOLVED_REF"]
    loaded, _ = load_policies(new.store.settings.policies, repo.root)
    run_policies(loaded, new.snapshot, base.snapshot, None, present=new.store.nodes.keys())
    record: Any = loaded[0].policy
    keys = {r.key for r in record.requests}
    assert "/data/same" not in keys and "/data/changed" in keys


# ------------------------------------------------------------------------------------- built-ins, two commits


TOPICS = {
    "store/_CONFIG_STORE": (
        "policies:\n"
        "  - class: cfgtool.policies:MonotonicPaths\n"
        "    config: {paths: [kafka.partitions]}\n"
        "  - class: cfgtool.policies:FrozenPaths\n"
        "    config: {paths: [kafka.cluster]}\n"
        "  - class: cfgtool.policies:ProtectedDeletes\n"
        "    config: {tags: [/tags/HIGH]}\n"
    ),
    "store/data/t/main.conf": "kafka.cluster = tracking\nkafka.partitions = 8\n",
    "store/data/t/a/main.conf": "kafka.partitions = 16\n",
    "store/data/t/b/main.conf": "kafka.partitions = 4\n",
    "store/data/t/h/main.conf": "kafka.partitions = 32\n",
    "store/data/t/h/includes": "/tags/HIGH\n",
    "store/data/t/low/main.conf": "n = 1\n",
    "store/tags/HIGH/main.conf": "priority = HIGH\n",
}


def test_builtin_policies_on_a_second_commit_breaking_each_rule(repo: Any, compile_files: Compile) -> None:
    compile_files(TOPICS)
    base = compile_store(repo.root, "store", repo.commit("v1"))
    assert policy_report(base, base) == []
    compile_files(
        {
            "store/data/t/main.conf": "kafka.cluster = tracking\nkafka.partitions = 8\n",
            "store/data/t/a/main.conf": "\nkafka.partitions = 12\n",  # shrinks: 16 -> 12
            "store/data/t/b/main.conf": "kafka.partitions = 6\nkafka.cluster = moved\n",  # grows, but moves
            "store/data/t/h/main.conf": None,  # a HIGH topic deleted
            "store/data/t/h/includes": None,
            "store/data/t/low/main.conf": None,  # an unprotected topic deleted
        }
    )
    new = compile_store(repo.root, "store", repo.commit("v2"))
    diags = policy_report(new, base, "bob")
    assert [(d.code, d.key, d.file, d.line, d.col, d.message) for d in diags] == [
        (
            "E_POLICY",
            "/data/t/a",
            "store/data/t/a/main.conf",
            2,
            20,
            "kafka.partitions may only grow, but it decreases from 16 to 12 (policy cfgtool.policies:MonotonicPaths)",
        ),
        (
            "E_POLICY",
            "/data/t/b",
            "store/data/t/b/main.conf",
            2,
            17,
            'kafka.cluster is frozen once set, but this change moves it from "tracking" to "moved" '
            "(policy cfgtool.policies:FrozenPaths)",
        ),
        (
            "E_POLICY",
            "/data/t/h",
            "store/data/t/h/main.conf",
            None,
            None,
            "this node may not be deleted: it imports the protected tag /tags/HIGH "
            "(remove the tag in a separate reviewed change first) (policy cfgtool.policies:ProtectedDeletes)",
        ),
    ]


def test_policy_violation_in_an_inherited_value_points_at_the_layer_that_set_it(
    repo: Any, compile_files: Compile
) -> None:
    compile_files(TOPICS)
    base = compile_store(repo.root, "store", repo.commit("v1"))
    new = compile_files({"store/data/t/main.conf": "kafka.cluster = other\nkafka.partitions = 8\n"})
    diags = policy_report(new, base)
    assert {(d.file, d.line, d.col) for d in diags} == {("store/data/t/main.conf", 1, 17)}
    # the group node itself and every topic under it moved: one message, many keys (grouped by renderers)
    assert sorted(str(d.key) for d in diags) == ["/data/t", "/data/t/a", "/data/t/b", "/data/t/h", "/data/t/low"]
    assert len({d.message for d in diags}) == 1


# ----------------------------------------------------------------------------------- isolation and errors


def faulty_store(compile_files: Compile, config: str) -> CompileResult:
    result: CompileResult = compile_files(
        {
            "store/_CONFIG_STORE": (
                "policies:\n"
                f"  - class: policies.faulty:Faulty\n    config: {config}\n"
                "  - class: cfgtool.policies:ProtectedDeletes\n    config: {keys: ['/nothing']}\n"
                "  - policies.record:Record\n"
            ),
            "store/a/main.conf": "kafka.partitions = 1\n",
            "store/b/main.conf": "kafka { partitions = 2 }\n",
            "store/c/main.conf": "n = 3\n",
            "store/d/includes": "",
            "policies/__init__.py": "",
            "policies/faulty.py": FAULTY,
            "policies/record.py": RECORD,
        }
    )
    return result


def test_policy_raising_is_E_POLICY_ERROR_and_every_node_is_still_checked(repo: Any, compile_files: Compile) -> None:
    result = faulty_store(compile_files, "{fail_on: /a, reject: /b}")
    settings = result.store.settings
    loaded, diags = load_policies(
        settings.policies, repo.root, "store/_CONFIG_STORE", (repo.root / "store/_CONFIG_STORE").read_text()
    )
    assert diags == []
    diags = run_policies(loaded, result.snapshot)
    assert [(d.code, d.key, d.file, d.line, d.col, d.message, d.notes) for d in diags] == [
        (
            "E_POLICY_ERROR",
            "/a",
            "store/_CONFIG_STORE",
            2,
            5,
            "policy policies.faulty:Faulty failed: RuntimeError: boom",
            ("raised at policies/faulty.py:16 in validate",),
        ),
        (
            "E_POLICY",
            "/b",
            "store/b/main.conf",
            1,
            22,
            "rejected on purpose (policy policies.faulty:Faulty)",
            (),
        ),
        (
            "E_POLICY_ERROR",
            None,
            "store/_CONFIG_STORE",
            2,
            5,
            "policy policies.faulty:Faulty: close() failed: OSError: cannot close",
            (),
        ),
    ]
    faulty: Any = loaded[0].policy
    record: Any = loaded[2].policy
    assert faulty.seen == ["/", "/a", "/b", "/c", "/d"]
    assert faulty.closed
    assert [r.key for r in record.requests] == ["/", "/a", "/b", "/c", "/d"]  # later policies still run
    assert record.closed == 1  # closed although the first policy's close() failed


def test_policy_violation_location_without_path_or_file(repo: Any, compile_files: Compile) -> None:
    result = faulty_store(compile_files, "{reject: /c}")
    diags = run_policies(load_policies(result.store.settings.policies, repo.root)[0], result.snapshot)
    # path kafka.partitions is not set in /c: its main.conf, line 1
    assert [(d.key, d.file, d.line, d.col) for d in diags if d.code == "E_POLICY"] == [
        ("/c", "store/c/main.conf", 1, 1)
    ]
    result = faulty_store(compile_files, "{reject: /d}")
    diags = run_policies(load_policies(result.store.settings.policies, repo.root)[0], result.snapshot)
    # /d has no main.conf: the file it would have, without a line
    assert [(d.key, d.file, d.line, d.col) for d in diags if d.code == "E_POLICY"] == [
        ("/d", "store/d/main.conf", None, None)
    ]


def test_run_policies_closes_every_policy_when_the_run_is_interrupted(repo: Any, compile_files: Compile) -> None:
    result = faulty_store(compile_files, "{}")
    loaded, _ = load_policies(result.store.settings.policies, repo.root)

    class Interrupt(BasePolicy):
        def validate(self, request: NodeRequest) -> None:
            raise KeyboardInterrupt  # not an Exception: it ends the run, after closing every policy

    interrupt = LoadedPolicy("tests:Interrupt", Interrupt(), "store/_CONFIG_STORE", None, None)
    with pytest.raises(KeyboardInterrupt):
        run_policies([*loaded, interrupt], result.snapshot)
    faulty: Any = loaded[0].policy
    record: Any = loaded[2].policy
    assert faulty.closed and record.closed == 1
    assert [r.key for r in record.requests] == ["/"]
    assert close_policies(loaded[1:]) == []


# ------------------------------------------------------------------------------------------- loading


def load_errors(repo: Any, entries: str, files: dict[str, str]) -> list[tuple[int | None, str, tuple[str, ...]]]:
    text = f"policies:\n{entries}"
    repo.write({"store/_CONFIG_STORE": text, **files})
    from cfgtool.store.settings import parse_settings

    settings, problems = parse_settings(text)
    assert problems == []
    loaded, diags = load_policies(settings.policies, repo.root, "store/_CONFIG_STORE", text)
    assert all(d.code == "E_POLICY_ERROR" and d.file == "store/_CONFIG_STORE" for d in diags)
    assert all(isinstance(lp.policy, MonotonicPaths) for lp in loaded)
    return [(d.line, d.message, d.notes) for d in diags]


def test_load_policies_import_errors_name_the_class_and_the_reason(repo: Any) -> None:
    files = {
        "policies/__init__.py": "",
        "policies/broken.py": "def oops(:\n",
        "policies/needs.py": "import not_installed_anywhere\n",
        "policies/shapes.py": (
            "import cfgtool.policies as p\n"
            "NotAClass = 3\n"
            "class NoClose:\n"
            "    def configure(self, s): pass\n"
            "    def validate(self, r): pass\n"
            "class NeedsArgs(p.BasePolicy):\n"
            "    def __init__(self, x): pass\n"
            "class Picky(p.MonotonicPaths):\n"
            "    pass\n"
        ),
    }
    entries = (
        "  - policies.nothere:X\n"
        "  - policies.shapes:Missing\n"
        "  - policies.shapes:NotAClass\n"
        "  - policies.shapes:NoClose\n"
        "  - policies.shapes:NeedsArgs\n"
        "  - class: policies.shapes:Picky\n    config: {paths: []}\n"
        "  - policies.broken:X\n"
        "  - policies.needs:X\n"
        "  - class: policies.shapes:Picky\n    config: {paths: [a]}\n"
    )
    errors = load_errors(repo, entries, files)
    root = str(repo.root.resolve())
    assert errors[0][:2] == (
        2,
        f"policy policies.nothere:X: cannot import module 'policies.nothere': No module named 'policies.nothere' "
        f"(in {root} or the installed packages)",
    )
    assert errors[1][:2] == (
        3,
        f"policy policies.shapes:Missing: module 'policies.shapes' ({root}/policies/shapes.py) has no class 'Missing'",
    )
    assert errors[2][:2] == (4, "policy policies.shapes:NotAClass: 'NotAClass' is not a class but int")
    assert errors[3][:2] == (5, "policy policies.shapes:NoClose: NoClose is not a Policy: it has no close()")
    assert errors[4][0] == 6
    assert errors[4][1].startswith("policy policies.shapes:NeedsArgs: creating NeedsArgs() failed: TypeError: ")
    assert errors[5][:2] == (
        7,
        "policy policies.shapes:Picky: configure() rejected its settings: "
        "ValueError: MonotonicPaths: setting 'paths' is empty, so the policy would check nothing",
    )
    assert errors[6] == (
        9,
        "policy policies.broken:X: importing module 'policies.broken' failed: SyntaxError: invalid syntax "
        "(broken.py, line 1)",
        ("at policies/broken.py:1",),
    )
    assert errors[7] == (
        10,
        "policy policies.needs:X: importing module 'policies.needs' failed: "
        "ModuleNotFoundError: No module named 'not_installed_anywhere'",
        ("raised at policies/needs.py:1 in <module>",),
    )
    assert len(errors) == 8  # the last entry loads


def test_load_policies_bad_class_path() -> None:
    loaded, diags = load_policies([PolicySpec("no_colon")], Path("/nonexistent"))
    assert loaded == []
    assert [(d.code, d.file, d.line, d.message) for d in diags] == [
        (
            "E_POLICY_ERROR",
            "_CONFIG_STORE",
            None,
            "policy no_colon: a policy is named 'module:Class', e.g. policies.retention:MaxRetention",
        )
    ]


def make_policy_repo(root: Path, value: str) -> None:
    (root / "policies").mkdir(parents=True)
    (root / "policies" / "__init__.py").write_text("")
    (root / "policies" / "check.py").write_text(
        f"from cfgtool.policies import BasePolicy\nclass Check(BasePolicy):\n    VALUE = {value!r}\n"
    )


def test_load_policies_imports_each_repository_fresh_and_restores_sys_path(tmp_path: Path) -> None:
    make_policy_repo(tmp_path / "one", "one")
    make_policy_repo(tmp_path / "two", "two")
    path_before = list(sys.path)
    first, _ = load_policies([PolicySpec("policies.check:Check")], tmp_path / "one")
    second, _ = load_policies([PolicySpec("policies.check:Check")], tmp_path / "two")
    assert (type(first[0].policy).VALUE, type(second[0].policy).VALUE) == ("one", "two")  # type: ignore[attr-defined]
    assert sys.path == path_before
    assert "policies.check" not in sys.modules


def test_load_policies_sees_a_module_added_since_the_last_load(tmp_path: Path) -> None:
    """A module written after a load is found by the next one, even when its directory's modification time
    did not change (timestamps are coarse: two writes in the same tick leave it equal), since cached directory
    listings are dropped."""
    make_policy_repo(tmp_path, "one")
    assert load_policies([PolicySpec("policies.check:Check")], tmp_path)[1] == []
    package = tmp_path / "policies"
    mtime = package.stat().st_mtime_ns
    (package / "added.py").write_text("from cfgtool.policies import BasePolicy\nclass Added(BasePolicy):\n    pass\n")
    os.utime(package, ns=(mtime, mtime))
    loaded, diags = load_policies([PolicySpec("policies.added:Added")], tmp_path)
    assert diags == []
    assert type(loaded[0].policy).__name__ == "Added"


def test_load_policies_a_policies_package_imported_elsewhere_does_not_shadow(tmp_path: Path) -> None:
    make_policy_repo(tmp_path / "elsewhere", "elsewhere")
    make_policy_repo(tmp_path / "repo", "repo")
    sys.path.insert(0, str(tmp_path / "elsewhere"))
    saved = {n: m for n, m in sys.modules.items() if n == "policies" or n.startswith("policies.")}
    try:
        for name in saved:
            del sys.modules[name]
        import policies.check  # type: ignore[import-not-found]

        loaded, diags = load_policies([PolicySpec("policies.check:Check")], tmp_path / "repo")
        assert diags == []
        assert type(loaded[0].policy).VALUE == "repo"  # type: ignore[attr-defined]
        assert sys.modules["policies.check"] is policies.check  # the other one is back
        assert policies.check.Check.VALUE == "elsewhere"
    finally:
        sys.path.remove(str(tmp_path / "elsewhere"))
        for name in [n for n in sys.modules if n == "policies" or n.startswith("policies.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def test_load_policies_a_namespace_package_of_the_repository_beats_a_regular_one_elsewhere(tmp_path: Path) -> None:
    """A repository's `policies/` without `__init__.py` is still the one imported. Python would prefer a regular
    `policies` package anywhere on `sys.path`, such as a checkout of cfgtool's own examples."""
    make_policy_repo(tmp_path / "elsewhere", "elsewhere")
    make_policy_repo(tmp_path / "repo", "repo")
    (tmp_path / "repo" / "policies" / "__init__.py").unlink()
    sys.path.append(str(tmp_path / "elsewhere"))
    saved = {n: m for n, m in sys.modules.items() if n == "policies" or n.startswith("policies.")}
    try:
        for name in saved:
            del sys.modules[name]
        loaded, diags = load_policies([PolicySpec("policies.check:Check")], tmp_path / "repo")
        assert diags == []
        assert type(loaded[0].policy).VALUE == "repo"  # type: ignore[attr-defined]
        assert "policies" not in sys.modules
    finally:
        sys.path.remove(str(tmp_path / "elsewhere"))
        for name in [n for n in sys.modules if n == "policies" or n.startswith("policies.")]:
            del sys.modules[name]
        sys.modules.update(saved)


# ------------------------------------------------------------------------------------------- embedded store


def test_embedded_store_passes_its_four_policies() -> None:
    result = compile_store(REPO_ROOT, "store", None)
    assert [p.class_path for p in result.store.settings.policies] == [
        "cfgtool.policies:MonotonicPaths",
        "cfgtool.policies:FrozenPaths",
        "cfgtool.policies:ProtectedDeletes",
        "policies.retention:MaxRetention",
    ]
    assert policy_report(result) == []
    assert policy_report(result, result, "someone") == []


def test_embedded_copy_loads_its_repo_local_policy(embedded_repo: Any) -> None:
    result = compile_store(embedded_repo.root, "store", "HEAD")
    assert policy_report(result, result) == []
    loaded, _ = load_policies(result.store.settings.policies, embedded_repo.root)
    assert type(loaded[3].policy).__module__ not in sys.modules  # repo-local modules leave sys.modules again
    assert Path(type(loaded[3].policy).validate.__code__.co_filename).is_relative_to(embedded_repo.root.resolve())


def test_node_request_of_an_embedded_dataset() -> None:
    class Keep(BasePolicy):
        def __init__(self) -> None:
            self.requests: dict[str, NodeRequest] = {}

        def validate(self, request: NodeRequest) -> None:
            self.requests[request.key] = request

    keep = Keep()
    snapshot = compile_store(REPO_ROOT, "store", None).snapshot
    assert run_policies([LoadedPolicy("tests:Keep", keep, "_CONFIG_STORE", None, None)], snapshot, None, "ci") == []
    request = keep.requests["/data/tracking/PageViewEvent"]
    assert request.change == "unchanged" and request.principal == "ci"
    assert request.imports == ("/tags/priority/HIGH",)
    assert "/tags/priority/HIGH" in request.tags
    readers = request.resolved_config["acl"]["readers"]
    assert readers[-1] == "group:growth-analytics"
    assert dict(request.own_config) == {  # own values, as resolved here: `+=` gives the whole list
        "description": "A member or guest viewed a page",
        "kafka": {"partitions": 128},
        "sla": {"freshness_minutes": 15},
        "acl": {"readers": readers},
    }
