"""Version artifacts: a compiled store at one commit, stored so that one key is read without loading the rest.

An artifact is one SQLite file per (commit, store, given variables, cfgtool version). Table `nodes` holds each node's
resolved config as compact JSON, what `ConfigClient.config_json()` ships. Beside it are its layers, imports, file,
content hash, how each layer was reached and its sealed secrets. Table `texts` holds the store's files, for
provenance and for keys without a node that use the intrinsics. Table `meta` holds the snapshot's header and the
compile's diagnostics. So a query refuses a key that errors affect, exactly as after a compile. Reading a key is an
indexed lookup of one row. Provenance (`explain`) is computed on demand from the texts of that key's layers. The
compiler does the same for a node it took from its cache.

Why SQLite (standard library)? It is a B-tree indexed by key, so a read touches a few pages whatever the store's
size. It allows any number of concurrent readers, and holds plain data. Opening a version and reading one key costs
about as much as one indexed lookup, not the unpacking of the whole store. docs/scaling.md ("Reading a version") has
the figures. Readers of the whole store pay a little more than a single file would cost them. Configs stay JSON text,
so `config_json()` needs no encoding. The values at a few paths of every node are extracted by SQLite's JSON
functions, without decoding the configs in Python. The Spark loader's lookup (`config_values`) reads them so. Each
stored text has a keyed check (`RowSeal`, in the `*_crc` columns). It is a MAC under the user's cache key and the
artifact's name, key included. It finds damage and a forged or moved row alike. It costs a read of one key nothing
measurable.

It is written once, to a temporary file renamed into place, and never changed afterwards. Readers open it read-only
and `immutable` (no locks). A reader keeps reading the file it opened while a writer replaces it. Every row carries
the check of its stored text. The header names the format, the cfgtool version, the commit, the store and the
variables. An artifact that is damaged, truncated, foreign or stale is a miss (docs/security.md). Damage may be found
only while reading, in a lazily read row. That switches the reader to `recover`, a fresh compile, so the answer is
never wrong.
"""

from __future__ import annotations

import json
import os
import posixpath
import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from cfgtool._version import __version__
from cfgtool.diagnostics import Diagnostic
from cfgtool.snapshot.model import Reading, Snapshot, SourceInfo, node_hash
from cfgtool.versions.artifact_rows import (
    Damaged,
    Nodes,
    RowSeal,
    Secrets,
    Texts,
    row_seal,
    sqlite_path,
    strings,
    values_at,
)

if TYPE_CHECKING:
    from cfgtool.hocon import Resolved
    from cfgtool.hocon.values import Node

FORMAT = 4  # 3: the header holds the rules' blob ids; 4: rows checked by a keyed MAC, not a CRC

_SCHEMA = """
CREATE TABLE meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE nodes (key TEXT PRIMARY KEY, config TEXT, config_crc INTEGER NOT NULL, node TEXT NOT NULL,
                    node_crc INTEGER NOT NULL, reached TEXT NOT NULL, reached_crc INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE texts (path TEXT PRIMARY KEY, text TEXT NOT NULL, crc INTEGER NOT NULL) WITHOUT ROWID;
"""

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)  # C encoder; config order kept


def compact_json(value: Any) -> str:
    """`value` as JSON without spaces, non-ASCII kept, keys in config order (what `config_json()` holds)."""
    return _ENCODER.encode(value)


def artifact_path(cache: Path, commit: str, store: str, variables: Mapping[str, str]) -> Path:
    """Where the artifact of `commit`'s `store` (repo-relative) under the given `variables` lives in `cache`."""
    import hashlib

    given = json.dumps(dict(sorted(variables.items())))
    name = hashlib.sha256(f"{commit}\0{store}\0{given}\0{__version__}".encode()).hexdigest()
    return cache / f"versions-v{FORMAT}" / f"{name}.sqlite"


# -- writing ---------------------------------------------------------------------------------------------


