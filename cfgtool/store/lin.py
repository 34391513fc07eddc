"""`Lin`: a linearization L(K) as a read-only sequence of keys. It shares its storage with the L it extends.

Most nodes have L(K) = [K] + L(B). B is their parent or, along an import chain, their import. As tuples, a chain of N
nodes holds N lists of up to N keys. Memory then grows with the square of its depth (19,200 deep: about 1.5 GB of
pointers). A `Lin` is a view of a list kept lowest priority first. L(B) is the list's first `len(L(B))` items, read
backwards. [K] + L(B) appends K to that same list when L(B) ends it. That holds for the first node built over a base;
every later one copies the base. Views never see past their own length, and the list only grows. So every `Lin` over
one list is stable, and a chain's N linearizations take one list of N keys.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any, overload


class Lin(Sequence[str]):
    """Keys highest priority first. It compares equal to any `Lin` or tuple of the same keys, and hashes like one."""

    __slots__ = ("_base", "_len")
    _base: list[str]  # lowest priority first; this view is its first `_len` items, read backwards
    _len: int

    def __init__(self, keys: Iterable[str] = ()) -> None:
        base = list(keys)
        base.reverse()
        self._base, self._len = base, len(base)

    def over(self, key: str) -> Lin:
        """[key] + self, sharing this view's list when nothing was added to it yet (else copying it)."""
        base, size = self._base, self._len
        if len(base) == size:
            base.append(key)
            if len(base) == size + 1:  # no other view was added meanwhile (another thread): the slot is ours
                return _view(base, size + 1)
        fresh = base[:size]
        fresh.append(key)
        return _view(fresh, size + 1)

    @property
    def storage(self) -> tuple[list[str], int]:
        """(the list this view reads, lowest priority first, and how many of its first items it reads). What is
        computed along a list once serves every view of it (the builder's fingerprints). Never to be changed."""
        return self._base, self._len

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> Lin: ...

    def __getitem__(self, index: int | slice) -> str | Lin:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step == 1 and stop == self._len:  # a suffix: L of a base, shared
                return _view(self._base, max(stop - start, 0))
            return Lin(islice(self, start, stop, step) if step > 0 else tuple(self)[index])
        size = self._len
        if index < 0:
            index += size
        if not 0 <= index < size:
            raise IndexError("Lin index out of range")
        return self._base[size - 1 - index]

    def __iter__(self) -> Iterator[str]:
        found = reversed(self._base)
        found.__setstate__(self._len - 1)  # type: ignore[attr-defined]  # start at this view's last item
        return found

    def __reversed__(self) -> Iterator[str]:
        return islice(self._base, self._len)

    def __contains__(self, key: object) -> bool:
        try:
            self._base.index(key, 0, self._len)  # type: ignore[arg-type]
        except ValueError:
            return False
        return True

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Lin):
            if other._len != self._len:
                return False
            return other._base is self._base or self._base[: self._len] == other._base[: other._len]
        if isinstance(other, tuple):
            return len(other) == self._len and tuple(self) == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"Lin({tuple(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return _view, (self._base, self._len)  # the list once per pickle, however many views share it


def _view(base: list[str], size: int) -> Lin:
    lin: Lin = object.__new__(Lin)
    lin._base, lin._len = base, size
    return lin


def lin(keys: Sequence[str]) -> Lin:
    """`keys` as a `Lin` (itself when it is one)."""
    return keys if isinstance(keys, Lin) else Lin(keys)


def lowest_first(base: list[str]) -> Lin:
    """The `Lin` of `base` read backwards (`base` lowest priority first), taking the list as it is."""
    return _view(base, len(base))
