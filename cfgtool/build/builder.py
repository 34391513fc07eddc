"""Building each node's `NodeSnapshot` for one graph: parse the documents of its layers, merge, resolve.

Two content-addressed caches keep repeated compiles fast. `ParseCache` keeps parsed documents by blob id. `NodeCache`
keeps node results by a fingerprint of everything a node resolves from. That is its key, L(K) with every layer's
`main.conf` blob id, and its imports. A node whose fingerprint is cached is not resolved again. The documents of its
layers are not even read. A document that includes other files is never cached: its own blob id does not capture its
content. Neither is a node that resolves from one.

A build with many nodes to resolve (a cold compile) is split over two processes. A forked worker parses and resolves
half of them and adds its cache entries to the cache files itself. It sends back plain data through a pipe: configs,
content hashes, diagnostics. This process keeps everything else. The snapshot and diagnostics are the same as in one
process.
"""

from __future__ import annotations

import hashlib
import pickle
import posixpath
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import TypeVar

from cfgtool._util.forking import can_fork, fork
from cfgtool.build.budget import Budget
from cfgtool.build.cache import NodeCache, NodeEntry, ParseCache
from cfgtool.diagnostics import Diagnostic
from cfgtool.hocon import HoconError, Origin, Resolved, parse
from cfgtool.hocon.errors import E_UNSUPPORTED_INCLUDE
from cfgtool.hocon.merge import merge_nodes
from cfgtool.hocon.values import Node, Obj
from cfgtool.snapshot.layers import resolve_layers
from cfgtool.snapshot.model import LayersJson, NodeSnapshot, hash_content, node_snapshot
from cfgtool.snapshot.provenance import Provenance
from cfgtool.store.graph import Graph
from cfgtool.store.keys import parent
from cfgtool.store.lin import Lin
from cfgtool.store.nodes import Store, decode

PARALLEL_MIN = 2000  # nodes to resolve in one build before half of them go to a forked worker
FLAT_LAYERS = 32  # layers a fingerprint names one by one; a longer L (an import chain's) enters as a hash chain
_Todo = tuple[str, Sequence[str], tuple[str, ...], str]  # key, L(K), imports, fingerprint
# How far a compile is: (stage, done, total); a total of 0 is a stage of unknown length. The CLI draws it.
Progress = Callable[[str, int, int], None]
# What a worker sends back: results by key (None: failed), diagnostics, keys whose main.conf includes files,
# the files each of those includes, keys it parsed. Its cache entries go to the cache files (the parent adds its
# own later).
_Share = tuple[dict[str, "NodeEntry | None"], list[Diagnostic], list[str], dict[str, tuple[str, ...]], list[str]]


