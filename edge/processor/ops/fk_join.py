"""Foreign-key table-table joins (KIP-213), ported from Kafka's ``kstream.internals.foreignkeyjoin``.

The left table (primary key ``K``, value ``V``) joins the right table (key ``KO``) on
``foreign_key_extractor(V) -> KO``. Since the two tables are partitioned by different keys, the join
is a round trip through two internal topics:

1. :class:`SubscriptionSendProcessor` (left sub-topology): every left change becomes a
   :class:`SubscriptionWrapper` keyed by the foreign key -- "subscribe ``K`` to ``KO``" -- with an
   instruction (what the right side must answer) and a murmur3 hash of the new left value, written to
   ``...-SUBSCRIPTION-REGISTRATION-<n>-topic`` (partitioned like the right table, so each subscription
   lands in the task holding ``KO``).
2. :class:`SubscriptionReceiveProcessor` (right sub-topology) stores it in the subscription store under
   the combined key ``len(KO) + KO + K`` (:class:`CombinedKeySchema`), so every subscriber of a foreign
   key is one prefix scan away; :class:`SubscriptionJoinProcessor` answers it with the current right
   value. :class:`ForeignTableJoinProcessor` answers every subscriber of ``KO`` when the right table
   changes. Answers (:class:`SubscriptionResponseWrapper`, keyed by ``K``) go to
   ``...-SUBSCRIPTION-RESPONSE-<n>-topic``, into the partition the subscription came from.
3. :class:`ResponseJoinProcessor` (left sub-topology) drops an answer whose hash differs from the hash
   of the left row's *current* value (the row changed meanwhile: a newer answer is on its way; this is
   what keeps quickly changing foreign keys from producing stale results) and applies the joiner.

Wire formats (subscription and response wrappers, combined keys) and the hash are Kafka's, so the
internal topics and the subscription store's changelog are byte-compatible with Kafka Streams.
"""

from __future__ import annotations

import enum
import logging
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edge.errors import SerdeError, TopologyError
from edge.processor.api import Processor, ProcessorContext
from edge.processor.context import forward_all
from edge.processor.ops.getters import ValueGetterSupplier
from edge.processor.ops.stream_joins import record_dropped
from edge.processor.record import Record
from edge.serde import ValueAndTimestamp

if TYPE_CHECKING:
    from edge.processor.config import TaskConfig
    from edge.serde import Serde

log = logging.getLogger(__name__)

# -- murmur3 (Kafka's org.apache.kafka.streams.state.internals.Murmur3.hash128) -----------------------

_MASK = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F
_SEED = 104729  # Kafka's Murmur3.DEFAULT_SEED
_BLOCK = struct.Struct("<QQ")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _fmix(k: int) -> int:
    k ^= k >> 33
    k = (k * 0xFF51AFD7ED558CCD) & _MASK
    k ^= k >> 33
    k = (k * 0xC4CEB9FE1A85EC53) & _MASK
    k ^= k >> 33
    return k


def _signed(x: int) -> int:
    return x - (1 << 64) if x >= 1 << 63 else x


