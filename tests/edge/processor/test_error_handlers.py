"""Deserialization and processing errors: fail (default), log-and-continue, dead-letter topic."""

import pytest

from edge.dsl import Consumed, StreamsBuilder
from edge.processor import (
    DeadLetterQueueHandler,
    LogAndContinueHandler,
    ProcessingFailed,
    StreamsConfig,
)
from edge.processor.collector import CollectorUnusableError
from edge.processor.handlers import (
    HEADER_EXCEPTION,
    HEADER_MESSAGE,
    HEADER_OFFSET,
    HEADER_PARTITION,
    HEADER_TIMESTAMP,
    HEADER_TOPIC,
)
from edge.serde import Serdes
from edge.testing import TopologyTestDriver

S, B, L = Serdes.string(), Serdes.bytes(), Serdes.long()


def topology():
    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, L)).map_values(lambda v: 100 // v).to("out")
    return b.build()


def driver(**handlers):
    return TopologyTestDriver(
        topology(), StreamsConfig("errs", default_key_serde=S, default_value_serde=L, **handlers)
    )


def test_deserialization_error_fails_by_default_with_position():
    with driver() as d:
        tin = d.create_input_topic("in", S, B)
        with pytest.raises(ProcessingFailed) as info:
            tin.pipe_input("k", b"not-8-bytes")
    err = info.value
    assert (err.topic, err.partition, err.offset) == ("in", 0, 0)
    assert "deserialization" in str(err) and "handler" in str(err)


def test_processing_error_fails_by_default_and_names_the_processor():
    with driver() as d, pytest.raises(ProcessingFailed, match="ZeroDivisionError") as info:
        d.create_input_topic("in", S, L).pipe_input("k", 0)
    assert info.value.error.node_name == "KSTREAM-MAPVALUES-0000000001"
    assert "node='KSTREAM-MAPVALUES-0000000001'" in str(info.value)


def test_log_and_continue_skips_bad_records():
    handler = LogAndContinueHandler()
    with driver(deserialization_exception_handler=handler, processing_exception_handler=handler) as d:
        raw = d.create_input_topic("in", S, B)
        good = d.create_input_topic("in", S, L)
        raw.pipe_input("k", b"bad")
        good.pipe_input("k", 0)
        good.pipe_input("k", 4)
        assert d.create_output_topic("out", S, L).read_values_to_list() == [25]


def test_dead_letter_topic_gets_original_bytes_and_error_headers():
    dlq = DeadLetterQueueHandler("errs-dlq")
    with driver(deserialization_exception_handler=dlq, processing_exception_handler=dlq) as d:
        raw = d.create_input_topic("in", S, B)
        good = d.create_input_topic("in", S, L)
        raw.pipe_input("k1", b"bad", 7, [("trace", b"t")])
        good.pipe_input("k2", 0, 8)
        good.pipe_input("k3", 5, 9)
        assert d.create_output_topic("out", S, L).read_values_to_list() == [20]
        letters = d.create_output_topic("errs-dlq", B, B).read_records_to_list()
    assert [(r.key, r.value, r.timestamp) for r in letters] == [
        (b"k1", b"bad", 7),
        (b"k2", (0).to_bytes(8, "big"), 8),
    ]
    first, second = (dict(r.headers) for r in letters)
    assert first["trace"] == b"t"
    assert first[HEADER_EXCEPTION] == b"edge.errors.SerdeError"
    assert first[HEADER_TOPIC] == b"in" and first[HEADER_PARTITION] == b"0" and first[HEADER_OFFSET] == b"0"
    assert first[HEADER_TIMESTAMP] == b"7"
    assert second[HEADER_EXCEPTION] == b"builtins.ZeroDivisionError"
    assert b"division" in second[HEADER_MESSAGE] and second[HEADER_OFFSET] == b"1"


def test_a_collector_that_can_take_no_more_records_is_not_the_records_fault():
    """Kafka Streams' ProcessorNode rethrows the RecordCollector's TaskMigratedException instead of handing
    it to the ProcessingExceptionHandler: a producer whose transaction failed must reach the stream thread
    (task migration), not be logged and skipped record by record."""

    def refuse(v):
        raise CollectorUnusableError("the transactional producer refused a record: its transaction failed")

    b = StreamsBuilder()
    b.stream("in", Consumed.with_(S, L)).map_values(refuse).to("out")
    handler = LogAndContinueHandler()
    config = StreamsConfig(
        "errs", default_key_serde=S, default_value_serde=L, processing_exception_handler=handler
    )
    with TopologyTestDriver(b.build(), config) as d, pytest.raises(CollectorUnusableError):
        d.create_input_topic("in", S, L).pipe_input("k", 1)
