"""Signed-out sessions are remembered per token: a token signed in and out again and again pushes out only its own
sign-outs, so another person's copied cookie of a signed-out session stays dead."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from cfgtool.console import session
from cfgtool.console.session import ENDED_FILE, Sessions
from cfgtool.serve.tokens import Tokens, add_token, token_id


def tokens_of(path: Path, *principals: str) -> tuple[Tokens, list[str]]:
    made = [add_token(path, who)[1] for who in principals]
    tokens = Tokens(path)
    tokens.reload()
    return tokens, made


def test_one_token_signing_in_and_out_again_and_again_cannot_revive_anothers_signed_out_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "MAX_ENDED", 50)  # the record's bounds, smaller: the same logic, fewer rounds
    monkeypatch.setattr(session, "MAX_ENDED_PER_TOKEN", 20, raising=False)  # none on old code
    tokens, (alice, mallory) = tokens_of(tmp_path / "tokens.json", "User:alice", "User:mallory")
    sessions = Sessions(tmp_path / "console")
    copied = sessions.start(tokens.entry(token_id(alice) or "") or pytest.fail("no entry"))
    assert sessions.principal(copied, tokens) == "User:alice"
    sessions.end(copied, tokens)  # alice signs out; someone kept a copy of her cookie
    assert sessions.principal(copied, tokens) is None
    entry = tokens.entry(token_id(mallory) or "")
    assert entry is not None
    for _ in range(60):  # more sign-outs than the whole record holds
        cookie = sessions.start(entry)
        sessions.end(cookie, tokens)
        assert sessions.principal(cookie, tokens) is None  # her newest sign-outs are remembered
    assert sessions.principal(copied, tokens) is None
    assert Sessions(tmp_path / "console").principal(copied, tokens) is None  # after a restart too
    record = json.loads((tmp_path / "console" / ENDED_FILE).read_bytes())["tokens"]
    assert len(record[entry.id]) == 20 and len(record[token_id(alice)]) == 1


def test_the_total_bound_forgets_the_sign_outs_of_the_token_with_the_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session, "MAX_ENDED", 10)
    monkeypatch.setattr(session, "MAX_ENDED_PER_TOKEN", 8)
    tokens, made = tokens_of(tmp_path / "tokens.json", "User:alice", "User:bob", "User:carol")
    sessions = Sessions(tmp_path / "console")
    entries = [tokens.entry(token_id(t) or "") for t in made]
    alice, bob, carol = (e for e in entries if e is not None)
    first = sessions.start(alice)
    sessions.end(first, tokens)
    for who in (bob, carol):
        for _ in range(8):
            sessions.end(sessions.start(who), tokens)
    assert sessions.principal(first, tokens) is None
    record = json.loads((tmp_path / "console" / ENDED_FILE).read_bytes())["tokens"]
    assert sorted(len(n) for n in record.values()) == [1, 4, 5]


def test_an_older_servers_record_of_sign_outs_still_ends_those_sessions(tmp_path: Path) -> None:
    tokens, (alice,) = tokens_of(tmp_path / "tokens.json", "User:alice")
    entry = tokens.entry(token_id(alice) or "")
    assert entry is not None
    folder = tmp_path / "console"
    cookie = Sessions(folder).start(entry)
    _, expires, nonce, _ = cookie.split(".")
    (folder / ENDED_FILE).write_text(json.dumps({nonce: float(expires), "stale": time.time() - 1}))  # nonces only
    sessions = Sessions(folder)
    assert sessions.principal(cookie, tokens) is None
    other = sessions.start(entry)
    sessions.end(other, tokens)  # the new format, the older nonces kept
    assert sessions.principal(cookie, tokens) is None and sessions.principal(other, tokens) is None
    assert Sessions(folder).principal(cookie, tokens) is None
