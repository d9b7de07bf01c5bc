"""Versioned key-value stores (KIP-889/914): every value of a key with the time range it was valid in.

``put(key, value, timestamp)`` records that ``key`` has ``value`` from ``timestamp`` on;
``get(key)`` is the latest value, ``get(key, as_of_timestamp)`` the value valid at that time, both as
:class:`VersionedRecord` ``(value, timestamp, valid_to)`` (``valid_to`` None: still current). Writes
may arrive out of order: an older write goes into the history and splits the record that was valid
then, so "as of" lookups see it, while the latest value stays the newest one. History older than
``history_retention`` (behind the largest timestamp written, the store's observed stream time) is
dropped and not readable, and a write older than that is not applied (Kafka's ``PUT_RETURN_CODE_NOT_PUT``).

Layout, on the same layers as the window stores::

    MeteredVersionedKeyValueStore   typed keys/values, changelog records (key, value, record timestamp)
    VersionedBytesStore
      latest   RocksDB / memory:  key -> timestamp(8) + flag(1) + value        (the current record)
      history  SegmentedBytesStore (segments by valid_to, dropped whole after retention):
               len(key)(4) + key + valid_to(8) -> valid_from(8) + flag(1) + value

The changelog has one record per write, keyed by the key bytes, with the write's timestamp as the
record timestamp (as Kafka's) and, unlike Kafka's raw value, the value encoded as
``timestamp(8) + flag(1) + value``: the restore path hands stores ``(key, value)`` pairs without
record timestamps, and replaying the writes in order needs them. Its topic keeps history for
``min.compaction.lag.ms`` = history retention + 1 day (Kafka's setting), so compaction never removes
history still readable. Versioned stores never cache (as in Kafka). Tombstones that become history are
not stored (a lookup in a gap finds nothing, which is what a tombstone means).

Under at-least-once (:mod:`edge.runtime.markers`) an active task's store defers both layers' writes
to the post-commit step like every other persistent store (a store never runs ahead of the committed
input), and a restore compensates orphan changelog records with a *snapshot* record (flag byte 2
instead of 0/1, then every readable version of the key: valid_from, valid_to, value) that replaces
all versions of the key wherever it is applied.
Not undone: an orphan write's advance of the observed stream time on a store that applied it (history
it expired stays expired); a standby that applied orphans is rebuilt anyway.
"""

from __future__ import annotations

import dataclasses
import logging
import struct
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from edge.errors import StateStoreError, TopologyError
from edge.state.api import FlushListener, StoreContext, changelog_topic_name
from edge.state.memory import InMemoryKeyValueStore
from edge.state.rocksdb import RocksDBKeyValueStore
from edge.state.segments import SegmentedBytesStore
from edge.time import to_millis

if TYPE_CHECKING:
    from edge.serde import Serde

log = logging.getLogger(__name__)

#: put() result: the write is the key's latest value (Kafka's ``VALID_TO_UNDEFINED``)
PUT_RETURN_CODE_VALID_TO_UNDEFINED = -1
#: put() result: the write is older than the history retention and was not applied
PUT_RETURN_CODE_NOT_PUT = -(1 << 63)

_TS = struct.Struct(">q")
_LEN = struct.Struct(">i")
_MAX_TIME = (1 << 63) - 1
#: flag byte of a changelog value that is a snapshot of every version of a key (a compensation)
_SNAPSHOT = 2
#: one version in a snapshot: valid_from, valid_to (``_MAX_TIME``: the latest), has a value, value length
_VERSION = struct.Struct(">qq?i")


class VersionedRecord(NamedTuple):
    """A value with the time it became valid and (None while current) the time it stopped being valid."""

    value: Any
    timestamp: int
    valid_to: int | None = None


