"""The typed lookup of every node, kept on disk beside the version artifacts (`<cache>/spark-lookups-v2/`). So the
first `attach` of an application reads a few megabytes instead of building it.

There is one file per (store, commit, variables, columns, cfgtool version). It holds a header line of JSON (what it
is for, each column's type), then the lookup's Arrow table as an Arrow IPC stream. It is sealed with the user's cache
key (`cacheauth`), since the lookup is the answer an `attach` joins. It is written to a temporary file renamed into
place. At most `LIMIT` files are kept; the least recently used is removed first. A file may be damaged, truncated,
foreign or of another format. Foreign is another version's, variables' or columns' under this name. Such a file is a
miss, never an error or a wrong answer (docs/security.md). Only lookups without opened secrets are kept. A secret
reads `[hidden]` in them, as in the version artifact itself.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cfgtool._util.cacheauth import seal, unseal
from cfgtool._util.cachedir import mark_used, private_dir, prune
from cfgtool._version import __version__
from cfgtool.spark.columns import Kind, arrow_type
from cfgtool.spark.join import LOOKUP_KEY

FORMAT = 2  # 2: sealed with the user's cache key
LIMIT = 16  # files kept; each is one version's lookup of a set of paths (about 9 MB for 100,000 nodes, 4 paths)
_KINDS = (None, "string", "integer", "number", "boolean")
_HEADER_MAX = 1 << 20  # a header line longer than this is no header of ours


def directory(cache: Path) -> Path:
    """Where the lookups live in the cache directory `cache` (delete it to forget them all)."""
    return cache / f"spark-lookups-v{FORMAT}"


def identity(store: str, commit: str, variables: Mapping[str, str], columns: Mapping[str, str]) -> dict[str, Any]:
    """What a kept lookup is the lookup of. Its file's name derives from this, and its header repeats it."""
    return {
        "format": FORMAT,
        "cfgtool": __version__,
        "store": store,
        "commit": commit,
        "variables": dict(sorted(variables.items())),
        "columns": [[column, path] for column, path in columns.items()],
    }


def lookup_path(cache: Path, ident: Mapping[str, Any]) -> Path:
    name = hashlib.sha256(json.dumps(ident, sort_keys=True).encode("utf-8")).hexdigest()
    return directory(cache) / f"{name}.arrow"


def read(pa: Any, path: Path, ident: Mapping[str, Any]) -> tuple[Any, dict[str, Kind]] | None:
    """The kept lookup table at `path` and each column's type, when it is intact and the one `ident` names. None (a
    miss) for anything else."""
    try:
        data = unseal(f"spark {path.name}", path.read_bytes())
    except OSError:
        return None
    if data is None:
        return None  # damaged, forged or moved from another lookup's place
    end = data.find(b"\n", 0, _HEADER_MAX)
    try:
        header = json.loads(data[:end]) if end > 0 else None
        body = memoryview(data)[end + 1 :]
        if type(header) is not dict or header.get("identity") != ident:
            return None
        kinds = header["kinds"]
        columns = [column for column, _ in ident["columns"]]
        if type(kinds) is not dict or list(kinds) != columns or any(k not in _KINDS for k in kinds.values()):
            return None
        table = pa.ipc.open_stream(pa.py_buffer(body)).read_all()
        expected = pa.schema([(LOOKUP_KEY, pa.string()), *((c, arrow_type(pa, kinds[c])) for c in columns)])
        if not table.schema.equals(expected):
            return None
    except (ValueError, TypeError, KeyError, OSError, RecursionError, pa.ArrowException):
        return None
    mark_used(path)
    return table, kinds


def write(pa: Any, path: Path, ident: Mapping[str, Any], table: Any, kinds: Mapping[str, Kind]) -> None:
    """Keep `table` (the lookup) at `path`, atomically, then prune the oldest beyond `LIMIT`. A cache that
    cannot be written only costs the next application a build."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    body = sink.getvalue().to_pybytes()
    header = {"identity": ident, "kinds": dict(kinds)}
    sealed = seal(f"spark {path.name}", json.dumps(header).encode("utf-8") + b"\n" + body)
    if sealed is None:
        return
    with contextlib.suppress(OSError):
        private_dir(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(sealed)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        prune(path.parent, path.suffix, keep=path, limit=LIMIT)
