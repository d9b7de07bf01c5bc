"""KTable.suppress (KIP-328), checked against Kafka Streams' own tests.

* ``SuppressTopologyTest``: generated names and describe() text;
* ``SuppressScenarioTest``: whole topologies on the TopologyTestDriver, same inputs, same outputs (key,
  value, timestamp, order);
* ``KTableSuppressProcessorTest``: the processor alone, with the same harness inputs;
* the buffer's changelog: a crash (a fresh buffer restored from the changelog records written so far)
  neither loses a buffered update nor emits one twice, including under exactly-once where only what
  was committed survives.

``until_window_closes`` finds the grace the way Kafka does, walking up the graph to the windowed
aggregation, whose graph node carries its window spec as ``node.windows`` (edge.dsl.windowed).
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from edge.dsl import (
    BufferConfig,
    Consumed,
    Grouped,
    Materialized,
    Produced,
    StreamsBuilder,
    Suppressed,
)
from edge.errors import StateStoreError, TopologyError
from edge.processor import ProcessingFailed, StreamsConfig
from edge.processor.ops.suppress import KTableSuppressProcessor, SuppressionBufferFullError
from edge.processor.record import Change, Record
from edge.serde import Serdes
from edge.serde.windowed import SessionWindow, SessionWindowedSerde, TimeWindow, TimeWindowedSerde, Windowed
from edge.state import StoreContext
from edge.state.suppression_buffer import BufferedContext, SuppressionBuffer, suppression_buffer_builder
from edge.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
STR = Consumed.with_(S, S)
MAX = (1 << 63) - 1
#: Kafka's TopologyTestDriver application id: the buffer's byte estimate counts the source topic's name,
#: so the byte-limit scenario needs the same names to evict at the same points.
KAFKA_TTD_APP = "dummy-topology-test-driver-app-id"

unbounded = BufferConfig.unbounded
until_time_limit = Suppressed.until_time_limit
until_window_closes = Suppressed.until_window_closes


def config(app: str = "suppress") -> StreamsConfig:
    return StreamsConfig(app, default_key_serde=S, default_value_serde=S)


def drain(driver: TopologyTestDriver, topic: str, value_serde=L) -> list[tuple]:  # type: ignore[no-untyped-def]
    return [
        (r.key, r.value, r.timestamp)
        for r in driver.create_output_topic(topic, S, value_serde).read_records_to_list()
    ]


# -- SuppressTopologyTest ----------------------------------------------------------------------------------

ANONYMOUS_INTERMEDIATE_TOPOLOGY = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> KTABLE-SUPPRESS-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KTABLE-SUPPRESS-0000000003 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000004])
      --> KTABLE-TOSTREAM-0000000005
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KTABLE-TOSTREAM-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000006
      <-- KTABLE-SUPPRESS-0000000003
    Sink: KSTREAM-SINK-0000000006 (topic: output)
      <-- KTABLE-TOSTREAM-0000000005

"""

# Kafka's NAMED_INTERMEDIATE_TOPOLOGY, except that an explicit name still consumes its generated index
# in this DSL (edge.topology.naming), so the nodes after "asdf" are numbered one higher than in Kafka.
NAMED_INTERMEDIATE_TOPOLOGY = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [input])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
      --> asdf
      <-- KSTREAM-SOURCE-0000000000
    Processor: asdf (stores: [asdf-store])
      --> KTABLE-TOSTREAM-0000000004
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KTABLE-TOSTREAM-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- asdf
    Sink: KSTREAM-SINK-0000000005 (topic: output)
      <-- KTABLE-TOSTREAM-0000000004