class Builder:
    """Resolves the nodes of one store (for any number of graphs over it), collecting diagnostics."""

    def __init__(
        self, store: Store, diagnostics: list[Diagnostic], progress: Progress | None = None, *, caches: bool = True
    ) -> None:
        """`caches` False keeps both caches in memory. A query about one key parses its few files faster than it
        would read the cache shards that hold them."""
        self.store = store
        self.source = store.source
        self.diags = diagnostics
        self.parse_cache = ParseCache.default() if caches else ParseCache(None)
        self.node_cache = NodeCache.default() if caches else NodeCache(None)
        self.docs: dict[str, Obj | None] = {}  # key -> its own parsed main.conf (None: it does not parse)
        self.dynamic: set[str] = set()  # keys whose main.conf includes other files
        # key -> the files its main.conf reads through `include` (transitively): the snapshot's texts, and a
        # node's files for the pull-request gate (an edit to an included file alters the node)
        self.included: dict[str, tuple[str, ...]] = {}
        # memos by the first key of a suffix of some L(K) that is that key's own linearization (the suffix, the
        # graph's own tuple, says which graph's: another variable value may give the key other layers)
        self._trees: dict[str, tuple[Sequence[str], Node | None]] = {}
        # fingerprints' hash chains: by the id of a `Lin`'s list, the list and the chain of each length of it; by
        # (layer, chain below it), the chain over it
        self._chains: dict[int, tuple[list[str], list[str]]] = {}
        self._steps_done: dict[tuple[str, str], str] = {}
        self._layers_json = LayersJson()  # for node hashes
        self._layer_ids = _LayerIds(store)  # `layer=blob id` of each layer, for fingerprints
        self.budget = Budget(len(store.nodes))
        self._parsed: set[str] = set()  # keys whose main.conf this compile parsed
        self.stats = {"parsed": 0, "resolved": 0, "reused": 0}  # what this compile did, for reports and tests
        self.progress = progress
        self._stage, self._done, self._total = "", 0, 0
        self._split_at: int | None = None  # `_done` when a worker took half of the rest

    def build(
        self, graph: Graph, keys: Iterable[str], notes: tuple[str, ...] = (), keep: bool = True
    ) -> dict[str, NodeSnapshot]:
        """A NodeSnapshot for each of `keys` (config None when it does not resolve). With `keep` False only
        the diagnostics matter (another variable value being checked): cached nodes are just counted."""
        out: dict[str, NodeSnapshot] = {}
        todo: list[_Todo] = []
        keys = list(keys)
        self._stage = f"resolving ({notes[0]})" if notes else "resolving"
        self._done, self._total, self._split_at = 0, len(keys), None
        for key in keys:
            lkeys = graph.linearization(key)
            if lkeys is None:  # on or behind an import cycle: E_CYCLE was reported; no L(K), so no layers
                out[key] = NodeSnapshot(key=key, config=None, layers=(), imports=tuple(graph.imports(key)))
                continue
            imports = tuple(graph.imports(key))
            fingerprint = self._fingerprint(key, lkeys, imports)
            hit = self.node_cache.get(fingerprint)
            if hit is None:
                todo.append((key, lkeys, imports, fingerprint))
                continue
            self.stats["reused"] += 1
            self._step()
            problem = self.budget.spend(key, hit[3], partial(self._resolved_again, graph, key, lkeys))
            if problem is not None:
                self.diags.append(problem)
                out[key] = NodeSnapshot(key=key, config=None, layers=lkeys, imports=imports)
                continue
            if not keep:
                continue
            out[key] = self._cached(graph, key, lkeys, imports, hit)
        if len(todo) >= PARALLEL_MIN and can_fork():
            out.update(self._build_split(graph, todo, notes))
            return out
        self._load(_layer_keys(graph, todo))
        for key, lkeys, imports, fingerprint in todo:
            out[key] = self._resolve(graph, key, lkeys, imports, fingerprint, notes)
        return out

    def texts_paths(self) -> list[str]:
        """Every file a snapshot may need again: each node's main.conf and every included file."""
        mains = [node.main.path for node in self.store.nodes.values() if node.main is not None]
        return [*mains, *dict.fromkeys(f for files in self.included.values() for f in files)]

    def flush(self) -> None:
        if self.progress is not None:
            self.progress("writing caches", 0, 0)
        self.parse_cache.flush()
        self.node_cache.flush()

    def flush_aside(self) -> Callable[[bool], None]:
        """`flush`, in a forked child when there are many entries to write, so that validation runs meanwhile. In a
        cold compile, encoding and writing them takes a tenth of it. The returned function waits for the child. Given
        True, it writes the entries here if the child failed or could not start. Given False (the compile is failing
        or interrupted), it only waits. Call it before the compile returns."""
        if self.parse_cache.pending + self.node_cache.pending < PARALLEL_MIN or not can_fork():
            self.flush()
            return lambda keep: None
        join = fork(self._flushed)
        self.parse_cache.release()  # the child has them; a large cache's shards would stay through validation
        self.node_cache.release()

        def written(keep: bool) -> None:
            if join() is None and keep:
                self.flush()
            else:
                self.parse_cache.forget_new()
                self.node_cache.forget_new()

        return written

    def _flushed(self) -> bytes:
        """In the child of `flush_aside`: write the entries (the parent reports progress, not the child)."""
        self.progress = None
        self.flush()
        return b""

    # -- two processes ----------------------------------------------------------------------------------
    def _build_split(self, graph: Graph, todo: list[_Todo], notes: tuple[str, ...]) -> dict[str, NodeSnapshot]:
        """Resolve `todo` in two processes: a forked worker takes the first half, this process the rest. The worker's
        results and diagnostics come back as plain data. Its cache entries go to the cache files. Results are the
        same as one process gives. If the worker fails, its half is done here."""
        half = len(todo) // 2
        theirs, mine = todo[:half], todo[half:]
        self._read(_layer_keys(graph, todo))  # one git process, shared by both
        join = fork(partial(self._share, graph, theirs, notes))
        out: dict[str, NodeSnapshot] = {}
        self._split_at = self._done  # from here on, the worker goes about as fast as this process
        try:
            self._load(_layer_keys(graph, mine))
            for key, lkeys, imports, fingerprint in mine:
                out[key] = self._resolve(graph, key, lkeys, imports, fingerprint, notes)
        finally:
            data = join()  # also when this half failed: no worker is left behind
        self._split_at = None
        if data is None:
            self._load(_layer_keys(graph, theirs))
            for key, lkeys, imports, fingerprint in theirs:
                out[key] = self._resolve(graph, key, lkeys, imports, fingerprint, notes)
            return out
        share: _Share = pickle.loads(data)
        results, diags, dynamic, included, parsed_keys = share
        self.diags += diags
        self.dynamic.update(dynamic)
        self.included.update(included)
        self.stats["resolved"] += len(theirs)
        self.stats["parsed"] += len(set(parsed_keys) - self._parsed)
        self._parsed.update(parsed_keys)
        self._done += len(theirs)
        self._step(0)
        for key, lkeys, imports, _ in theirs:
            entry = results[key]
            if entry is None:
                out[key] = NodeSnapshot(
                    key=key,
                    config=None,
                    layers=lkeys,
                    imports=imports,
                    provenance=Provenance(reach=partial(_reached, graph, key)),
                )
            else:
                out[key] = self._cached(graph, key, lkeys, imports, entry)
        return out

    def _share(self, graph: Graph, todo: list[_Todo], notes: tuple[str, ...]) -> bytes:
        """In the worker: resolve `todo`, write its cache entries and return what the parent needs, pickled. The
        pickle only crosses a pipe between two processes of one compile, never a cache (`_build_split`)."""
        start, included_before = len(self.diags), set(self.included)
        self.progress = None  # the parent reports progress; a worker never touches the terminal
        self.parse_cache.forget_new()  # the parent's own entries: it has them
        self.node_cache.forget_new()
        before = set(self._parsed)
        results: dict[str, NodeEntry | None] = {}
        self._load(_layer_keys(graph, todo))
        for key, lkeys, imports, fingerprint in todo:
            snap = self._resolve(graph, key, lkeys, imports, fingerprint, notes)
            config, content_hash = snap.config, snap.content_hash
            # the size is spent here, in the worker's budget
            results[key] = None if config is None or content_hash is None else (config, snap.intrinsic, content_hash, 0)
        self.flush()
        share: _Share = (
            results,
            self.diags[start:],
            sorted(self.dynamic),
            {k: v for k, v in self.included.items() if k not in included_before},
            sorted(self._parsed - before),
        )
        return pickle.dumps(share, protocol=pickle.HIGHEST_PROTOCOL)

    # -- resolution --------------------------------------------------------------------------------------
    def _cached(
        self, graph: Graph, key: str, lkeys: Sequence[str], imports: tuple[str, ...], entry: NodeEntry
    ) -> NodeSnapshot:
        """The snapshot of a node resolved before (cached, or by the worker): provenance only when asked."""
        config, intrinsic, content_hash, _ = entry
        provenance = Provenance(
            compute=partial(self._provenance, graph, key, lkeys), reach=partial(_reached, graph, key)
        )
        # a PackedConfig is read (unpacked) when first asked for
        return node_snapshot(key, config, lkeys, imports, self._file(key), intrinsic, provenance, content_hash)

    def _resolve(
        self,
        graph: Graph,
        key: str,
        lkeys: Sequence[str],
        imports: tuple[str, ...],
        fingerprint: str,
        notes: tuple[str, ...],
    ) -> NodeSnapshot:
        self.stats["resolved"] += 1
        self._step()
        reach = partial(_reached, graph, key)
        tree = self._tree(graph, lkeys, notes)
        problem: Diagnostic | None = None
        if tree is None:
            pass  # a layer does not parse or merge: its error was reported once, at its file
        elif self.budget.over is not None:
            problem = replace(self.budget.over, key=key)
        else:
            try:
                resolved = resolve_layers([tree], key)
                _ = resolved.value  # made here: too large a value is an error of this node
            except HoconError as exc:
                problem = diagnostic(exc, key, notes)
            except MemoryError:
                origin = tree.origin
                problem = Diagnostic.of(
                    "E_LIMIT", "ran out of memory resolving this config", key=key, file=origin.file,
                    line=origin.line, col=origin.col,
                )  # fmt: skip
            else:
                problem = self.budget.spend(key, resolved.size, lambda: resolved)
                if problem is None:
                    return self._resolved(graph, key, lkeys, imports, fingerprint, resolved, reach)
        if problem is not None:
            self.diags.append(problem)
        return NodeSnapshot(key=key, config=None, layers=lkeys, imports=imports, provenance=Provenance(reach=reach))

    def _resolved(
        self,
        graph: Graph,
        key: str,
        lkeys: Sequence[str],
        imports: tuple[str, ...],
        fingerprint: str,
        resolved: Resolved,
        reach: Callable[[], tuple[str, ...]],
    ) -> NodeSnapshot:
        """The snapshot of a node just resolved, put in the node cache (unless a layer includes other files)."""
        config = resolved.value
        # once: the snapshot's digest and the node cache
        content_hash = hash_content(config, lkeys, imports, self._layers_json)
        if not self.dynamic or self.dynamic.isdisjoint(lkeys):
            self.node_cache.put(fingerprint, (config, resolved.used_extra, content_hash, resolved.size))
        # resolved again when asked (explain, --output, a schema error's position): keeping every node's resolved
        # tree with its origins would cost about a third of a compile's memory
        provenance = Provenance(compute=partial(self._provenance, graph, key, lkeys), reach=reach)
        return node_snapshot(
            key, config, lkeys, imports, self._file(key), resolved.used_extra, provenance, content_hash
        )

    def _step(self, count: int = 1) -> None:
        """`count` more nodes of the current build are done: report it."""
        self._done += count
        if self.progress is not None:
            done = self._done if self._split_at is None else 2 * self._done - self._split_at
            self.progress(self._stage, min(done, self._total), self._total)

    def _resolved_again(self, graph: Graph, key: str, lkeys: Sequence[str]) -> Resolved:
        """A cached node resolved again (to say where the config that spent the budget is large)."""
        self._load(lkeys)
        tree = self._tree(graph, lkeys)
        assert tree is not None
        return resolve_layers([tree], key)

    def _provenance(self, graph: Graph, key: str, lkeys: Sequence[str]) -> tuple[Resolved | None, Node | None]:
        """Resolve a node again, for its provenance (explain, `--output`): neither cache nor build keeps it."""
        self._load(lkeys)
        tree = self._tree(graph, lkeys)
        return (resolve_layers([tree], key) if tree is not None else None), self.docs.get(key)

    def _tree(self, graph: Graph, keys: Sequence[str], notes: tuple[str, ...] = ()) -> Node | None:
        """The merged (unresolved) tree of a linearization. Most nodes have L(K) = [K] + L(B). B is their parent or,
        along an import chain, their import. The trees of suffixes that are linearizations are memoized. So each node
        costs one merge (or a few) of its own config over an already merged tree. No lookup hashes or copies a whole
        linearization per layer. An import chain 1,000 deep would be quadratic. It is built from the longest memoized
        suffix up, in a loop. A deep chain must not recurse. A merge can fail with E_LIMIT: too many definitions of
        one value over a deep chain. That is reported once, as an error of the layer whose config it merged. The
        layers over it then have no tree, as over one that does not parse."""
        done, tree = _longest(self._trees, keys)
        for i in range(done - 1, -1, -1):
            head: Node | None = self.docs.get(keys[i])
            if i < len(keys) - 1:  # over the tree of the layers below (None: one of them does not parse)
                try:
                    head = None if head is None or tree is None else merge_nodes(head, tree)
                except HoconError as exc:
                    self.diags.append(diagnostic(exc, keys[i], notes))
                    head = None
            tree = head
            if i:  # a node's own full tree is merged once: only its bases' trees are shared
                _remember(self._trees, graph, keys, i, tree)
        return tree

    # -- documents ---------------------------------------------------------------------------------------
    def _file(self, key: str) -> str | None:
        main = self.store.nodes[key].main if key in self.store.nodes else None
        return main.path if main is not None else None

    def _fingerprint(self, key: str, lkeys: Sequence[str], imports: tuple[str, ...]) -> str:
        """sha256 of the key, its imports and its layers' blob ids. Up to `FLAT_LAYERS` layers enter one by one: one
        join, one hash (most nodes). A longer L enters as a hash chain: each layer's id with the hash of the layers
        below it (`_chain`). Along an import chain that costs one step per node, not one per layer. An id
        (`key=blob`) never reads as a chain (hex digits), so the two forms never meet."""
        if len(lkeys) <= FLAT_LAYERS:
            layers: Iterable[str] = map(self._layer_ids.__getitem__, lkeys)
        else:
            layers = (self._chain(lkeys),)
        return hashlib.sha256("\0".join([key, *imports, "|", *layers]).encode("utf-8")).hexdigest()

    def _chain(self, lkeys: Sequence[str]) -> str:
        """The hash chain of a linearization. The chains of a `Lin`'s list are kept by list, for every length asked
        for so far. So each node built over a memoized L costs one step. An import chain is linear, not quadratic. A
        step already taken over the same layers below (the root, a group, a tag over them) is not hashed again."""
        if not isinstance(lkeys, Lin):
            return self._steps(reversed(lkeys), "")[-1]
        base, size = lkeys.storage
        memo = self._chains.get(id(base))
        if memo is None:  # the list is kept with its chains: its id stays its own
            memo = self._chains[id(base)] = (base, [""])
        chains = memo[1]
        if len(chains) <= size:
            chains += self._steps(base[len(chains) - 1 : size], chains[-1])
        return chains[size]

    def _steps(self, layers: Iterable[str], chain: str) -> list[str]:
        """The chains of `layers` (lowest priority first) over `chain`, one per layer, each step memoized."""
        ids, steps, out = self._layer_ids, self._steps_done, []
        for layer in layers:
            step = (layer, chain)
            found = steps.get(step)
            if found is None:
                found = steps[step] = hashlib.sha256(f"{ids[layer]}\0{chain}".encode()).hexdigest()
            out.append(found)
            chain = found
        return out

    def _read(self, keys: Iterable[str]) -> None:
        """Read (into the source's memory) the files of `keys` that `_load` would parse, in one batch."""
        paths = []
        for key in keys:
            node = self.store.nodes.get(key)
            main = node.main if node is not None else None
            if key not in self.docs and main is not None and not self.parse_cache.has((main.oid, main.path)):
                paths.append(main.path)
        self.source.load(paths)

    def _load(self, keys: Iterable[str]) -> None:
        """Parse the documents of `keys` not loaded yet: from the parse cache, else read in one batch."""
        missing: dict[str, str] = {}
        for key in keys:
            if key in self.docs:
                continue
            node = self.store.nodes.get(key)
            main = node.main if node is not None else None
            if main is None:
                directory = node.dir if node is not None else self.source.store
                self.docs[key] = Obj({}, Origin(posixpath.join(directory, "main.conf"), 0, 0))  # line 0: no file
                continue
            doc = self.parse_cache.get((main.oid, main.path))
            if doc is None:
                missing[key] = main.path
            else:
                self.docs[key] = doc
        if not missing:
            return
        blobs = self.source.load(missing.values())
        for key, path in missing.items():
            blob = blobs.get(path)
            text, problem = decode(blob, key) if blob is not None else (None, None)
            if text is None:
                if problem is not None:
                    self.diags.append(problem)
                self.docs[key] = None
                continue
            self.docs[key] = self._parse(key, path, text)

    def _parse(self, key: str, path: str, text: str) -> Obj | None:
        root = self.source.store
        used: list[str] = []

        def reader(target: str) -> str | None:
            outside = target.startswith(("/", "../")) or target == ".."
            if outside or (root and not (target == root or target.startswith(root + "/"))):
                raise HoconError(E_UNSUPPORTED_INCLUDE, f"include {target!r} is outside the store {root or '.'}/")
            used.append(target)
            blob = self.source.read(target)
            return None if blob is None else blob.data.decode("utf-8-sig", "replace")

        if key not in self._parsed:  # a worker's documents may be parsed here again (not counted twice)
            self.stats["parsed"] += 1
            self._parsed.add(key)
        try:
            doc = parse(text, path, reader=reader)
        except HoconError as exc:
            self.diags.append(diagnostic(exc, key))
            return None
        finally:
            if used:  # also those read before a syntax error: they are the node's files all the same
                self.included[key] = tuple(dict.fromkeys(used))
        node = self.store.nodes[key]
        assert node.main is not None
        if used:
            self.dynamic.add(key)
        else:
            self.parse_cache.put((node.main.oid, path), doc)
        return doc


