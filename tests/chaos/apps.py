"""Apps the fault trials run as real processes (``streamhouse edge run tests.chaos.apps:<attr>``).

* ``typed_counts``: counts records per key in the RocksDB store ``counts`` (no cache), but only records
  whose value is a JSON object with an integer ``n`` and whose key is present; anything else raises (a
  processing error), and undecodable values fail in the JSON serde (a deserialization error).
"""

from __future__ import annotations

import os

from edge.processor.api import Processor
from edge.processor.record import Record
from edge.serde import Serdes
from edge.state import key_value_store_builder
from edge.topology import Topology


class TypedCount(Processor):
    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        self.store = context.get_state_store("counts")

    def process(self, record: Record) -> None:
        if record.key is None:
            raise ValueError("record without a key")
        value = record.value
        if not isinstance(value, dict) or not isinstance(value.get("n"), int):
            raise TypeError(f"expected a JSON object with an integer 'n', got {type(value).__name__}")
        n = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, n)
        self.context.forward(record.with_value(n))


def typed_counts() -> Topology:
    t = Topology()
    t.add_source("in", os.environ["EDGE_IN"], key_serde=Serdes.string(), value_serde=Serdes.json())
    t.add_processor("count", TypedCount, "in")
    t.add_state_store(
        key_value_store_builder("counts", Serdes.string(), Serdes.long(), caching=False), "count"
    )
    t.add_sink("out", os.environ["EDGE_OUT"], "count", key_serde=Serdes.string(), value_serde=Serdes.long())
    return t
