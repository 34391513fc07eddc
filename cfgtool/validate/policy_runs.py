"""The policy runner (docs/policies.md#the-contract): import the policies named in `_CONFIG_STORE`, ask each about every
node.

- `load_policies` imports `module:Class` with the config repository's root first on `sys.path` (so
  `policies.retention:MaxRetention` is `policies/retention.py` of THAT repository, even when another
  repository's `policies` package was imported before), creates the class with no arguments and calls
  `configure(config)`. Modules of the repository are imported fresh and removed from `sys.modules`
  afterwards, and `sys.path` is restored: a policy must import what it needs at module level.
- `run_policies` builds one `NodeRequest` per node (created / altered / deleted / unchanged against the
  base) and calls `validate` for every node and policy: `PolicyViolation` is E_POLICY for that node, any
  other exception E_POLICY_ERROR naming the policy; every node is still checked. Then `close()` is called on
  every policy whose `configure()` returned, also after failures.
- `reverts` (from the store's rolled-back versions, `cfgtool.versions.sticky`): a path a change returns from a
  rolled-back version's value to the good one is shown to the policies as unchanged (the base's value is the
  new one there), so a change-aware policy does not judge an emergency revert; W_POLICY_SKIPPED_REVERT says so.
  Every other change is judged as before.

Policy problems that are not about one node are E_POLICY_ERROR at the policy's entry in `_CONFIG_STORE`. They are
import errors, a class that is not a Policy, a `configure` that rejects its settings, a failing `close`.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import sys
import traceback
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from cfgtool._util.plain import MISSING, value_at
from cfgtool.diagnostics import Diagnostic
from cfgtool.hocon import split_path
from cfgtool.policies import Change, NodeRequest, Policy, PolicyViolation
from cfgtool.snapshot.model import NodeSnapshot, Snapshot
from cfgtool.store.settings import SETTINGS_FILE, PolicySpec
from cfgtool.validate.locate import LazyOwnConfig, locate, main_conf, parse_path


@dataclass(frozen=True)
class LoadedPolicy:
    """A configured policy: its name as written in `_CONFIG_STORE` and where that entry is."""

    name: str  # "module:Class"
    policy: Policy
    file: str
    line: int | None
    col: int | None
    root: Path = Path()  # the config repository: exception notes name files relative to it

    def error(self, message: str, key: str | None = None, notes: Sequence[str] = ()) -> Diagnostic:
        return Diagnostic.of(
            "E_POLICY_ERROR", message, key=key, file=self.file, line=self.line, col=self.col, notes=notes
        )


class _LoadError(Exception):
    """Internal: why a policy could not be created; never leaves this module."""

    def __init__(self, message: str, notes: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.notes = tuple(notes)


def load_policies(
    specs: Sequence[PolicySpec],
    repo_root: Path,
    settings_file: str = SETTINGS_FILE,
    settings_text: str | None = None,
    code_root: Path | None = None,
) -> tuple[list[LoadedPolicy], list[Diagnostic]]:
    """Import, create and configure each policy, in order. A policy that fails is E_POLICY_ERROR at its entry in
    `settings_file`, located in `settings_text` when given. It is left out; the others are loaded.

    `code_root` holds the repository's own modules when they come from a git ref (`cfgtool.validate.rules`). The
    working tree of `repo_root` is then kept off `sys.path` while importing.
    """
    marks = _entry_marks(settings_text)
    loaded: list[LoadedPolicy] = []
    diags: list[Diagnostic] = []
    for index, spec in enumerate(specs):
        line, col = marks[index] if index < len(marks) else (None, None)
        try:
            policy = _create(spec, code_root or repo_root, repo_root)
        except _LoadError as err:
            message = f"policy {spec.class_path}: {err.message}"
            diags.append(
                Diagnostic.of("E_POLICY_ERROR", message, file=settings_file, line=line, col=col, notes=err.notes)
            )
            continue
        loaded.append(LoadedPolicy(spec.class_path, policy, settings_file, line, col, code_root or repo_root))
    return loaded, diags


def _create(spec: PolicySpec, repo_root: Path, work_tree: Path) -> Policy:
    module_name, sep, class_name = spec.class_path.partition(":")
    if not sep or not module_name or not class_name:
        raise _LoadError("a policy is named 'module:Class', e.g. policies.retention:MaxRetention")
    try:
        with _repository_on_path(repo_root, module_name, work_tree):
            module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is not None and (module_name == err.name or module_name.startswith(err.name + ".")):
            where = f"in {repo_root} or the installed packages"
            raise _LoadError(f"cannot import module {module_name!r}: {err} ({where})") from err
        notes = _where(err, repo_root)
        raise _LoadError(f"importing module {module_name!r} failed: {_exception(err)}", notes) from err
    except Exception as err:
        raise _LoadError(f"importing module {module_name!r} failed: {_exception(err)}", _where(err, repo_root)) from err
    target: Any = module
    for part in class_name.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise _LoadError(f"module {module_name!r} ({_module_file(module)}) has no class {class_name!r}")
    if not isinstance(target, type):
        raise _LoadError(f"{class_name!r} is not a class but {type(target).__name__}")
    try:
        policy = target()
    except Exception as err:
        raise _LoadError(f"creating {class_name}() failed: {_exception(err)}", _where(err, repo_root)) from err
    if not isinstance(policy, Policy):
        missing = [m for m in ("configure", "validate", "close") if not callable(getattr(policy, m, None))]
        raise _LoadError(f"{class_name} is not a Policy: it has no {', '.join(m + '()' for m in missing)}")
    try:
        policy.configure(spec.config)
    except Exception as err:
        raise _LoadError(f"configure() rejected its settings: {_exception(err)}", _where(err, repo_root)) from err
    return policy


@contextmanager
def _repository_on_path(repo_root: Path, module_name: str, work_tree: Path | None = None) -> Iterator[None]:
    """Import from `repo_root` first, fresh; afterwards restore `sys.path` and `sys.modules`.

    A module family the repository provides may be imported from elsewhere already (`policies` of another
    repository). It is set aside while importing and put back afterwards. The repository's modules imported meanwhile
    are removed again. Installed packages stay imported, even in a virtualenv inside the repository. cfgtool itself
    is never re-imported: policies share the runner's classes. `repo_root` may be a ref's materialized code (not
    `work_tree`). Then the working tree and the current directory are taken off `sys.path` and no bytecode is
    written. So nothing of the checkout is imported.
    """
    root = str(repo_root.resolve())
    top = module_name.split(".")[0]
    saved_path = list(sys.path)
    saved_bytecode = sys.dont_write_bytecode
    before = set(sys.modules)
    stashed: dict[str, ModuleType] = {}
    if _provides(repo_root, top) and top in sys.modules and not _inside(sys.modules[top], root):
        stashed = {n: m for n, m in sys.modules.items() if n == top or n.startswith(top + ".")}
        for name in stashed:
            del sys.modules[name]
    if work_tree is not None and work_tree.resolve() != Path(root):
        checkout = work_tree.resolve()
        sys.path[:] = [p for p in sys.path if p and not _under(Path(p), checkout)]
        sys.dont_write_bytecode = True
    sys.path.insert(0, root)
    _forget_finders(root)
    _claim_namespace(root, top)
    try:
        yield
    finally:
        sys.path[:] = saved_path
        sys.dont_write_bytecode = saved_bytecode
        for name in set(sys.modules) - before:
            if _provides(repo_root, name.split(".")[0]) and _inside(sys.modules[name], root):
                del sys.modules[name]
        for name in stashed:
            sys.modules.pop(name, None)
        sys.modules.update(stashed)
        _forget_finders(root)


def _claim_namespace(root: str, top: str) -> None:
    """Make `top` the repository's own when it is a directory without `__init__.py` there (a namespace package).
    Python prefers a regular package of that name anywhere on `sys.path`, even after `root`. The repository's policy
    modules would then not be found, or another package's imported in their place."""
    if top in sys.modules or (Path(root, top, "__init__.py")).exists():
        return
    spec = importlib.machinery.PathFinder.find_spec(top, [root])
    if spec is not None and spec.loader is None and spec.submodule_search_locations:
        sys.modules[top] = importlib.util.module_from_spec(spec)


