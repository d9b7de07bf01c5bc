"""Apps the runtime tests run as real processes (``streamhouse edge run <this module>:counts``).

Topics come from the environment (``EDGE_IN``, ``EDGE_OUT``) so one module serves every test.

* ``counts``: per-key running count in a RocksDB store ``counts`` (no cache), one output per input:
  ``key -> count``. Values are JSON; undecodable values exercise the deserialization handler.
* ``cached_counts``: the same count with a caching store; outputs are emitted on flush (commit).
* ``passthrough``: stateless, every input value to the output (no store, no changelog, no marker).
"""

from __future__ import annotations

import os

from edge.processor.api import Processor
from edge.processor.record import Record
from edge.serde import Serdes
from edge.state import key_value_store_builder
from edge.topology import Topology

#: keys whose ``{"fail_once": true}`` record already failed in this process
_FAILED_ONCE: set[str] = set()


class CountProcessor(Processor):
    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        self.store = context.get_state_store("counts")
        self.cached = self.store.set_flush_listener(self._on_flush, send_old_values=False)

    def _on_flush(self, key, new, old, timestamp) -> None:  # type: ignore[no-untyped-def]
        self.context.forward(Record(key, new, timestamp))

    def process(self, record: Record) -> None:
        if (
            isinstance(record.value, dict)
            and record.value.get("fail_once")
            and record.key not in _FAILED_ONCE
        ):
            _FAILED_ONCE.add(record.key)
            raise RuntimeError(f"failing once on {record.key!r} (test fault)")
        n = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, n)
        if not self.cached:
            self.context.forward(record.with_value(n))


def _build(caching: bool) -> Topology:
    t = Topology()
    t.add_source("in", os.environ["EDGE_IN"], key_serde=Serdes.string(), value_serde=Serdes.json())
    t.add_processor("count", CountProcessor, "in")
    t.add_state_store(
        key_value_store_builder("counts", Serdes.string(), Serdes.long(), caching=caching), "count"
    )
    t.add_sink("out", os.environ["EDGE_OUT"], "count", key_serde=Serdes.string(), value_serde=Serdes.long())
    return t


def counts() -> Topology:
    return _build(caching=False)


def cached_counts() -> Topology:
    return _build(caching=True)


def passthrough() -> Topology:
    t = Topology()
    t.add_source("in", os.environ["EDGE_IN"], key_serde=Serdes.string(), value_serde=Serdes.json())
    t.add_sink("out", os.environ["EDGE_OUT"], "in", key_serde=Serdes.string(), value_serde=Serdes.json())
    return t


def word_count():  # type: ignore[no-untyped-def]
    """DSL word count: ``group_by`` word -> a repartition topic -> ``count`` into ``word-counts``."""
    from edge.dsl import Consumed, Grouped, Produced, StreamsBuilder

    builder = StreamsBuilder()
    (
        builder.stream(os.environ["EDGE_IN"], Consumed.with_(Serdes.string(), Serdes.string()))
        .flat_map_values(str.split)
        .group_by(lambda _key, word: word, Grouped.with_(Serdes.string(), Serdes.string()))
        .count(materialized="word-counts")
        .to_stream()
        .to(os.environ["EDGE_OUT"], Produced.with_(Serdes.string(), Serdes.long()))
    )
    return builder
