"""Sealed secrets (docs/access.md#secrets): `ENC[cfgtool:v1,age,for=<binding>,<base64>]`, sealed with age (pyrage).

Anyone can seal to the store's recipients: `_RECIPIENTS`, one age or ssh-ed25519 public key per line. Only a holder
of a recipient's identity can open. The binding is the first 16 hex digits of sha256("<store>|<node key>|<path as
assigned>"). It is written in clear beside the payload. So compile checks it without opening anything, wherever the
value is written. It is also sealed inside it. So a value opens only where it is assigned, at the node and path it
was sealed for. That holds whatever its clear binding says. cfgtool itself never opens a secret: only
`ConfigClient(identity=...)` and `secret reseal` do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cfgtool.errors import CfgtoolError, UsageError
from cfgtool.hocon import HoconError, parse, split_path
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.resolver import render_path
from cfgtool.hocon.values import Lst, Merge, Node, Obj, Scalar
from cfgtool.snapshot.hidden import ENVELOPE, HIDDEN, PREFIX


class SecretError(CfgtoolError):
    """A secret cannot be sealed or opened: no recipients, a wrong identity, a value bound elsewhere."""


def is_envelope(value: object) -> bool:
    """Whether `value` is exactly one sealed envelope."""
    return isinstance(value, str) and ENVELOPE.fullmatch(value) is not None


def binding(store: str, key: str, path: str) -> str:
    """The binding of a secret assigned at `path` (as written) in `key`'s main.conf of `store`."""
    return hashlib.sha256(f"{store}|{key}|{path}".encode()).hexdigest()[:16]


def bound_to(envelope: str) -> str | None:
    """The binding written in clear in an envelope (None: not an envelope)."""
    match = ENVELOPE.fullmatch(envelope)
    return match.group(1) if match else None


def _pyrage() -> Any:
    try:
        import pyrage  # type: ignore[import-untyped]
    except ImportError as err:  # a dependency; a broken install should still say what to do
        raise SecretError("sealed secrets need the pyrage package", hint="pip install pyrage") from err
    return pyrage


def parse_recipients(text: str, file: str = "_RECIPIENTS") -> list[Any]:
    """The recipients of a `_RECIPIENTS` text: `age1...` or `ssh-ed25519 ...` lines (`#` comments)."""
    pyrage = _pyrage()
    found = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        try:
            if line.startswith("age1"):
                found.append(pyrage.x25519.Recipient.from_str(line))
            elif line.startswith("ssh-"):
                found.append(pyrage.ssh.Recipient.from_str(line))
            else:
                raise ValueError("not an age (age1...) or ssh-ed25519 public key")
        except Exception as err:
            raise SecretError(f"{file}:{number}: {err}", hint="one age1... or ssh-ed25519 key per line") from err
    if not found:
        raise SecretError(f"{file} lists no recipients", hint="add the age public key of whoever must read secrets")
    return found


def load_identities(path: str | Path) -> list[Any]:
    """The identities in an age identity file (`AGE-SECRET-KEY-...` lines) or an OpenSSH ed25519 key."""
    pyrage = _pyrage()
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise UsageError(f"cannot read the identity file {path}: {err.strerror}", hint="check the path") from err
    try:
        if b"OPENSSH PRIVATE KEY" in data:
            return [pyrage.ssh.Identity.from_buffer(data)]
        lines = [ln.strip() for ln in data.decode().splitlines() if ln.strip() and not ln.startswith("#")]
        identities = [pyrage.x25519.Identity.from_str(ln) for ln in lines]
    except Exception as err:
        raise UsageError(f"{path} is not an age identity file: {err}", hint="pass the file age-keygen wrote") from err
    if not identities:
        raise UsageError(f"{path} holds no identity", hint="pass the file age-keygen wrote")
    return identities


def seal(value: str, recipients: Sequence[Any], store: str, key: str, path: str) -> str:
    """An envelope holding `value`, bound to (store, key, path) and sealed to `recipients`."""
    payload = json.dumps({"store": store, "key": key, "path": path, "value": value}, ensure_ascii=False)
    sealed = _pyrage().encrypt(payload.encode(), list(recipients))
    return f"ENC[cfgtool:v1,age,for={binding(store, key, path)},{base64.b64encode(sealed).decode()}]"


@dataclass(frozen=True)
class Opened:
    """What an envelope holds: the node key and path it was sealed for, and the value."""

    key: str
    path: str
    value: str


