"""StreamTask driven directly, the way the Kafka runtime will: raw records in, bytes out through a
RecordCollector, store writes through a ChangelogSink, commit_prepare() before committing offsets."""

import pytest

from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder
from edge.processor import StreamsConfig, StreamTask, task_id
from edge.processor.partitioner import default_partition
from edge.serde import Serdes

S, L = Serdes.string(), Serdes.long()


class ListCollector:
    def __init__(self, partitions=4):
        self.records = []
        self.partitions = partitions

    def send(self, topic, key, value, timestamp, headers, partition=None):
        self.records.append((topic, key, value, timestamp, partition))

    def partitions_for(self, topic):
        return self.partitions


class ListChangelog:
    def __init__(self):
        self.records = []

    def send(self, topic, partition, key, value, timestamp):
        self.records.append((topic, partition, key, value, timestamp))


@pytest.fixture
def config(tmp_path):
    return StreamsConfig("app", default_key_serde=S, default_value_serde=S, state_dir=tmp_path)


def count_topology():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count(
        materialized=Materialized.as_("counts")
    ).to_stream().to("out", Produced.with_(S, L))
    return b.build()


def test_task_processes_raw_records_and_flushes_on_commit(config):
    topology = count_topology()
    assert topology.source_topics("app") == {0: ["in"]}
    collector, changelog = ListCollector(), ListChangelog()
    task = StreamTask(
        task_id(0, 3), topology.build_processor_topology(0, config), config, collector, changelog, partition=3
    )
    task.initialize()
    try:
        assert task.source_topics == ["in"]
        for offset, key in enumerate([b"a", b"b", b"a"]):
            task.process("in", 3, 100 + offset, 1000 + offset, key, b"x", None)
        assert collector.records == []  # the record cache holds the updates until commit
        offsets = task.commit_prepare()
        assert offsets == {("in", 3): 103}
        assert sorted(collector.records) == [
            ("out", b"a", (2).to_bytes(8, "big"), 1002, None),
            ("out", b"b", (1).to_bytes(8, "big"), 1001, None),
        ]
        assert {(t, p, k) for t, p, k, _, _ in changelog.records} == {
            ("app-counts-changelog", 3, b"a"),
            ("app-counts-changelog", 3, b"b"),
        }
        assert task.stores["counts"].get("a").value == 2
    finally:
        task.close()
    assert (config.state_dir / "app" / "0_3").exists()


def test_sink_with_custom_partitioner_asks_collector_for_partition_count(config):
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).to(
        "out",
        Produced.with_(S, S).with_partitioner(
            lambda topic, key, value, n: default_partition(key.encode(), n)
        ),
    )
    collector = ListCollector(partitions=7)
    task = StreamTask("0_0", b.build().build_processor_topology(0, config), config, collector)
    task.initialize()
    task.process("in", 0, 0, 5, b"foobar", b"v", None)
    task.close()
    assert collector.records == [("out", b"foobar", b"v", 5, default_partition(b"foobar", 7))]


def test_default_sink_leaves_partitioning_to_the_collector(config):
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).to("out")
    collector = ListCollector()
    task = StreamTask("0_0", b.build().build_processor_topology(0, config), config, collector)
    task.initialize()
    task.process("in", 0, 0, 5, b"k", b"v", [("h", b"1")])
    task.close()
    assert collector.records == [("out", b"k", b"v", 5, None)]


class _Msg:
    """Stand-in for a confluent_kafka Message (the accessors process_batch uses)."""

    def __init__(self, topic, partition, offset, timestamp, key, value, error=None):
        self._t = (topic, partition, offset, timestamp, key, value)
        self._error = error

    def error(self):
        return self._error

    def topic(self):
        return self._t[0]

    def partition(self):
        return self._t[1]

    def offset(self):
        return self._t[2]

    def timestamp(self):
        return (1, self._t[3])

    def key(self):
        return self._t[4]

    def value(self):
        return self._t[5]

    def headers(self):
        return None


def _uncached_count_topology():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count(
        materialized=Materialized.as_("counts").with_caching_disabled()
    ).to_stream().to("out", Produced.with_(S, L))
    return b.build()


@pytest.mark.parametrize("kind", ["tuple", "message"])
def test_process_batch_matches_process(config, tmp_path, kind):
    keys = [b"a", b"b", b"a", b"c", b"a", b"b"]
    results = []
    for mode in ("single", "batch"):
        cfg = StreamsConfig("app", state_dir=tmp_path / mode)
        collector, changelog = ListCollector(), ListChangelog()
        task = StreamTask(
            task_id(0, 1),
            _uncached_count_topology().build_processor_topology(0, cfg),
            cfg,
            collector,
            changelog,
            partition=1,
        )
        task.initialize()
        rows = [("in", 1, 10 + i, 500 + i, k, b"x", None) for i, k in enumerate(keys)]
        if mode == "single":
            for row in rows:
                task.process(*row)
                task.punctuate_stream_time()
        elif kind == "tuple":
            assert task.process_batch(rows) == len(rows)
        else:
            errors = []
            msgs = [_Msg(*row[:6]) for row in rows]
            msgs.insert(2, _Msg("in", 1, -1, 0, None, None, error="boom"))
            assert task.process_batch(msgs, on_error=errors.append) == len(rows)
            assert errors == ["boom"]
        results.append((collector.records, changelog.records, task.commit_prepare(), task.stream_time))
        task.close()
    assert results[0] == results[1]
    assert [r[2] for r in results[1][0]][-1] == (2).to_bytes(8, "big")


@pytest.mark.parametrize("caching", [True, False])
def test_dirty_close_drops_unflushed_cache_and_changelog(tmp_path, caching):
    cfg = StreamsConfig("app", state_dir=tmp_path, changelog_collapse=True)
    b = StreamsBuilder()
    m = Materialized.as_("counts") if caching else Materialized.as_("counts").with_caching_disabled()
    b.stream("in", Consumed.with_(S, S)).group_by_key().count(materialized=m).to_stream().to(
        "out", Produced.with_(S, L)
    )
    topo = b.build()
    collector, changelog = ListCollector(), ListChangelog()
    task = StreamTask(
        task_id(0, 0), topo.build_processor_topology(0, cfg), cfg, collector, changelog, partition=0
    )
    task.initialize()
    task.process("in", 0, 0, 100, b"a", b"x", None)
    task.commit_prepare()
    sent_out, sent_log = len(collector.records), len(changelog.records)
    assert sent_log == 1
    task.process("in", 0, 1, 101, b"a", b"x", None)
    task.process("in", 0, 2, 102, b"b", b"x", None)
    task.close(dirty=True)
    assert len(changelog.records) == sent_log  # the aborted work's changelog records were dropped
    assert len(collector.records) == sent_out + (0 if caching else 2)  # uncached outputs went already
    # reopened: the committed state only
    task = StreamTask(
        task_id(0, 0),
        topo.build_processor_topology(0, cfg),
        cfg,
        ListCollector(),
        ListChangelog(),
        partition=0,
    )
    task.initialize()
    try:
        if caching:
            assert task.stores["counts"].get("a").value == 1
            assert task.stores["counts"].get("b") is None
    finally:
        task.close()
