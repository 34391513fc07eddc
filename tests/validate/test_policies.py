"""The public policy contract and the built-in policies, on hand-built NodeRequests."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

import cfgtool.policies
from cfgtool.policies import (
    BasePolicy,
    FrozenPaths,
    MonotonicPaths,
    NodeRequest,
    Policy,
    PolicyViolation,
    ProtectedDeletes,
)


def request(
    change: str = "altered",
    resolved: Mapping[str, Any] | None = None,
    previous: Mapping[str, Any] | None = None,
    key: str = "/data/x",
    tags: tuple[str, ...] = (),
) -> NodeRequest:
    return NodeRequest(key, change, {}, resolved or {}, previous, (), tags, None)  # type: ignore[arg-type]


def configured(cls: type[Any], settings: Mapping[str, Any]) -> Any:
    policy = cls()
    policy.configure(settings)
    return policy


def test_contract_names_are_public() -> None:
    assert {"Policy", "NodeRequest", "PolicyViolation"} <= set(cfgtool.policies.__all__)


def test_node_request_fields_are_design_8_2_and_frozen() -> None:
    names = [f.name for f in dataclasses.fields(NodeRequest)]
    assert names == [
        "key",
        "change",
        "own_config",
        "resolved_config",
        "previous_config",
        "imports",
        "tags",
        "principal",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        request().key = "/other"  # type: ignore[misc]


def test_policy_violation_carries_message_and_path() -> None:
    err = PolicyViolation("too big", path="a.b")
    assert (err.message, err.path, str(err)) == ("too big", "a.b", "too big")
    assert PolicyViolation("x").path is None


def test_policy_protocol_is_structural() -> None:
    class Plain:
        def configure(self, settings: Mapping[str, Any]) -> None: ...
        def validate(self, request: NodeRequest) -> None: ...
        def close(self) -> None: ...

    class NoClose:
        def configure(self, settings: Mapping[str, Any]) -> None: ...
        def validate(self, request: NodeRequest) -> None: ...

    assert isinstance(Plain(), Policy)
    assert not isinstance(NoClose(), Policy)
    for builtin in (MonotonicPaths, FrozenPaths, ProtectedDeletes, BasePolicy):
        assert isinstance(builtin(), Policy)


def test_base_policy_rejects_settings_and_needs_validate() -> None:
    base = BasePolicy()
    base.configure({})
    base.close()
    with pytest.raises(ValueError, match="takes no settings"):
        base.configure({"x": 1})
    with pytest.raises(NotImplementedError):
        base.validate(request())


# ---------------------------------------------------------------------------------------------- MonotonicPaths


def test_monotonic_paths_decrease_is_a_violation_naming_path_old_and_new() -> None:
    policy = configured(MonotonicPaths, {"paths": ["kafka.partitions"]})
    with pytest.raises(PolicyViolation) as info:
        policy.validate(request(resolved={"kafka": {"partitions": 8}}, previous={"kafka": {"partitions": 16}}))
    assert info.value.path == "kafka.partitions"
    assert info.value.message == "kafka.partitions may only grow, but it decreases from 16 to 8"


@pytest.mark.parametrize(
    ("change", "old", "new"),
    [
        ("altered", 8, 16),  # grows
        ("altered", 8, 8),
        ("altered", 8, 7.5 + 1),  # int -> float, larger
        ("created", None, 1),  # nothing to compare with
        ("unchanged", 8, 4),  # only altered nodes are checked
        ("deleted", 8, None),
        ("altered", "8", 4),  # not numbers: the schemas' business
        ("altered", True, 0),  # booleans are not numbers
    ],
)
def test_monotonic_paths_accepts_growth_and_other_changes(change: str, old: Any, new: Any) -> None:
    policy = configured(MonotonicPaths, {"paths": ["kafka.partitions"]})
    previous = None if old is None else {"kafka": {"partitions": old}}
    resolved = {} if new is None else {"kafka": {"partitions": new}}
    policy.validate(request(change, resolved, previous))


def test_monotonic_paths_quoted_path_expression() -> None:
    policy = configured(MonotonicPaths, {"paths": ['kafka.config."min.insync.replicas"']})
    old = {"kafka": {"config": {"min.insync.replicas": 2}}}
    new = {"kafka": {"config": {"min.insync.replicas": 1}}}
    with pytest.raises(PolicyViolation, match="decreases from 2 to 1"):
        policy.validate(request(resolved=new, previous=old))


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({}, ValueError, "'paths' is required"),
        ({"paths": []}, ValueError, "'paths' is empty"),
        ({"paths": "kafka.partitions"}, TypeError, "must be a list of non-empty strings"),
        ({"paths": [1]}, TypeError, "must be a list of non-empty strings"),
        ({"paths": ["a"], "path": "b"}, ValueError, "unknown setting"),
        ({"paths": ["a..b"]}, ValueError, "not a path expression"),
    ],
)
def test_path_policies_configure_rejects_bad_settings(settings: Mapping[str, Any], error: type, match: str) -> None:
    for cls in (MonotonicPaths, FrozenPaths):
        with pytest.raises(error, match=match):
            cls().configure(settings)


# ---------------------------------------------------------------------------------------------- FrozenPaths


def test_frozen_paths_change_on_altered_node_is_a_violation() -> None:
    policy = configured(FrozenPaths, {"paths": ["kafka.cluster", "kafka.topic"]})
    old = {"kafka": {"cluster": "tracking", "topic": "T"}}
    with pytest.raises(PolicyViolation) as info:
        policy.validate(request(resolved={"kafka": {"cluster": "other", "topic": "T"}}, previous=old))
    assert info.value.path == "kafka.cluster"
    assert info.value.message == 'kafka.cluster is frozen once set, but this change moves it from "tracking" to "other"'


def test_frozen_paths_removal_is_a_violation() -> None:
    policy = configured(FrozenPaths, {"paths": ["kafka.topic"]})
    with pytest.raises(PolicyViolation, match='from "T" to unset'):
        policy.validate(request(resolved={"kafka": {}}, previous={"kafka": {"topic": "T"}}))


def test_frozen_paths_type_change_is_a_violation() -> None:
    policy = configured(FrozenPaths, {"paths": ["n"]})
    with pytest.raises(PolicyViolation, match="from 1 to true"):
        policy.validate(request(resolved={"n": True}, previous={"n": 1}))


@pytest.mark.parametrize(
    ("change", "old", "new"),
    [
        ("altered", {"topic": "T"}, {"topic": "T", "other": 1}),  # frozen value kept
        ("altered", {}, {"topic": "T"}),  # set for the first time
        ("created", None, {"topic": "T"}),
        ("unchanged", {"topic": "T"}, {"topic": "U"}),
        ("deleted", {"topic": "T"}, None),
    ],
)
def test_frozen_paths_accepts(change: str, old: Any, new: Any) -> None:
    policy = configured(FrozenPaths, {"paths": ["kafka.topic"]})
    policy.validate(request(change, None if new is None else {"kafka": new}, None if old is None else {"kafka": old}))


# ---------------------------------------------------------------------------------------------- ProtectedDeletes


def test_protected_deletes_by_tag_uses_the_requests_tags() -> None:
    policy = configured(ProtectedDeletes, {"tags": ["/tags/priority/HIGH"]})
    with pytest.raises(PolicyViolation, match="imports the protected tag /tags/priority/HIGH") as info:
        policy.validate(request("deleted", tags=("/tags/priority/HIGH", "/tags/x")))
    assert info.value.path is None
    policy.validate(request("deleted", tags=("/tags/priority/LOW",)))


def test_protected_deletes_by_key_glob() -> None:
    policy = configured(ProtectedDeletes, {"keys": ["/data/databases/**"]})
    with pytest.raises(PolicyViolation, match=r"matches the protected glob /data/databases/\*\*"):
        policy.validate(request("deleted", key="/data/databases/identity/members"))
    policy.validate(request("deleted", key="/data/tracking/X"))
    policy.validate(request("deleted", key="/data/databases"))  # a trailing /** needs at least one segment


@pytest.mark.parametrize("change", ["created", "altered", "unchanged"])
def test_protected_deletes_ignores_nodes_that_are_not_deleted(change: str) -> None:
    policy = configured(ProtectedDeletes, {"keys": ["/**"], "tags": ["/tags/t"]})
    policy.validate(request(change, tags=("/tags/t",)))


@pytest.mark.parametrize(
    ("settings", "error", "match"),
    [
        ({}, ValueError, "set 'keys'"),
        ({"keys": [], "tags": []}, ValueError, "set 'keys'"),
        ({"tags": ["bad key!"]}, ValueError, "is not a key"),
        ({"keys": "/data/**"}, TypeError, "must be a list"),
        ({"keys": ["/a"], "tag": ["/t"]}, ValueError, "unknown setting"),
    ],
)
def test_protected_deletes_configure_rejects_bad_settings(settings: Mapping[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ProtectedDeletes().configure(settings)


def test_protected_deletes_normalizes_tags() -> None:
    policy = configured(ProtectedDeletes, {"tags": ["tags/t/"]})
    assert policy.tags == ("/tags/t",)
