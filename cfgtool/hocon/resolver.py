"""Late resolution of `${...}`: one merged tree in, resolved nodes (origins kept) out. Never the environment.

Semantics follow Lightbend config. A delayed `Merge` is resolved from its highest definition down. A definition may
itself be unresolved. While it is being resolved, lookups that pass through the merge see only the definitions below
it (the "remainder"). That makes `path = ${path}":/x"` and `+=` refer to the previous value. Resolution state (memo,
in-progress set, trace, replacements) lives in `_Resolver`, not in the nodes. Cycles, missing references and type
conflicts become `HoconError`s naming the path and origin.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Final

from cfgtool.hocon.errors import E_LIMIT, E_REF_CYCLE, E_TYPE, E_UNRESOLVED_REF, HoconError
from cfgtool.hocon.merge import merge_all
from cfgtool.hocon.origin import Origin
from cfgtool.hocon.values import Concat, Joined, JoinedLst, JoinedObj, Lst, Merge, Node, Num, Obj, Scalar, Subst, Ws

MAX_STRING: Final = 16 * 1024 * 1024  # characters in one concatenated string
MAX_LIST: Final = 1_000_000  # items in one concatenated array
MAX_STEPS: Final = 5_000_000  # resolution steps in one resolve() call
MAX_SOURCES: Final = 16  # origins a value keeps of what it was built from: the nearest and the farthest
_INDEX = re.compile(r"[+-]?[0-9]+\Z")


class _Undefined:
    """An optional substitution with no value: the field, array item or concatenation piece disappears."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Final = _Undefined()
Result = Node | _Undefined


class _Cycle(Exception):
    """Internal signal: a value was needed while it was being resolved. Never leaves this module.

    It travels up to the nearest optional substitution, which becomes undefined, as in Lightbend. Or it travels up to
    `resolve_tree`. That reports E_REF_CYCLE with the substitutions that were being resolved (`steps`).
    """

    def __init__(self, steps: tuple[Subst, ...]) -> None:
        super().__init__()
        self.steps = steps


def render_path(path: tuple[str, ...]) -> str:
    """A path as a HOCON path expression, quoting keys that need it."""
    return ".".join(
        k if k and all(c.isalnum() or c in "-_" for c in k) else '"' + k.replace('"', '\\"') + '"' for k in path
    )


def is_static(node: Obj | Lst) -> bool:
    """Whether nothing below `node` needs resolving (only scalars, objects and arrays); cached on the node."""
    result = True
    for child in node.fields.values() if isinstance(node, Obj) else node.items:
        cls = type(child)
        if cls is Scalar or cls is Num or cls is Joined:
            continue
        if isinstance(child, (Obj, Lst)):
            flag = child.static
            if flag is None:
                flag = is_static(child)
            if flag:
                continue
        result = False
        break
    node.static = result
    return result


def merge_resolved(high: Node, low: Node) -> Node:
    """`withFallback` on resolved nodes: objects merge key by key, anything else in `high` wins."""
    if isinstance(high, Obj) and isinstance(low, Obj):
        fields = dict(low.fields)
        for key, value in high.fields.items():
            old = fields.get(key)
            fields[key] = value if old is None else merge_resolved(value, old)
        return Obj(fields, high.origin)
    return high


SUGGEST_PATHS = 10_000  # paths compared with a substitution that names none (difflib is quadratic in length)


