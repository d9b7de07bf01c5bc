"""Edge apps the replay tests run through the CLI (``tests.replay.apps:wordcount``).

Topic names come from the environment (``REPLAY_IN``, ``REPLAY_OUT``) so each test uses its own.
"""

from __future__ import annotations

import os
import re

from edge import Consumed, Grouped, Produced, Serdes, StreamsBuilder
from edge.topology import Topology

WORD = re.compile(r"\w+")


def wordcount(src: str | None = None, out: str | None = None) -> Topology:
    """Word count with a repartition topic and a changelogged store: both must go in a reset."""
    builder = StreamsBuilder()
    (
        builder.stream(src or os.environ["REPLAY_IN"], Consumed.with_(Serdes.string(), Serdes.string()))
        .flat_map_values(lambda line: WORD.findall(line.lower()))
        .group_by(lambda _key, word: word, Grouped.with_(Serdes.string(), Serdes.string()))
        .count(materialized="counts-store")
        .to_stream()
        .to(out or os.environ["REPLAY_OUT"], Produced.with_(Serdes.string(), Serdes.long()))
    )
    return builder.build()