"""


def intermediate(suppressed: Suppressed) -> StreamsBuilder:
    b = StreamsBuilder()
    (
        b.stream("input", STR)
        .group_by_key()
        .count()
        .suppress(suppressed)
        .to_stream()
        .to("output", Produced.with_(S, L))
    )
    return b


def test_anonymous_suppression_node_is_numbered_like_kafka():
    topology = intermediate(until_time_limit(1000, unbounded())).build()
    assert str(topology.describe()) == ANONYMOUS_INTERMEDIATE_TOPOLOGY
    assert topology.changelog_topics("app")["KTABLE-SUPPRESS-STATE-STORE-0000000004"] == (
        "app-KTABLE-SUPPRESS-STATE-STORE-0000000004-changelog"
    )


def test_named_suppression_node_and_its_store():
    topology = intermediate(until_time_limit(1000, unbounded()).with_name("asdf")).build()
    assert str(topology.describe()) == NAMED_INTERMEDIATE_TOPOLOGY
    assert topology.changelog_topics("app")["asdf-store"] == "app-asdf-store-changelog"


def test_logging_disabled_buffer_has_no_changelog_and_log_config_reaches_the_topic():
    quiet = intermediate(until_time_limit(1000, unbounded().with_logging_disabled()).with_name("q")).build()
    assert "q-store" not in quiet.changelog_topics("app")
    assert "q-store" in quiet.store_names()
    shortcut = intermediate(until_time_limit(1000, unbounded()).with_name("q").with_logging_disabled())
    assert "q-store" not in shortcut.build().changelog_topics("app")
    cfg = {"retention.ms": "1000"}
    logged = intermediate(
        until_time_limit(1000, unbounded().with_logging_enabled(cfg)).with_name("q")
    ).build()
    from edge.runtime.topics import _store_changelog_config

    assert _store_changelog_config(logged, "q-store") == {"cleanup.policy": "compact", **cfg}


def test_buffer_configs_follow_kafka():
    assert BufferConfig.max_records(3).buffer_full_strategy.value == "EMIT"
    strict = BufferConfig.max_records(3).shut_down_when_full()
    assert isinstance(strict, Suppressed.StrictBufferConfig)
    assert (strict.record_limit, strict.byte_limit, strict.buffer_full_strategy.value) == (
        3,
        MAX,
        "SHUT_DOWN",
    )
    assert BufferConfig.max_bytes(10).with_max_records(2).emit_early_when_full() == BufferConfig.max_records(
        2
    ).with_max_bytes(10)
    assert BufferConfig.max_records(3).with_no_bound() == unbounded()
    assert not unbounded().with_logging_disabled().is_logging_enabled
    with pytest.raises(TopologyError, match="strict buffer config"):
        until_window_closes(BufferConfig.max_records(3))  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="must not be negative"):
        until_time_limit(-1, unbounded())
    with pytest.raises(TopologyError, match="max records"):
        BufferConfig.max_records(-1)
    from datetime import timedelta

    assert until_time_limit(timedelta(seconds=2), unbounded()).time_to_wait_ms == 2000


def test_until_window_closes_needs_a_windowed_table():
    b = StreamsBuilder()
    table = b.table("input", STR).filter(lambda k, v: True)
    with pytest.raises(TopologyError) as info:
        table.suppress(until_window_closes(unbounded()))
    assert str(info.value) == (
        "Window close time is only defined for windowed computations. "
        "Got [KTABLE-SOURCE-0000000002->KTABLE-FILTER-0000000003]."
    )
    with pytest.raises(TopologyError, match="needs a Suppressed"):
        table.suppress("final")  # type: ignore[arg-type]


# -- SuppressScenarioTest: non-windowed ------------------------------------------------------------------


def value_counts(suppressed: Suppressed, count_materialized=None) -> StreamsBuilder:  # type: ignore[no-untyped-def]
    b = StreamsBuilder()
    counts = (
        b.table("input", STR, Materialized.with_(S, S).with_caching_disabled().with_logging_disabled())
        .group_by(lambda k, v: (v, k), Grouped.with_(S, S))
        .count(materialized=count_materialized)
    )
    counts.suppress(suppressed).to_stream().to("output-suppressed", Produced.with_(S, L))
    counts.to_stream().to("output-raw", Produced.with_(S, L))
    return b


FIRST_RAW = [("v1", 1, 0), ("v1", 0, 1), ("v2", 1, 1), ("v1", 1, 2)]


def test_should_immediately_emit_events_with_zero_emit_after():
    with TopologyTestDriver(value_counts(until_time_limit(0, unbounded())).build(), config()) as d:
        inp = d.create_input_topic("input", S, S)
        inp.pipe_input("k1", "v1", 0)
        inp.pipe_input("k1", "v2", 1)
        inp.pipe_input("k2", "v1", 2)
        assert drain(d, "output-raw") == FIRST_RAW
        assert drain(d, "output-suppressed") == FIRST_RAW
        inp.pipe_input("x", "x", 3)
        assert drain(d, "output-raw") == [("x", 1, 3)]
        assert drain(d, "output-suppressed") == [("x", 1, 3)]
        inp.pipe_input("x", "y", 4)
        assert drain(d, "output-raw") == [("x", 0, 4), ("y", 1, 4)]
        assert drain(d, "output-suppressed") == [("x", 0, 4), ("y", 1, 4)]


def test_should_suppress_intermediate_events_with_time_limit():
    with TopologyTestDriver(value_counts(until_time_limit(2, unbounded())).build(), config()) as d:
        inp = d.create_input_topic("input", S, S)
        inp.pipe_input("k1", "v1", 0)
        inp.pipe_input("k1", "v2", 1)
        inp.pipe_input("k2", "v1", 2)
        assert drain(d, "output-raw") == FIRST_RAW
        assert drain(d, "output-suppressed") == [("v1", 1, 2)]
        # a dummy "tick" record just to advance stream time: now 3, so v2 (buffered at 1) is due
        inp.pipe_input("tick", "tick", 3)
        assert drain(d, "output-raw") == [("tick", 1, 3)]
        assert drain(d, "output-suppressed") == [("v2", 1, 1)]
        inp.pipe_input("tick", "tock", 4)
        assert drain(d, "output-raw") == [("tick", 0, 4), ("tock", 1, 4)]
        # tick is still buffered: it was first inserted at time 3 and it is only time 4
        assert drain(d, "output-suppressed") == []


@pytest.mark.parametrize(
    ("buffer", "app"),
    [
        (BufferConfig.max_records(1).emit_early_when_full(), "suppress"),
        # "this is a bit brittle, but I happen to know that the entries are a little over 100 bytes"
        (BufferConfig.max_bytes(200).emit_early_when_full(), KAFKA_TTD_APP),
    ],
    ids=["record-limit", "bytes-limit"],
)
def test_should_suppress_intermediate_events_with_size_limit(buffer, app):  # type: ignore[no-untyped-def]
    b = value_counts(until_time_limit(MAX, buffer), Materialized.with_(S, L))
    with TopologyTestDriver(b.build(), config(app)) as d:
        inp = d.create_input_topic("input", S, S)
        inp.pipe_input("k1", "v1", 0)
        inp.pipe_input("k1", "v2", 1)
        inp.pipe_input("k2", "v1", 2)
        assert drain(d, "output-raw") == FIRST_RAW
        # consecutive updates to v1 get suppressed into only the latter; the last one waits for eviction
        assert drain(d, "output-suppressed") == [("v1", 0, 1), ("v2", 1, 1)]
        inp.pipe_input("x", "x", 3)
        assert drain(d, "output-raw") == [("x", 1, 3)]
        assert drain(d, "output-suppressed") == [("v1", 1, 2)]


def test_should_shut_down_when_a_strict_buffer_is_full():
    strict = until_time_limit(MAX, BufferConfig.max_records(1).shut_down_when_full()).with_name("s")
    b = value_counts(strict, Materialized.with_(S, L).with_caching_disabled())
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("input", S, S)
        inp.pipe_input("k1", "v1", 0)
        with pytest.raises(ProcessingFailed) as info:
            inp.pipe_input("k2", "v2", 1)
        assert isinstance(info.value.error.exception, SuppressionBufferFullError)
        assert "s buffer exceeded its max capacity. Currently [2/1] records" in str(info.value)


def test_should_work_before_group_by():
    b = StreamsBuilder()
    (
        b.table("topic", STR)
        .suppress(until_time_limit(10, unbounded()))
        .group_by(lambda k, v: (k, v), Grouped.with_(S, S))
        .count()
        .to_stream()
        .to("output", Produced.with_(S, L))
    )
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("topic", S, S)
        inp.pipe_input("A", "a", 0)
        inp.pipe_input("tick", "tick", 10)
        assert drain(d, "output") == [("A", 1, 0)]


def _joined(suppress_left: bool) -> StreamsBuilder:
    b = StreamsBuilder()
    left = b.table("left", STR)
    right = b.table("right", STR)
    if suppress_left:
        left = left.suppress(until_time_limit(10, unbounded()))
    else:
        right = right.suppress(until_time_limit(10, unbounded()))
    left.outer_join(
        right, lambda lv, rv: f"({'null' if lv is None else lv},{'null' if rv is None else rv})"
    ).to_stream().to("output", Produced.with_(S, S))
    return b


def test_should_work_before_join_right():
    with TopologyTestDriver(_joined(suppress_left=False).build(), config()) as d:
        right = d.create_input_topic("right", S, S)
        left = d.create_input_topic("left", S, S)
        right.pipe_input("B", "1", 0)
        right.pipe_input("A", "1", 0)
        assert drain(d, "output", S) == []  # buffered
        right.pipe_input("tick", "tick", 10)
        assert drain(d, "output", S) == [("A", "(null,1)", 0), ("B", "(null,1)", 0)]
        right.pipe_input("A", "2", 11)
        assert drain(d, "output", S) == []  # buffered
        left.pipe_input("A", "a", 12)
        # joins with the previously emitted right side (the prior value of the buffered A)
        assert drain(d, "output", S) == [("A", "(a,1)", 12)]
        left.pipe_input("B", "b", 12)
        # B is no longer buffered: the view reads through to the parent table
        assert drain(d, "output", S) == [("B", "(b,1)", 12)]
        left.pipe_input("A", "b", 13)
        assert drain(d, "output", S) == [("A", "(b,1)", 13)]
        right.pipe_input("tick", "tick1", 21)
        assert drain(d, "output", S) == [("tick", "(null,tick1)", 21), ("A", "(b,2)", 13)]


def test_should_work_before_join_left():
    with TopologyTestDriver(_joined(suppress_left=True).build(), config()) as d:
        right = d.create_input_topic("right", S, S)
        left = d.create_input_topic("left", S, S)
        left.pipe_input("B", "1", 0)
        left.pipe_input("A", "1", 0)
        assert drain(d, "output", S) == []
        left.pipe_input("tick", "tick", 10)
        assert drain(d, "output", S) == [("A", "(1,null)", 0), ("B", "(1,null)", 0)]
        left.pipe_input("A", "2", 11)
        assert drain(d, "output", S) == []
        right.pipe_input("A", "a", 12)
        assert drain(d, "output", S) == [("A", "(1,a)", 12)]
        right.pipe_input("B", "b", 12)
        assert drain(d, "output", S) == [("B", "(1,b)", 12)]
        right.pipe_input("A", "b", 13)
        assert drain(d, "output", S) == [("A", "(1,b)", 13)]
        left.pipe_input("tick", "tick1", 21)
        assert drain(d, "output", S) == [("tick", "(tick1,null)", 21), ("A", "(2,b)", 13)]


def test_emitted_records_keep_their_headers():
    b = StreamsBuilder()
    uncached = Materialized.with_(S, S).with_caching_disabled()  # (the record cache drops headers)
    table = b.table("t", STR, uncached)
    table.suppress(until_time_limit(5, unbounded())).to_stream().to("out", Produced.with_(S, S))
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("t", S, S)
        inp.pipe_input("a", "1", 0, headers=[("h", b"a1")])
        inp.pipe_input("b", "1", 5, headers=[("h", b"b1")])
        records = d.create_output_topic("out", S, S).read_records_to_list()
        assert [(r.key, r.value, r.timestamp, r.headers) for r in records] == [("a", "1", 0, [("h", b"a1")])]


# -- SuppressScenarioTest: windowed (final results) ------------------------------------------------------


def windowed_counts(windows, suppressed: Suppressed):  # type: ignore[no-untyped-def]
    b = StreamsBuilder()
    counts = (
        b.stream("input", STR)
        .group_by(lambda k, v: k, Grouped.with_(S, S))
        .windowed_by(windows)  # type: ignore[attr-defined]
        .count(materialized=Materialized.as_("counts").with_caching_disabled().with_key_serde(S))
    )
    counts.suppress(suppressed).to_stream().map(lambda k, v: (str(k), v)).to(
        "output-suppressed", Produced.with_(S, L)
    )
    counts.to_stream().map(lambda k, v: (str(k), v)).to("output-raw", Produced.with_(S, L))
    return b


def test_should_support_final_results_for_time_windows():
    from edge.dsl.windows import TimeWindows

    b = windowed_counts(TimeWindows.of_size_and_grace(2, 1), until_window_closes(unbounded()))
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("input", S, S)
        for ts in (0, 1, 2, 1, 0, 5, 0):  # the last one is dropped: out of the grace period
            inp.pipe_input("k1", "v1", ts)
        assert drain(d, "output-raw") == [
            ("[k1@0/2]", 1, 0),
            ("[k1@0/2]", 2, 1),
            ("[k1@2/4]", 1, 2),
            ("[k1@0/2]", 3, 1),
            ("[k1@0/2]", 4, 1),
            ("[k1@4/6]", 1, 5),
        ]
        assert drain(d, "output-suppressed") == [("[k1@0/2]", 4, 1), ("[k1@2/4]", 1, 2)]


def test_should_support_final_results_for_time_windows_with_large_jump():
    from edge.dsl.windows import TimeWindows

    b = windowed_counts(TimeWindows.of_size_and_grace(2, 2), until_window_closes(unbounded()))
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("input", S, S)
        for ts in (0, 1, 2, 0, 3, 0, 4, 0, 30):
            inp.pipe_input("k1", "v1", ts)
        assert drain(d, "output-raw") == [
            ("[k1@0/2]", 1, 0),
            ("[k1@0/2]", 2, 1),
            ("[k1@2/4]", 1, 2),
            ("[k1@0/2]", 3, 1),
            ("[k1@2/4]", 2, 3),
            ("[k1@0/2]", 4, 1),
            ("[k1@4/6]", 1, 4),
            ("[k1@30/32]", 1, 30),
        ]
        assert drain(d, "output-suppressed") == [("[k1@0/2]", 4, 1), ("[k1@2/4]", 2, 3), ("[k1@4/6]", 1, 4)]


def test_should_support_final_results_for_sliding_windows():
    from edge.dsl.windows import SlidingWindows

    b = windowed_counts(SlidingWindows.of_time_difference_and_grace(5, 15), until_window_closes(unbounded()))
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("input", S, S)
        for ts in (10, 11, 10, 13, 10, 24, 5, 7, 90):
            inp.pipe_input("k1", "v1", ts)
        raw = sorted(drain(d, "output-raw"), key=lambda r: (r[0], r[2]))
        assert raw == [
            ("[k1@11/16]", 1, 11),
            ("[k1@11/16]", 2, 13),
            ("[k1@12/17]", 1, 13),
            ("[k1@19/24]", 1, 24),
            ("[k1@5/10]", 1, 10),
            ("[k1@5/10]", 2, 10),
            ("[k1@5/10]", 3, 10),
            ("[k1@5/10]", 4, 10),
            ("[k1@5/10]", 5, 10),
            ("[k1@6/11]", 2, 11),
            ("[k1@6/11]", 3, 11),
            ("[k1@6/11]", 4, 11),
            ("[k1@6/11]", 5, 11),
            ("[k1@8/13]", 4, 13),
            ("[k1@8/13]", 5, 13),
            ("[k1@85/90]", 1, 90),
        ]
        assert drain(d, "output-suppressed") == [
            ("[k1@5/10]", 5, 10),
            ("[k1@6/11]", 5, 11),
            ("[k1@8/13]", 5, 13),
            ("[k1@11/16]", 2, 13),
            ("[k1@12/17]", 1, 13),
            ("[k1@19/24]", 1, 24),
        ]


def test_should_support_final_results_for_session_windows():
    from edge.dsl.windows import SessionWindows

    b = windowed_counts(SessionWindows.of_inactivity_gap_with_no_grace(5), until_window_closes(unbounded()))
    with TopologyTestDriver(b.build(), config()) as d:
        inp = d.create_input_topic("input", S, S)
        inp.pipe_input("k1", "v1", 0)
        inp.pipe_input("k1", "v1", 5)
        inp.pipe_input("k1", "v1", 1)  # disordered but admitted: the session is not closed yet
        inp.pipe_input("k2", "v1", 11)  # any key advances stream time
        inp.pipe_input("k1", "v1", 5)  # late for the first session: dropped everywhere
        inp.pipe_input("k1", "v1", 30)
        assert drain(d, "output-raw") == [
            ("[k1@0/0]", 1, 0),
            ("[k1@0/0]", None, 0),
            ("[k1@0/5]", 2, 5),
            ("[k1@0/5]", None, 5),
            ("[k1@0/5]", 3, 5),
            ("[k2@11/11]", 1, 11),
            ("[k1@30/30]", 1, 30),
        ]
        assert drain(d, "output-suppressed") == [("[k1@0/5]", 3, 5), ("[k2@11/11]", 1, 11)]


def test_anonymous_final_suppression_node_names():
    from edge.dsl.windows import SessionWindows

    b = StreamsBuilder()
    (
        b.stream("input", STR)
        .group_by(lambda k, v: k, Grouped.with_(S, S))
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(5, 5))  # type: ignore[attr-defined]
        .count(materialized=Materialized.as_("counts").with_caching_disabled())
        .suppress(until_window_closes(unbounded()))
        .to_stream()
        .map(lambda k, v: (str(k), v))
        .to("output-suppressed", Produced.with_(S, L))
    )
    text = str(b.build().describe())
    # Kafka's ANONYMOUS_FINAL_TOPOLOGY
    assert (
        "    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [counts])\n      --> KTABLE-SUPPRESS-0000000006"
        in text
    )
    assert (
        "    Processor: KTABLE-SUPPRESS-0000000006 (stores: [KTABLE-SUPPRESS-STATE-STORE-0000000007])\n"
        "      --> KTABLE-TOSTREAM-0000000008\n"
        "      <-- KSTREAM-AGGREGATE-0000000002\n"
    ) in text


# -- KTableSuppressProcessorTest ---------------------------------------------------------------------------


class _Context:
    """Kafka's MockInternalNewProcessorContext, reduced to what the processor uses."""

    node_name = "testNode"

    def __init__(self, buffer: SuppressionBuffer) -> None:
        self._buffer = buffer
        self.forwarded: list[Record] = []
        self.topic: str | None = ""
        self.partition = 0
        self.offset = 0
        self.timestamp = 0
        self.headers = None

    def get_state_store(self, name: str) -> SuppressionBuffer:
        return self._buffer

    def forward(self, record: Record, to: str | None = None) -> None:
        self.forwarded.append(record)

    def set_record_metadata(self, topic: str, partition: int, offset: int) -> None:
        self.topic, self.partition, self.offset = topic, partition, offset