def open_envelope(
    envelope: str, identities: Sequence[Any], store: str, places: Collection[tuple[str, str]] | None = None
) -> Opened:
    """What `envelope` of `store` holds. SecretError when no identity opens it, or when it was sealed for another
    store. `places` are the (node key, path) pairs where the value being read is assigned. Given them, it is
    SecretError when sealed for none of those places. Its clear binding is never trusted here. A copy whose binding
    was rewritten still does not open, nor one that sits where compile did not look. `places` None (reseal) checks
    the store alone."""
    match = ENVELOPE.fullmatch(envelope)
    if match is None:
        raise SecretError("the value is not a sealed envelope", hint="seal it: cfgtool secret set KEY PATH")
    try:
        plain = _pyrage().decrypt(base64.b64decode(match.group(2)), list(identities))
        fields = json.loads(plain)
        where = (str(fields["store"]), str(fields["key"]), str(fields["path"]))
    except (binascii.Error, ValueError, KeyError, TypeError) as err:
        raise SecretError("a sealed secret is damaged", hint="seal it again: cfgtool secret set KEY PATH") from err
    except Exception as err:  # pyrage.DecryptError: no identity matches
        raise SecretError(
            f"cannot open a sealed secret: {err}",
            hint="pass the identity of one of the store's recipients (an age identity file)",
        ) from err
    if where[0] != store or (places is not None and (where[1], where[2]) not in places):
        here = ", ".join(f"{k} {p}" for k, p in sorted(places or ())) or "an unknown place"
        raise SecretError(
            f"a secret sealed for {where[1]} {where[2]} (store {where[0]}) was moved to {here}: it does not open here",
            hint=f"seal the value where it is used: cfgtool secret set KEY PATH (store {store})",
        )
    return Opened(where[1], where[2], str(fields.get("value", "")))


def sealed_in(texts: Mapping[str, str], file: str | None) -> Iterator[tuple[str, str, Origin]]:
    """Every envelope a node's `main.conf` assigns, there or in a file it includes (transitively), overridden ones
    included. Each is (path as assigned, envelope, where it is written). `texts` holds the files (a snapshot's)."""
    text = texts.get(file) if file is not None else None
    if file is None or not text or (PREFIX not in text and "include" not in text):
        return
    try:
        doc = parse(text, file, reader=texts.get)
    except HoconError:  # its syntax error is reported by compile
        return
    todo: list[tuple[tuple[str, ...], Node]] = [((), doc)]
    while todo:
        path, node = todo.pop()
        if isinstance(node, Merge):
            todo += [(path, member) for member in node.stack]
        elif isinstance(node, Obj):
            todo += [((*path, k), v) for k, v in node.fields.items()]
        elif isinstance(node, Lst):
            todo += [((*path, str(i)), v) for i, v in enumerate(node.items)]
        elif isinstance(node, Scalar) and path and isinstance(node.value, str) and is_envelope(node.value):
            yield render_path(path), node.value, node.origin


def store_label(name: str | None, store_dir: str) -> str:
    """The store as secrets are bound to it: its name (`_CONFIG_STORE`), else its directory."""
    return name or store_dir or "."


class Secret(str):
    """A secret read by a client: `str`, `repr` and JSON show `[hidden]`. `reveal()` opens it, as Kafka's `Password`
    type does. It opens lazily, in this process only, and only when an identity was given."""

    _envelope: str
    _opener: Callable[[str], str]

    def __new__(cls, envelope: str, opener: Callable[[str], str]) -> Secret:
        self = super().__new__(cls, HIDDEN)
        self._envelope = envelope
        self._opener = opener
        return self

    def __repr__(self) -> str:
        return HIDDEN

    @property
    def sealed(self) -> str:
        """The envelope, as stored in git (safe to show: it is ciphertext)."""
        return self._envelope

    def reveal(self) -> str:
        """The clear text; SecretError when it cannot be opened (no identity: the value stays sealed)."""
        return self._opener(self._envelope)


def with_secrets(
    config: Mapping[str, Any], sealed: Mapping[str, str | None], opener: Callable[[str], str]
) -> Mapping[str, Any]:
    """A copy of `config` with the `[hidden]` value at each sealed path a `Secret`. Paths whose value was not sealed
    stay `[hidden]`."""
    out: dict[str, Any] = dict(config)
    for name, envelope in sealed.items():
        if envelope is None:
            continue
        parts = split_path(name)
        node: dict[str, Any] = out
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, Mapping):
                break
            node[part] = node = dict(child)
        else:
            if parts[-1] in node:
                node[parts[-1]] = Secret(envelope, opener)
    return out
