"""Sealed secrets (docs/access.md#secrets), end to end on a copy of the embedded store: compile's checks, opening with
an identity, and redaction at one choke point, checked from the outside: a known secret is planted, every command
runs in every format, and its clear text (and its sealed payload) must appear in no output, no artifact, no cache.
`secret set` and `reseal` themselves are tested in tests/edit/test_secrets.py."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pyrage  # type: ignore[import-untyped]
import pytest

from cfgtool import ConfigClient
from cfgtool.access.secrets import Secret, SecretError
from cfgtool.snapshot.hidden import ENVELOPE, HIDDEN
from tests.conftest import CHECKOUT, GitRepo

Run = Callable[..., subprocess.CompletedProcess[str]]

DEMO_IDENTITY = CHECKOUT / "examples" / "demo-age-identity.txt"
DB = "/data/databases/identity"
TABLE = "/data/databases/identity/emails"
PASSWORD = "database.credentials.password"
CONF = "store/data/databases/identity/main.conf"
PLANTED = "planted-Secret-7f3a9c"


def ok(proc: subprocess.CompletedProcess[str], status: int = 0) -> str:
    assert proc.returncode == status, f"exit {proc.returncode}, expected {status}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def envelope_of(repo: GitRepo) -> str:
    match = ENVELOPE.search((repo.root / CONF).read_text(encoding="utf-8"))
    assert match, "the store has no sealed secret"
    return match.group(0)


@pytest.fixture
def cache(tmp_path: Path) -> dict[str, str]:
    """A cache directory of this test's own, so that the test can read everything cfgtool cached."""
    return {"CFGTOOL_CACHE_DIR": str(tmp_path / "cache")}


def test_the_client_opens_a_secret_only_with_an_identity(work: GitRepo, run_cfgtool: Run) -> None:
    ok(run_cfgtool("secret", "set", DB, PASSWORD, cwd=work.root, input=PLANTED))
    work.commit("seal")
    ok(run_cfgtool("publish", "-m", "v1", cwd=work.root))
    client = ConfigClient(work.root, identity=DEMO_IDENTITY)
    for key in (DB, TABLE):  # inherited secrets open as well
        secret = client.get_value(key, PASSWORD)
        assert isinstance(secret, Secret)
        assert (str(secret), repr(secret), json.dumps(secret)) == (HIDDEN, HIDDEN, f'"{HIDDEN}"')
        assert PLANTED not in repr(client.get(key)) and PLANTED not in json.dumps(client.get(key))
        assert secret.reveal() == PLANTED
    sealed = ConfigClient(work.root).get_value(DB, PASSWORD)
    with pytest.raises(SecretError, match="no identity"):
        sealed.reveal()
    stranger = work.root.parent / "stranger.txt"
    stranger.write_text(str(pyrage.x25519.Identity.generate()) + "\n", encoding="utf-8")
    with pytest.raises(SecretError, match="cannot open"):
        ConfigClient(work.root, identity=stranger).get_value(DB, PASSWORD).reveal()


def test_compile_rejects_a_secret_in_clear_without_printing_it(work: GitRepo, run_cfgtool: Run) -> None:
    with (work.root / CONF).open("a", encoding="utf-8") as f:
        f.write(f'{PASSWORD} = "{PLANTED}"\n')
    for fmt in ("text", "json", "github", "markdown"):
        out = ok(run_cfgtool("compile", "--format", fmt, cwd=work.root), 1)
        assert "E_SECRET_IN_CLEAR" in out and PLANTED not in out, fmt
    text = ok(run_cfgtool("compile", cwd=work.root), 1)
    assert f"{CONF}:12:33: E_SECRET_IN_CLEAR" in text
    assert f"seal it: cfgtool secret set {DB} {PASSWORD}" in text
    for args in (("get", DB), ("get", TABLE, PASSWORD, "--format", "json"), ("explain", DB, PASSWORD)):
        out = ok(run_cfgtool(*args, cwd=work.root))
        assert HIDDEN in out and PLANTED not in out, args


def test_a_copied_envelope_is_a_binding_error_and_does_not_open(work: GitRepo, run_cfgtool: Run) -> None:
    envelope = envelope_of(work)
    work.write({"store/data/databases/jobs/main.conf": f'database.credentials.password = "{envelope}"\n'})
    diags = json.loads(ok(run_cfgtool("compile", "--format", "json", cwd=work.root), 1))["diagnostics"]
    binding = [d for d in diags if d["code"] == "E_SECRET_BINDING"]
    assert [(d["file"], d["line"]) for d in binding] == [("store/data/databases/jobs/main.conf", 1)]


