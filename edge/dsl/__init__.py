"""The Streams DSL: describe a topology with streams and tables, then ``StreamsBuilder.build()``.

Word count::

    builder = StreamsBuilder()
    (
        builder.stream("lines", Consumed.with_(Serdes.string(), Serdes.string()))
        .flat_map_values(str.split)
        .group_by(lambda _key, word: word)
        .count(materialized="counts-store")      # a KTable backed by the "counts-store" store
        .to_stream()
        .to("word-counts", Produced.with_(Serdes.string(), Serdes.long()))
    )
    topology = builder.build()                  # print(topology.describe()) to see sub-topologies

Names: every node gets a deterministic generated name (``KSTREAM-FILTER-0000000003``); pass
``named=``/``Materialized.as_``/``Grouped.as_`` to pin the names that reach Kafka (stores, changelog
and repartition topics). Explicit names still consume their generated index, so naming one operator
does not rename the others (Kafka Streams would shift them).
"""

from __future__ import annotations

from edge.dsl.branched import BranchedKStream
from edge.dsl.builder import StreamsBuilder
from edge.dsl.cogrouped import (
    CogroupedKStream,
    SessionWindowedCogroupedKStream,
    TimeWindowedCogroupedKStream,
)
from edge.dsl.grouped import KGroupedStream, KGroupedTable
from edge.dsl.kstream import KStream
from edge.dsl.ktable import GlobalKTable, KTable
from edge.dsl.options import (
    Branched,
    Consumed,
    Grouped,
    Joined,
    Materialized,
    Named,
    Produced,
    Repartitioned,
    TableJoined,
)
from edge.dsl.stream_joined import StreamJoined
from edge.dsl.suppressed import BufferConfig, Suppressed
from edge.dsl.windowed import SessionWindowedKStream, TimeWindowedKStream
from edge.dsl.windows import EmitStrategy, JoinWindows, SessionWindows, SlidingWindows, TimeWindows

__all__ = [
    "Branched",
    "BranchedKStream",
    "BufferConfig",
    "CogroupedKStream",
    "Consumed",
    "EmitStrategy",
    "GlobalKTable",
    "Grouped",
    "JoinWindows",
    "Joined",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "Materialized",
    "Named",
    "Produced",
    "Repartitioned",
    "SessionWindowedCogroupedKStream",
    "SessionWindowedKStream",
    "SessionWindows",
    "SlidingWindows",
    "StreamJoined",
    "StreamsBuilder",
    "Suppressed",
    "TableJoined",
    "TimeWindowedCogroupedKStream",
    "TimeWindowedKStream",
    "TimeWindows",
]
