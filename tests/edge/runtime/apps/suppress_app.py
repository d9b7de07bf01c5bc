"""A suppression app the runtime tests run as a real process (``tests.edge.runtime.apps.suppress_app:
rate_limited_counts``): per-key counts of ``EDGE_IN`` (string keys and values), rate limited by event
time with ``Suppressed.until_time_limit(100 ms)`` into ``EDGE_OUT`` (``key -> count``, long values).
The suppression buffer ``rate-limit-store`` is changelogged, so buffered counts survive a crash."""

from __future__ import annotations

import os

from edge.dsl import BufferConfig, Consumed, Materialized, Produced, StreamsBuilder, Suppressed
from edge.serde import Serdes

#: event-time milliseconds a key's latest count is held back after it was first buffered
TIME_LIMIT_MS = 100


def rate_limited_counts(logged: bool = True) -> StreamsBuilder:
    s, long_serde = Serdes.string(), Serdes.long()
    buffer = BufferConfig.unbounded() if logged else BufferConfig.unbounded().with_logging_disabled()
    rate_limit = Suppressed.until_time_limit(TIME_LIMIT_MS, buffer).with_name("rate-limit")
    builder = StreamsBuilder()
    (
        builder.stream(os.environ["EDGE_IN"], Consumed.with_(s, s))
        .group_by_key()
        .count(materialized=Materialized.as_("counts").with_caching_disabled())
        .suppress(rate_limit)
        .to_stream()
        .to(os.environ["EDGE_OUT"], Produced.with_(s, long_serde))
    )
    return builder


def unlogged_rate_limited_counts() -> StreamsBuilder:
    """The same without the buffer's changelog: what was buffered at a crash is lost."""
    return rate_limited_counts(logged=False)