def test_a_secret_may_be_copied_whole_but_not_concatenated(work: GitRepo, run_cfgtool: Run) -> None:
    with (work.root / CONF).open("a", encoding="utf-8") as f:
        f.write("backup.password = ${database.credentials.password}\n")
    assert "0 errors" in ok(run_cfgtool("compile", cwd=work.root))
    assert ok(run_cfgtool("get", TABLE, "backup.password", cwd=work.root)).strip() == HIDDEN
    with (work.root / CONF).open("a", encoding="utf-8") as f:
        f.write('dsn = "snapshotter:"${database.credentials.password}"@identity"\n')
    diags = json.loads(ok(run_cfgtool("compile", "--format", "json", cwd=work.root), 1))["diagnostics"]
    concat = [d for d in diags if d["code"] == "E_SECRET_CONCAT"]
    assert concat and {(d["file"], d["line"]) for d in concat} == {(CONF, 13)}


# ------------------------------------------------------------------------------------------ every output

# Each command that reads the store, with the formats it has.
COMMANDS: list[tuple[tuple[str, ...], tuple[str, ...]]] = [
    (("compile",), ("text", "json", "github", "markdown")),
    (("compile", "--ref", "HEAD"), ("text", "json", "github", "markdown")),
    (("compile", "--base", "HEAD~1"), ("text", "json", "github", "markdown")),
    *[((("get", *args)), ("text", "json", "hocon", "yaml", "properties")) for args in [
        (DB,), (TABLE,), (DB, "database"), (DB, "--version", "2"), (TABLE, "--ref", "HEAD~1")]],
    *[(args, ("text", "json")) for args in [
        ("explain", DB, PASSWORD), ("explain", TABLE, PASSWORD), ("explain", DB, "database"),
        ("imports", TABLE), ("imported-by", "/tags/cluster/ltx1"), ("tags", TABLE),
        ("datasets", "/tags/retention/LONG"), ("versions", "--all"), ("audit",),
        ("audit", "--key", DB, "--path", PASSWORD), ("audit", "--key", TABLE), ("publish", "--dry-run"),
        ("acl", "list"), ("acl", "check", "User:alice", "read", DB)]],
    *[(("diff", *sides), ("text", "json", "markdown")) for sides in [
        ("HEAD~1", "HEAD"), ("config/v1", "config/v2"), ("HEAD~2", "HEAD")]],
]  # fmt: skip