class _Resolver:
    def __init__(self, root: Node, extra: Node | None, allow_unresolved: bool) -> None:
        self.root = root
        self.extra = extra
        self.allow_unresolved = allow_unresolved
        self.unresolved = False
        self.used_extra = False
        self.shared = False  # a substitution copied an object or array: it may now appear in many places
        self.memo: dict[int, Result] = {}
        self.active: set[int] = set()
        self.trace: list[Subst] = []
        self.replace: dict[int, Result] = {}
        self.remainders: dict[tuple[int, int], Result] = {}
        self.stable: dict[int, Result] = {}  # values of remainders: the same in every replacement context
        self.remainder_nodes: set[Node] = set()
        self.remainder_of: dict[int, tuple[Merge, int]] = {}  # remainder -> (original merge, start)
        self.children: dict[tuple[int, str], Node | None] = {}
        self.steps = 0
        self.where: list[str] = []  # path of the value being resolved, for messages

    # -- entry -------------------------------------------------------------------------------------------
    def value(self, node: Node) -> Result:
        """Resolve `node` completely (memoized per replacement context)."""
        cls = type(node)
        if cls is Scalar or cls is Num or cls is Joined:
            return node
        key = id(node)
        memo = self.memo
        found = memo.get(key)
        if found is not None:
            return found
        if self.stable:
            found = self.stable.get(key)
            if found is not None:
                return found
        if key in self.active:
            raise _Cycle(self._trace_steps())
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise HoconError(
                E_LIMIT, f"resolution took more than {MAX_STEPS} steps; simplify the substitutions", node.origin
            )
        self.active.add(key)
        try:
            if cls is Obj:
                result = self._obj(node)  # type: ignore[arg-type]
            elif cls is Subst:
                result = self._subst(node)  # type: ignore[arg-type]
            elif cls is Concat:
                result = self._concat(node)  # type: ignore[arg-type]
            elif cls is Merge:
                result = self._merge(node)  # type: ignore[arg-type]
            elif cls is Lst:
                result = self._lst(node)  # type: ignore[arg-type]
            else:
                result = node
        finally:
            self.active.discard(key)
        memo[key] = result
        if cls is Merge and node in self.remainder_nodes:
            self.stable[key] = result
        return result

    # -- containers --------------------------------------------------------------------------------------
    def _obj(self, node: Obj) -> Result:
        if node.static or (node.static is None and is_static(node)):
            return node
        out: dict[str, Node] = {}
        changed = False
        value = self.value
        where = self.where
        for k, v in node.fields.items():
            where.append(k)
            try:
                r = value(v)
            finally:
                where.pop()
            if r is not v:
                changed = True
                if r is UNDEFINED:
                    continue
            out[k] = r  # type: ignore[assignment]
        return Obj(out, node.origin) if changed else node

    def _lst(self, node: Lst) -> Result:
        if node.static or (node.static is None and is_static(node)):
            return node
        out: list[Node] = []
        changed = False
        for v in node.items:
            r = self.value(v)
            if r is not v:
                changed = True
                if r is UNDEFINED:
                    continue
            out.append(r)  # type: ignore[arg-type]
        return Lst(out, node.origin) if changed else node

    # -- substitutions -----------------------------------------------------------------------------------
    def _subst(self, node: Subst) -> Result:
        self.trace.append(node)
        try:
            found = self._lookup(node.path)
            if found is None and node.prefix:
                found = self._lookup(node.path[node.prefix :])
        except _Cycle as cycle:
            if node.optional and cycle.steps and cycle.steps[-1] is node:
                return UNDEFINED  # this optional substitution closed the cycle: it has no value
            raise
        finally:
            self.trace.pop()
        if found is None:
            if node.optional:
                return UNDEFINED
            if self.allow_unresolved:
                self.unresolved = True
                return node
            name = render_path(node.path)
            raise HoconError(
                E_UNRESOLVED_REF,
                f"could not resolve substitution ${{{name}}}: no value is defined at {name!r}; "
                f"define it, or write ${{?{name}}} to make it optional",
                node.origin,
                self._suggest(name),
            )
        sources = _sources((found.origin, *getattr(found, "sources", ())))
        if isinstance(found, Scalar):
            raw = found.raw if isinstance(found, (Num, Joined)) else None
            return Joined(found.value, node.origin, sources, raw)
        if isinstance(found, Lst):
            self.shared = True  # a copy: the output's size must be counted before it is built
            return JoinedLst(found.items, node.origin, sources)
        if isinstance(found, Obj):
            self.shared = True
            return JoinedObj(found.fields, node.origin, sources)
        return found

    def _suggest(self, name: str) -> tuple[str, ...]:
        """`did you mean ${owner}?`: the path that is set closest to `name` (difflib). It looks among the first
        `SUGGEST_PATHS` paths of the config and the intrinsic values. It is a note, computed only for the error."""
        paths: set[str] = set()
        stack: list[tuple[tuple[str, ...], Node]] = [((), self.root)]
        if self.extra is not None:
            stack.append(((), self.extra))
        while stack and len(paths) < SUGGEST_PATHS:
            prefix, node = stack.pop()
            for layer in node.stack if isinstance(node, Merge) else (node,):
                if isinstance(layer, Obj):
                    for key, child in layer.fields.items():
                        path = (*prefix, key)
                        paths.add(render_path(path))
                        stack.append((path, child))
        paths.discard(name)
        close = difflib.get_close_matches(name, paths, n=1, cutoff=0.8)
        return (f"did you mean ${{{close[0]}}}?",) if close else ()

    def _trace_steps(self) -> tuple[Subst, ...]:
        return tuple(self.trace)

    def _lookup(self, path: tuple[str, ...]) -> Node | None:
        if self.extra is not None:
            found = self._find(self.extra, path)
            if found is not None:
                self.used_extra = True
                return found
        return self._find(self.root, path)

    def _find(self, node: Node, path: tuple[str, ...]) -> Node | None:
        replace = self.replace
        for key in path:
            if replace:
                replaced = self._replaced(node)
                if replaced is None:
                    return None
                node = replaced
            cls = type(node)
            nxt: Node | None
            if cls is Obj or cls is JoinedObj:
                nxt = node.fields.get(key)  # type: ignore[attr-defined]
            elif cls is Merge:
                nxt = self._merge_child(node, key)  # type: ignore[arg-type]
            elif cls is Subst or cls is Concat:
                r = self.value(node)
                if not isinstance(r, Obj):
                    return None
                nxt = r.fields.get(key)
            else:
                return None
            if nxt is None:
                return None
            node = nxt
        if replace:
            replaced = self._replaced(node)
            if replaced is None:
                return None
            node = replaced
        saved, self.where = self.where, list(path)
        try:
            r = self.value(node)
        finally:
            self.where = saved
        return None if r is UNDEFINED else r  # type: ignore[return-value]

    def _replaced(self, node: Node) -> Node | None:
        """What a lookup sees at `node` while merges are being resolved (a remainder may be replaced too)."""
        repl = self.replace.get(id(node))
        while repl is not None:
            if repl is UNDEFINED:
                return None
            node = repl  # type: ignore[assignment]
            repl = self.replace.get(id(node))
        return node

    # -- delayed merges ----------------------------------------------------------------------------------
    def _remainder(self, node: Merge, start: int) -> Result:
        parent = self.remainder_of.get(id(node))
        if parent is not None:  # the remainder of a remainder is a remainder of the original merge
            node, start = parent[0], parent[1] + start
        key = (id(node), start)
        rem = self.remainders.get(key)
        if rem is None:
            rest = node.stack[start:]
            if not rest:
                rem = UNDEFINED
            else:
                rem = Merge(rest, rest[0].origin)
                self.remainder_nodes.add(rem)
                self.remainder_of[id(rem)] = (node, start)
            self.remainders[key] = rem
        return rem

    def _element(self, node: Merge, index: int) -> Result:
        """Resolve one definition of a merge; an unresolved one sees only the definitions below it."""
        element = node.stack[index]
        if isinstance(element, (Obj, Lst, Scalar)):
            return self.value(element)
        key = id(node)
        previous = self.replace.get(key)
        saved_memo = self.memo
        self.memo = {}
        self.replace[key] = self._remainder(node, index + 1)
        try:
            return self.value(element)
        finally:
            self.memo = saved_memo
            if previous is None:
                del self.replace[key]
            else:
                self.replace[key] = previous

    def _merge(self, node: Merge) -> Result:
        merged: Node | None = None
        stack = node.stack
        for index in range(len(stack)):
            if merged is not None and isinstance(stack[index], (Scalar, Lst)):
                break  # a plain non-object under an object only hides what is below: it is never resolved
            r = self._element(node, index)
            if r is UNDEFINED:
                continue
            assert isinstance(r, Node)
            merged = r if merged is None else merge_resolved(merged, r)
            if not isinstance(r, Obj):
                break  # a non-object hides everything below it
        return UNDEFINED if merged is None else merged

    def _merge_child(self, node: Merge, key: str) -> Node | None:
        """The definitions of `node.key` without resolving all of `node` (avoids false cycles)."""
        cache_key = (id(node), key)
        cacheable = not self.replace
        if cacheable and cache_key in self.children:
            return self.children[cache_key]
        parts: list[Node] = []
        for index, element in enumerate(node.stack):
            if not isinstance(element, Obj):
                if isinstance(element, (Scalar, Lst)):
                    break
                r = self._element(node, index)
                if r is UNDEFINED:
                    continue
                if not isinstance(r, Obj):
                    break
                element = r
            child = element.fields.get(key)
            if child is not None:
                parts.append(child)
        result = merge_all(parts) if parts else None
        if cacheable:
            self.children[cache_key] = result
        return result

    # -- concatenation -----------------------------------------------------------------------------------
    def _concat(self, node: Concat) -> Result:
        pieces: list[Node] = []
        for part in node.parts:
            if type(part) is Ws:
                pieces.append(part)
                continue
            r = self.value(part)
            if r is not UNDEFINED:
                pieces.append(r)  # type: ignore[arg-type]
        if not pieces:
            return UNDEFINED
        if len(pieces) == 1 and type(pieces[0]) is not Ws:
            return pieces[0]  # the other pieces were undefined: `${?b}1.5` is the number 1.5, as in Lightbend
        if any(type(p) is Subst for p in pieces):  # left unresolved (allow_unresolved)
            return node
        solid = [p for p in pieces if type(p) is not Ws]
        if any(isinstance(p, (Obj, Lst)) for p in solid):
            return self._concat_containers(node, solid)
        text: list[str] = []
        size = 0
        for p in pieces:
            s = _to_text(p)
            size += len(s)
            if size > MAX_STRING:
                raise HoconError(E_LIMIT, f"concatenated string longer than {MAX_STRING} characters", node.origin)
            text.append(s)
        sources: list[Origin] = []
        for p in solid:
            if isinstance(p, Joined):
                sources.extend(p.sources)
            else:
                sources.append(p.origin)
        return Joined("".join(text), node.origin, _sources(sources))

    def _concat_containers(self, node: Concat, solid: list[Node]) -> Node:
        """Join objects and arrays left to right; an object with integer keys joins an array as one."""
        result = solid[0]
        for right in solid[1:]:
            left = result
            if isinstance(left, Obj) and isinstance(right, Obj):
                result = merge_resolved(right, left)
                continue
            if isinstance(left, Obj) and isinstance(right, Lst):
                left = _numeric_object_to_list(left) or left
            elif isinstance(left, Lst) and isinstance(right, Obj):
                right = _numeric_object_to_list(right) or right
            if not (isinstance(left, Lst) and isinstance(right, Lst)):
                raise self._type_error(node, solid)
            if len(left.items) + len(right.items) > MAX_LIST:
                raise HoconError(E_LIMIT, f"concatenated array longer than {MAX_LIST} items", node.origin)
            result = Lst([*left.items, *right.items], node.origin)
        return result

    def _type_error(self, node: Concat, solid: list[Node]) -> HoconError:
        at = f" at {render_path(tuple(self.where))!r}" if self.where else ""
        if node.append:
            old = solid[0]
            return HoconError(
                E_TYPE,
                f"cannot append with '+='{at}: the value before it is {_an(_kind_name(old))} ({_defined_at(old)}); "
                "'+=' adds an item to an array, so define the key as an array (or not at all) first",
                node.origin,
            )
        kinds = ", ".join(f"{_kind_name(p)} ({_defined_at(p)})" for p in solid)
        if any(isinstance(p, Lst) for p in solid):
            hint = "a concatenation joins arrays only with arrays"
        else:
            hint = "a concatenation joins objects only with objects"
        return HoconError(E_TYPE, f"cannot concatenate {kinds}{at}: {hint}", node.origin)


