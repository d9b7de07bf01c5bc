"""Word count, the "hello world" of Kafka Streams, on the Streamhouse DSL.

    streamhouse broker start
    export STREAMHOUSE_BOOTSTRAP_SERVERS=127.0.0.1:<port>
    streamhouse edge run examples.wordcount:topology --application-id wordcount --server 127.0.0.1:7070

Lines from topic ``text-lines`` (override with WORDCOUNT_INPUT) are split into words and counted; each
updated count goes to ``word-counts``. The counts live in the queryable store ``word-counts-store``:
``curl 127.0.0.1:7070/v1/stores/word-counts-store/keys/kafka``.
"""

from __future__ import annotations

import os
import re

from edge import Consumed, Grouped, Produced, Serdes, StreamsBuilder
from edge.topology import Topology

WORD = re.compile(r"\w+")


def topology() -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(
            os.environ.get("WORDCOUNT_INPUT", "text-lines"), Consumed.with_(Serdes.string(), Serdes.string())
        )
        .flat_map_values(lambda line: WORD.findall(line.lower()))
        .group_by(lambda _key, word: word, Grouped.with_(Serdes.string(), Serdes.string()))
        .count(materialized="word-counts-store")
        .to_stream()
        .to(os.environ.get("WORDCOUNT_OUTPUT", "word-counts"), Produced.with_(Serdes.string(), Serdes.long()))
    )
    return builder.build()
