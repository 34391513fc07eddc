"""`cfgtool secret set` and `cfgtool secret reseal` (docs/access.md#secrets) in real subprocesses on a copy of the
embedded store: the value is sealed into the key's `main.conf`, every earlier assignment of the path is replaced
and the rest of the file kept, only a path a schema marks secret is taken, and reseal seals every secret to the
current recipients. Compile's checks and redaction of sealed values are tested in tests/access/test_secrets.py."""

from __future__ import annotations

import json

import pyrage  # type: ignore[import-untyped]
import pytest

from cfgtool import ConfigClient
from cfgtool.access.secrets import SecretError
from cfgtool.snapshot.hidden import ENVELOPE
from tests.access.test_secrets import (
    CONF,
    DB,
    DEMO_IDENTITY,
    PASSWORD,
    PLANTED,
    TABLE,
    VAULT,
    VAULT_DEFS,
    Run,
    envelope_of,
    ok,
)
from tests.conftest import GitRepo


def test_secret_set_seals_stdin_into_main_conf_and_keeps_the_rest_of_the_file(work: GitRepo, run_cfgtool: Run) -> None:
    before = (work.root / CONF).read_text(encoding="utf-8").splitlines()
    out = ok(run_cfgtool("secret", "set", DB, PASSWORD, cwd=work.root, input=PLANTED + "\n"))
    assert f"sealed {DB} {PASSWORD}: replaced at {CONF}:" in out
    after = (work.root / CONF).read_text(encoding="utf-8").splitlines()
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert len(changed) == 1 and changed[0][1].startswith(f'{PASSWORD} = "ENC[cfgtool:v1,age,for=')
    assert PLANTED not in "\n".join(after)
    # a path not yet assigned gets a line of its own; the compile stays clean
    ok(run_cfgtool("secret", "set", TABLE, "database.credentials.password", cwd=work.root, input="x"))
    conf = (work.root / "store/data/databases/identity/emails/main.conf").read_text(encoding="utf-8")
    assert conf.splitlines()[-1].startswith('database.credentials.password = "ENC[cfgtool:v1,age,for=')
    assert "0 errors" in ok(run_cfgtool("compile", cwd=work.root))
    # the value comes from stdin only, and an empty one is refused
    assert "the secret is empty" in ok(run_cfgtool("secret", "set", DB, PASSWORD, cwd=work.root), 2)


def test_reseal_seals_every_secret_to_the_current_recipients(work: GitRepo, run_cfgtool: Run) -> None:
    ok(run_cfgtool("secret", "set", DB, PASSWORD, cwd=work.root, input=PLANTED))
    work.commit("seal")
    ok(run_cfgtool("publish", "-m", "v1", cwd=work.root))
    newcomer = pyrage.x25519.Identity.generate()
    key_file = work.root.parent / "newcomer.txt"
    key_file.write_text(str(newcomer) + "\n", encoding="utf-8")
    with (work.root / "store/_RECIPIENTS").open("a", encoding="utf-8") as f:
        f.write(f"{newcomer.to_public()}  # the newcomer\n")
    before = envelope_of(work)
    out = ok(run_cfgtool("secret", "reseal", "--identity", str(DEMO_IDENTITY), cwd=work.root))
    assert f"resealed {CONF}" in out and "1 file(s) resealed" in out
    assert envelope_of(work) != before
    work.commit("reseal")
    ok(run_cfgtool("publish", "-m", "v2", cwd=work.root))
    assert ConfigClient(work.root, identity=key_file).get_value(DB, PASSWORD).reveal() == PLANTED
    assert ConfigClient(work.root, version=1, identity=key_file).get_value(DB, PASSWORD) is not None
    with pytest.raises(SecretError):  # version 1 was sealed before the newcomer was a recipient
        ConfigClient(work.root, version=1, identity=key_file).get_value(DB, PASSWORD).reveal()
    stranger = work.root.parent / "stranger.txt"
    stranger.write_text(str(pyrage.x25519.Identity.generate()) + "\n", encoding="utf-8")
    assert "cannot open a sealed secret" in ok(run_cfgtool("secret", "reseal", "-i", str(stranger), cwd=work.root), 1)
    assert "cannot read the identity file" in ok(run_cfgtool("secret", "reseal", "-i", "none", cwd=work.root), 2)


def test_secret_set_replaces_every_earlier_assignment_whatever_its_form(work: GitRepo, run_cfgtool: Run) -> None:
    """A triple-quoted value over several lines, an unquoted one, one inside braces and a concatenation are
    all replaced; the clear text never stays in the file, and the rest of the file stays as it was."""
    conf = "store/data/databases/jobs/main.conf"
    work.write({conf: (
        "# jobs\n"
        f'database.credentials.password = """{PLANTED}-1\nsecond line {PLANTED}-2\n"""  # was in clear\n'
        "database { name = jobs, credentials { user = x, password = " + PLANTED + "-3 } }\n"
        f'database.credentials.password = "{PLANTED}" "-4"\n'
        "owner = jobs-team\n"
    )})  # fmt: skip
    out = ok(run_cfgtool("secret", "set", "/data/databases/jobs", PASSWORD, cwd=work.root, input="new-value"))
    assert f"sealed /data/databases/jobs {PASSWORD}: replaced at {conf}:4" in out
    text = (work.root / conf).read_text(encoding="utf-8")
    assert PLANTED not in text
    lines = text.splitlines()
    assert lines[0] == "# jobs" and lines[-1] == "owner = jobs-team" and len(lines) == 5
    assert lines[1].startswith(f'{PASSWORD} = "ENC[') and lines[1].endswith('"  # was in clear')
    assert lines[2].startswith('database { name = jobs, credentials { user = x, password = "ENC[')
    assert lines[2].endswith('" } }')
    assert len(ENVELOPE.findall(text)) == 3
    diags = json.loads(ok(run_cfgtool("compile", "--format", "json", cwd=work.root)))["diagnostics"]
    assert not [d for d in diags if d["code"].startswith("E_SECRET")]
    # a value appended to with += cannot be replaced by one sealed value: refused, the file left as it was
    appended = f'{PASSWORD} = "{PLANTED}"\n{PASSWORD} += "-more"\n'
    work.write({conf: appended})
    out = ok(run_cfgtool("secret", "set", "/data/databases/jobs", PASSWORD, cwd=work.root, input="v"), 2)
    assert "appends to" in out and PLANTED not in out
    assert (work.root / conf).read_text(encoding="utf-8") == appended


def test_secret_set_refuses_a_path_no_schema_marks_secret(work: GitRepo, run_cfgtool: Run) -> None:
    out = ok(run_cfgtool("secret", "set", DB, "database.credentials.user", cwd=work.root, input="x"), 2)
    assert "no schema marks database.credentials.user of /data/databases/identity secret" in out
    assert "schemas/credentials.yaml" in out
    assert "no schema selects /tags/priority/HIGH" in ok(run_cfgtool("secret", "set", "/tags/priority/HIGH", "p",
                                                                     cwd=work.root, input="x"), 2)  # fmt: skip
    # a path marked through $ref and additionalProperties is one
    work.write({"schemas/vault.yaml": VAULT.replace("$defs:\n", "$defs:\n" + VAULT_DEFS)})
    for path in ("admin", "users.bob.password", "all.deep"):
        ok(run_cfgtool("secret", "set", "/data/databases/jobs", path, cwd=work.root, input=PLANTED))
    assert "0 errors" in ok(run_cfgtool("compile", cwd=work.root))
