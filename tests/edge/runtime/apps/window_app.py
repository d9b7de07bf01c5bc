"""A windowed count written with the Processor API and a window store (runtime tests of window stores).

``windowed_counts``: per key and 10-second tumbling window, the count of records, kept in the window
store ``window-counts`` (no cache, changelogged); each update is forwarded as ``key@start -> count``.
"""

from __future__ import annotations

import os

from edge.processor.api import Processor
from edge.processor.record import Record
from edge.serde import Serdes
from edge.state import window_store_builder
from edge.topology import Topology

SIZE_MS = 10_000


class WindowCountProcessor(Processor):
    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        self.store = context.get_state_store("window-counts")

    def process(self, record: Record) -> None:
        start = record.timestamp - record.timestamp % SIZE_MS
        n = (self.store.fetch(record.key, start) or 0) + 1
        self.store.put(record.key, n, start)
        self.context.forward(Record(f"{record.key}@{start}", n, record.timestamp))


def windowed_counts() -> Topology:
    t = Topology()
    t.add_source("in", os.environ["EDGE_IN"], key_serde=Serdes.string(), value_serde=Serdes.json())
    t.add_processor("count", WindowCountProcessor, "in")
    t.add_state_store(
        window_store_builder(
            "window-counts",
            Serdes.string(),
            Serdes.long(),
            window_size_ms=SIZE_MS,
            retention_ms=24 * 3600 * 1000,
            caching=False,
        ),
        "count",
    )
    t.add_sink("out", os.environ["EDGE_OUT"], "count", key_serde=Serdes.string(), value_serde=Serdes.long())
    return t