@pytest.mark.long
def test_no_output_of_any_command_shows_a_secret(
    work: GitRepo, run_cfgtool: Run, cache: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The planted secret is sealed, re-sealed (so diff sees it change) and published; then every command
    runs in every format. Neither its clear text nor any sealed payload may appear in any output."""
    ok(run_cfgtool("secret", "set", DB, PASSWORD, cwd=work.root, input=PLANTED, env=cache))
    work.commit("seal the planted secret")
    ok(run_cfgtool("publish", "-m", "v1", cwd=work.root, env=cache))
    ok(run_cfgtool("secret", "set", DB, PASSWORD, cwd=work.root, input=PLANTED + "-rotated", env=cache))
    with (work.root / CONF).open("a", encoding="utf-8") as f:
        f.write("backup.password = ${database.credentials.password}\n")
    work.commit("rotate it and copy it whole")
    ok(run_cfgtool("publish", "-m", "v2", cwd=work.root, env=cache))
    payloads = {m.group(2) for m in ENVELOPE.finditer(work.git("log", "-p", "--all", "--", CONF))}
    assert len(payloads) >= 2

    def assert_clean(text: str, what: str) -> None:
        assert PLANTED not in text, f"{what} shows the secret in clear"
        leaked = [p for p in payloads if p[:40] in text]
        assert not leaked, f"{what} shows a sealed payload instead of {HIDDEN}"

    runs = [(*args, "--format", fmt) for args, formats in COMMANDS for fmt in formats]
    shown_hidden = 0
    for args in runs:
        proc = run_cfgtool(*args, cwd=work.root, env=cache)
        assert proc.returncode in (0, 1), f"{args}: exit {proc.returncode}\n{proc.stderr}"
        assert_clean(proc.stdout + proc.stderr, " ".join(args))
        shown_hidden += HIDDEN in proc.stdout
    assert shown_hidden >= 40, "the commands that show values must show the secret as [hidden]"

    artifact = tmp_path / "snapshot.json"
    ok(run_cfgtool("compile", "--format", "json", "--output", str(artifact), cwd=work.root, env=cache))
    # the artifact carries the envelopes (ciphertext, as in git: a client given an identity opens them from
    # it), never the clear text, and every config in it reads [hidden]
    text = artifact.read_text(encoding="utf-8")
    assert PLANTED not in text
    configs = json.dumps([node["config"] for node in json.loads(text)["nodes"].values()])
    assert_clean(configs, "the configs of compile --output")
    assert HIDDEN in configs
    ok(run_cfgtool("rollback", "-m", "bad password", "--format", "json", cwd=work.root, env=cache))
    assert_clean(ok(run_cfgtool("versions", "--all", cwd=work.root, env=cache)), "versions after rollback")

    monkeypatch.setenv("CFGTOOL_CACHE_DIR", cache["CFGTOOL_CACHE_DIR"])  # the client caches there too
    client = ConfigClient(work.root, identity=DEMO_IDENTITY)  # reads version 1 (2 is rolled back)
    for key in (DB, TABLE):
        config = client.get(key)
        assert_clean(repr(config) + str(config) + json.dumps(config) + repr(client), f"the client's {key}")
    assert client.get_value(DB, PASSWORD).reveal() == PLANTED

    cached = 0
    for root, _, files in os.walk(cache["CFGTOOL_CACHE_DIR"]):
        for name in files:
            data = (Path(root) / name).read_bytes()
            assert PLANTED.encode() not in data, f"the cache file {name} holds the secret in clear"
            cached += 1
    assert cached, "the commands cached nothing: the cache check checked nothing"


# A schema that reaches its writeOnly marks every way JSON Schema can, and the config values at each of them.
VAULT = """$schema: https://json-schema.org/draft/2020-12/schema
x-cfgtool: {applies_to: {keys: ["/data/databases/jobs"]}}
$defs:
  secret: {type: string, writeOnly: true}
properties:
  admin: {$ref: "#/$defs/secret"}
  shared: {$ref: "credentials.yaml#/properties/database/properties/credentials/properties/password"}
  users: {additionalProperties: {properties: {password: {writeOnly: true}}}}
  tokens: {properties: {public: {type: string}}, patternProperties: {"^tok_": {writeOnly: true}}}
  keys: {items: {writeOnly: true}}
  pair: {prefixItems: [{type: string}, {writeOnly: true}]}
  conditional: {if: {required: [kind]}, then: {properties: {pin: {writeOnly: true}}}}
  dependent: {dependentSchemas: {user: {properties: {pass: {writeOnly: true}}}}}
  either: {anyOf: [{type: string}, {properties: {x: {writeOnly: true}}}]}
  all: {allOf: [{$ref: "#/$defs/nested"}]}
  plain: {type: string}
"""
VAULT_DEFS = "  nested: {properties: {deep: {$ref: '#/$defs/secret'}}}\n"
WRITE_ONLY = {
    "admin": "a", "shared": "s", "users.ann.password": "u", "tokens.tok_1": "t", "keys.0": "k0", "keys.1": "k1",
    "pair.1": "p", "conditional.pin": "c", "dependent.pass": "d", "either.x": "e", "all.deep": "x",
}  # fmt: skip


def test_writeonly_counts_however_the_schema_reaches_the_value(work: GitRepo, run_cfgtool: Run) -> None:
    schema = VAULT.replace("$defs:\n", "$defs:\n" + VAULT_DEFS)
    conf = "store/data/databases/jobs/main.conf"
    values = "\n".join(f'{path} = "{PLANTED}-{tag}"' for path, tag in WRITE_ONLY.items())
    work.write({"schemas/vault.yaml": schema, conf: (
        f'{values}\nkeys = ["{PLANTED}-k0", "{PLANTED}-k1"]\npair = [first, "{PLANTED}-p"]\n'
        'conditional.kind = pin\ndependent.user = me\ntokens.public = visible\nplain = shown\n'
    )})  # fmt: skip
    diags = json.loads(ok(run_cfgtool("compile", "--format", "json", cwd=work.root), 1))["diagnostics"]
    clear = {d["message"].split(" is a secret")[0] for d in diags if d["code"] == "E_SECRET_IN_CLEAR"}
    assert clear == set(WRITE_ONLY)
    assert not [d for d in diags if d["code"] == "W_SECRET_UNKNOWN"]
    for args in (("get", "/data/databases/jobs"), ("get", "/data/databases/jobs", "--format", "json"),
                 ("explain", "/data/databases/jobs", "admin"), ("explain", "/data/databases/jobs", "all.deep"),
                 ("explain", "/data/databases/jobs", "users.ann.password", "--format", "json")):  # fmt: skip
        out = ok(run_cfgtool(*args, cwd=work.root))
        assert HIDDEN in out and PLANTED not in out, args
    shown = ok(run_cfgtool("get", "/data/databases/jobs", "--format", "json", cwd=work.root))
    assert '"visible"' in shown and '"shown"' in shown and '"first"' in shown  # only the secrets are hidden


def test_a_ref_that_cannot_be_resolved_is_w_secret_unknown(work: GitRepo, run_cfgtool: Run) -> None:
    schema = VAULT + "  mystery: {$ref: 'https://example.com/elsewhere.json#/password'}\n"
    work.write({"schemas/vault.yaml": schema.replace("$defs:\n", "$defs:\n" + VAULT_DEFS)})
    diags = json.loads(ok(run_cfgtool("compile", "--format", "json", cwd=work.root)))["diagnostics"]
    unknown = [d for d in diags if d["code"] == "W_SECRET_UNKNOWN"]
    assert [(d["file"], d["severity"]) for d in unknown] == [("schemas/vault.yaml", "warning")]
    assert "https://example.com/elsewhere.json#/password" in unknown[0]["message"]


def test_a_secret_moved_through_an_included_file_is_a_binding_error_and_does_not_open(
    work: GitRepo, run_cfgtool: Run
) -> None:
    """Compile checks the binding wherever the value is written; at open, the sealed (store, key, path) must
    be where the value read is assigned, whatever the clear binding says."""
    envelope = envelope_of(work)
    jobs = "/data/databases/jobs"
    shared = "store/data/databases/_shared/creds.conf"
    conf = "store/data/databases/jobs/main.conf"
    work.write({
        shared: f'# the identity database\'s password, "shared"\ndatabase.credentials.password = "{envelope}"\n',
        conf: (work.root / conf).read_text(encoding="utf-8") + 'include "../_shared/creds.conf"\n',
    })  # fmt: skip
    diags = json.loads(ok(run_cfgtool("compile", "--format", "json", cwd=work.root), 1))["diagnostics"]
    binding = [(d["file"], d["line"], d["key"]) for d in diags if d["code"] == "E_SECRET_BINDING"]
    assert binding == [(shared, 2, jobs)]
    work.commit("move the identity password to jobs")
    assert "E_SECRET_BINDING" in ok(run_cfgtool("publish", "-m", "v1", cwd=work.root), 1)
    # the client opens a value only at a place where it is assigned and that it was sealed for
    from cfgtool.access.secrets import load_identities, open_envelope

    identities = load_identities(DEMO_IDENTITY)
    assert open_envelope(envelope, identities, "demo", {(DB, PASSWORD)}).value
    with pytest.raises(SecretError, match="was moved"):
        open_envelope(envelope, identities, "demo", {(jobs, PASSWORD)})
    with pytest.raises(SecretError, match="was moved"):
        open_envelope(envelope, identities, "demo", set())
    # inherited and copied whole (`${}`), a secret still opens: it is read where it is assigned
    work.write({shared: None, conf: (work.root / conf).read_text(encoding="utf-8").replace(
        'include "../_shared/creds.conf"\n', "")})  # fmt: skip
    with (work.root / CONF).open("a", encoding="utf-8") as f:
        f.write("backup.password = ${database.credentials.password}\n")
    ok(run_cfgtool("secret", "set", DB, PASSWORD, cwd=work.root, input=PLANTED))
    work.commit("seal it where it belongs")
    ok(run_cfgtool("publish", "-m", "v1", cwd=work.root))
    client = ConfigClient(work.root, identity=DEMO_IDENTITY)
    assert client.get_value(TABLE, PASSWORD).reveal() == PLANTED
    assert client.get_value(TABLE, "backup.password").reveal() == PLANTED


def test_diff_hides_a_value_on_both_sides_when_the_same_commit_makes_it_secret(work: GitRepo, run_cfgtool: Run) -> None:
    conf = "store/data/databases/jobs/main.conf"
    work.write({conf: f'password = "{PLANTED}"\nowner = jobs-team\n'})
    work.commit("a password in clear")
    work.write({"schemas/jobs.yaml": (
        "x-cfgtool: {applies_to: {keys: [/data/databases/jobs]}}\n"
        "properties:\n  password: {type: string, writeOnly: true}\n"
    )})  # fmt: skip
    ok(run_cfgtool("secret", "set", "/data/databases/jobs", "password", cwd=work.root, input=PLANTED + "-new"))
    work.commit("the password becomes a secret")
    for fmt in ("text", "json", "markdown"):
        out = ok(run_cfgtool("diff", "HEAD~1", "HEAD", "--format", fmt, cwd=work.root))
        assert "password" in out and HIDDEN in out, fmt
        assert PLANTED not in out, f"{fmt} shows the old value of a path the new side makes secret:\n{out}"
    # and the other way round: a secret that goes back to a plain value is hidden on both sides too
    out = ok(run_cfgtool("diff", "HEAD", "HEAD~1", "--format", "json", cwd=work.root))
    assert HIDDEN in out and PLANTED not in out