def harness(
    key_serde,  # type: ignore[no-untyped-def]
    *,
    time_to_wait_ms: int,
    final_results: bool = False,
    max_records: int = MAX,
    max_bytes: int = MAX,
    emit_when_full: bool = False,
) -> tuple[KTableSuppressProcessor, _Context]:
    buffer = suppression_buffer_builder("test-store", key_serde, L).with_logging_disabled().build()
    buffer.init(StoreContext("test", "0_0", 0, Path(".")))
    processor = KTableSuppressProcessor(
        "test-store",
        time_to_wait_ms=time_to_wait_ms,
        window_end_time=final_results,
        max_records=max_records,
        max_bytes=max_bytes,
        emit_when_full=emit_when_full,
        safe_to_drop_tombstones=final_results,
    )
    context = _Context(buffer)
    processor.init(context)  # type: ignore[arg-type]
    return processor, context


ARBITRARY_CHANGE = Change(7, 14)
TIME_WINDOWED = TimeWindowedSerde(S, 100)


def windowed(key: str, start: int, end: int) -> Windowed:
    return Windowed(key, TimeWindow(start, end))


@pytest.mark.parametrize(
    ("key_serde", "key"),
    [(S, "hey"), (TIME_WINDOWED, windowed("hey", 0, 100))],
    ids=["plain", "windowed"],
)
def test_zero_time_limit_should_immediately_emit(key_serde, key):  # type: ignore[no-untyped-def]
    processor, context = harness(key_serde, time_to_wait_ms=0)
    processor.process(Record(key, ARBITRARY_CHANGE, 5))
    assert context.forwarded == [Record(key, ARBITRARY_CHANGE, 5)]


