"""The fast paths of the per-record pipeline give exactly what the plain paths give.

``StreamTask.process_batch`` runs the body of ``process`` inlined (and compares topics by value, since
every confluent ``Message`` carries its own topic string); ``count()`` runs ``KStreamCount`` instead of
``KStreamAggregate`` with a count initializer and aggregator; a table node writes a long-valued store
through ``MeteredKeyValueStore.put_timestamped`` (bytes packed without a ``ValueAndTimestamp``). Each is
checked against the plain path on the same input: sink records (bytes, timestamps, order), changelog
records, store contents, committed offsets, stream time, punctuation and the record metadata processors
see -- with the record cache on and off, changelog collapsing on and off, deserialization errors,
negative timestamps, null keys, headers and out-of-order timestamps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder
from edge.errors import SerdeError
from edge.processor import (
    LogAndContinueHandler,
    Processor,
    PunctuationType,
    Record,
    StreamsConfig,
    StreamTask,
    task_id,
)
from edge.serde import Serdes, ValueAndTimestamp, ValueAndTimestampSerde
from edge.state import StoreContext, StoreMetrics
from edge.state.changelogging import ChangeLoggingKeyValueStore
from edge.state.memory import InMemoryKeyValueStore
from edge.state.metered import MeteredKeyValueStore

S, J, L = Serdes.string(), Serdes.json(), Serdes.long()


class ListCollector:
    def __init__(self) -> None:
        self.records: list[tuple[Any, ...]] = []

    def send(self, topic, key, value, timestamp, headers, partition=None) -> None:
        self.records.append((topic, key, value, timestamp, headers, partition))

    def partitions_for(self, topic: str) -> int:
        return 1


class ListChangelog:
    def __init__(self) -> None:
        self.records: list[tuple[Any, ...]] = []

    def send(self, topic, partition, key, value, timestamp) -> None:
        self.records.append((topic, partition, key, value, timestamp))


class Msg:
    """A confluent_kafka ``Message`` stand-in; the topic string is a new object per message, as
    confluent's are."""

    def __init__(self, row: tuple[Any, ...], error: Any = None) -> None:
        self._row = row
        self._error = error

    def error(self) -> Any:
        return self._error

    def topic(self) -> str:
        return "".join(list(self._row[0]))

    def partition(self) -> int:
        return self._row[1]

    def offset(self) -> int:
        return self._row[2]

    def timestamp(self) -> tuple[int, int]:
        return (1, self._row[3])

    def key(self) -> bytes | None:
        return self._row[4]

    def value(self) -> bytes | None:
        return self._row[5]

    def headers(self) -> Any:
        return self._row[6]


class Ticker(Processor):
    """Forwards what its context says about each record, and a tick on every 10 ms of stream time."""

    def init(self, context: Any) -> None:
        super().init(context)
        context.schedule(10, PunctuationType.STREAM_TIME, self.tick)

    def tick(self, ts: int) -> None:
        self.context.forward(Record("tick", str(ts), ts))

    def process(self, record: Record) -> None:
        ctx = self.context
        seen = f"{ctx.topic}:{ctx.partition}:{ctx.offset}:{ctx.timestamp}:{ctx.headers}"
        self.context.forward(Record(record.key, seen, record.timestamp, record.headers))


def topology(caching: bool, count: str = "count") -> Any:
    """The benchmark's count topology (plus a Processor API branch with stream-time punctuation)."""
    b = StreamsBuilder()
    src = b.stream("in", Consumed.with_(S, J))
    m = Materialized.as_("counts")
    if not caching:
        m = m.with_caching_disabled()
    grouped = src.group_by_key()
    if count == "count":
        table = grouped.count(materialized=m)
    else:  # the same count through the generic aggregate
        table = grouped.aggregate(lambda: 0, lambda _k, _v, agg: agg + 1, materialized=m.with_value_serde(L))
    table.to_stream().map_values(lambda key, n: {"user": key, "count": n}, with_key=True).to(
        "out", Produced.with_(S, J)
    )
    src.process(Ticker).to("ticks", Produced.with_(S, S))
    return b.build()


def rows() -> list[tuple[Any, ...]]:
    """Input with every case the per-record path distinguishes."""
    hdr = [("h", b"1")]
    out: list[tuple[Any, ...]] = []
    ts = 1_000
    for i in range(60):
        key = f"user-{i % 7}".encode()
        value = b'{"n": %d}' % i
        headers = hdr if i % 5 == 0 else None
        t = ts + 3 * i
        if i % 11 == 3:
            t -= 40  # out of order: the count keeps the newer timestamp of its previous aggregate
        if i == 17:
            value = b"{not json"  # deserialization error: the continue handler skips it
        if i == 23:
            key = None  # skipped by count, seen by the processor branch
        if i == 31:
            t = -5  # negative timestamp: dropped by the default extractor (continue)
        out.append(("in", 2, 100 + i, t, key, value, headers))
    return out


