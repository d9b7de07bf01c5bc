"""Per-record warnings are summarised, the dropped-records metric stays exact.

A late batch (``streamhouse generate`` after the demo) used to print one ``Skipping record for expired
window`` line per record -- 9,316 of them -- and each bad record under log-and-continue a ~300-character
warning. Now the first record of a cause is logged as Kafka logs it, then at most one line per cause per
interval with the count and the latest example, and the task's ``dropped_records`` counts every record.
"""

from __future__ import annotations

import logging

import pytest

from edge.dsl import Consumed, Grouped, Materialized, SessionWindows, StreamsBuilder, TimeWindows
from edge.processor import LogAndContinueHandler, StreamsConfig
from edge.processor.record_warnings import RECORD_WARNINGS, RecordWarnings
from edge.serde import Serdes
from edge.testing import TopologyTestDriver

S, L, B = Serdes.string(), Serdes.long(), Serdes.bytes()
LATE = 5_000


class Clock:
    """The summariser's clock, moved by the test (records arrive faster than any interval)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    RECORD_WARNINGS.reset()
    monkeypatch.setattr(RECORD_WARNINGS, "_clock", clock)
    yield clock
    RECORD_WARNINGS.reset()


def _windowed(kind: str):
    b = StreamsBuilder()
    grouped = b.stream("clicks", Consumed.with_(S, S)).group_by_key(Grouped.with_(S, S))
    if kind == "time":
        windowed = grouped.windowed_by(TimeWindows.of_size_and_grace(10_000, 0))
    else:
        windowed = grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(1_000, 0))
    windowed.count(materialized=Materialized.with_(S, L))
    return b.build()


def _dropped(driver: TopologyTestDriver) -> int:
    return sum(t.dropped_records for t in driver._tasks)


@pytest.mark.parametrize("kind", ["time", "session"])
def test_a_late_batch_is_one_line_per_interval_and_every_record_is_counted(
    kind: str, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="edge.processor.ops.windowed")
    with TopologyTestDriver(_windowed(kind), StreamsConfig("late")) as d:
        tin = d.create_input_topic("clicks", S, S)
        tin.pipe_input("u", "now", 100_000)  # stream time 100 s: every window before it has closed
        for i in range(LATE):
            tin.pipe_input(f"u{i % 7}", "late", i)  # 5,000 records for expired windows
            if i % 400 == 399:
                clock.now += 1.0  # 400 records a second
        assert _dropped(d) == LATE
    lines = [r.getMessage() for r in caplog.records if "expired window" in r.getMessage()]
    # the first as Kafka logs it, one summary once 10 s have passed, the rest when the task closes
    assert len(lines) == 3, lines
    assert lines[0].startswith(
        "Skipping record for expired window. topic=[clicks] partition=[0] offset=[1] timestamp=[0] window=["
    )
    assert lines[1].startswith(
        "Skipping record for expired window: 4,000 more records in the last 10 s; the latest: "
        "Skipping record for expired window. topic=[clicks] partition=[0] offset=[4001] timestamp=[4000]"
    )
    assert lines[2].startswith(
        "Skipping record for expired window: 999 more records in the last 2 s; the latest: "
        "Skipping record for expired window. topic=[clicks] partition=[0] offset=[5000] timestamp=[4999]"
    )
    assert RECORD_WARNINGS.totals["Skipping record for expired window"] == LATE


def test_deserialization_errors_are_one_short_line_then_summarised_and_all_counted(
    clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    b = StreamsBuilder()
    b.stream("orders", Consumed.with_(S, L)).to("out")
    config = StreamsConfig(
        "bad",
        default_key_serde=S,
        default_value_serde=L,
        deserialization_exception_handler=LogAndContinueHandler(),
    )
    caplog.set_level(logging.WARNING, logger="edge.processor.handlers")
    payload = b'{"order_id": "o-1", "note": "' + b"x" * 400 + b'"}'  # a long undecodable record
    with TopologyTestDriver(b.build(), config) as d:
        raw = d.create_input_topic("orders", S, B)
        for _ in range(1_000):
            raw.pipe_input("k", payload)
        clock.now += 10.0
        raw.pipe_input("k", payload)
        assert _dropped(d) == 1_001
        assert d.create_output_topic("out", S, L).read_values_to_list() == []
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2, lines
    first, summary = lines
    assert first.startswith(
        "Skipping record due to deserialization error. topic=[orders] partition=[0] offset=[0]"
    )
    # one line: Kafka's message, then what could not be read and why (no advice), ~210 chars, not 300+
    assert first.endswith(
        ': cannot deserialize 431 bytes (b\'{"order_id": "o-1", "note": "xxx\'...) with the '
        "long serde: unpack requires a buffer of 8 bytes"
    ), first
    assert "\n" not in first and len(first) < 220, len(first)
    assert summary.startswith(
        "Skipping record due to deserialization error: 1,000 more records in the last 10 s;"
    )
    assert "offset=[1000]" in summary and len(summary) < 400


def test_a_cause_quiet_for_an_interval_starts_over_and_causes_are_apart(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    warnings = RecordWarnings(10.0, clock=lambda: now[0])
    log = logging.getLogger("test.records")
    with caplog.at_level(logging.WARNING, logger="test.records"):
        for i in range(3):
            warnings.warn(log, "late", "late record %d", i)
            warnings.warn(log, "null key", "null key %d", i)
        warnings.report_due()  # nothing due yet
        now[0] = 11.0
        warnings.report_due()  # both floods stopped: their counts
        now[0] = 30.0
        warnings.warn(log, "late", "late record %d", 9)  # quiet for 19 s: a first record again
        warnings.report_pending()  # nothing counted since
    assert caplog.messages == [
        "late record 0",
        "null key 0",
        "late: 2 more records in the last 11 s; the latest: late record 2",
        "null key: 2 more records in the last 11 s; the latest: null key 2",
        "late record 9",
    ]
    assert warnings.totals == {"late": 4, "null key": 3}
