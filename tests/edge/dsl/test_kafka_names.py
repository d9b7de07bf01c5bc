"""The names Kafka Streams users look for: ``edge.KafkaStreams``, ``edge.Stores`` with its suppliers
(accepted by ``Materialized.as_`` and choosing the in-memory or RocksDB store), and the uncaught
exception handler's ``StreamThreadExceptionResponse``. No broker: the runtime is constructed, never
started.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

import edge
from edge import (
    Consumed,
    Grouped,
    KafkaStreams,
    Materialized,
    SessionWindows,
    Stores,
    StreamsBuilder,
    StreamThreadExceptionResponse,
    TimeWindows,
)
from edge.errors import TopologyError
from edge.processor import StreamsConfig
from edge.runtime import REPLACE_THREAD, SHUTDOWN_APPLICATION, SHUTDOWN_CLIENT, State, StreamsApp
from edge.runtime.config import StreamsConfig as RuntimeConfig
from edge.serde import Serdes
from edge.state.memory import InMemoryKeyValueStore
from edge.state.rocksdb import RocksDBKeyValueStore
from edge.testing import TopologyTestDriver
from edge.topology import Topology

S, L = Serdes.string(), Serdes.long()
STR = Consumed.with_(S, S)


def _innermost(store):
    while getattr(store, "wrapped", None) is not None:
        store = store.wrapped
    return store


def _config(tmp_path):
    return StreamsConfig("names", default_key_serde=S, default_value_serde=S, state_dir=tmp_path)


# -- Stores -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("supplier", "backing"),
    [
        (Stores.in_memory_key_value_store("counts"), InMemoryKeyValueStore),
        (Stores.persistent_key_value_store("counts"), RocksDBKeyValueStore),
        (Stores.persistent_timestamped_key_value_store("counts"), RocksDBKeyValueStore),
    ],
)
def test_materialized_as_a_key_value_supplier_picks_its_store(supplier, backing, tmp_path):
    b = StreamsBuilder()
    b.stream("in", STR).group_by_key().count(materialized=Materialized.as_(supplier))
    with TopologyTestDriver(b.build(), _config(tmp_path)) as d:
        inp = d.create_input_topic("in", S, S)
        for key in ["a", "b", "a"]:
            inp.pipe_input(key, "v", 1)
        assert dict(d.get_key_value_store("counts").all()) == {"a": 2, "b": 1}
        store = next(t.stores["counts"] for t in d._all_tasks() if "counts" in t.stores)
        assert isinstance(_innermost(store), backing)


@pytest.mark.parametrize("persistent", [True, False])
def test_materialized_as_window_and_session_suppliers(persistent, tmp_path):
    window = (Stores.persistent_window_store if persistent else Stores.in_memory_window_store)(
        "w", timedelta(minutes=10), 10, False
    )
    session = (Stores.persistent_session_store if persistent else Stores.in_memory_session_store)(
        "s", 600_000
    )
    b = StreamsBuilder()
    grouped = b.stream("in", STR).group_by_key(Grouped.with_(S, S))
    grouped.windowed_by(TimeWindows.of_size_with_no_grace(10)).count(materialized=Materialized.as_(window))
    grouped.windowed_by(SessionWindows.of_inactivity_gap_with_no_grace(5)).count(
        materialized=Materialized.as_(session)
    )
    with TopologyTestDriver(b.build(), _config(tmp_path)) as d:
        inp = d.create_input_topic("in", S, S)
        for ts in (1, 2, 12):
            inp.pipe_input("a", "v", ts)
        assert [(w.window.start, c) for w, c in d.get_window_store("w").fetch_all(0, 100)] == [
            (0, 2),
            (10, 1),
        ]
        stores = {n: s for t in d._all_tasks() for n, s in t.stores.items()}
        assert stores["w"].retention_ms == 600_000  # the supplier's retention, not size + grace
        for name in ("w", "s"):
            assert _innermost(stores[name]).persistent is persistent


def test_a_supplier_of_the_wrong_kind_is_an_error():
    b = StreamsBuilder()
    grouped = b.stream("in", STR).group_by_key()
    with pytest.raises(TopologyError, match=r"needs a window store, but .* key-value store supplier"):
        grouped.windowed_by(TimeWindows.of_size_with_no_grace(10)).count(
            materialized=Materialized.as_(Stores.in_memory_key_value_store("kv"))
        )
    with pytest.raises(TopologyError, match=r"needs a key-value store, but .* window store supplier"):
        grouped.count(materialized=Materialized.as_(Stores.in_memory_window_store("w", 100, 10, False)))
    with pytest.raises(TopologyError, match="store name or a Stores supplier"):
        Materialized.as_(42)


def test_supplier_arguments_are_checked_as_kafka_does():
    with pytest.raises(
        TopologyError, match=r"must be no smaller than its window size. Got size=\[20\], retention=\[10\]"
    ):
        Stores.persistent_window_store("w", 10, 20, False)
    with pytest.raises(TopologyError, match="retentionPeriod cannot be negative"):
        Stores.in_memory_session_store("s", -1)
    with pytest.raises(TopologyError, match="non-empty string name"):
        Stores.in_memory_key_value_store("")
    supplier = Stores.in_memory_window_store("w", timedelta(seconds=3), timedelta(seconds=1), True)
    assert (supplier.retention_ms, supplier.window_size_ms, supplier.retain_duplicates) == (3000, 1000, True)
    assert Stores.persistent_key_value_store("kv").metrics_scope() == "rocksdb"


def test_store_builders_for_the_processor_api(tmp_path):
    """``Stores.key_value_store_builder(supplier, k, v)``: logging on, caching off until asked, as Kafka."""
    builder = Stores.key_value_store_builder(Stores.in_memory_key_value_store("kv"), S, L)
    assert not builder.persistent and builder.logging_enabled and not builder.caching_enabled
    assert builder.with_caching_enabled().caching_enabled
    window = Stores.window_store_builder(Stores.persistent_window_store("w", 100, 10, True), S, L)
    assert (window.retention_ms, window.window_size_ms, window.retain_duplicates) == (100, 10, True)
    session = Stores.session_store_builder(Stores.in_memory_session_store("s", 100), S, L)
    assert not session.persistent and session.retention_ms == 100
    with pytest.raises(TopologyError, match="takes a WindowBytesStoreSupplier"):
        Stores.window_store_builder(Stores.in_memory_key_value_store("kv"), S, L)
    t = Topology()
    t.add_source("src", "in", key_serde=S, value_serde=S)
    t.add_state_store(builder)


def test_versioned_supplier_still_goes_through_stores():
    m = Materialized.as_(Stores.persistent_versioned_key_value_store("v", 1000))
    assert m.history_retention_ms == 1000 and m.store_name == "v"


# -- KafkaStreams and the exception handler enum ----------------------------------------------------------
def _streams(tmp_path) -> KafkaStreams:
    b = StreamsBuilder()
    b.stream("in", STR).to("out")
    return KafkaStreams(
        b.build(), {"application.id": "names", "bootstrap.servers": "localhost:1", "state.dir": str(tmp_path)}
    )


def test_kafka_streams_is_the_runtime_under_kafkas_name(tmp_path):
    streams = _streams(tmp_path)
    assert isinstance(streams, StreamsApp)
    assert edge.KafkaStreams is KafkaStreams
    assert streams.state() is KafkaStreams.State.CREATED is State.CREATED
    assert streams.state is State.CREATED  # the property StreamsApp code reads keeps working
    assert streams.close(1)  # never started: closing is immediate, as Kafka's


def test_stream_thread_exception_response_is_kafkas_enum_and_the_settings_strings():
    R = StreamThreadExceptionResponse
    assert [m.name for m in R] == ["REPLACE_THREAD", "SHUTDOWN_CLIENT", "SHUTDOWN_APPLICATION"]
    assert (R.REPLACE_THREAD, R.SHUTDOWN_CLIENT, R.SHUTDOWN_APPLICATION) == (
        REPLACE_THREAD,
        SHUTDOWN_CLIENT,
        SHUTDOWN_APPLICATION,
    )
    assert str(R.REPLACE_THREAD) == "replace_thread"
    config = RuntimeConfig.from_mapping(
        {
            "application.id": "a",
            "bootstrap.servers": "localhost:1",
            "uncaught.exception.response": R.REPLACE_THREAD,
        }
    )
    assert config.uncaught_exception_response == REPLACE_THREAD


def test_set_uncaught_exception_handler_takes_a_callable_or_a_handle_object(tmp_path):
    class Handler:  # Kafka's StreamsUncaughtExceptionHandler
        def handle(self, exc: BaseException) -> StreamThreadExceptionResponse:
            return StreamThreadExceptionResponse.SHUTDOWN_APPLICATION

    streams = _streams(tmp_path)
    streams.set_uncaught_exception_handler(Handler())
    assert streams._uncaught_handler(ValueError()) == SHUTDOWN_APPLICATION
    streams.set_uncaught_exception_handler(lambda exc: StreamThreadExceptionResponse.REPLACE_THREAD)
    assert streams._uncaught_handler(ValueError()) is StreamThreadExceptionResponse.REPLACE_THREAD
    with pytest.raises(TypeError, match="callable or an object with handle"):
        streams.set_uncaught_exception_handler(StreamThreadExceptionResponse.SHUTDOWN_CLIENT)
