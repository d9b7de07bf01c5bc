"""Settings a task needs, shared by the Kafka runtime and the TopologyTestDriver."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edge.processor.handlers import ExceptionHandler, LogAndFailHandler
from edge.serde import Serde, Serdes


@dataclass(slots=True)
class StreamsConfig:
    """``application_id`` prefixes internal topics (repartition, changelog) and the state directory.

    Default serdes are used wherever the topology did not name one (Kafka's ``default.key.serde``).
    ``cache_max_bytes`` is the record-cache budget of one task, split evenly over its cached stores.
    """

    application_id: str
    default_key_serde: Serde = field(default_factory=Serdes.bytes)
    default_value_serde: Serde = field(default_factory=Serdes.bytes)
    deserialization_exception_handler: ExceptionHandler = field(default_factory=LogAndFailHandler)
    processing_exception_handler: ExceptionHandler = field(default_factory=LogAndFailHandler)
    cache_max_bytes: int = 10 * 1024 * 1024
    state_dir: Path | None = None
    commit_interval_ms: int = 30_000
    #: time every state-store operation into a ``StoreMetrics`` per store (~0.2 us per operation, two
    #: ``perf_counter_ns`` calls); off by default so the per-record path carries no metrics at all.
    store_metrics: bool = False
    #: send a store's changelog records collapsed per key at commit (``flush``) rather than one per
    #: write; matters for stores without the record cache (with it, writes are collapsed already).
    #: Off by default: with it the changelog holds fewer records than writes (restores count fewer).
    changelog_collapse: bool = False