def test_intermediate_suppression_should_buffer_and_emit_later():
    processor, context = harness(S, time_to_wait_ms=1)
    context.set_record_metadata("topic", 0, 0)
    processor.process(Record("hey", Change(None, 1), 0))
    assert context.forwarded == []
    context.set_record_metadata("topic", 0, 1)
    processor.process(Record("tick", Change(None, None), 1))
    assert context.forwarded == [Record("hey", Change(None, 1), 0)]


def test_final_results_suppression_should_buffer_and_emit_at_grace_expiration():
    processor, context = harness(TimeWindowedSerde(S, 1), time_to_wait_ms=1, final_results=True)
    key = windowed("hey", 99, 100)
    processor.process(Record(key, ARBITRARY_CHANGE, 99))
    assert context.forwarded == []
    # stream time is now 100, but "hey" waits 1 ms after the window *end*
    processor.process(Record(windowed("dummyKey1", 100, 101), ARBITRARY_CHANGE, 100))
    assert context.forwarded == []
    processor.process(Record(windowed("dummyKey2", 101, 102), ARBITRARY_CHANGE, 101))
    assert context.forwarded == [Record(key, ARBITRARY_CHANGE, 99)]


def test_final_results_with_zero_grace_should_still_buffer_until_the_window_end():
    processor, context = harness(TIME_WINDOWED, time_to_wait_ms=0, final_results=True)
    key = windowed("hey", 0, 100)
    processor.process(Record(key, ARBITRARY_CHANGE, 5))  # in the past, but the window end is ahead
    assert context.forwarded == []
    processor.process(Record(windowed("dummyKey", 100, 200), ARBITRARY_CHANGE, 100))
    assert context.forwarded == [Record(key, ARBITRARY_CHANGE, 5)]


