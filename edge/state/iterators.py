"""Closeable key-value iterators shared by the store layers.

Every iterator created by a store registers itself in that store's ``registry`` (a set) and removes
itself when closed or exhausted, so ``store.close()`` can close whatever is still open -- a live RocksDB
iterator would otherwise keep the DB (and its LOCK file) alive after close.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from edge.errors import StateStoreError

_OPEN, _EXHAUSTED, _CLOSED = 0, 1, 2


class BaseKeyValueIterator:
    """Peek/close/context-manager plumbing; subclasses implement ``_advance`` and ``_release``."""

    __slots__ = ("_peeked", "_registry", "_state", "_store")

    def __init__(self, store: str, registry: set | None) -> None:
        self._peeked: tuple | None = None
        self._state = _OPEN
        self._store = store
        self._registry = registry
        if registry is not None:
            registry.add(self)

    def __iter__(self) -> BaseKeyValueIterator:
        return self

    def __next__(self) -> tuple:
        p = self._peeked
        if p is not None:
            self._peeked = None
            return p
        if self._state:
            if self._state == _EXHAUSTED:
                raise StopIteration
            raise StateStoreError(
                "key-value iterator used after it (or its store) was closed; "
                "consume iterators inside a `with` block before the store closes",
                store=self._store,
            )
        try:
            return self._advance()
        except StopIteration:
            self._finish(_EXHAUSTED)
            raise

    def _advance(self) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def _release(self) -> None:
        """Drop underlying resources (RocksDB iterator, inner iterators, snapshots)."""

    def _finish(self, state: int) -> None:
        self._state = state
        self._release()
        reg = self._registry
        if reg is not None:
            reg.discard(self)
            self._registry = None

    def peek_next_key(self) -> Any:
        if self._peeked is None:
            try:
                self._peeked = self.__next__()
            except StopIteration:
                return None
        return self._peeked[0]

    def close(self) -> None:
        self._peeked = None
        if self._state != _CLOSED:
            self._finish(_CLOSED)

    def __enter__(self) -> BaseKeyValueIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EmptyIterator(BaseKeyValueIterator):
    __slots__ = ()

    def __init__(self, store: str) -> None:
        super().__init__(store, None)
        self._state = _EXHAUSTED


class SnapshotIterator(BaseKeyValueIterator):
    """Iterates a snapshot list of keys, reading each value lazily (skips keys deleted meanwhile)."""

    __slots__ = ("_get", "_i", "_keys")

    def __init__(self, keys: list, get: Callable[[Any], Any], store: str, registry: set | None) -> None:
        super().__init__(store, registry)
        self._keys = keys
        self._get = get
        self._i = 0

    def _advance(self) -> tuple:
        keys = self._keys
        get = self._get
        i = self._i
        n = len(keys)
        while i < n:
            k = keys[i]
            i += 1
            v = get(k)
            if v is not None:
                self._i = i
                return (k, v)
        self._i = i
        raise StopIteration

    def _release(self) -> None:
        self._keys = []
        self._get = None  # type: ignore[assignment]


class MergedCacheIterator(BaseKeyValueIterator):
    """Merges a sorted snapshot of cache entries with the inner store's iterator by key bytes.

    Cache entries win over inner ones with the same key; a cached ``None`` (deleted, not yet flushed)
    hides the key.
    """

    __slots__ = ("_ci", "_citems", "_ihead", "_inner")

    def __init__(self, cache_items: list, inner: BaseKeyValueIterator, store: str, registry: set | None):
        super().__init__(store, registry)
        self._citems = cache_items
        self._ci = 0
        self._inner = inner
        self._ihead = next(inner, None)

    def _advance(self) -> tuple:
        citems = self._citems
        n = len(citems)
        inner = self._inner
        while True:
            ih = self._ihead
            ci = self._ci
            if ci < n:
                ck, cv = citems[ci]
                if ih is not None:
                    ik = ih[0]
                    if ik < ck:
                        self._ihead = next(inner, None)
                        return ih
                    if ik == ck:
                        self._ihead = next(inner, None)
                self._ci = ci + 1
                if cv is None:
                    continue
                return (ck, cv)
            if ih is None:
                raise StopIteration
            self._ihead = next(inner, None)
            return ih

    def _release(self) -> None:
        self._citems = []
        self._ihead = None
        self._inner.close()


class DeserializingIterator:
    """Typed view over a bytes iterator (used by the metered store); closing closes the bytes iterator."""

    __slots__ = ("_inner", "_kde", "_next", "_topic", "_vde")

    def __init__(self, inner: BaseKeyValueIterator, kde: Callable, vde: Callable, topic: str) -> None:
        self._inner = inner
        self._next = inner.__next__
        self._kde = kde
        self._vde = vde
        self._topic = topic

    def __iter__(self) -> DeserializingIterator:
        return self

    def __next__(self) -> tuple:
        k, v = self._next()
        topic = self._topic
        return (self._kde(topic, k), self._vde(topic, v))

    def peek_next_key(self) -> Any:
        k = self._inner.peek_next_key()
        return None if k is None else self._kde(self._topic, k)

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> DeserializingIterator:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()


def prefix_successor(prefix: bytes) -> bytes | None:
    """Smallest byte string greater than every string starting with ``prefix`` (None if unbounded)."""
    p = prefix.rstrip(b"\xff")
    if not p:
        return None
    return p[:-1] + bytes((p[-1] + 1,))