def _forget_finders(root: str) -> None:
    """Drop the import system's cached finders of `root` and its directories. Imports then see the files as they are
    now, such as a policy edited since. Only these. `importlib.invalidate_caches()` also re-reads every zip archive
    on `sys.path`. In a `spark-submit` driver, pyspark's archives cost seconds per policy."""
    inside = root.rstrip("/") + "/"
    for path in list(sys.path_importer_cache):
        if path == root or path.startswith(inside):
            del sys.path_importer_cache[path]


def _under(path: Path, directory: Path) -> bool:
    """Whether `path` (resolved) is `directory` or inside it; a virtualenv inside the checkout is not."""
    try:
        resolved = path.resolve()
    except OSError:
        return False
    return resolved.is_relative_to(directory) and "site-packages" not in resolved.parts


def _provides(repo_root: Path, top: str) -> bool:
    """Whether `top` is a top-level module of the repository. cfgtool itself never counts. A fork of the product
    repository holds a copy of it, but policies must share the running cfgtool's classes."""
    return top != "cfgtool" and ((repo_root / top).is_dir() or (repo_root / f"{top}.py").is_file())


def _inside(module: ModuleType | None, root: str) -> bool:
    """Whether a module was loaded from a file under `root` (namespace packages: any path under it)."""
    if module is None:
        return False
    files = [getattr(module, "__file__", None), *list(getattr(module, "__path__", []) or [])]
    return any(isinstance(f, str) and (f == root or f.startswith(root.rstrip("/") + "/")) for f in files)