def default_segment_interval(history_retention_ms: int) -> int:
    """Kafka's ``RocksDbVersionedKeyValueBytesStoreSupplier.defaultSegmentInterval``."""
    r = history_retention_ms
    if r <= 60_000:
        return max(r // 3, 2_000)
    if r <= 300_000:
        return max(r // 5, 20_000)
    if r <= 3_600_000:
        return max(r // 12, 60_000)
    return max(r // 24, 300_000)


def versioned_changelog_config(history_retention_ms: int) -> dict[str, str]:
    """Kafka's versioned changelog topic setting: compaction spares history that is still readable."""
    return {"min.compaction.lag.ms": str(history_retention_ms + 86_400_000)}


def _history_key(key: bytes, valid_to: int) -> bytes:
    return _LEN.pack(len(key)) + key + _TS.pack(valid_to)


def _history_time(store_key: bytes) -> int:
    return _TS.unpack_from(store_key, len(store_key) - 8)[0]


def _encode(timestamp: int, value: bytes | None) -> bytes:
    return _TS.pack(timestamp) + (b"\x00" if value is None else b"\x01" + value)


def _decode(data: bytes) -> tuple[int, bytes | None]:
    return _TS.unpack_from(data, 0)[0], (None if data[8] == 0 else data[9:])


class VersionedBytesStore:
    """The bytes layer: latest values plus time-segmented history (see the module doc)."""

    def __init__(
        self,
        name: str,
        history_retention_ms: int,
        *,
        segment_interval_ms: int | None = None,
        persistent: bool = True,
    ) -> None:
        self.name = name
        self.persistent = persistent
        self.history_retention_ms = history_retention_ms
        self.observed_stream_time = -1
        #: writes skipped because they were older than the history retention
        self.expired_writes = 0
        latest_name = f"{name}/{name}.latest"
        self._latest: Any = (
            RocksDBKeyValueStore(latest_name) if persistent else InMemoryKeyValueStore(latest_name)
        )
        self._history = SegmentedBytesStore(
            name,
            retention_ms=history_retention_ms,
            time_of=_history_time,
            persistent=persistent,
            segment_interval_ms=segment_interval_ms or default_segment_interval(history_retention_ms),
        )

    # -- lifecycle ------------------------------------------------------------------------------------
    def init(self, context: StoreContext) -> None:
        self._history.init(context)
        self._latest.init(context)
        # the observed stream time is not stored: the newest latest record bounds it from below
        with self._latest.all() as it:
            for _key, data in it:
                self.observed_stream_time = max(self.observed_stream_time, _decode(data)[0])
        self.observed_stream_time = max(self.observed_stream_time, self._history.observed_stream_time)

    @property
    def is_open(self) -> bool:
        return self._latest.is_open

    @property
    def defer_writes(self) -> bool:
        """Deferred writes (set by the runtime on active tasks): both layers keep their writes
        in memory until :meth:`persist`, which the runtime calls after the input offsets are committed,
        so neither the latest values nor the history ever run ahead of the committed input."""
        return bool(getattr(self._latest, "defer_writes", False) or self._history.defer_writes)

    @defer_writes.setter
    def defer_writes(self, value: bool) -> None:
        for layer in (self._latest, self._history):
            if hasattr(layer, "defer_writes"):
                layer.defer_writes = value

    def flush(self) -> None:
        self._history.flush()
        self._latest.flush()

    def persist(self) -> None:
        """Write both layers' buffered (now committed) writes. Two RocksDB instances, so a crash may
        persist one and not the other; the checkpoint is written only after both, and replaying the
        changelog's writes onto either combination ends in the same state."""
        for layer in (self._history, self._latest):
            persist = getattr(layer, "persist", None)
            if persist is not None:
                persist()
            else:
                layer.flush()

    def discard_unflushed(self) -> None:
        """Dirty close: drop both layers' uncommitted writes (that work is redone from the commit)."""
        for layer in (self._history, self._latest):
            discard = getattr(layer, "discard_unflushed", None)
            if discard is not None:
                discard()

    def close(self) -> None:
        errors = []
        for layer in (self._latest, self._history):
            try:
                layer.close()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

    def approximate_num_entries(self) -> int:
        return self._latest.approximate_num_entries()

    # -- reads ----------------------------------------------------------------------------------------
    def _min_readable(self) -> int:
        return self.observed_stream_time - self.history_retention_ms

    def get(self, key: bytes) -> tuple[bytes, int] | None:
        data = self._latest.get(key)
        if data is None:
            return None
        ts, value = _decode(data)
        return None if value is None else (value, ts)

    def _history_after(self, key: bytes, time: int) -> tuple[int, int, bytes | None] | None:
        """The history record of ``key`` with the smallest valid_to > ``time``: (from, to, value)."""
        lo = _history_key(key, time + 1)
        hi = _history_key(key, _MAX_TIME)
        with self._history.range(lo, hi) as it:
            for store_key, data in it:
                valid_from, value = _decode(data)
                return valid_from, _history_time(store_key), value
        return None

    def get_as_of(self, key: bytes, as_of: int) -> tuple[bytes, int, int | None] | None:
        """``(value, valid_from, valid_to)`` of the record valid at ``as_of`` (valid_to None: latest)."""
        if as_of < self._min_readable():
            return None  # as Kafka: older than the history retention is not answered
        data = self._latest.get(key)
        if data is not None:
            ts, value = _decode(data)
            if ts <= as_of:
                return None if value is None else (value, ts, None)
        found = self._history_after(key, as_of)
        if found is None or found[0] > as_of or found[2] is None:
            return None
        return found[2], found[0], found[1]

    # -- writes ---------------------------------------------------------------------------------------
    def put(self, key: bytes, value: bytes | None, timestamp: int) -> int:
        """Apply a write; returns the written record's valid_to (``PUT_RETURN_CODE_VALID_TO_UNDEFINED``
        when it is the latest) or ``PUT_RETURN_CODE_NOT_PUT`` when it is older than the retention."""
        if timestamp < self._min_readable():
            self.expired_writes += 1
            from edge.processor.record_warnings import warn_record  # the warning path only

            warn_record(
                log,
                "skipping writes older than a versioned store's history retention",
                "skipping a write to versioned store %s older than its history retention "
                "(timestamp %d, observed stream time %d, history retention %d ms)",
                self.name,
                timestamp,
                self.observed_stream_time,
                self.history_retention_ms,
            )
            return PUT_RETURN_CODE_NOT_PUT
        if timestamp > self.observed_stream_time:
            self.observed_stream_time = timestamp
            self._history._observe(timestamp)  # drop history segments past the retention
        current = self._latest.get(key)
        if current is None or timestamp >= _decode(current)[0]:
            if current is not None:
                old_ts, old_value = _decode(current)
                if old_ts < timestamp and old_value is not None:
                    self._history.put(_history_key(key, timestamp), _encode(old_ts, old_value), timestamp)
            self._latest.put(key, _encode(timestamp, value), timestamp)
            return PUT_RETURN_CODE_VALID_TO_UNDEFINED
        latest_ts = _decode(current)[0]
        found = self._history_after(key, timestamp)
        if found is not None and found[0] <= timestamp:
            valid_from, valid_to, old_value = found
            if valid_from < timestamp:  # split: the old value now ends where this one starts
                self._history.put(_history_key(key, timestamp), _encode(valid_from, old_value), timestamp)
            self._history.put(
                _history_key(key, valid_to), None if value is None else _encode(timestamp, value), timestamp
            )
            return valid_to
        valid_to = found[0] if found is not None else latest_ts  # a gap: valid until the next record
        if value is not None:
            self._history.put(_history_key(key, valid_to), _encode(timestamp, value), timestamp)
        return valid_to

    def restore_batch(self, records: Iterable[tuple]) -> None:
        """Replay changelog records ``(key, encoded write[, record timestamp])`` in order."""
        for record in records:
            key, data = record[0], record[1]
            if data is None or len(data) < 9:
                raise StateStoreError(
                    f"versioned store changelog record for key {key!r} is not a versioned write "
                    f"({None if data is None else len(data)} bytes)",
                    store=self.name,
                )
            if data[8] == _SNAPSHOT:
                self._apply_snapshot(key, data)
                continue
            timestamp, value = _decode(data)
            self.put(key, value, timestamp)

    # -- compensation (at-least-once restores, :mod:`edge.runtime.markers`) ---------------------------
    def _versions(self, key: bytes) -> list[tuple[int, int, bytes | None]]:
        """Every readable version of ``key``: ``(valid_from, valid_to, value)``, the latest with
        valid_to ``_MAX_TIME`` (its value None: deleted)."""
        out = []
        data = self._latest.get(key)
        if data is not None:
            ts, value = _decode(data)
            out.append((ts, _MAX_TIME, value))
        with self._history.range(_history_key(key, 0), _history_key(key, _MAX_TIME)) as it:
            for store_key, hdata in it:
                valid_from, value = _decode(hdata)
                out.append((valid_from, _history_time(store_key), value))
        return out

    def changelog_value(self, key: bytes) -> bytes:
        """A changelog value that sets ``key`` to exactly the versions this store holds: what a restore
        sends for a key written after the last valid commit marker (an orphan). A plain versioned write
        cannot undo one -- an orphan write newer than the latest value makes that value history, and
        re-writing it older only lands in the history again -- so the record is a snapshot (flag 2)
        that replaces every version of the key on whoever applies it."""
        parts = [_TS.pack(-1), bytes([_SNAPSHOT])]
        for valid_from, valid_to, value in self._versions(key):
            parts.append(_VERSION.pack(valid_from, valid_to, value is not None, len(value or b"")))
            if value:
                parts.append(value)
        return b"".join(parts)

    def _apply_snapshot(self, key: bytes, data: bytes) -> None:
        versions: list[tuple[int, int, bytes | None]] = []
        pos = 9
        while pos < len(data):
            valid_from, valid_to, has_value, size = _VERSION.unpack_from(data, pos)
            pos += _VERSION.size
            versions.append((valid_from, valid_to, data[pos : pos + size] if has_value else None))
            pos += size
        with self._history.range(_history_key(key, 0), _history_key(key, _MAX_TIME)) as it:
            stale = [store_key for store_key, _ in it]
        for store_key in stale:
            self._history.put(store_key, None, _history_time(store_key))
        latest = None
        for valid_from, valid_to, value in versions:
            if valid_to == _MAX_TIME:
                latest = _encode(valid_from, value)
            elif value is not None:
                self._history.put(_history_key(key, valid_to), _encode(valid_from, value), valid_to)
        self._latest.put(key, latest)


class MeteredVersionedKeyValueStore:
    """The typed outer layer: serdes, changelog records, Kafka's VersionedKeyValueStore API."""

    is_versioned = True

    def __init__(self, wrapped: VersionedBytesStore, key_serde: Serde, value_serde: Serde) -> None:
        self.wrapped = wrapped
        self.name = wrapped.name
        self.persistent = wrapped.persistent
        self.history_retention_ms = wrapped.history_retention_ms
        self.key_serde, self.value_serde = key_serde, value_serde
        self._topic = ""
        self._context: StoreContext | None = None
        self._send: Any = None
        self._partition = 0

    def init(self, context: StoreContext) -> None:
        if self.wrapped.is_open:
            raise StateStoreError("store is already initialised", store=self.name, task_id=context.task_id)
        self._context = context
        self._topic = context.changelog_topic or changelog_topic_name(context.application_id, self.name)
        self._partition = context.partition
        if context.changelog_topic is not None:
            if context.changelog_sink is None:
                raise StateStoreError(
                    f"changelog topic {context.changelog_topic!r} is configured but no changelog_sink "
                    "was given",
                    store=self.name,
                    task_id=context.task_id,
                )
            self._send = context.changelog_sink.send
        self.wrapped.init(context)

    @property
    def is_open(self) -> bool:
        return self.wrapped.is_open

    @property
    def context(self) -> StoreContext | None:
        return self._context

    @property
    def observed_stream_time(self) -> int:
        return self.wrapped.observed_stream_time

    def flush(self) -> None:
        self.wrapped.flush()

    def close(self) -> None:
        self.wrapped.close()

    def approximate_num_entries(self) -> int:
        return self.wrapped.approximate_num_entries()

    def set_flush_listener(self, listener: FlushListener | None, send_old_values: bool = True) -> bool:
        return False  # never cached: the processor forwards itself

    def restore_batch(self, records: Iterable[tuple]) -> None:
        self.wrapped.restore_batch(records)

    def _key(self, key: Any) -> bytes:
        if key is None:
            raise StateStoreError("versioned store keys must not be None", store=self.name)
        return self.key_serde.serialize(self._topic, key) or b""

    def _timestamp(self, timestamp: int | None) -> int:
        if timestamp is not None:
            return timestamp
        if self._context is None:
            raise StateStoreError("store is not initialised", store=self.name)
        return self._context.record_timestamp()

    def put(self, key: Any, value: Any, timestamp: int | None = None) -> int:
        """Write ``value`` (None deletes) valid from ``timestamp`` (default: the current record's).
        Returns the record's valid_to, ``PUT_RETURN_CODE_VALID_TO_UNDEFINED`` (-1) when it is the latest,
        or ``PUT_RETURN_CODE_NOT_PUT`` when it was older than the history retention."""
        ts = self._timestamp(timestamp)
        kb = self._key(key)
        vb = None if value is None else self.value_serde.serialize(self._topic, value)
        result = self.wrapped.put(kb, vb, ts)
        if self._send is not None:
            self._send(self._topic, self._partition, kb, _encode(ts, vb), ts)
        return result

    def delete(self, key: Any, timestamp: int | None = None) -> VersionedRecord | None:
        """Delete ``key`` from ``timestamp`` on; returns the record that was valid at that time."""
        ts = self._timestamp(timestamp)
        previous = self.get(key, ts)
        self.put(key, None, ts)
        return previous

    def get(self, key: Any, as_of_timestamp: int | None = None) -> VersionedRecord | None:
        """The latest record of ``key``, or the one valid at ``as_of_timestamp``; None if there is none
        (or the time is older than the history retention)."""
        kb = self._key(key)
        de = self.value_serde.deserialize
        if as_of_timestamp is None:
            found = self.wrapped.get(kb)
            return None if found is None else VersionedRecord(de(self._topic, found[0]), found[1], None)
        hit = self.wrapped.get_as_of(kb, as_of_timestamp)
        return None if hit is None else VersionedRecord(de(self._topic, hit[0]), hit[1], hit[2])

    def __repr__(self) -> str:
        return f"<MeteredVersionedKeyValueStore {self.name!r} history={self.history_retention_ms}ms>"


@dataclasses.dataclass(frozen=True, slots=True)
class VersionedBytesStoreSupplier:
    """Kafka's ``Stores.persistentVersionedKeyValueStore(name, historyRetention[, segmentInterval])``:
    what ``Materialized.as_(supplier)`` and :func:`versioned_key_value_store_builder` take."""

    name: str
    history_retention_ms: int
    segment_interval_ms: int | None = None
    persistent: bool = True


@dataclasses.dataclass(frozen=True, slots=True)
class VersionedKeyValueStoreBuilder:
    """Declares a versioned store for a topology (one fresh instance per task). Caching is not
    supported, as in Kafka: ``with_caching_enabled`` keeps it disabled."""

    name: str
    key_serde: Any
    value_serde: Any
    history_retention_ms: int
    segment_interval_ms: int | None = None
    persistent: bool = True
    logging_enabled: bool = True
    changelog_config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    caching_enabled: bool = False
    is_versioned: bool = True

    def __post_init__(self) -> None:
        if self.logging_enabled and not self.changelog_config:
            object.__setattr__(
                self, "changelog_config", versioned_changelog_config(self.history_retention_ms)
            )
        if not self.name or any(c in self.name for c in "/\\"):
            raise TopologyError(
                f"versioned store name {self.name!r} must be non-empty, without path separators"
            )
        if self.history_retention_ms < 0:
            raise TopologyError(
                f"versioned store {self.name!r}: history retention must not be negative, "
                f"got {self.history_retention_ms} ms"
            )

    def with_logging_disabled(self) -> VersionedKeyValueStoreBuilder:
        return dataclasses.replace(self, logging_enabled=False, changelog_config={})

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> VersionedKeyValueStoreBuilder:
        return dataclasses.replace(self, logging_enabled=True, changelog_config=dict(config or {}))

    def with_caching_disabled(self) -> VersionedKeyValueStoreBuilder:
        return self

    def with_caching_enabled(self) -> VersionedKeyValueStoreBuilder:
        log.warning("versioned store %s: caching is not supported for versioned stores; ignored", self.name)
        return self

    def build(self) -> MeteredVersionedKeyValueStore:
        inner = VersionedBytesStore(
            self.name,
            self.history_retention_ms,
            segment_interval_ms=self.segment_interval_ms,
            persistent=self.persistent,
        )
        return MeteredVersionedKeyValueStore(inner, self.key_serde, self.value_serde)


def persistent_versioned_key_value_store(
    name: str, history_retention: Any, segment_interval: Any = None
) -> VersionedBytesStoreSupplier:
    """A RocksDB versioned store keeping ``history_retention`` (ms or ``timedelta``) of history."""
    seg = None if segment_interval is None else to_millis(segment_interval, "segment interval")
    return VersionedBytesStoreSupplier(name, to_millis(history_retention, "history retention"), seg)


def versioned_key_value_store_builder(
    supplier: VersionedBytesStoreSupplier, key_serde: Serde, value_serde: Serde
) -> VersionedKeyValueStoreBuilder:
    """Kafka's ``Stores.versionedKeyValueStoreBuilder``: for ``Topology.add_state_store`` /
    ``StreamsBuilder.add_state_store`` in the Processor API."""
    return VersionedKeyValueStoreBuilder(
        supplier.name,
        key_serde,
        value_serde,
        supplier.history_retention_ms,
        supplier.segment_interval_ms,
        supplier.persistent,
    )


class Stores:
    """Kafka's ``Stores`` factory for versioned stores."""

    persistent_versioned_key_value_store = staticmethod(persistent_versioned_key_value_store)
    versioned_key_value_store_builder = staticmethod(versioned_key_value_store_builder)