def run(tmp: Path, mode: str, caching: bool, collapse: bool, count: str = "count") -> dict[str, Any]:
    cfg = StreamsConfig(
        "app",
        state_dir=tmp,
        changelog_collapse=collapse,
        deserialization_exception_handler=LogAndContinueHandler(),
    )
    collector, changelog = ListCollector(), ListChangelog()
    task = StreamTask(
        task_id(0, 2),
        topology(caching, count).build_processor_topology(0, cfg),
        cfg,
        collector,
        changelog,
        partition=2,
    )
    task.initialize()
    commits = []
    data = rows()
    errors: list[Any] = []
    try:
        for start in range(0, len(data), 13):
            chunk = data[start : start + 13]
            if mode == "single":
                for row in chunk:
                    task.process(*row)
                    task.punctuate_stream_time()
            elif mode == "tuples":
                assert task.process_batch(chunk) == len(chunk)
            else:
                msgs = [Msg(row) for row in chunk]
                msgs.insert(1, Msg(("in", 2, -1, 0, None, None, None), error="eof"))
                assert task.process_batch(msgs, on_error=errors.append) == len(chunk)
            commits.append(task.commit_prepare())
        store = task.stores["counts"]
        contents = [(k, tuple(v)) for k, v in store.all()]
        return {
            "sink": collector.records,
            "changelog": changelog.records,
            "commits": commits,
            "store": contents,
            "stream_time": task.stream_time,
            "dropped": task.dropped_records,
            "errors": errors,
        }
    finally:
        task.close()


@pytest.mark.parametrize("caching", [False, True])
@pytest.mark.parametrize("collapse", [False, True])
def test_process_batch_equals_per_record_processing(tmp_path: Path, caching: bool, collapse: bool) -> None:
    single = run(tmp_path / "single", "single", caching, collapse)
    tuples = run(tmp_path / "tuples", "tuples", caching, collapse)
    messages = run(tmp_path / "messages", "messages", caching, collapse)
    assert messages.pop("errors") == ["eof"] * 5
    single.pop("errors")
    tuples.pop("errors")
    assert tuples == single
    assert messages == single
    # the cases really happened: ticks, out-of-order timestamps kept, the skipped records
    assert any(r[0] == "ticks" and r[1] == b"tick" for r in single["sink"])
    assert single["store"] and sum(v[0] for _, v in single["store"]) == 60 - 3  # bad JSON, None key, ts<0
    assert single["commits"][-1] == {("in", 2): 160}


@pytest.mark.parametrize("caching", [False, True])
def test_count_equals_the_generic_aggregate(tmp_path: Path, caching: bool) -> None:
    fast = run(tmp_path / "count", "messages", caching, False, count="count")
    generic = run(tmp_path / "aggregate", "messages", caching, False, count="aggregate")
    assert fast == generic


def _metered(value_serde: Any, metrics: bool) -> tuple[MeteredKeyValueStore, ListChangelog]:
    changelog = ListChangelog()
    store = MeteredKeyValueStore(ChangeLoggingKeyValueStore(InMemoryKeyValueStore("s")), S, value_serde)
    store.init(
        StoreContext(
            application_id="app",
            task_id="0_0",
            partition=0,
            state_dir=Path("."),
            changelog_topic="app-s-changelog",
            changelog_sink=changelog,
            metrics=StoreMetrics() if metrics else None,
        )
    )
    return store, changelog


@pytest.mark.parametrize("metrics", [False, True])
def test_put_timestamped_writes_the_bytes_put_writes(metrics: bool) -> None:
    long_vt = ValueAndTimestampSerde(L)
    fast, fast_log = _metered(long_vt, metrics)
    plain, plain_log = _metered(long_vt, metrics)
    assert ("put_timestamped" in fast.__dict__) is not metrics  # the packed path only when untimed
    for key, value, ts in [("a", 1, 10), ("b", 2**40, 5), ("a", True, 7), ("c", None, 9), ("a", -3, 0)]:
        fast.put_timestamped(key, value, ts)
        plain.put(key, None if value is None else ValueAndTimestamp(value, ts), ts)
    assert fast_log.records == plain_log.records
    assert list(fast.all()) == list(plain.all())
    assert fast.get("a") == ValueAndTimestamp(-3, 0)
    unpacking = fast.__dict__["get"].__func__ is MeteredKeyValueStore._get_long_timestamped
    assert unpacking is not metrics  # the unpacking get too (metrics: the timed generic get)
    for key in ["a", "b", "c", "missing", None]:
        assert fast.get(key) == MeteredKeyValueStore.get(fast, key)  # the generic get, through the serde
    if metrics:
        assert fast.metrics is not None and fast.metrics.put_count == 5
    # out of range / not a number / a None key: the same errors as ``put``
    for key, value in [("a", 2**63), ("a", "x"), (None, 1)]:
        with pytest.raises((SerdeError, Exception)) as fast_err:
            fast.put_timestamped(key, value, 1)
        with pytest.raises((SerdeError, Exception)) as plain_err:
            plain.put(key, ValueAndTimestamp(value, 1), 1)
        assert type(fast_err.value) is type(plain_err.value)
        assert str(fast_err.value) == str(plain_err.value)
    assert fast_log.records == plain_log.records


def test_put_timestamped_of_other_value_serdes_is_put() -> None:
    json_vt = ValueAndTimestampSerde(J)
    fast, fast_log = _metered(json_vt, False)
    plain, plain_log = _metered(json_vt, False)
    assert "put_timestamped" not in fast.__dict__
    fast.put_timestamped("k", {"x": 1}, 4)
    plain.put("k", ValueAndTimestamp({"x": 1}, 4), 4)
    assert fast_log.records == plain_log.records
    assert fast.get("k") == ValueAndTimestamp({"x": 1}, 4)
