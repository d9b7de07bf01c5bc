"""DSL windowed aggregations the runtime tests run as real processes (topics from ``EDGE_IN``/``EDGE_OUT``).

* ``windowed_counts``: per key and 10-second tumbling window (grace 60 s), the count of records (store
  ``agg-counts``, cached, changelogged), every update forwarded as ``key@start -> count``;
* ``final_counts``: the same count without grace and with ``EmitStrategy.on_window_close()`` (store
  ``final-counts``): one ``key@start -> count`` per window, once stream time passes its end.
"""

from __future__ import annotations

import os

from edge.dsl import Consumed, EmitStrategy, Materialized, Produced, StreamsBuilder, TimeWindows
from edge.serde import Serdes
from edge.topology import Topology

SIZE_MS = 10_000


def _build(store: str, emit: EmitStrategy, grace_ms: int) -> Topology:
    b = StreamsBuilder()
    (
        b.stream(os.environ["EDGE_IN"], Consumed.with_(Serdes.string(), Serdes.json()))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(SIZE_MS, grace_ms))
        .emit_strategy(emit)
        # an hour of retention: closed windows stay readable, so only the restored emit metadata keeps
        # a restarted instance from sending them again
        .count(materialized=Materialized.as_(store).with_retention(3_600_000))
        .to_stream()
        .map(lambda k, v: (f"{k.key}@{k.window.start}", v))
        .to(os.environ["EDGE_OUT"], Produced.with_(Serdes.string(), Serdes.long()))
    )
    return b.build()


def windowed_counts() -> Topology:
    return _build("agg-counts", EmitStrategy.on_window_update(), 60_000)


def final_counts() -> Topology:
    return _build("final-counts", EmitStrategy.on_window_close(), 0)
