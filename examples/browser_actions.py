"""Browser actions per user in 5-second windows advancing every 2 seconds (hopping windows).

    streamhouse edge run examples.browser_actions:topology --application-id actions

Each action (any value, keyed by user) counts in the 5 s windows that contain it -- two or three of
them, as windows start every 2 s -- and every update of a window's count goes to ``action-counts`` as
``user@window_start -> count``: "the count so far for the window", refined as late actions arrive
within the 1 s grace period. The window store ``action-counts-store`` answers
``/v1/stores/action-counts-store/keys/<user>?from=&to=``.
"""

from __future__ import annotations

import os

from edge import Consumed, Materialized, Produced, Serdes, StreamsBuilder, TimeWindows
from edge.topology import Topology

STORE = "action-counts-store"
WINDOWS = TimeWindows.of_size_and_grace(5_000, 1_000).advance_by(2_000)


def topology(input_topic: str | None = None, output_topic: str | None = None) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(
            input_topic or os.environ.get("ACTIONS_INPUT", "browser-actions"),
            Consumed.with_(Serdes.string(), Serdes.string()),
        )
        .group_by_key()
        .windowed_by(WINDOWS)
        .count(materialized=Materialized.as_(STORE))
        .to_stream()
        .map(lambda windowed, count: (f"{windowed.key}@{windowed.window.start}", count))
        .to(
            output_topic or os.environ.get("ACTIONS_OUTPUT", "action-counts"),
            Produced.with_(Serdes.string(), Serdes.long()),
        )
    )
    return builder.build()
