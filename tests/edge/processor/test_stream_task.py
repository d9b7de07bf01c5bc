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