def test_final_results_with_zero_grace_at_window_end_should_immediately_emit():
    processor, context = harness(TIME_WINDOWED, time_to_wait_ms=0, final_results=True)
    key = windowed("hey", 0, 100)
    processor.process(Record(key, ARBITRARY_CHANGE, 100))
    assert context.forwarded == [Record(key, ARBITRARY_CHANGE, 100)]


@pytest.mark.parametrize(
    ("key_serde", "key"),
    [
        (TIME_WINDOWED, windowed("hey", 0, 100)),
        (SessionWindowedSerde(S), Windowed("hey", SessionWindow(0, 0))),
    ],
    ids=["time-windows", "session-windows"],
)
def test_final_results_should_drop_tombstones(key_serde, key):  # type: ignore[no-untyped-def]
    processor, context = harness(key_serde, time_to_wait_ms=0, final_results=True)
    processor.process(Record(key, Change(None, 5), 100))
    assert context.forwarded == []
    assert processor.emitted == 0


@pytest.mark.parametrize(
    ("key_serde", "key"),
    [
        (TIME_WINDOWED, windowed("hey", 0, 100)),
        (SessionWindowedSerde(S), Windowed("hey", SessionWindow(0, 0))),
        (S, "hey"),
    ],
    ids=["time-windows", "session-windows", "ktable"],
)
def test_suppress_should_not_drop_tombstones(key_serde, key):  # type: ignore[no-untyped-def]
    processor, context = harness(key_serde, time_to_wait_ms=0, max_records=0, emit_when_full=True)
    headers = [("k", b"v")]
    processor.process(Record(key, Change(None, 5), 100, headers))
    assert context.forwarded == [Record(key, Change(None, 5), 100, headers)]
    assert processor.emitted == 1