def _numeric_object_to_list(node: Obj) -> Lst | None:
    """Lightbend's array view of an object with integer keys (`{"0": a, "1": b}`). None if it has none."""
    indexed = []
    for key, value in node.fields.items():
        if _INDEX.match(key):
            index = int(key)
            if index >= 0:
                indexed.append((index, value))
    if not indexed:
        return None
    indexed.sort(key=lambda pair: pair[0])
    return Lst([value for _, value in indexed], node.origin)


def _sources(origins: Sequence[Origin]) -> tuple[Origin, ...]:
    """The distinct origins, at most MAX_SOURCES. A chain of 14,000 `${k}` links would otherwise keep every origin in
    every link. That is quadratic time and memory for provenance nobody reads."""
    unique = tuple(dict.fromkeys(origins))
    if len(unique) <= MAX_SOURCES:
        return unique
    half = MAX_SOURCES // 2
    return unique[:half] + unique[-half:]


def _defined_at(node: Node) -> Origin:
    """Where a value was written: for a substituted value, where it came from."""
    sources = getattr(node, "sources", ())
    return sources[0] if sources else node.origin


def _an(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind


def _kind_name(node: Node) -> str:
    if isinstance(node, Obj):
        return "object"
    if isinstance(node, Lst):
        return "array"
    return "string" if isinstance(node, Scalar) and isinstance(node.value, str) else "value"


def _to_text(node: Node) -> str:
    if isinstance(node, (Num, Joined)) and node.raw is not None:
        return node.raw
    if isinstance(node, (Scalar, Ws)):
        value = node.value
        if value is None:
            return "null"
        if value is True:
            return "true"
        if value is False:
            return "false"
        return value if isinstance(value, str) else repr(value)
    raise AssertionError(f"not a scalar: {node!r}")


def _cycle_error(steps: tuple[Subst, ...], root: Node) -> HoconError:
    if not steps:
        return HoconError(E_REF_CYCLE, "a value refers to itself", root.origin)
    last = steps[-1]
    return HoconError(
        E_REF_CYCLE,
        f"substitution ${{{render_path(last.path)}}} is part of a cycle; "
        "break it by giving one of these paths a plain value",
        last.origin,
        ("cycle:", *(f"  ${{{render_path(s.path)}}} at {s.origin}" for s in steps)),
    )


def resolve_tree(
    root: Node, extra: Node | None = None, allow_unresolved: bool = False
) -> tuple[Result, bool, bool, bool]:
    """Resolve a merged tree. Returns the resolved root and whether it is fully resolved. Also whether any
    substitution took its value from `extra`, and whether resolved subtrees may be shared."""
    resolver = _Resolver(root, extra, allow_unresolved)
    try:
        result = resolver.value(root)
    except _Cycle as cycle:
        raise _cycle_error(cycle.steps, root) from None
    return result, not resolver.unresolved, resolver.used_extra, resolver.shared


__all__ = ["UNDEFINED", "Origin", "merge_resolved", "render_path", "resolve_tree"]
