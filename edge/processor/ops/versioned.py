"""Processors for versioned tables (KIP-914): the table source that keeps history, its value getter,
and the stream-table join that looks each stream record up *as of its timestamp*, optionally after
holding records back for a grace period so they join in timestamp order (Kafka's
``KStreamKTableJoinProcessor`` with a ``TimeOrderedKeyValueBuffer``).
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable
from typing import Any

from edge.errors import TopologyError
from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.ops.getters import ValueGetterSupplier
from edge.processor.ops.stream_joins import record_dropped
from edge.processor.record import Change, Headers, Record
from edge.state.versioned import PUT_RETURN_CODE_NOT_PUT, PUT_RETURN_CODE_VALID_TO_UNDEFINED

log = logging.getLogger(__name__)

_BUFFER_KEY = struct.Struct(">qq")
_LEN = struct.Struct(">i")


class VersionedKTableSource(Processor):
    """A table source on a versioned store. Every update is stored (out-of-order ones go into the
    history, so joins "as of" a time see them); only an update that is the key's newest value is
    forwarded downstream: an older one must not overwrite the current row of derived tables (Kafka
    forwards it flagged ``isLatest=false`` and every downstream operator ignores it)."""

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._store = context.get_state_store(self._store_name)
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        key = record.key
        if key is None:
            record_dropped(self.context, "a null key")
            return
        old = self._store.get(key)
        result = self._store.put(key, record.value, record.timestamp)
        if result == PUT_RETURN_CODE_NOT_PUT:
            record_dropped(self.context, "an update older than the versioned store's history retention")
            return
        if result != PUT_RETURN_CODE_VALID_TO_UNDEFINED:
            log.debug(
                "out-of-order update of versioned table %s (key %r, timestamp %d) stored as history",
                self._store_name,
                key,
                record.timestamp,
            )
            return
        old_value = None if old is None else old[0]
        self._forward(Record(key, Change(record.value, old_value), record.timestamp, record.headers))


class VersionedStoreGetter:
    """Value getter of a versioned table: the latest record, or the one valid at a time."""

    def __init__(self, store_name: str) -> None:
        self._name = store_name

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self._name)

    def get(self, key: Any) -> Any:
        return self._store.get(key)

    def get_as_of(self, key: Any, timestamp: int) -> Any:
        return self._store.get(key, timestamp)


class VersionedGetterSupplier(ValueGetterSupplier):
    """Marks a table whose values can be read as of a time (Kafka's ``KTableValueGetter.isVersioned``)."""

    versioned = True

    def __init__(self, store_name: str, history_retention_ms: int) -> None:
        super().__init__(lambda: VersionedStoreGetter(store_name), [store_name])
        self.history_retention_ms = history_retention_ms


def _encode_buffered(key: bytes, value: bytes, headers: Headers | None) -> bytes:
    parts = [_LEN.pack(len(key)), key, _LEN.pack(len(value)), value, _LEN.pack(len(headers or ()))]
    for name, hv in headers or ():
        nb = name.encode()
        parts += [_LEN.pack(len(nb)), nb]
        parts += [_LEN.pack(-1)] if hv is None else [_LEN.pack(len(hv)), hv]
    return b"".join(parts)


def _decode_buffered(data: bytes) -> tuple[bytes, bytes, Headers | None]:
    pos = 0

    def take() -> bytes | None:
        nonlocal pos
        (n,) = _LEN.unpack_from(data, pos)
        pos += 4
        if n < 0:
            return None
        chunk = data[pos : pos + n]
        pos += n
        return chunk

    key, value = take(), take()
    (count,) = _LEN.unpack_from(data, pos)
    pos += 4
    headers: Headers = []
    for _ in range(count):
        name = take()
        headers.append(((name or b"").decode(), take()))
    return key or b"", value or b"", headers or None


class KStreamVersionedTableJoin(Processor):
    """Stream-table join against a versioned table: each record joins the table value valid at its
    timestamp. With a grace period, records wait in a time-ordered buffer store until stream time
    passes ``timestamp + grace`` and are then joined in timestamp order; a record already older than
    that joins at once (Kafka). Null keys or values are dropped (a left join keeps a null key)."""

    def __init__(
        self,
        getter: ValueGetterSupplier,
        joiner: Callable[[Any, Any], Any],
        left: bool,
        grace_ms: int | None,
        buffer_store: str | None,
        key_serde: Any,
        value_serde: Any,
    ) -> None:
        self._getter = getter.make()
        self._joiner = joiner
        self._left = left
        self._grace = grace_ms
        self._buffer_name = buffer_store
        self._serdes = (key_serde, value_serde)
        self._observed = -1
        self._seq = 0

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._getter.init(context)
        self._as_of = getattr(self._getter, "get_as_of", None)
        self._forward = forward_all(context)
        self._buffer: Any = None
        if self._buffer_name is None:
            return
        if self._as_of is None:
            raise TopologyError("KTable must be versioned to use a grace period in a stream table join.")
        self._buffer = context.get_state_store(self._buffer_name)
        key_serde, value_serde = self._serdes
        if key_serde is None or value_serde is None:
            config = getattr(getattr(context, "_task", None), "config", None)
            key_serde = key_serde or getattr(config, "default_key_serde", None)
            value_serde = value_serde or getattr(config, "default_value_serde", None)
        if key_serde is None or value_serde is None:
            raise TopologyError(f"join buffer {self._buffer_name!r}: no key/value serde and no default")
        self._kser, self._kde = key_serde.serialize, key_serde.deserialize
        self._vser, self._vde = value_serde.serialize, value_serde.deserialize
        self._topic = f"{context.application_id}-{self._buffer_name}"
        with self._buffer.all() as it:  # a restored buffer: resume its stream time and sequence
            for k, _v in it:
                ts, seq = _BUFFER_KEY.unpack(k)
                self._observed = max(self._observed, ts)
                self._seq = max(self._seq, seq + 1)

    def _join(self, record: Record) -> None:
        key, value = record.key, record.value
        if key is None:
            other = None
        elif self._as_of is not None:
            other = self._as_of(key, record.timestamp)
        else:
            other = self._getter.get(key)
        if other is None and not self._left:
            return
        out = self._joiner(value, None if other is None else other[0])
        self._forward(Record(key, out, record.timestamp, record.headers))

    def process(self, record: Record) -> None:
        ts = record.timestamp
        if ts > self._observed:
            self._observed = ts
        if record.value is None or (record.key is None and not self._left):
            record_dropped(self.context, "a null join key or value")
            return
        if self._buffer is None or record.key is None or self._observed - self._grace > ts:  # type: ignore[operator]
            self._join(record)
            return
        store_key = _BUFFER_KEY.pack(ts, self._seq)
        self._seq += 1
        data = _encode_buffered(
            self._kser(self._topic, record.key) or b"",
            self._vser(self._topic, record.value) or b"",
            record.headers,
        )
        self._buffer.put(store_key, data, ts)
        self._evict()

    def _evict(self) -> None:
        deadline = self._observed - self._grace  # type: ignore[operator]
        if deadline < 0:
            return
        with self._buffer.range(None, _BUFFER_KEY.pack(deadline, (1 << 63) - 1)) as it:
            due = list(it)
        for store_key, data in due:
            ts, _seq = _BUFFER_KEY.unpack(store_key)
            kb, vb, headers = _decode_buffered(data)
            self._buffer.delete(store_key, ts)
            record = Record(self._kde(self._topic, kb), self._vde(self._topic, vb), ts, headers)
            self._join(record)