def _module_file(module: ModuleType) -> str:
    return str(getattr(module, "__file__", None) or module.__name__)


def _exception(err: BaseException) -> str:
    text = str(err)
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


def _where(err: BaseException, repo_root: Path) -> list[str]:
    """A note naming the innermost frame of a policy's exception (or a SyntaxError's position)."""
    if isinstance(err, SyntaxError) and err.filename:
        return [f"at {_relative(err.filename, repo_root)}:{err.lineno}"]
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return []
    root = repo_root.resolve()
    own = [f for f in frames if Path(f.filename).resolve().is_relative_to(root)]
    last = (own or frames)[-1]  # the policy's own line rather than a library's
    return [f"raised at {_relative(last.filename, repo_root)}:{last.lineno} in {last.name}"]


def _relative(filename: str, repo_root: Path) -> str:
    try:
        return Path(filename).resolve().relative_to(repo_root.resolve()).as_posix()
    except ValueError:
        return filename


def _entry_marks(text: str | None) -> list[tuple[int, int]]:
    """Line and column of each entry of `policies:` in the `_CONFIG_STORE` text (empty when unknown)."""
    if not text:
        return []
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    if not isinstance(root, yaml.MappingNode):
        return []
    for k, v in root.value:
        if isinstance(k, yaml.ScalarNode) and k.value == "policies" and isinstance(v, yaml.SequenceNode):
            return [(item.start_mark.line + 1, item.start_mark.column + 1) for item in v.value]
    return []


def run_policies(
    policies: Sequence[LoadedPolicy],
    snapshot: Snapshot,
    base: Snapshot | None = None,
    principal: str | None = None,
    *,
    present: Collection[str] = (),
    close: bool = True,
    reverts: Reverts | None = None,
) -> list[Diagnostic]:
    """Ask every policy about every node; then (with `close`) close them all.

    `present`: keys that have a node in the new store but are missing from `snapshot`, because they failed to
    compile. They are skipped instead of looking deleted; their own errors are reported already. `reverts`: see the
    module docstring.
    """
    diags: list[Diagnostic] = []
    try:
        for request, node in _requests(snapshot, base, principal, present):
            if reverts and request.key in reverts and request.change == "altered":
                request, skipped = _without_reverts(request, reverts[request.key])
                if skipped:
                    diags.append(_skipped(request.key, node, snapshot.store, skipped))
            for loaded in policies:
                diags += _validate(loaded, request, node, snapshot, base)
    finally:
        if close:
            diags += close_policies(policies)
    return diags


Reverts = Mapping[str, Mapping[str, tuple[Any, Any, int]]]
"""key -> {path: (rolled-back value, good value, rolled-back version)} for values the base holds that a
rolled-back version introduced (MISSING: unset)."""


def _without_reverts(
    request: NodeRequest, watched: Mapping[str, tuple[Any, Any, int]]
) -> tuple[NodeRequest, list[tuple[str, int]]]:
    """The request with each path the change returns to its good value shown as unchanged. Also those paths."""
    previous = request.previous_config
    assert previous is not None
    skipped: list[tuple[str, int]] = []
    for path, (_bad, good, version) in watched.items():
        parts = split_path(path)
        new = value_at(request.resolved_config, parts)
        if _same(new, good):
            previous = _with_value(previous, parts, new)
            skipped.append((path, version))
    if not skipped:
        return request, skipped
    change: Change = "unchanged" if previous == request.resolved_config else "altered"
    return replace(request, change=change, previous_config=previous), skipped


