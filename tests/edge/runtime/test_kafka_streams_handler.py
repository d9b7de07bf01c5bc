"""``KafkaStreams`` against a broker: an uncaught-exception handler written as in Java (an object with
``handle(exc)``) answering Kafka's enum drives the runtime as the setting's strings do."""

from __future__ import annotations

from pathlib import Path

from edge import KafkaStreams, StreamThreadExceptionResponse
from edge.processor.api import Processor
from edge.processor.record import Record
from edge.serde import Serdes
from edge.topology import Topology
from tests.edge.runtime.harness import produce


class _Exploding(Processor):
    def process(self, record: Record) -> None:
        if record.value == "boom":
            raise ValueError("boom")
        self.context.forward(record)


class _Handler:
    """Kafka's ``StreamsUncaughtExceptionHandler``."""

    def __init__(self) -> None:
        self.seen: list[BaseException] = []

    def handle(self, exc: BaseException) -> StreamThreadExceptionResponse:
        self.seen.append(exc)
        return StreamThreadExceptionResponse.SHUTDOWN_CLIENT


def test_handler_object_answering_the_enum_shuts_the_client_down(
    kafka_broker, make_topic, unique_name, tmp_path: Path
) -> None:
    src, out = make_topic("in", 1), make_topic("out", 1)
    t = Topology()
    t.add_source("src", src, key_serde=Serdes.string(), value_serde=Serdes.string())
    t.add_processor("p", _Exploding, "src")
    t.add_sink("sink", out, "p", key_serde=Serdes.string(), value_serde=Serdes.string())
    streams = KafkaStreams(
        t,
        {
            "application.id": unique_name("app"),
            "bootstrap.servers": kafka_broker.bootstrap_servers,
            "broker.profile": kafka_broker.profile.value,
            "state.dir": str(tmp_path),
            "commit.interval.ms": 100,
        },
    )
    handler = _Handler()
    streams.set_uncaught_exception_handler(handler)
    streams.start()
    try:
        assert streams.wait_until_running(30)
        assert streams.state() is KafkaStreams.State.RUNNING
        produce(kafka_broker, src, [("a", b"ok"), ("b", b"boom")])
        assert streams.wait(30) is KafkaStreams.State.ERROR
        assert streams.state() is KafkaStreams.State.ERROR
        assert len(handler.seen) == 1 and "boom" in str(handler.seen[0])
    finally:
        streams.close(20)
