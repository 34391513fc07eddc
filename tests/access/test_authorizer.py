"""The authorizer against Kafka's own authorizer tests (apache/kafka `StandardAuthorizerTest` and
`AuthorizerTest`), ported to config keys and the store resource. Each scenario is an ACL file and the
decisions Kafka's test asserts, translated: topics are keys, READ/WRITE/ALTER are read/alter, cluster
operations are store operations. One deliberate difference, from docs/access.md#the-acl: an allow of `create` implies
`describe` (Kafka's CREATE does not)."""

from __future__ import annotations

import time

import pytest

from cfgtool.access.acl import parse_acl
from cfgtool.access.authorizer import Authorizer
from tests.machine import SLOW

# (principal, operation, resource (None: the store), host, allowed)
Check = tuple[str, str, str | None, str | None, bool]

SCENARIOS: dict[str, tuple[str, list[Check]]] = {
    # StandardAuthorizerTest.testFindResultImplication
    "allows of read, create, alter, delete imply describe": (
        """acls:
  - {principal: User:bob, operation: read, key: /foo_, pattern: prefixed, permission: allow}
  - {principal: User:carol, operation: alter, key: /foo_, pattern: prefixed, permission: allow}
  - {principal: User:dan, operation: delete, key: /foo_, pattern: prefixed, permission: allow}
  - {principal: User:erin, operation: create, key: /foo_, pattern: prefixed, permission: allow}
""",
        [
            ("User:bob", "describe", "/foo_bar", None, True),
            ("User:carol", "describe", "/foo_bar", None, True),
            ("User:dan", "describe", "/foo_bar", None, True),
            ("User:erin", "describe", "/foo_bar", None, True),
            ("User:bob", "alter", "/foo_bar", None, False),
        ],
    ),
    "denies imply nothing; an exact deny of describe denies": (
        """acls:
  - {principal: User:bob, operation: read, key: /foo_, pattern: prefixed, permission: deny}
  - {principal: User:bob, operation: describe, key: /foo_, pattern: prefixed, permission: allow}
  - {principal: User:carol, operation: describe, key: /foo_, pattern: prefixed, permission: deny}
  - {principal: User:carol, operation: read, key: /foo_, pattern: prefixed, permission: allow}
""",
        [
            ("User:bob", "describe", "/foo_bar", None, True),
            ("User:bob", "read", "/foo_bar", None, False),
            ("User:carol", "describe", "/foo_bar", None, False),
            ("User:carol", "read", "/foo_bar", None, True),
        ],
    ),
    "alter_acl implies describe_acl, a deny of alter_acl does not deny it": (
        """acls:
  - {principal: User:bob, operation: alter_acl, resource: store, permission: allow}
  - {principal: User:carol, operation: alter_acl, resource: store, permission: deny}
  - {principal: User:carol, operation: describe_acl, resource: store, permission: allow}
""",
        [
            ("User:bob", "describe_acl", None, None, True),
            ("User:carol", "describe_acl", None, None, True),
            ("User:carol", "alter_acl", None, None, False),
        ],
    ),
    "describe on the store: implied by describe on any key, an explicit deny on the store wins": (
        """acls:
  - {principal: User:alice, operation: read, key: /data/a, permission: allow}
  - {principal: User:bob, operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:bob, operation: describe, key: /data/, pattern: prefixed, permission: deny}
  - {principal: User:carol, operation: all, key: "*", permission: allow}
  - {principal: User:carol, operation: describe, key: /, pattern: prefixed, permission: deny}
  - {principal: User:dan, operation: alter, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:dan, operation: describe, key: /data/x, permission: deny}
  - {principal: User:erin, operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:erin, operation: describe, resource: store, permission: deny}
  - {principal: User:frank, operation: describe, resource: store, permission: allow}
  - {principal: User:gina, operation: publish, resource: store, permission: allow}
  - {principal: User:hal, operation: read, key: /data/h, permission: allow, host: 10.0.0.1}
""",
        [
            ("User:alice", "describe", None, None, True),
            ("User:bob", "describe", None, None, False),  # every key it may read, it may not describe
            ("User:carol", "describe", None, None, False),
            ("User:dan", "describe", None, None, True),  # a literal deny leaves the rest of the prefix
            ("User:erin", "describe", None, None, False),
            ("User:erin", "describe", "/data/a", None, True),
            ("User:frank", "describe", None, None, True),
            ("User:gina", "describe", None, None, False),
            ("User:hal", "describe", None, "10.0.0.1", True),
            ("User:hal", "describe", None, "10.0.0.2", False),
        ],
    ),
    # StandardAuthorizerTest.testFindResultPrincipalMatching
    "principals must match; User:* matches every user": (
        """acls:
  - {principal: User:bob, operation: read, key: /foo_, pattern: prefixed, permission: allow}
  - {principal: "User:*", operation: read, key: /bar, permission: deny}
  - {principal: User:alice, operation: read, key: /bar, permission: allow}
""",
        [
            ("User:bob", "read", "/foo_bar", None, True),
            ("User:alice", "read", "/foo_bar", None, False),
            ("User:alice", "read", "/bar", None, False),
        ],
    ),
    # StandardAuthorizerTest.testSimpleAuthorizations
    "a prefix matches the key that equals it": (
        """acls:
  - {principal: User:bob, operation: read, key: /foo_, pattern: prefixed, permission: allow}
  - {principal: "User:*", operation: alter_store, resource: store, permission: allow}
""",
        [("User:bob", "read", "/foo_", None, True), ("User:fred", "alter_store", None, None, True)],
    ),
    # StandardAuthorizerTest.testTopicAclWithOperationAll
    "operation all": (
        """acls:
  - {principal: "User:*", operation: all, key: /foo, permission: allow}
  - {principal: User:alice, operation: all, key: /bar, pattern: prefixed, permission: allow}
  - {principal: User:bob, operation: all, key: /baz, permission: allow}
""",
        [
            ("User:alice", "alter", "/foo", None, True),
            ("User:alice", "describe", "/bar", None, True),
            ("User:alice", "describe", "/baz", None, False),
            ("User:bob", "alter", "/foo", None, True),
            ("User:bob", "read", "/bar", None, False),
            ("User:bob", "describe", "/baz", None, True),
            ("User:malory", "describe", "/foo", None, True),
            ("User:malory", "alter", "/bar", None, False),
            ("User:malory", "read", "/baz", None, False),
        ],
    ),
    # StandardAuthorizerTest.testAuthorizationWithManyAcls
    "many entries: literal, prefixed, wildcard, deny": (
        """acls:
  - {principal: "User:*", operation: read, key: /green2, permission: allow}
  - {principal: User:bob, operation: read, key: /green, pattern: prefixed, permission: allow}
  - {principal: User:bob, operation: read, key: /betamax4, permission: allow}
  - {principal: User:bob, operation: read, key: /betamax, permission: allow}
  - {principal: "User:*", operation: read, key: /beta, pattern: prefixed, permission: allow}
  - {principal: "User:*", operation: read, key: /alpha, pattern: prefixed, permission: allow}
  - {principal: User:bob, operation: read, key: /alp, pattern: prefixed, permission: deny}
  - {principal: User:bob, operation: alter, key: "*", permission: allow}
  - {principal: "User:*", operation: alter, key: /wheel, permission: deny}
""",
        [
            ("User:bob", "read", "/green1", None, True),
            ("User:bob", "alter", "/wheel", None, False),
            ("User:bob", "read", "/alpha", None, False),
            ("User:bob", "alter", "/arbitrary", None, True),
            ("User:bob", "read", "/ala", None, False),
            ("User:carol", "read", "/alphabet", None, True),
        ],
    ),
    # AuthorizerTest.testTopicAcl
    "hosts: allows and denies per address, describe implied": (
        """acls:
  - {principal: User:alice, operation: read, key: /data/t, host: 192.168.1.1, permission: allow}
  - {principal: User:alice, operation: read, key: /data/t, host: 192.168.1.2, permission: allow}
  - {principal: User:alice, operation: read, key: /data/t, host: 192.168.1.1, permission: deny}
  - {principal: User:alice, operation: alter, key: /data/t, host: 192.168.1.1, permission: allow}
  - {principal: User:alice, operation: describe, key: /data/t, permission: allow}
  - {principal: User:rob, operation: read, key: /data/t, permission: allow}
  - {principal: User:batman, operation: alter, key: /data/t, permission: allow}
""",
        [
            ("User:alice", "read", "/data/t", "192.168.1.2", True),
            ("User:alice", "read", "/data/t", "192.168.1.1", False),
            ("User:alice", "alter", "/data/t", "192.168.1.1", True),
            ("User:alice", "alter", "/data/t", "192.168.1.2", False),
            ("User:alice", "describe", "/data/t", "192.168.1.1", True),
            ("User:alice", "describe", "/data/t", "192.168.1.2", True),
            ("User:alice", "delete", "/data/t", "192.168.1.1", False),
            ("User:rob", "describe", "/data/t", "192.168.1.1", True),
            ("User:batman", "describe", "/data/t", "192.168.1.1", True),
            ("User:rob", "read", "/data/t", "192.168.1.1", True),
            ("User:batman", "alter", "/data/t", "192.168.1.1", True),
            ("User:alice", "read", "/data/t", None, False),
        ],
    ),
    # AuthorizerTest.testAllowAccessWithCustomPrincipal
    "a deny from one host, an allow from another": (
        """acls:
  - {principal: User:alice, operation: read, key: /data/t, host: 192.168.1.1, permission: deny}
  - {principal: User:alice, operation: read, key: /data/t, host: 192.168.1.2, permission: allow}
""",
        [
            ("User:alice", "read", "/data/t", "192.168.1.2", True),
            ("User:alice", "read", "/data/t", "192.168.1.1", False),
        ],
    ),
    # AuthorizerTest.testDenyTakesPrecedence
    "deny takes precedence over allow": (
        """acls:
  - {principal: "User:*", operation: all, key: /data/t, permission: allow}
  - {principal: User:alice, operation: all, key: /data/t, host: 192.168.2.1, permission: deny}
""",
        [
            ("User:alice", "read", "/data/t", "192.168.2.1", False),
            ("User:alice", "read", "/data/t", "192.168.2.2", True),
        ],
    ),
    # AuthorizerTest.testAllowAllAccess
    "allow all": (
        """acls:
  - {principal: "User:*", operation: all, key: /data/t, permission: allow}
""",
        [("User:random", "read", "/data/t", "192.0.4.4", True), ("User:random", "delete", "/data/t", None, True)],
    ),
    # AuthorizerTest.testSuperUserHasAccess
    "super users pass every deny": (
        """super_users: [User:superuser1, User:superuser2]
acls:
  - {principal: "User:*", operation: all, key: /data/t, permission: deny}
  - {principal: "User:*", operation: all, resource: store, permission: deny}
""",
        [
            ("User:superuser1", "read", "/data/t", "192.0.4.4", True),
            ("User:superuser2", "read", "/data/t", None, True),
            ("User:superuser1", "publish", None, None, True),
            ("User:other", "read", "/data/t", None, False),
        ],
    ),
    # AuthorizerTest.testWildCardAcls
    "the wildcard key": (
        """acls:
  - {principal: User:alice, operation: read, key: "*", host: 192.168.3.1, permission: allow}
  - {principal: User:alice, operation: alter, key: /data/t, host: 192.168.3.1, permission: allow}
  - {principal: User:alice, operation: alter, key: "*", host: 192.168.3.1, permission: deny}
""",
        [
            ("User:alice", "read", "/data/t", "192.168.3.1", True),
            ("User:alice", "alter", "/data/t", "192.168.3.1", False),
            ("User:alice", "read", "/anything", "192.168.3.1", True),
        ],
    ),
    # AuthorizerTest.testNoAclFound
    "no entry for the resource: denied by default": (
        """acls:
  - {principal: User:alice, operation: read, key: /data/other, permission: allow}
""",
        [("User:alice", "read", "/data/t", None, False), ("User:alice", "publish", None, None, False)],
    ),
    # AuthorizerTest.testNoAclFoundOverride
    "allow_everyone_if_no_acl_found only for resources no entry names": (
        """allow_everyone_if_no_acl_found: true
acls:
  - {principal: User:bob, operation: read, key: /data/named, permission: allow}
  - {principal: User:bob, operation: read, key: /data/pre/, pattern: prefixed, permission: allow}
""",
        [
            ("User:alice", "read", "/data/t", None, True),
            ("User:alice", "publish", None, None, True),
            ("User:alice", "read", "/data/named", None, False),
            ("User:alice", "read", "/data/pre/x", None, False),
        ],
    ),
    # AuthorizerTest.testSingleCharacterResourceAcls
    "a one-character prefix matches by characters, a literal does not": (
        """acls:
  - {principal: User:alice, operation: read, key: /f, permission: allow}
  - {principal: User:bob, operation: read, key: /f, pattern: prefixed, permission: allow}
""",
        [
            ("User:alice", "read", "/f", None, True),
            ("User:alice", "read", "/foo", None, False),
            ("User:bob", "read", "/foo", None, True),
            ("User:bob", "read", "/f/x", None, True),
        ],
    ),
    # AuthorizerTest.testAccessAllowedIfAllowAclExistsOnPrefixedResource / ...DeniedIfDeny...
    "prefixed allow, prefixed deny": (
        """acls:
  - {principal: "User:*", operation: read, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:mallory, operation: read, key: /data/secure/, pattern: prefixed, permission: deny}
""",
        [
            ("User:alice", "read", "/data/secure/payments", None, True),
            ("User:mallory", "read", "/data/secure/payments", None, False),
            ("User:mallory", "read", "/data/public", None, True),
            ("User:mallory", "read", "/other", None, False),
        ],
    ),
    # AuthorizerTest.testAccessDeniedIfDenyAclExistsOnLiteralResource / ...OnWildcardResource
    "a literal or wildcard deny beats a prefixed allow": (
        """acls:
  - {principal: "User:*", operation: all, key: /data/, pattern: prefixed, permission: allow}
  - {principal: User:alice, operation: alter, key: /data/x, permission: deny}
  - {principal: User:bob, operation: alter, key: "*", permission: deny}
""",
        [
            ("User:alice", "alter", "/data/x", None, False),
            ("User:alice", "alter", "/data/y", None, True),
            ("User:bob", "alter", "/data/y", None, False),
            ("User:bob", "read", "/data/y", None, True),
        ],
    ),
    # cfgtool's groups (Kafka has none): a group's entries apply to its members
    "groups": (
        """groups:
  Group:tracking: [User:alice, User:bob]
super_users: [Group:admins]
acls:
  - {principal: Group:tracking, operation: alter, key: /data/tracking/, pattern: prefixed, permission: allow}
  - {principal: User:bob, operation: alter, key: /data/tracking/secure, permission: deny}
""",
        [
            ("User:alice", "alter", "/data/tracking/PageViewEvent", None, True),
            ("User:bob", "alter", "/data/tracking/secure", None, False),
            ("User:carol", "alter", "/data/tracking/PageViewEvent", None, False),
            ("Group:tracking", "alter", "/data/tracking/x", None, True),
        ],
    ),
    # the store resource (Kafka's cluster)
    "store operations": (
        """acls:
  - {principal: User:release-bot, operation: publish, resource: store, permission: allow}
  - {principal: User:oncall, operation: rollback, resource: store, permission: allow}
""",
        [
            ("User:release-bot", "publish", None, None, True),
            ("User:release-bot", "rollback", None, None, False),
            ("User:oncall", "rollback", None, None, True),
            ("User:alice", "publish", None, None, False),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_authorizer_kafka_scenario(name: str) -> None:
    text, checks = SCENARIOS[name]
    acl, problems = parse_acl(text, "store/_ACL.yaml")
    assert not [d for d in problems if d.severity == "error"], problems
    authorizer = Authorizer(acl)
    for principal, operation, resource, host, allowed in checks:
        decision = authorizer.authorize(principal, operation, resource, host)
        assert decision.allowed is allowed, (principal, operation, resource, host, decision.reason)


def test_authorizer_order_of_entries_never_matters() -> None:
    for name, (text, checks) in SCENARIOS.items():
        head, _, entries = text.partition("acls:\n")
        lines = entries.splitlines(keepends=True)
        acl, _ = parse_acl(head + "acls:\n" + "".join(reversed(lines)), "_ACL.yaml")
        authorizer = Authorizer(acl)
        for principal, operation, resource, host, allowed in checks:
            assert authorizer.authorize(principal, operation, resource, host).allowed is allowed, name


def test_authorizer_a_broken_acl_fails_closed_but_super_users_pass() -> None:
    text = "super_users: [User:root]\nacls:\n  - {principal: User:alice, operation: read, key: /x, permision: allow}\n"
    acl, problems = parse_acl(text, "a.yaml")
    assert acl.broken and {d.code for d in problems} == {"E_ACL"}
    assert all(d.file == "a.yaml" and d.line == 3 for d in problems)
    authorizer = Authorizer(acl)
    denied = authorizer.authorize("User:alice", "read", "/x")
    assert not denied.allowed and "E_ACL" in denied.reason
    assert authorizer.authorize("User:root", "publish", None).allowed
    unreadable, _ = parse_acl("acls: [\n", "a.yaml")
    assert unreadable.broken and not Authorizer(unreadable).authorize("User:root", "publish", None).allowed


def test_authorizer_no_acl_file_allows_everything() -> None:
    acl, problems = parse_acl(None, "store/_ACL.yaml")
    assert not problems and not acl.present
    assert Authorizer(acl).authorize("User:anyone", "publish", None).allowed


def test_acl_file_problems_are_located() -> None:
    text = """acls:
  - {principal: User:a, operation: publish, key: /x, permission: allow}
  - {principal: User:a, operation: read, key: /data/track, pattern: prefixed, permission: allow}
  - {principal: User:a, operation: read, key: "bad key!", permission: allow}
"""
    acl, problems = parse_acl(text, "store/_ACL.yaml")
    found = [(d.code, d.line) for d in problems]
    assert found == [("E_ACL", 2), ("W_ACL_PREFIX", 3), ("E_ACL", 4)]
    assert acl.broken
    unknown, more = parse_acl("acls:\n  - {principal: User:a, operation: raed, key: /x, permission: allow}\n", "f")
    assert [(d.code, d.line) for d in more] == [("E_ACL", 2)] and "raed" in more[0].message and unknown.broken


def test_authorizer_decides_in_microseconds_over_10000_entries() -> None:
    """Not a timing test of the machine: a bound two orders of magnitude above what an index needs, so a
    linear scan over the entries (about 1 ms each) fails it. benchmarks/acl_bench.py prints the figure."""
    lines = ["acls:"]
    for i in range(5000):
        lines.append(f"  - {{principal: User:u{i}, operation: alter, key: /data/d{i}, permission: allow}}")
        group, prefix = f"Group:g{i % 50}", f"/data/p{i}/"
        entry = f"principal: {group}, operation: read, key: {prefix}, pattern: prefixed, permission: allow"
        lines.append(f"  - {{{entry}}}")
    acl, _ = parse_acl("\n".join(lines) + "\n", "a.yaml")
    authorizer = Authorizer(acl)
    start = time.thread_time()
    for i in range(2000):
        authorizer.authorize(f"User:u{i}", "alter", f"/data/d{i}")
        authorizer.authorize("User:x", "read", f"/data/p{i}/table")
    per = (time.thread_time() - start) / 4000
    assert per < 200e-6 * SLOW, f"{per * 1e6:.0f} µs per decision (bound scaled by {SLOW:.1f}: tests/machine.py)"