def murmur3_128(data: bytes, seed: int = _SEED) -> tuple[int, int]:
    """MurmurHash3 x64 128-bit, as Kafka's ``Murmur3.hash128`` (two signed 64-bit halves)."""
    h1 = h2 = seed & _MASK
    n = len(data)
    nblocks = n // 16
    for i in range(nblocks):
        k1, k2 = _BLOCK.unpack_from(data, i * 16)
        k1 = (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK
        h1 ^= k1
        h1 = (((_rotl(h1, 27) + h2) & _MASK) * 5 + 0x52DCE729) & _MASK
        k2 = (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK
        h2 ^= k2
        h2 = (((_rotl(h2, 31) + h1) & _MASK) * 5 + 0x38495AB5) & _MASK
    tail = data[nblocks * 16 :]
    k1 = k2 = 0
    for i in range(len(tail) - 1, 7, -1):
        k2 ^= tail[i] << (8 * (i - 8))
    if len(tail) > 8:
        h2 ^= (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK
    for i in range(min(len(tail), 8) - 1, -1, -1):
        k1 ^= tail[i] << (8 * i)
    if tail:
        h1 ^= (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK
    h1 ^= n
    h2 ^= n
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    h1 = _fmix(h1)
    h2 = _fmix(h2)
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    return _signed(h1), _signed(h2)


# -- wrappers and their serdes ------------------------------------------------------------------------


class Instruction(enum.IntEnum):
    """What the right side does with a subscription (Kafka's ``SubscriptionWrapper.Instruction``)."""

    #: the left row left this foreign key: forget the subscription, answer nothing
    DELETE_KEY_NO_PROPAGATE = 0
    #: the left row is gone: forget the subscription, answer "no value" (a tombstone downstream)
    DELETE_KEY_AND_PROPAGATE = 1
    #: the left row (re)subscribed after a change: answer with the right value, or "no value"
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2
    #: a new left row subscribed: answer only if the right value exists
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3


Hash = tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class SubscriptionWrapper:
    hash: Hash
    instruction: Instruction
    primary_key: Any
    primary_partition: int | None
    version: int = 1


@dataclass(frozen=True, slots=True)
class SubscriptionResponseWrapper:
    original_value_hash: Hash
    foreign_value: Any
    #: where the answer must go (the partition of the left row); never serialized
    primary_partition: int | None = None
    version: int = 0


_HASH = struct.Struct(">qq")
_INT = struct.Struct(">i")


class SubscriptionWrapperSerde:
    """``{isHashNull bit + 7-bit version}{instruction}{16-byte hash?}{primary key}{4-byte partition}``."""

    def __init__(self, primary_key_serde: Serde | None, pseudo_topic: str = "") -> None:
        self.primary_key_serde = primary_key_serde
        self.pseudo_topic = pseudo_topic

    def with_config_defaults(self, config: TaskConfig) -> SubscriptionWrapperSerde:
        if self.primary_key_serde is not None:
            return self
        return SubscriptionWrapperSerde(config.default_key_serde, self.pseudo_topic)

    def _pk(self) -> Serde:
        if self.primary_key_serde is None:
            raise TopologyError("the foreign-key join's primary key serde was not resolved from the config")
        return self.primary_key_serde

    def serialize(self, topic: str, value: SubscriptionWrapper | None) -> bytes | None:
        if value is None:
            return None
        pk = self._pk().serialize(self.pseudo_topic or topic, value.primary_key) or b""
        version = value.version & 0x7F
        head = bytes([version if value.hash is not None else version | 0x80, int(value.instruction)])
        body = head + (_HASH.pack(*value.hash) if value.hash is not None else b"") + pk
        if value.version >= 1:
            body += _INT.pack(value.primary_partition if value.primary_partition is not None else -1)
        return body

    def deserialize(self, topic: str, data: bytes | None) -> SubscriptionWrapper | None:
        if data is None:
            return None
        if len(data) < 2:
            raise SerdeError(f"truncated foreign-key subscription ({len(data)} bytes)", topic=topic)
        version = data[0] & 0x7F
        if version > 1:
            raise SerdeError(f"unsupported foreign-key subscription version {version}", topic=topic)
        try:
            instruction = Instruction(data[1])
        except ValueError as exc:
            raise SerdeError(f"unknown foreign-key subscription instruction {data[1]}", topic=topic) from exc
        pos = 2
        hash_: Hash = None
        if not data[0] & 0x80:
            hash_ = _HASH.unpack_from(data, pos)
            pos += 16
        end = len(data) - (4 if version >= 1 else 0)
        pk = self._pk().deserialize(self.pseudo_topic or topic, data[pos:end])
        partition = _INT.unpack_from(data, end)[0] if version >= 1 else None
        return SubscriptionWrapper(hash_, instruction, pk, partition, version)


class SubscriptionResponseWrapperSerde:
    """``{isHashNull bit + 7-bit version}{16-byte hash?}{foreign value bytes?}``."""

    def __init__(self, foreign_value_serde: Serde | None) -> None:
        self.foreign_value_serde = foreign_value_serde

    def with_config_defaults(self, config: TaskConfig) -> SubscriptionResponseWrapperSerde:
        if self.foreign_value_serde is not None:
            return self
        return SubscriptionResponseWrapperSerde(config.default_value_serde)

    def _fv(self) -> Serde:
        if self.foreign_value_serde is None:
            raise TopologyError("the foreign-key join's right value serde was not resolved from the config")
        return self.foreign_value_serde

    def serialize(self, topic: str, value: SubscriptionResponseWrapper | None) -> bytes | None:
        if value is None:
            return None
        fv = None if value.foreign_value is None else self._fv().serialize(topic, value.foreign_value)
        version = value.version & 0x7F
        if value.original_value_hash is None:
            out = bytes([version | 0x80])
        else:
            out = bytes([version]) + _HASH.pack(*value.original_value_hash)
        return out + (fv or b"")

    def deserialize(self, topic: str, data: bytes | None) -> SubscriptionResponseWrapper | None:
        if data is None:
            return None
        if not data:
            raise SerdeError("empty foreign-key subscription response", topic=topic)
        version = data[0] & 0x7F
        pos = 1
        hash_: Hash = None
        if not data[0] & 0x80:
            hash_ = _HASH.unpack_from(data, pos)
            pos += 16
        value = self._fv().deserialize(topic, data[pos:]) if len(data) > pos else None
        return SubscriptionResponseWrapper(hash_, value, None, version)


class CombinedKeySchema:
    """Subscription store keys: ``{4-byte foreign key length}{foreign key}{primary key}``, so all the
    subscribers of one foreign key share a prefix."""

    def __init__(
        self, fk_serde: Serde, pk_serde: Serde, fk_pseudo_topic: str = "", pk_pseudo_topic: str = ""
    ) -> None:
        self._fk, self._pk = fk_serde, pk_serde
        self._fk_topic, self._pk_topic = fk_pseudo_topic, pk_pseudo_topic

    def prefix_bytes(self, foreign_key: Any) -> bytes:
        fk = self._fk.serialize(self._fk_topic, foreign_key) or b""
        return _INT.pack(len(fk)) + fk

    def to_bytes(self, foreign_key: Any, primary_key: Any) -> bytes:
        return self.prefix_bytes(foreign_key) + (self._pk.serialize(self._pk_topic, primary_key) or b"")

    def from_bytes(self, data: bytes) -> tuple[Any, Any]:
        (n,) = _INT.unpack_from(data, 0)
        fk = self._fk.deserialize(self._fk_topic, data[4 : 4 + n])
        pk = self._pk.deserialize(self._pk_topic, data[4 + n :])
        return fk, pk


def response_partitioner(_topic: str, _key: Any, value: Any, _partitions: int) -> int | None:
    """Send an answer back to the partition its subscription came from (Kafka 3.7+'s default)."""
    return None if value is None else value.primary_partition


# -- serdes resolved at task start --------------------------------------------------------------------


def _config_of(context: ProcessorContext) -> Any:
    """The task's config: the defaults for serdes the DSL did not know (Kafka's SerdeGetter)."""
    task = getattr(context, "_task", None)
    config = getattr(task, "config", None)
    if config is None:
        raise TopologyError(
            f"processor {getattr(context, 'node_name', '?')!r} needs the task config for default serdes"
        )
    return config


@dataclass(slots=True)
class FKJoinSerdes:
    """What the DSL knows of the join's serdes (None: the config's default) and the pseudo topics Kafka
    uses for serializing outside of a real topic (``<app>-<subscription topic>-fk|-pk|-vh``)."""

    primary_key: Serde | None
    foreign_key: Serde | None
    left_value: Serde | None
    subscription_topic: str

    def resolve(self, context: ProcessorContext) -> tuple[Serde, Serde, Serde, str]:
        cfg = None
        pk, fk, lv = self.primary_key, self.foreign_key, self.left_value
        if pk is None or fk is None or lv is None:
            cfg = _config_of(context)
            pk = pk or cfg.default_key_serde
            fk = fk or cfg.default_key_serde
            lv = lv or cfg.default_value_serde
        prefix = f"{context.application_id}-{self.subscription_topic}"
        return pk, fk, lv, prefix


def _hash(serde: Serde, topic: str, value: Any) -> Hash:
    data = serde.serialize(topic, value)
    return None if data is None else murmur3_128(data)


# -- processors ---------------------------------------------------------------------------------------


class SubscriptionSendProcessor(Processor):
    """Left table change -> subscription(s) keyed by the old and/or new foreign key."""

    def __init__(self, extractor: Callable[[Any], Any], serdes: FKJoinSerdes, left_join: bool) -> None:
        self._extract = extractor
        self._serdes = serdes
        self._left_join = left_join

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        _pk, fk, lv, prefix = self._serdes.resolve(context)
        self._fk_ser, self._fk_topic = fk.serialize, f"{prefix}-fk"
        self._value_serde, self._vh_topic = lv, f"{prefix}-vh"
        self._forward = forward_all(context)

    def _same_fk(self, a: Any, b: Any) -> bool:
        return self._fk_ser(self._fk_topic, a) == self._fk_ser(self._fk_topic, b)

    def process(self, record: Record) -> None:
        change = record.value
        new, old = change.new, change.old
        digest: list[Hash] = []

        def send(fk: Any, instruction: Instruction) -> None:
            if not digest:
                digest.append(None if new is None else _hash(self._value_serde, self._vh_topic, new))
            wrapper = SubscriptionWrapper(digest[0], instruction, record.key, self.context.partition)
            self._forward(Record(fk, wrapper, record.timestamp, record.headers))

        if self._left_join:
            if old is not None:
                old_fk = self._extract(old)
                new_fk = None if new is None else self._extract(new)
                if old_fk is not None and not self._same_fk(new_fk, old_fk):
                    send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
                send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            elif new is not None:
                send(self._extract(new), Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
            return
        if old is not None:
            old_fk = self._extract(old)
            if old_fk is None:
                record_dropped(self.context, "a null foreign key")
                return
            if new is None:
                send(old_fk, Instruction.DELETE_KEY_AND_PROPAGATE)
                return
            new_fk = self._extract(new)
            if new_fk is None:
                record_dropped(self.context, "a null foreign key")
                return
            if not self._same_fk(new_fk, old_fk):
                send(old_fk, Instruction.DELETE_KEY_NO_PROPAGATE)
            send(new_fk, Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE)
        elif new is not None:
            new_fk = self._extract(new)
            if new_fk is None:
                record_dropped(self.context, "a null foreign key")
                return
            send(new_fk, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE)


class SubscriptionReceiveProcessor(Processor):
    """Keeps the subscription store up to date; forwards ``((fk, pk), ValueAndTimestamp(wrapper))``."""

    def __init__(self, store_name: str, serdes: FKJoinSerdes) -> None:
        self._store_name = store_name
        self._serdes = serdes

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._store = context.get_state_store(self._store_name)
        pk, fk, _lv, prefix = self._serdes.resolve(context)
        self._schema = CombinedKeySchema(fk, pk, f"{prefix}-fk", f"{prefix}-pk")
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        wrapper: SubscriptionWrapper = record.value
        fk = record.key
        if fk is None and wrapper.instruction != Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            record_dropped(self.context, "a null foreign key")
            return
        if wrapper.version > 1:
            raise TopologyError(f"foreign-key subscription version {wrapper.version} is not supported")
        new = ValueAndTimestamp(wrapper, record.timestamp)
        if fk is not None:
            key = self._schema.to_bytes(fk, wrapper.primary_key)
            if wrapper.instruction in (
                Instruction.DELETE_KEY_AND_PROPAGATE,
                Instruction.DELETE_KEY_NO_PROPAGATE,
            ):
                self._store.delete(key, record.timestamp)
            else:
                self._store.put(key, new, record.timestamp)
        self._forward(Record((fk, wrapper.primary_key), new, record.timestamp, record.headers))


class SubscriptionJoinProcessor(Processor):
    """Answers a subscription with the right table's current value for its foreign key."""

    def __init__(self, right: ValueGetterSupplier) -> None:
        self._getter = right.make()

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._getter.init(context)
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        fk, pk = record.key
        vt: ValueAndTimestamp = record.value
        wrapper: SubscriptionWrapper = vt[0]
        foreign = None if fk is None else self._getter.get(fk)
        ts = vt[1] if foreign is None else max(vt[1], foreign[1])
        instruction = wrapper.instruction
        if instruction == Instruction.DELETE_KEY_AND_PROPAGATE:
            value = None
        elif instruction == Instruction.PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE:
            value = None if foreign is None else foreign[0]
        elif instruction == Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE:
            if foreign is None:
                return
            value = foreign[0]
        else:  # DELETE_KEY_NO_PROPAGATE
            return
        response = SubscriptionResponseWrapper(wrapper.hash, value, wrapper.primary_partition)
        self._forward(Record(pk, response, ts, record.headers))


class ForeignTableJoinProcessor(Processor):
    """Right table change -> an answer for every left row subscribed to that key (a prefix scan)."""

    def __init__(self, store_name: str, serdes: FKJoinSerdes) -> None:
        self._store_name = store_name
        self._serdes = serdes

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._store = context.get_state_store(self._store_name)
        pk, fk, _lv, prefix = self._serdes.resolve(context)
        self._schema = CombinedKeySchema(fk, pk, f"{prefix}-fk", f"{prefix}-pk")
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        if record.key is None:
            record_dropped(self.context, "a null key")
            return
        prefix = self._schema.prefix_bytes(record.key)
        new = record.value.new
        with self._store.prefix_scan(prefix) as it:
            subscribers = [(k, vt[0]) for k, vt in it]
        for key, wrapper in subscribers:
            _fk, pk = self._schema.from_bytes(key)
            response = SubscriptionResponseWrapper(wrapper.hash, new, wrapper.primary_partition)
            self._forward(Record(pk, response, record.timestamp, record.headers))


class ResponseJoinProcessor(Processor):
    """Applies the joiner to an answer whose hash still matches the left row's current value."""

    def __init__(
        self,
        left: ValueGetterSupplier,
        joiner: Callable[[Any, Any], Any],
        serdes: FKJoinSerdes,
        left_join: bool,
    ) -> None:
        self._getter = left.make()
        self._joiner = joiner
        self._serdes = serdes
        self._left_join = left_join

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._getter.init(context)
        _pk, _fk, lv, prefix = self._serdes.resolve(context)
        self._value_serde, self._vh_topic = lv, f"{prefix}-vh"
        self._forward = forward_all(context)

    def process(self, record: Record) -> None:
        response: SubscriptionResponseWrapper = record.value
        if response.version != 0:
            raise TopologyError(f"foreign-key response version {response.version} is not supported")
        current = self._getter.get(record.key)
        current_hash = None if current is None else _hash(self._value_serde, self._vh_topic, current[0])
        if current_hash != response.original_value_hash:
            # expected when the left row changed meanwhile: Kafka logs it at trace level and counts it
            log.debug("dropping a stale foreign-key join response for key %r", record.key)
            task = getattr(self.context, "_task", None)
            if task is not None and hasattr(task, "dropped_records"):
                task.dropped_records += 1
            return
        foreign = response.foreign_value
        if foreign is None and (not self._left_join or current is None):
            result = None
        else:
            result = self._joiner(None if current is None else current[0], foreign)
        self._forward(Record(record.key, result, record.timestamp, record.headers))