def _same(a: Any, b: Any) -> bool:
    """Strictly equal plain values (`1`, `1.0` and `true` differ), or both MISSING."""
    if a is MISSING or b is MISSING:
        return a is b
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _with_value(config: Mapping[str, Any], parts: tuple[str, ...], value: Any) -> Mapping[str, Any]:
    """A copy of `config` with the value at `parts` set to `value` (removed when MISSING). Only the objects on the
    path are copied."""
    out = dict(config)
    head, rest = parts[0], parts[1:]
    if not rest:
        if value is MISSING:
            out.pop(head, None)
        else:
            out[head] = value
        return out
    inner = out.get(head)
    out[head] = _with_value(inner if isinstance(inner, Mapping) else {}, rest, value)
    return out


def _skipped(key: str, node: NodeSnapshot, store: str, skipped: Sequence[tuple[str, int]]) -> Diagnostic:
    """W_POLICY_SKIPPED_REVERT at the line that sets the first path left unjudged."""
    file, line, col = locate(node, store, split_path(skipped[0][0]))
    paths = ", ".join(f"{path} (rolled back in version {version})" for path, version in skipped)
    message = (
        f"policies did not judge {paths}: this change returns the value to the one before the rolled-back"
        " version (an emergency revert)"
    )
    return Diagnostic.of("W_POLICY_SKIPPED_REVERT", message, key=key, file=file, line=line, col=col)


def close_policies(policies: Sequence[LoadedPolicy]) -> list[Diagnostic]:
    """Call `close()` on every policy; an exception is E_POLICY_ERROR and the others are still closed."""
    diags = []
    for loaded in policies:
        try:
            loaded.policy.close()
        except Exception as err:
            diags.append(loaded.error(f"policy {loaded.name}: close() failed: {_exception(err)}"))
    return diags


def _requests(
    snapshot: Snapshot, base: Snapshot | None, principal: str | None, present: Collection[str]
) -> Iterator[tuple[NodeRequest, NodeSnapshot]]:
    """One request per node in key order, with the node whose provenance locates its problems."""
    keys = set(snapshot.nodes)
    if base is not None:
        keys |= set(base.nodes) - set(present)
    for key in sorted(keys):
        node = snapshot.nodes.get(key)
        before = base.nodes.get(key) if base is not None else None
        if node is None:
            assert base is not None and before is not None
            if before.config is None:
                continue
            request = NodeRequest(
                key, "deleted", {}, {}, before.config, tuple(base.imports(key)), tuple(base.tags(key)), principal
            )
            yield request, before
            continue
        if node.config is None:
            continue
        change: Change
        previous: Mapping[str, Any] | None = None
        if base is None:
            change = "unchanged"
        elif before is None:
            change = "created"
        else:
            previous = before.config
            change = "unchanged" if previous == node.config else "altered"
        yield (
            NodeRequest(
                key,
                change,
                LazyOwnConfig(node),
                node.config,
                previous,
                tuple(snapshot.imports(key)),
                tuple(snapshot.tags(key)),
                principal,
            ),
            node,
        )


def _validate(
    loaded: LoadedPolicy, request: NodeRequest, node: NodeSnapshot, snapshot: Snapshot, base: Snapshot | None
) -> list[Diagnostic]:
    try:
        loaded.policy.validate(request)
    except PolicyViolation as violation:
        store = (base if request.change == "deleted" and base is not None else snapshot).store
        file, line, col = main_conf(node, store)
        path = parse_path(violation.path) if violation.path else None
        if path and request.change != "deleted":
            file, line, col = locate(node, store, path)
        if request.change == "deleted":
            line = col = None  # the file is gone from the new store
        message = f"{violation.message or type(violation).__name__} (policy {loaded.name})"
        return [Diagnostic.of("E_POLICY", message, key=request.key, file=file, line=line, col=col)]
    except Exception as err:
        notes = _where(err, loaded.root)
        return [loaded.error(f"policy {loaded.name} failed: {_exception(err)}", key=request.key, notes=notes)]
    return []


def check_policies(
    specs: Sequence[PolicySpec],
    repo_root: Path,
    snapshot: Snapshot,
    base: Snapshot | None = None,
    principal: str | None = None,
    *,
    settings_file: str = SETTINGS_FILE,
    settings_text: str | None = None,
    present: Collection[str] = (),
    code_root: Path | None = None,
    reverts: Reverts | None = None,
) -> list[Diagnostic]:
    """Load, run and close the policies of `specs` (what compile does): every diagnostic, in order."""
    policies, diags = load_policies(specs, repo_root, settings_file, settings_text, code_root)
    return diags + run_policies(policies, snapshot, base, principal, present=present, reverts=reverts)
