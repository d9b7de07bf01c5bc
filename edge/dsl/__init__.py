"""The Streams DSL: describe a topology with streams and tables, then ``StreamsBuilder.build()``."""

from __future__ import annotations

from edge.dsl.branched import BranchedKStream
from edge.dsl.builder import StreamsBuilder
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
)

__all__ = [
    "Branched",
    "BranchedKStream",
    "Consumed",
    "GlobalKTable",
    "Grouped",
    "Joined",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "Materialized",
    "Named",
    "Produced",
    "Repartitioned",
    "StreamsBuilder",
]