class _LayerIds(dict[str, str]):
    """`key=blob id of its main.conf` (`-`: none) for each key asked for, computed once. Every node's fingerprint
    names each of its layers. Most layers (the root, the tags) are in thousands of them."""

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.nodes = store.nodes

    def __missing__(self, layer: str) -> str:
        node = self.nodes.get(layer)
        main = node.main if node is not None else None
        text = self[layer] = f"{layer}={main.oid if main is not None else '-'}"
        return text


_Memo = TypeVar("_Memo")


def _longest(memo: Mapping[str, tuple[Sequence[str], _Memo]], keys: Sequence[str]) -> tuple[int, _Memo | None]:
    """(i, value): the longest suffix `keys[i:]` (i >= 1) that `memo` holds, and its value. (len, None) if none. An
    entry holds under a key the linearization it stands for. It counts only when that is `keys[i:]`."""
    last = len(keys)
    for i in range(1, last):
        hit = memo.get(keys[i])
        if hit is not None and len(hit[0]) == last - i and hit[0] == keys[i:]:
            return i, hit[1]
    return last, None


def _remember(
    memo: dict[str, tuple[Sequence[str], _Memo]], graph: Graph, keys: Sequence[str], i: int, value: _Memo
) -> None:
    """Memoize `value` for the suffix `keys[i:]` when it is the linearization of its first key. It is kept as the
    graph's own tuple: nothing is copied."""
    own = graph.linearization(keys[i])
    if own is not None and len(own) == len(keys) - i and own == keys[i:]:
        memo[keys[i]] = (own, value)


def _layer_keys(graph: Graph, todo: list[_Todo]) -> set[str]:
    """Every layer of the nodes of `todo`: what their imports and parents reach, each key visited once. It is not a
    union of their L, which along an import chain adds up to the square of its depth."""
    found: set[str] = set()
    stack = [key for key, _, _, _ in todo]
    while stack:
        key = stack.pop()
        if key not in found:
            found.add(key)
            stack += graph.imports(key)
            above = parent(key)
            if above is not None:
                stack.append(above)
    return found


def _reached(graph: Graph, key: str) -> tuple[str, ...]:
    layers = graph.layers(key) or ()
    return tuple(layer.reach.describe(layer.key) for layer in layers)


def diagnostic(exc: HoconError, key: str, notes: tuple[str, ...] = ()) -> Diagnostic:
    """A HOCON error as a diagnostic of node `key`."""
    return Diagnostic.of(
        exc.code, exc.message, key=key, file=exc.file, line=exc.line, col=exc.col, notes=(*exc.notes, *notes)
    )