@pytest.mark.parametrize(
    "limits", [{"max_records": 1}, {"max_bytes": 60}], ids=["record-capacity", "byte-capacity"]
)
def test_suppress_should_emit_when_over_capacity(limits):  # type: ignore[no-untyped-def]
    processor, context = harness(S, time_to_wait_ms=100 * 86_400_000, emit_when_full=True, **limits)
    processor.process(Record("hey", Change(None, 5), 100))
    processor.process(Record("dummyKey", Change(None, 5), 101))
    assert context.forwarded == [Record("hey", Change(None, 5), 100)]


@pytest.mark.parametrize(
    "limits", [{"max_records": 1}, {"max_bytes": 60}], ids=["record-capacity", "byte-capacity"]
)
def test_suppress_should_shut_down_when_over_capacity(limits):  # type: ignore[no-untyped-def]
    processor, context = harness(S, time_to_wait_ms=100 * 86_400_000, **limits)
    processor.process(Record("hey", Change(None, 5), 100))
    with pytest.raises(SuppressionBufferFullError, match="testNode buffer exceeded its max capacity"):
        processor.process(Record("dummyKey", Change(None, 5), 100))
    assert context.forwarded == []


# -- the buffer: order, prior values, size, changelog ---------------------------------------------------


def logged_buffer(sink: list) -> SuppressionBuffer:  # type: ignore[type-arg]
    class Sink:
        def send(self, topic, partition, key, value, timestamp):  # type: ignore[no-untyped-def]
            sink.append((topic, partition, key, value, timestamp))

    buffer = suppression_buffer_builder("buf", S, L).build()
    buffer.init(
        StoreContext("app", "0_3", 3, Path("."), changelog_topic="app-buf-changelog", changelog_sink=Sink())
    )
    return buffer


def ctx(ts: int, offset: int = 0, headers=None) -> BufferedContext:  # type: ignore[no-untyped-def]
    return BufferedContext(ts, offset, "in", 3, headers)


def test_buffer_evicts_by_time_then_key_bytes_and_keeps_a_key_in_place():
    buffer = logged_buffer([])
    buffer.put(5, "b", Change(1, None), ctx(5))
    buffer.put(5, "a", Change(1, None), ctx(5))
    buffer.put(3, "c", Change(1, None), ctx(3))
    buffer.put(9, "c", Change(2, 1), ctx(9))  # updating c keeps its buffer time 3
    assert buffer.min_timestamp() == 3
    out = []
    buffer.evict_while(lambda: True, lambda e: out.append((e.key, e.value, e.context.timestamp)))
    assert out == [("c", Change(2, 1), 9), ("a", Change(1, None), 5), ("b", Change(1, None), 5)]
    assert buffer.num_records() == 0 and buffer.buffer_size() == 0
    assert buffer.min_timestamp() == MAX


def test_an_updated_key_keeps_its_first_buffer_time_across_a_restore():
    sent: list = []  # type: ignore[type-arg]
    buffer = logged_buffer(sent)
    buffer.put(3, "c", Change(1, None), ctx(3))
    buffer.put(5, "a", Change(1, None), ctx(5))
    buffer.put(9, "c", Change(2, 1), ctx(9))
    buffer.flush()
    restored = suppression_buffer_builder("buf", S, L).build()
    restored.init(StoreContext("app", "0_3", 3, Path(".")))
    restored.restore_batch([(k, v) for _, _, k, v, _ in sent])
    assert restored.min_timestamp() == 3
    out = []
    restored.evict_while(lambda: restored.min_timestamp() <= 4, lambda e: out.append((e.key, e.value)))
    assert out == [("c", Change(2, 1))]
    assert restored.prior_value_for_buffered("a") == (True, None)


def test_prior_value_is_what_downstream_saw_before_the_key_was_buffered():
    buffer = logged_buffer([])
    assert buffer.prior_value_for_buffered("k") == (False, None)
    buffer.put(1, "k", Change(2, 1), ctx(1))
    buffer.put(2, "k", Change(3, 2), ctx(2))
    assert buffer.prior_value_for_buffered("k") == (True, (1, -1))
    buffer.put(1, "new", Change(1, None), ctx(1))
    assert buffer.prior_value_for_buffered("new") == (True, None)


