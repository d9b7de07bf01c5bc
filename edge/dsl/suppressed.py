"""``KTable.suppress(Suppressed)`` (KIP-328): hold a table's updates back and emit fewer of them.

Two modes, as in Kafka Streams:

* ``Suppressed.until_window_closes(BufferConfig.unbounded())`` -- *final results* of a windowed table:
  each window's last value is emitted once, when stream time reaches ``window end + grace`` (the grace
  of the upstream windowed aggregation; for sessions ``grace + inactivity gap``). Tombstones are dropped
  (nothing was ever emitted for the window, so there is nothing to delete). Only a *strict* buffer is
  accepted: emitting early would break the "one final result" promise.
* ``Suppressed.until_time_limit(duration, buffer_config)`` -- rate limiting: a key's latest value is
  emitted once stream time reaches the time it was *first* buffered + ``duration`` (a later update
  replaces the value but does not restart the timer).

Buffer configs follow Kafka's ``Suppressed.BufferConfig``: ``unbounded()`` and ``with_no_bound()`` /
``shut_down_when_full()`` are strict (an over-full buffer fails the task with
:class:`~edge.processor.ops.suppress.SuppressionBufferFullError`); ``max_records(n)`` / ``max_bytes(b)``
and ``emit_early_when_full()`` are eager (an over-full buffer emits its oldest entries early). The
buffer is a changelogged in-memory store (``with_logging_disabled()`` turns fault tolerance off).

Names: processor ``KTABLE-SUPPRESS-<n>``, store ``KTABLE-SUPPRESS-STATE-STORE-<n+1>``; with
``with_name(name)`` the processor is ``name`` and the store ``name-store`` (changelog topic
``<application.id>-<store>-changelog``). As everywhere in this DSL, an explicit processor name still
consumes its generated index (Kafka would not), so later generated names do not shift.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from edge.dsl.windows import SessionWindows, SlidingWindows, TimeWindows
from edge.errors import TopologyError
from edge.processor.ops.getters import ValueGetterSupplier
from edge.processor.ops.suppress import KTableSuppressProcessor, SuppressedGetter
from edge.serde.windowed import SessionWindowedSerde, TimeWindowedSerde
from edge.time import to_millis
from edge.topology import naming
from edge.topology.graph import GraphNode, ProcessorGraphNode
from edge.topology.stores import StoreSpec

if TYPE_CHECKING:
    from edge.dsl.ktable import KTable
    from edge.processor.config import TaskConfig
    from edge.state import StoreBuilder

#: Kafka's ``Long.MAX_VALUE``: "no bound" for records, bytes and time
MAX = (1 << 63) - 1


class BufferFullStrategy(enum.Enum):
    """What a suppression does when its buffer is over its record or byte limit."""

    EMIT = "EMIT"  # emit the oldest entries early (eager configs)
    SHUT_DOWN = "SHUT_DOWN"  # fail the task (strict configs)


def _limit(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TopologyError(f"suppression buffer {what} must be an int >= 0, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class BufferConfig:
    """How much a suppression may buffer and what happens when that is exceeded (Kafka's
    ``Suppressed.BufferConfig``). Build one with the static factories; ``with_*`` return copies.

    ``log_config`` is the changelog topic's extra configuration; ``None`` means logging is disabled.
    """

    record_limit: int = MAX
    byte_limit: int = MAX
    log_config: Mapping[str, str] | None = dataclasses.field(default_factory=dict)

    # -- factories (static in Kafka) ------------------------------------------------------------------
    @staticmethod
    def max_records(record_limit: int) -> EagerBufferConfig:
        """At most ``record_limit`` keys; when full, the oldest are emitted early."""
        return EagerBufferConfig(_limit(record_limit, "max records"), MAX, {})

    @staticmethod
    def max_bytes(byte_limit: int) -> EagerBufferConfig:
        """At most ``byte_limit`` bytes (Kafka's size estimate); when full, the oldest are emitted early."""
        return EagerBufferConfig(MAX, _limit(byte_limit, "max bytes"), {})

    @staticmethod
    def unbounded() -> StrictBufferConfig:
        """No size bound: the buffer grows as the time bound dictates (strict: never emits early)."""
        return StrictBufferConfig()

    # -- modifiers --------------------------------------------------------------------------------------
    @property
    def buffer_full_strategy(self) -> BufferFullStrategy:
        raise NotImplementedError

    def with_max_records(self, record_limit: int) -> Any:
        return dataclasses.replace(self, record_limit=_limit(record_limit, "max records"))

    def with_max_bytes(self, byte_limit: int) -> Any:
        return dataclasses.replace(self, byte_limit=_limit(byte_limit, "max bytes"))

    def with_no_bound(self) -> StrictBufferConfig:
        return StrictBufferConfig(MAX, MAX, self.log_config, BufferFullStrategy.SHUT_DOWN)

    def shut_down_when_full(self) -> StrictBufferConfig:
        """Strict: when over a limit, fail the task instead of emitting early."""
        return StrictBufferConfig(
            self.record_limit, self.byte_limit, self.log_config, BufferFullStrategy.SHUT_DOWN
        )

    def emit_early_when_full(self) -> EagerBufferConfig:
        """Eager: when over a limit, emit the oldest entries (fewer duplicates, not none)."""
        return EagerBufferConfig(self.record_limit, self.byte_limit, self.log_config)

    def with_logging_disabled(self) -> Any:
        """No changelog: buffered updates are lost on a crash or a rebalance."""
        return dataclasses.replace(self, log_config=None)

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> Any:
        """Changelog the buffer (the default), with ``config`` for its topic."""
        return dataclasses.replace(self, log_config=dict(config or {}))

    @property
    def is_logging_enabled(self) -> bool:
        return self.log_config is not None


@dataclass(frozen=True, slots=True)
class StrictBufferConfig(BufferConfig):
    """Never emits early: over a limit the task fails (Kafka's ``StrictBufferConfig``)."""

    strategy: BufferFullStrategy = BufferFullStrategy.SHUT_DOWN

    @property
    def buffer_full_strategy(self) -> BufferFullStrategy:
        return self.strategy


@dataclass(frozen=True, slots=True)
class EagerBufferConfig(BufferConfig):
    """Emits its oldest entries early when over a limit (Kafka's ``EagerBufferConfig``)."""

    @property
    def buffer_full_strategy(self) -> BufferFullStrategy:
        return BufferFullStrategy.EMIT


@dataclass(frozen=True, slots=True)
class Suppressed:
    """A suppression configuration; build it with :meth:`until_window_closes` or
    :meth:`until_time_limit`. ``time_to_wait_ms`` is None for final results (the window's grace is
    only known once the suppression is applied to a windowed table)."""

    name: str | None
    buffer_config: BufferConfig
    time_to_wait_ms: int | None
    final_results: bool

    @staticmethod
    def until_window_closes(buffer_config: StrictBufferConfig) -> Suppressed:
        """Emit only the final result of each window, once it closes (window end + grace)."""
        if not isinstance(buffer_config, StrictBufferConfig):
            raise TopologyError(
                "until_window_closes needs a strict buffer config (BufferConfig.unbounded() or "
                "....shut_down_when_full()): emitting early would break the final-results guarantee"
            )
        return Suppressed(None, buffer_config, None, True)

    @staticmethod
    def until_time_limit(time_to_wait_for_more_events: Any, buffer_config: BufferConfig) -> Suppressed:
        """Emit a key's latest value once stream time passes the time it was buffered + the limit."""
        if not isinstance(buffer_config, BufferConfig):
            raise TopologyError(
                f"until_time_limit needs a Suppressed.BufferConfig, got {type(buffer_config).__name__}"
            )
        wait = to_millis(time_to_wait_for_more_events, "suppression time limit")
        if wait < 0:
            raise TopologyError(f"suppression time limit must not be negative, got {wait} ms")
        return Suppressed(None, buffer_config, wait, False)

    def with_name(self, name: str) -> Suppressed:
        """Name the suppression node; its store is ``<name>-store``."""
        if not name or not isinstance(name, str):
            raise TopologyError(f"a suppression name must be a non-empty string, got {name!r}")
        return dataclasses.replace(self, name=name)

    def with_logging_disabled(self) -> Suppressed:
        """Shortcut for ``buffer_config.with_logging_disabled()``."""
        return dataclasses.replace(self, buffer_config=self.buffer_config.with_logging_disabled())

    def with_logging_enabled(self, config: Mapping[str, str] | None = None) -> Suppressed:
        return dataclasses.replace(self, buffer_config=self.buffer_config.with_logging_enabled(config))


Suppressed.BufferConfig = BufferConfig  # type: ignore[attr-defined]  # Kafka: Suppressed.BufferConfig
Suppressed.StrictBufferConfig = StrictBufferConfig  # type: ignore[attr-defined]
Suppressed.EagerBufferConfig = EagerBufferConfig  # type: ignore[attr-defined]


# -- the buffer store declaration --------------------------------------------------------------------------


@dataclass(slots=True)
class SuppressionBufferSpec(StoreSpec):
    """The DSL's declaration of a suppression buffer: serdes may be left to the config defaults, as for
    other DSL stores. ``windowed_keys`` ("time" / "session", with ``window_size_ms`` for time windows)
    says how to wrap a plain key serde when the table's keys are ``Windowed``."""

    windowed_keys: str | None = None

    def to_builder(self, config: TaskConfig) -> StoreBuilder:
        from edge.state.suppression_buffer import SuppressionBufferBuilder

        key_serde: Any = self.key_serde or config.default_key_serde
        if self.windowed_keys is not None and not isinstance(
            key_serde, TimeWindowedSerde | SessionWindowedSerde
        ):
            if self.windowed_keys == "session":
                key_serde = SessionWindowedSerde(key_serde)
            else:
                key_serde = TimeWindowedSerde(key_serde, self.window_size_ms)
        return SuppressionBufferBuilder(  # type: ignore[return-value]
            self.name,
            key_serde,
            self.value_serde or config.default_value_serde,
            logging=self.logging_enabled,
            changelog_config=self.changelog_config,
        )


# -- KTable.suppress ---------------------------------------------------------------------------------------


def _windows_of(node: GraphNode) -> Any:
    """The window spec a graph node's windowed aggregation declared (attribute ``windows``), if any."""
    windows = getattr(node, "windows", None)
    if isinstance(windows, TimeWindows | SlidingWindows | SessionWindows):
        return windows
    return None


def _grace_of(windows: Any) -> int:
    """Kafka's GraphGraceSearchUtil.extractGracePeriod: sessions close ``gap + grace`` after their end."""
    if isinstance(windows, SessionWindows):
        return windows.grace_ms + windows.inactivity_gap_ms
    return windows.grace_period_ms()


def find_and_verify_window_grace(node: GraphNode, chain: str = "") -> int:
    """The grace of the windowed computation upstream of ``node`` (the max over all parents); a
    TopologyError naming the chain of nodes when there is none (Kafka's findAndVerifyWindowGrace)."""
    windows = _windows_of(node)
    if windows is not None:
        return _grace_of(windows)
    new_chain = node.name if not chain else f"{node.name}->{chain}"
    if not node.parents:
        raise TopologyError(
            f"Window close time is only defined for windowed computations. Got [{new_chain}]."
        )
    return max(find_and_verify_window_grace(parent, new_chain) for parent in node.parents)


def _upstream_windows(node: GraphNode) -> Any:
    """The nearest upstream window spec (first parent first), or None: how to serialize windowed keys."""
    seen: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        windows = _windows_of(current)
        if windows is not None:
            return windows
        stack.extend(reversed(current.parents))
    return None


def suppress(table: KTable, suppressed: Suppressed) -> KTable:
    """``KTable.suppress``: see the module doc. Mirrors Kafka's KTableImpl.suppress."""
    from edge.dsl.ktable import KTable

    if not isinstance(suppressed, Suppressed):
        raise TopologyError(
            f"suppress() needs a Suppressed (Suppressed.until_time_limit / until_window_closes), "
            f"got {type(suppressed).__name__}"
        )
    builder = table._builder
    names = builder.names
    name = names.processor(naming.KTABLE_SUPPRESS, suppressed.name)
    if suppressed.final_results:
        wait_ms = find_and_verify_window_grace(table._node)
    else:
        wait_ms = suppressed.time_to_wait_ms if suppressed.time_to_wait_ms is not None else MAX
    store_name = f"{suppressed.name}-store" if suppressed.name else names.store(naming.KTABLE_SUPPRESS)
    config = suppressed.buffer_config
    windows = _upstream_windows(table._node)
    windowed_keys = None
    window_size = 0
    if isinstance(windows, SessionWindows):
        windowed_keys = "session"
    elif windows is not None:
        windowed_keys = "time"
        window_size = windows.size()
    spec = SuppressionBufferSpec(
        store_name,
        table.key_serde,
        table.value_serde,
        persistent=False,
        logging_enabled=config.is_logging_enabled,
        caching_enabled=False,
        timestamped=False,
        changelog_config=dict(config.log_config) if config.log_config is not None else None,
        kind="suppression_buffer",
        window_size_ms=window_size,
        windowed_keys=windowed_keys,
    )
    record_limit, byte_limit = config.record_limit, config.byte_limit
    emit_when_full = config.buffer_full_strategy is BufferFullStrategy.EMIT
    final_results = suppressed.final_results

    def supplier() -> KTableSuppressProcessor:
        return KTableSuppressProcessor(
            store_name,
            time_to_wait_ms=wait_ms,
            window_end_time=final_results,
            max_records=record_limit,
            max_bytes=byte_limit,
            emit_when_full=emit_when_full,
            safe_to_drop_tombstones=final_results,
        )

    # Kafka's KTableSuppressProcessorSupplier: the buffer keeps each key's prior value, so the parent must
    # send old values (a source table is materialized for it)
    table.enable_sending_old_values(True)
    node = builder.add_node(
        ProcessorGraphNode(name, [table._node], supplier, stores=[store_name], new_stores=[spec])
    )
    parent = table.getter_supplier()
    getter = ValueGetterSupplier(
        lambda: SuppressedGetter(store_name, parent.make()),
        [store_name, *(s for s in parent.store_names if s != store_name)],
    )
    return KTable(
        builder,
        node,
        table.key_serde,
        table.value_serde,
        None,
        getter,
        old_values=table.enable_sending_old_values,
    )


__all__ = [
    "BufferConfig",
    "BufferFullStrategy",
    "EagerBufferConfig",
    "StrictBufferConfig",
    "Suppressed",
    "SuppressionBufferSpec",
    "find_and_verify_window_grace",
    "suppress",
]