def write_artifact(
    path: Path, snapshot: Snapshot, diagnostics: Sequence[Diagnostic], variables: Mapping[str, str]
) -> None:
    """Store a compiled snapshot of a commit and its diagnostics at `path`. The commit is read from a ref, never a
    working tree. The write is atomic: a temporary file in the same directory, renamed over `path` when complete."""
    if snapshot.source.commit is None or snapshot.source.ref is None:
        raise ValueError("only a snapshot of a commit has an artifact")
    head = {
        "format": FORMAT,
        "cfgtool": __version__,
        "commit": snapshot.source.commit,
        "store": snapshot.store,
        "given": dict(sorted(variables.items())),
        "name": snapshot.name,
        "variables": dict(snapshot.variables),
        "tag_roots": list(snapshot.tag_roots),
        "cfgtool_version": snapshot.cfgtool_version,
        "rules": dict(sorted(snapshot.rules.items())),
        "diagnostics": [d.to_json() for d in diagnostics],
    }
    head_text = json.dumps(head, ensure_ascii=False)
    seal = row_seal(path.name)
    if seal is None:
        raise ValueError("no cache key: artifacts are not written")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=OFF")  # a temporary file until renamed: nothing to roll back
            con.execute("PRAGMA synchronous=OFF")
            con.executescript(_SCHEMA)
            con.execute("BEGIN")
            con.executemany("INSERT INTO meta VALUES (?, ?)", [("head", head_text), ("crc", str(seal.of(head_text)))])
            con.executemany("INSERT INTO nodes VALUES (?, ?, ?, ?, ?, ?, ?)", _node_rows(snapshot, seal))
            con.executemany("INSERT INTO texts VALUES (?, ?, ?)", _text_rows(snapshot.texts, seal))
            con.execute("COMMIT")
        finally:
            con.close()
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _node_rows(snapshot: Snapshot, seal: RowSeal) -> Iterator[tuple[str, str | None, int, str, int, str, int]]:
    """Each node's row: its config (what `config_json` reads) and what every read needs. Also how its layers were
    reached, which only `explain` reads. Each has a CRC of its own."""
    secrets = snapshot.secrets
    for key, snap in snapshot.nodes.items():
        config = compact_json(snap.config) if snap.config is not None else None
        sealed = secrets.get(key)
        node = json.dumps(
            [list(snap.layers), list(snap.imports), snap.file, snap.intrinsic, node_hash(snap),
             dict(sealed) if sealed else None],
            ensure_ascii=False,
        )  # fmt: skip
        reached = json.dumps(list(snap.reached), ensure_ascii=False)
        yield key, config, seal.of(key, config), node, seal.of(key, node), reached, seal.of(key, reached)


def _text_rows(texts: Mapping[str, str], seal: RowSeal) -> Iterator[tuple[str, str, int]]:
    for path in texts:
        try:
            text = texts[path]
        except KeyError:  # listed but absent (an include of a missing file)
            continue
        yield path, text, seal.of(path, text)


# -- reading ---------------------------------------------------------------------------------------------