def test_changelog_is_written_on_flush_in_kafkas_version_3_layout():
    sent: list = []  # type: ignore[type-arg]
    buffer = logged_buffer(sent)
    buffer.put(7, "k", Change(2, 1), ctx(9, offset=4, headers=[("h", b"x"), ("n", None)]))
    assert sent == []  # nothing before the commit
    buffer.flush()
    ((topic, partition, key, value, _ts),) = sent
    assert (topic, partition, key) == ("app-buf-changelog", 3, b"k")
    one, two = struct.pack(">q", 1), struct.pack(">q", 2)
    expected = (
        struct.pack(">qq", 9, 4)  # record context: timestamp, offset
        + struct.pack(">i", 2) + b"in"  # topic
        + struct.pack(">i", 3)  # partition
        + struct.pack(">i", 2)  # headers
        + struct.pack(">i", 1) + b"h" + struct.pack(">i", 1) + b"x"
        + struct.pack(">i", 1) + b"n" + struct.pack(">i", -1)
        + struct.pack(">i", 8) + one  # prior value
        + struct.pack(">i", -2)  # old value == prior value
        + struct.pack(">i", 8) + two  # new value
        + struct.pack(">q", 7)  # buffer time
    )  # fmt: skip
    assert value == expected
    # Kafka's size estimate: time + key + prior + new + context (8 + 8 + topic + 4 + headers)
    assert buffer.buffer_size() == 8 + 1 + 8 + 8 + (8 + 8 + 2 + 4 + 2 + 1)
    sent.clear()
    buffer.evict_while(lambda: True, lambda e: None)
    buffer.flush()
    assert [(k, v) for _, _, k, v, _ in sent] == [(b"k", None)]  # evicted: a tombstone
    restored = suppression_buffer_builder("buf", S, L).build()
    restored.init(StoreContext("app", "0_3", 3, Path(".")))
    restored.restore_batch([(b"k", expected)])
    out = []
    restored.evict_while(lambda: True, out.append)
    (eviction,) = out
    assert (eviction.key, eviction.value) == ("k", Change(2, 1))
    assert eviction.context == ctx(9, offset=4, headers=[("h", b"x"), ("n", None)])


def test_restore_applies_tombstones_and_rejects_garbage():
    sent: list = []  # type: ignore[type-arg]
    buffer = logged_buffer(sent)
    buffer.put(1, "a", Change(1, None), ctx(1))
    buffer.put(2, "b", Change(1, None), ctx(2))
    buffer.flush()
    records = [(k, v) for _, _, k, v, _ in sent] + [(b"a", None)]
    restored = suppression_buffer_builder("buf", S, L).build()
    restored.init(StoreContext("app", "0_3", 3, Path(".")))
    restored.restore_batch(records)
    assert restored.approximate_num_entries() == 1
    assert restored.min_timestamp() == 2
    assert restored.buffer_size() == buffer.buffer_size() - (8 + 1 + 8 + 22)
    with pytest.raises(StateStoreError, match="cannot read changelog record"):
        restored.restore_batch([(b"x", b"\x00\x01")])


# -- crash and restart -----------------------------------------------------------------------------------


def rate_limited(caching: bool = False) -> StreamsBuilder:
    b = StreamsBuilder()
    counts = Materialized.as_("counts")
    if not caching:
        counts = counts.with_caching_disabled()
    (
        b.stream("input", STR)
        .group_by_key()
        .count(materialized=counts)
        .suppress(until_time_limit(10, unbounded()).with_name("sup"))
        .to_stream()
        .to("output", Produced.with_(S, L))
    )
    return b


INPUTS = [("a", 0), ("b", 1), ("a", 2), ("c", 10), ("d", 20), ("a", 21), ("e", 40)]


def uninterrupted(caching: bool = False) -> list[tuple]:  # type: ignore[type-arg]
    with TopologyTestDriver(rate_limited(caching).build(), config("app")) as d:
        inp = d.create_input_topic("input", S, S)
        for key, ts in INPUTS:
            inp.pipe_input(key, "v", ts)
        return drain(d, "output")


def raw_records(driver: TopologyTestDriver, topic: str) -> list[tuple[bytes, bytes | None]]:
    out = driver.create_output_topic(topic, Serdes.bytes(), Serdes.bytes())
    return [(r.key, r.value) for r in out.read_records_to_list()]


def test_uninterrupted_rate_limit_output():
    assert uninterrupted() == [("a", 2, 2), ("b", 1, 1), ("c", 1, 10), ("d", 1, 20), ("a", 3, 21)]
    assert uninterrupted(caching=True) == uninterrupted()


def test_restored_buffer_neither_loses_nor_repeats_results():
    """A crash after ``c@10`` (the driver commits after every record): ``a`` was emitted, ``b`` and
    ``c`` are buffered. A fresh app restored from the changelogs emits ``b`` and ``c`` later, and never
    ``a`` again (its eviction tombstone was logged in the commit that emitted it)."""
    with TopologyTestDriver(rate_limited().build(), config("app")) as first:
        inp = first.create_input_topic("input", S, S)
        for key, ts in INPUTS[:4]:
            inp.pipe_input(key, "v", ts)
        before = drain(first, "output")
        buffer_log = raw_records(first, "app-sup-store-changelog")
        counts_log = raw_records(first, "app-counts-changelog")
    assert before == [("a", 2, 2)]
    # the commit after c@10 logged c's new entry and a's eviction (a tombstone)
    assert {k: v is None for k, v in buffer_log[-2:]} == {b"c": False, b"a": True}
    with TopologyTestDriver(rate_limited().build(), config("app")) as second:
        second.get_state_store("counts").restore_batch(counts_log)
        buffer = second.get_state_store("sup-store")
        buffer.restore_batch(buffer_log)
        assert buffer.approximate_num_entries() == 2
        assert buffer.prior_value_for_buffered("b") == (True, None)
        inp = second.create_input_topic("input", S, S)
        for key, ts in INPUTS[4:]:
            inp.pipe_input(key, "v", ts)
        after = drain(second, "output")
    assert before + after == uninterrupted()


