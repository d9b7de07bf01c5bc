"""The session rule at its boundary: gold and Kafka Streams' session windows (the edge) agree.

A click exactly 30 minutes after the previous one stays in the session (Kafka's gap is inclusive); one
millisecond more starts a new session.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from assets.gold.declared import gold_table
from assets.pipeline.active import active_pipeline
from edge import Consumed, Grouped, Materialized, Serdes, SessionWindows, StreamsBuilder, TopologyTestDriver

pytestmark = [pytest.mark.spark]

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
GAP = timedelta(minutes=30)
CLICKS = [  # (user, offset from T0)
    ("u1", timedelta(0)),
    ("u1", GAP),  # exactly the gap: same session
    ("u1", 2 * GAP + timedelta(milliseconds=1)),  # gap + 1 ms after the previous click: new session
    ("u2", timedelta(minutes=5)),
]


def _ms(ts: datetime) -> int:
    return int(ts.timestamp() * 1000)


def _gold_sessions(spark) -> set[tuple[str, int, int, int]]:
    rows = [(user, f"e{i}", T0 + offset, "/menu") for i, (user, offset) in enumerate(CLICKS)]
    clicks = spark.createDataFrame(rows, "user_id string, event_id string, event_time timestamp, page string")
    sessions = gold_table(active_pipeline(), "click_sessions")
    out = sessions.compute({"clicks": clicks}, [date(2026, 3, 2)]).collect()
    return {
        (
            r.user_id,
            _ms(r.session_start.replace(tzinfo=UTC)),
            _ms(r.session_end.replace(tzinfo=UTC)),
            r.clicks,
        )
        for r in out
    }


def _edge_sessions() -> set[tuple[str, int, int, int]]:
    builder = StreamsBuilder()
    (
        builder.stream("clicks", Consumed.with_(Serdes.string(), Serdes.string()))
        .group_by_key(Grouped.with_(Serdes.string(), Serdes.string()))
        .windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(GAP))
        .count(materialized=Materialized.as_("sessions").with_retention(timedelta(days=1)))
    )
    with TopologyTestDriver(builder.build()) as driver:
        topic = driver.create_input_topic("clicks", Serdes.string(), Serdes.string())
        for user, offset in sorted(CLICKS, key=lambda c: c[1]):  # in time order: no grace
            topic.pipe_input(user, "/menu", _ms(T0 + offset))
        store = driver.get_session_store("sessions")
        return {(w.key, w.window.start, w.window.end, n) for w, n in store.all()}


def test_session_gap_is_inclusive_in_gold_and_at_the_edge(spark) -> None:
    t0 = _ms(T0)
    expected = {
        ("u1", t0, t0 + _ms(T0 + GAP) - t0, 2),
        ("u1", t0 + 2 * 1_800_000 + 1, t0 + 2 * 1_800_000 + 1, 1),
        ("u2", t0 + 300_000, t0 + 300_000, 1),
    }
    assert _gold_sessions(spark) == expected
    assert _edge_sessions() == expected