class Artifact:
    """An opened artifact (see `open_artifact`): its diagnostics and a `Snapshot`. The snapshot's nodes, texts and
    secrets are read from the file when first asked for."""

    def __init__(
        self, con: sqlite3.Connection, head: Mapping[str, Any], diagnostics: tuple[Diagnostic, ...], seal: RowSeal
    ) -> None:
        self._con = con
        self.seal = seal
        con.create_function("cfgtool_crc_ok", 3, seal.ok, deterministic=True)
        self._lock = threading.Lock()  # one connection, shared by the threads of a server
        self._head = head
        self.diagnostics = diagnostics
        self._recovered: Snapshot | None = None
        self._recover: Callable[[], Snapshot] | None = None
        self.texts = Texts(self)
        self.nodes = Nodes(self)

    def reading(self, ref: str, recover: Callable[[], Snapshot]) -> Reading:
        """The artifact as a `Reading` of `ref`; `recover` compiles the same snapshot, should a row turn out to
        be damaged."""
        self._recover = recover
        head = self._head
        snapshot = Snapshot(
            store=head["store"],
            name=head["name"],
            source=SourceInfo(ref, head["commit"], False),
            variables=head["variables"],
            tag_roots=tuple(head["tag_roots"]),
            nodes=self.nodes,
            cfgtool_version=head["cfgtool_version"],
            texts=self.texts,
            secrets=Secrets(self.nodes),
            rules=head["rules"],
        )
        return Reading(snapshot, self.diagnostics)

    def config_json(self) -> dict[str, str]:
        """Every resolved node's config as stored (compact JSON), by key; one pass over the table."""
        out: dict[str, str] = {}
        try:
            for key, config, stored in self._rows("SELECT key, config, config_crc FROM nodes", ()):
                if stored != self.seal.of(key, config):
                    raise Damaged(key)
                if config is not None:
                    out[key] = config
        except Damaged:
            return {k: compact_json(n.config) for k, n in self.recovered().nodes.items() if n.config is not None}
        return out

    def config_values(self, paths: Sequence[tuple[str, ...]]) -> tuple[list[str], list[list[Any]]] | None:
        """The keys of every resolved node, sorted. For each path, the value at it in each one's config (None where
        it has none). They are as `values_at` over the decoded configs gives them. SQLite extracts the values:
        `json_extract` of several paths is a JSON array of each value's own text. So only they are decoded, not every
        config. Every row's CRC is checked on the way. None when SQLite cannot (no JSON functions, a config it does
        not parse), or a row is damaged or no object. The caller then reads `config_json()` instead."""
        named = [sqlite_path(parts) for parts in paths]
        args = tuple(path for path, _ in named)
        args += args[:1] if len(args) == 1 else ()  # one path gives an SQL value, two or more a JSON array
        extract = f"json_extract(config, {', '.join('?' * len(args))})" if args else "NULL"
        checks = "cfgtool_crc_ok(key, CAST(config AS BLOB), config_crc), json_type(config)"
        try:
            rows = self._rows(f"SELECT key, {extract}, {checks} FROM nodes ORDER BY key", args)
        except Damaged:
            return None
        if not all(ok and kind in ("object", None) for _, _, ok, kind in rows):
            return None
        keys = [key for key, _, _, kind in rows if kind is not None]
        found = json.loads("[" + ",".join(text for _, text, _, kind in rows if kind is not None) + "]") if args else []
        columns = [list(column) for column in zip(*found, strict=True)] if found else [[] for _ in args]
        return keys, [values_at(column, rest) for column, (_, rest) in zip(columns, named, strict=False)]

    @property
    def is_recovered(self) -> bool:
        return self._recovered is not None

    def recovered(self) -> Snapshot:
        """The compiled snapshot that replaces this artifact once it turned out damaged."""
        with self._lock:
            if self._recovered is None:
                assert self._recover is not None
                self._recovered = self._recover()
                self._con.close()
        return self._recovered

    def _rows(self, sql: str, args: tuple[str, ...]) -> list[Any]:
        with self._lock:
            if self._recovered is not None:
                raise Damaged
            try:
                return self._con.execute(sql, args).fetchall()
            except sqlite3.DatabaseError as exc:
                raise Damaged from exc

    # -- provenance on demand (explain): what the compiler computes for a node it took from its cache ----
    def provenance(self, key: str, layers: tuple[str, ...]) -> tuple[Resolved | None, Node | None]:
        """The resolved tree of `key` and its own document, from the texts of its layers."""
        from cfgtool.hocon import HoconError
        from cfgtool.hocon.merge import merge_nodes
        from cfgtool.snapshot.layers import resolve_layers

        docs = [self._doc(layer) for layer in layers]
        if not docs or any(d is None for d in docs):
            return None, docs[0] if docs else None
        tree = docs[-1]
        for doc in reversed(docs[:-1]):  # highest last: as `Builder._tree` merges each node over its suffix
            assert doc is not None and tree is not None
            tree = merge_nodes(doc, tree)
        assert tree is not None
        try:
            return resolve_layers([tree], key), docs[0]
        except HoconError:
            return None, docs[0]

    def reached(self, key: str) -> tuple[str, ...]:
        """How each layer of `key` was reached (`explain` shows it), read when first asked for."""
        try:
            rows = self._rows("SELECT reached, reached_crc FROM nodes WHERE key = ?", (key,))
            text, stored = rows[0]
            if stored != self.seal.of(key, text):
                raise Damaged(key)
            found = json.loads(text)
            if not strings(found):
                raise Damaged(key)
        except (Damaged, IndexError, ValueError, RecursionError):
            return self.recovered().nodes[key].reached
        return tuple(found)

    def _doc(self, key: str) -> Node | None:
        from cfgtool.hocon import HoconError, Origin, parse
        from cfgtool.hocon.values import Obj

        file = self.nodes[key].file
        if file is None:  # as the compiler: an empty document at the node's main.conf, line 0
            store = self._head["store"]
            directory = posixpath.join(store, key[1:]) if key != "/" else store
            return Obj({}, Origin(posixpath.join(directory, "main.conf"), 0, 0))
        texts = self.texts
        try:
            return parse(texts[file], file, reader=texts.get)
        except (HoconError, KeyError):
            return None