def commit_after_four(caching: bool, crash: bool) -> tuple[list[tuple], list[tuple]]:  # type: ignore[type-arg]
    """Commit after the first four records, then process the rest and commit again. With ``crash``,
    two more records are processed and the app dies before committing them: under exactly-once their
    output and changelog records are aborted, and a fresh app restored from the committed changelogs
    resumes from the committed offsets. Returns (committed output of the first commit, output after)."""
    with TopologyTestDriver(rate_limited(caching).build(), config("app"), auto_commit=False) as first:
        inp = first.create_input_topic("input", S, S)
        for key, ts in INPUTS[:4]:
            inp.pipe_input(key, "v", ts)
        first.commit()
        committed = drain(first, "output")
        if not crash:
            for key, ts in INPUTS[4:]:
                inp.pipe_input(key, "v", ts)
            first.commit()
            return committed, drain(first, "output")
        buffer_log = raw_records(first, "app-sup-store-changelog")
        counts_log = raw_records(first, "app-counts-changelog")
        for key, ts in INPUTS[4:6]:
            inp.pipe_input(key, "v", ts)
        # uncached, these emit; the crash aborts them (invisible to read_committed consumers)
        assert drain(first, "output") == ([] if caching else [("b", 1, 1), ("c", 1, 10)])
    with TopologyTestDriver(rate_limited(caching).build(), config("app"), auto_commit=False) as second:
        second.get_state_store("counts").restore_batch(counts_log)
        second.get_state_store("sup-store").restore_batch(buffer_log)
        inp = second.create_input_topic("input", S, S)
        for key, ts in INPUTS[4:]:
            inp.pipe_input(key, "v", ts)
        second.commit()
        return committed, drain(second, "output")


@pytest.mark.parametrize("caching", [False, True], ids=["uncached-count", "cached-count"])
def test_exactly_once_crash_before_commit_redoes_the_uncommitted_work_once(caching):  # type: ignore[no-untyped-def]
    """With a cached count the commit itself feeds the buffer (the cache flush forwards the counts), so
    the buffer must be flushed after the count's cache in the same commit or the entries would be lost.
    """
    reference = commit_after_four(caching, crash=False)
    assert commit_after_four(caching, crash=True) == reference
    if caching:  # flushed counts are buffered at their commit: a (buffer time 2) is not due at 10
        assert reference == ([], [("b", 1, 1), ("a", 2, 2), ("c", 1, 10), ("d", 1, 20), ("a", 3, 21)])
    else:
        assert reference == ([("a", 2, 2)], [("b", 1, 1), ("c", 1, 10), ("d", 1, 20), ("a", 3, 21)])


def test_logging_disabled_buffer_writes_no_changelog():
    b = StreamsBuilder()
    (
        b.stream("input", STR)
        .group_by_key()
        .count(materialized=Materialized.as_("counts").with_caching_disabled())
        .suppress(until_time_limit(10, unbounded().with_logging_disabled()).with_name("sup"))
        .to_stream()
        .to("output", Produced.with_(S, L))
    )
    with TopologyTestDriver(b.build(), config("app")) as d:
        inp = d.create_input_topic("input", S, S)
        inp.pipe_input("a", "v", 0)
        inp.pipe_input("b", "v", 10)
        assert drain(d, "output") == [("a", 1, 0)]
        assert "app-sup-store-changelog" not in d.produced_topics()
        assert d.get_state_store("sup-store").approximate_num_entries() == 1


def test_idle_stream_time_advance_releases_buffered_results():
    """Kafka emits only when a record moves stream time. The idle.stream.time.advance.ms extension moves
    a quiet task's stream time with the wall clock; the suppression listens and evicts then too."""

    def run(idle_ms: int) -> list[tuple]:  # type: ignore[type-arg]
        b = StreamsBuilder()
        table = b.table("t", STR, Materialized.with_(S, S).with_caching_disabled())
        table.suppress(until_time_limit(10, unbounded())).to_stream().to("out", Produced.with_(S, S))
        cfg = StreamsConfig(
            "app", default_key_serde=S, default_value_serde=S, idle_stream_time_advance_ms=idle_ms
        )
        with TopologyTestDriver(b.build(), cfg) as d:
            d.create_input_topic("t", S, S).pipe_input("a", "1", 0)
            d.advance_wall_clock_time(4)
            d.advance_wall_clock_time(20)
            return drain(d, "out", S)

    assert run(-1) == []  # Kafka: no record, no stream time, no emit
    assert run(5) == [("a", "1", 0)]


def test_final_results_with_default_key_serde_wrap_the_windowed_keys():
    """Without Grouped serdes the windowed table's key serde is unknown at build time; the buffer wraps
    the default key serde in the windowed serde matching the upstream windows."""
    from edge.dsl.windows import TimeWindows

    b = StreamsBuilder()
    (
        b.stream("input", STR)
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(2, 0))
        .count()
        .suppress(until_window_closes(unbounded()).with_name("final"))
        .to_stream()
        .map(lambda k, v: (str(k), v))
        .to("out", Produced.with_(S, L))
    )
    with TopologyTestDriver(b.build(), config("app")) as d:
        inp = d.create_input_topic("input", S, S)
        for key, ts in (("k", 0), ("k", 1), ("j", 1), ("k", 2), ("x", 4)):
            inp.pipe_input(key, "v", ts)
        assert drain(d, "out") == [("[j@0/2]", 1, 1), ("[k@0/2]", 2, 1), ("[k@2/4]", 1, 2)]
        buffer = d.get_state_store("final-store")
        assert buffer.approximate_num_entries() == 1
        assert buffer.prior_value_for_buffered(windowed("x", 4, 6)) == (True, None)  # same window, same bytes