def open_artifact(path: Path, *, commit: str, store: str, variables: Mapping[str, str]) -> Artifact | None:
    """The artifact at `path` when it is one of this format and cfgtool version, for this commit, store and
    variables. Its header must read back intact. None (a miss) for anything else."""
    try:
        if not path.is_file():
            return None
        con = sqlite3.connect(
            f"file:{quote(str(path))}?mode=ro&immutable=1", uri=True, check_same_thread=False, isolation_level=None
        )
    except (sqlite3.Error, OSError, ValueError):
        return None
    seal = row_seal(path.name)
    try:
        meta = dict(con.execute("SELECT name, value FROM meta").fetchall())
        head_text = meta["head"]
        if seal is None or meta.get("crc") != str(seal.of(head_text)):
            raise ValueError("damaged header")
        head = json.loads(head_text)
        expected = {"format": FORMAT, "cfgtool": __version__, "commit": commit, "store": store,
                    "given": dict(sorted(variables.items()))}  # fmt: skip
        if any(head.get(k) != v for k, v in expected.items()):
            raise ValueError("another artifact")
        diagnostics = tuple(_diagnostic(d) for d in head["diagnostics"])
        if not all(field in head for field in ("name", "variables", "tag_roots", "cfgtool_version")):
            raise KeyError("a field of the header")
        rules = head["rules"]
        if not (isinstance(rules, dict) and strings(list(rules)) and strings(list(rules.values()))):
            raise ValueError("the rules of the header")
    except (sqlite3.Error, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        con.close()
        return None
    return Artifact(con, head, diagnostics, seal)


NodeDiff = tuple[str, Any, Any, Mapping[str, Any], Mapping[str, Any]]


def differing(old: Path, new: Path) -> list[NodeDiff] | None:
    """The nodes whose stored config or sealed secrets differ between two artifacts. Both were opened with
    `open_artifact` already, so their headers are checked. Each is
    `(key, old config, new config, old sealed, new sealed)`, a config None where that side has no node. One SQL join
    finds them, so unchanged nodes are never read into Python. Each row returned has its CRCs checked. None when a
    row is damaged or SQLite cannot compare: the caller compares the snapshots instead."""
    hidden = json.dumps("[hidden]")
    sql = """
        SELECT o.key, o.config, o.config_crc, o.node, o.node_crc, n.config, n.config_crc, n.node, n.node_crc
        FROM main.nodes o LEFT JOIN b.nodes n ON n.key = o.key
        WHERE n.key IS NULL OR o.config IS NOT n.config
           OR (o.node IS NOT n.node AND (instr(o.config, ?) OR instr(n.config, ?)))
        UNION ALL
        SELECT n.key, NULL, 0, NULL, 0, n.config, n.config_crc, n.node, n.node_crc
        FROM b.nodes n WHERE NOT EXISTS (SELECT 1 FROM main.nodes o WHERE o.key = n.key)
    """
    try:
        con = sqlite3.connect(f"file:{quote(str(old))}?mode=ro&immutable=1", uri=True, isolation_level=None)
        try:
            con.execute("ATTACH DATABASE ? AS b", (f"file:{quote(str(new))}?mode=ro&immutable=1",))
            rows = con.execute(sql, (hidden, hidden)).fetchall()
        finally:
            con.close()
        seals = (row_seal(old.name), row_seal(new.name))
        out: list[NodeDiff] = []
        for key, *sides in rows:
            decoded: list[Any] = []
            for seal, (config, config_crc, node, node_crc) in zip(seals, (sides[:4], sides[4:]), strict=True):
                if node is None:
                    decoded += [None, {}]
                    continue
                if seal is None or seal.of(key, config) != config_crc or seal.of(key, node) != node_crc:
                    return None
                sealed = json.loads(node)[5] if config is not None and hidden in config else None
                decoded += [json.loads(config) if config is not None else None, sealed or {}]
            out.append((key, decoded[0], decoded[2], decoded[1], decoded[3]))
        return out
    except (sqlite3.Error, OSError, ValueError, TypeError, IndexError, RecursionError):
        return None


def _diagnostic(data: Any) -> Diagnostic:
    code, severity, key, file, line, col, message, notes = (
        data["code"], data["severity"], data["key"], data["file"], data["line"], data["col"], data["message"],
        data["notes"],
    )  # fmt: skip
    if not (type(code) is str and severity in ("error", "warning") and type(message) is str and strings(notes)
            and all(v is None or type(v) is str for v in (key, file))
            and all(v is None or type(v) is int for v in (line, col))):  # fmt: skip
        raise ValueError("damaged diagnostic")
    return Diagnostic(code, severity, key, file, line, col, message, tuple(notes))
