"""Port of Kafka Streams' ``SmokeTestClient`` (4.1.1) to the edge DSL, driven by Kafka's ``SmokeTestDriver``.

    python -m examples.system_tests.smoke_client <streams.properties> [name]

is ``StreamsSmokeTest <props> process``: it prints the same start banner and lifecycle lines
(``StreamsTest instance started``, ``<name> <instant>: REBALANCING -> RUNNING``,
``<name>: SMOKE-TEST-CLIENT-STARTED``, ``processed N records from topic=data``,
``<name>: SMOKE-TEST-CLIENT-CLOSED`` on SIGTERM) and runs the same topology: input ``data``
(String keys, Integer values); outputs ``echo``, ``min``/``max``/``sum``/``cnt`` of windowed
aggregations (stores ``uwin-min``, ``uwin-max``, ``win-sum``, ``uwin-cnt``), their raw and suppressed
windowed streams (``min-raw``, ``min-suppressed``, ``sws-raw``, ``sws-suppressed``), table-table joins
(``dif`` = max - min, ``avg`` = sum / cnt over the tables ``minStoreName``, ``maxStoreName``,
``cntStoreName``) and a count-by-count through a repartition topic (``tagg``, store ``cntByCnt``).
The driver then reads every output topic and checks each key's final value against the input it sent.

``topology(name)`` is also usable alone (``streamhouse edge run examples.system_tests.smoke_client:app``
with ``application.id=SmokeTest``); ``STREAMHOUSE_SYSTEM_TEST_SABOTAGE=sum`` starts each ``sum`` at -1
(see ``common.SABOTAGE_ENV``).
"""

from __future__ import annotations

import sys
import tempfile
import threading
import uuid
from datetime import timedelta
from typing import Any

from edge import (
    Consumed,
    Grouped,
    KafkaStreams,
    KStream,
    KTable,
    Materialized,
    Produced,
    Serdes,
    Stores,
    StreamsBuilder,
    StreamThreadExceptionResponse,
    Suppressed,
    TimeWindows,
    Windowed,
)
from edge.dsl import BufferConfig
from edge.topology import Topology
from examples.system_tests.common import (
    END,
    INT_MIN,
    instant,
    java_props,
    load_properties,
    print_processor,
    sabotaged,
    say,
    setup_process,
    wait_for_sigterm,
)

STRING = Serdes.string()
INT = Serdes.int()
LONG = Serdes.long()
DOUBLE = Serdes.double()


def _unwindow(key: Windowed[str], _value: Any) -> str:
    return key.key


def _not_flush(key: Any, _value: Any) -> bool:
    return key == "flush"


def _streamify(windowed_table: KTable, topic: str) -> None:
    """A windowed table's updates to ``topic`` keyed by ``Windowed.toString()`` (``[key@start/end]``)."""
    (
        windowed_table.to_stream()
        .filter_not(lambda k, _v: k.key == "flush")
        .map(lambda k, v: (str(k), v))
        .to(topic, Produced.with_(STRING, INT))
    )


def topology(name: str = "") -> Topology:
    """``SmokeTestClient.getTopology()``: same topics, stores, windows and outputs."""
    builder = StreamsBuilder()
    source: KStream = builder.stream("data", Consumed.with_(STRING, INT))
    source.filter_not(_not_flush).to("echo", Produced.with_(STRING, INT))
    data = source.filter(lambda _k, v: v is None or v != END)
    data.process(print_processor("data", name))

    # min
    grouped = data.group_by_key(Grouped.with_(STRING, INT))
    min_aggregation = grouped.windowed_by(
        TimeWindows.of_size_and_grace(timedelta(days=1), timedelta(minutes=1))
    ).aggregate(
        lambda: END,
        lambda _k, value, aggregate: value if value < aggregate else aggregate,
        materialized=Materialized.as_("uwin-min").with_value_serde(INT).with_retention(timedelta(hours=25)),
    )
    _streamify(min_aggregation, "min-raw")
    _streamify(
        min_aggregation.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())), "min-suppressed"
    )
    min_aggregation.to_stream(_unwindow).filter_not(_not_flush).to("min", Produced.with_(STRING, INT))

    small_window_sum = grouped.windowed_by(
        TimeWindows.of_size_and_grace(timedelta(seconds=2), timedelta(seconds=30)).advance_by(
            timedelta(seconds=1)
        )
    ).reduce(lambda left, right: left + right)
    _streamify(small_window_sum, "sws-raw")
    _streamify(
        small_window_sum.suppress(Suppressed.until_window_closes(BufferConfig.unbounded())), "sws-suppressed"
    )

    min_table = builder.table("min", Consumed.with_(STRING, INT), Materialized.as_("minStoreName"))
    min_table.to_stream().process(print_processor("min", name))

    # max
    (
        grouped.windowed_by(TimeWindows.of_size_with_no_grace(timedelta(days=2)))
        .aggregate(
            lambda: INT_MIN,
            lambda _k, value, aggregate: value if value > aggregate else aggregate,
            materialized=Materialized.as_("uwin-max").with_value_serde(INT),
        )
        .to_stream(_unwindow)
        .filter_not(_not_flush)
        .to("max", Produced.with_(STRING, INT))
    )
    max_table = builder.table("max", Consumed.with_(STRING, INT), Materialized.as_("maxStoreName"))
    max_table.to_stream().process(print_processor("max", name))

    # sum (the sabotage knob: every key's sum one less than the truth)
    sum_start = -1 if sabotaged("sum") else 0
    (
        grouped.windowed_by(TimeWindows.of_size_with_no_grace(timedelta(days=2)))
        .aggregate(
            lambda: sum_start,
            lambda _k, value, aggregate: value + aggregate,
            materialized=Materialized.as_("win-sum").with_value_serde(LONG),
        )
        .to_stream(_unwindow)
        .filter_not(_not_flush)
        .to("sum", Produced.with_(STRING, LONG))
    )
    sum_table = builder.table("sum", Consumed.with_(STRING, LONG))
    sum_table.to_stream().process(print_processor("sum", name))

    # cnt
    (
        grouped.windowed_by(TimeWindows.of_size_with_no_grace(timedelta(days=2)))
        .count(materialized=Materialized.as_("uwin-cnt"))
        .to_stream(_unwindow)
        .filter_not(_not_flush)
        .to("cnt", Produced.with_(STRING, LONG))
    )
    cnt_table = builder.table("cnt", Consumed.with_(STRING, LONG), Materialized.as_("cntStoreName"))
    cnt_table.to_stream().process(print_processor("cnt", name))

    # dif
    (
        max_table.join(min_table, lambda value1, value2: value1 - value2)
        .to_stream()
        .filter_not(_not_flush)
        .to("dif", Produced.with_(STRING, INT))
    )

    # avg
    (
        sum_table.join(cnt_table, lambda value1, value2: float(value1) / float(value2))
        .to_stream()
        .filter_not(_not_flush)
        .to("avg", Produced.with_(STRING, DOUBLE))
    )

    # test repartition: how many keys have each count
    (
        cnt_table.group_by(
            lambda _k, value: (None if value is None else str(value), 1), Grouped.with_(STRING, LONG)
        )
        .aggregate(
            lambda: 0,
            lambda _k, value, aggregate: aggregate + value,
            lambda _k, value, aggregate: aggregate - value,
            materialized=Materialized.as_(Stores.in_memory_key_value_store("cntByCnt"))
            .with_key_serde(STRING)
            .with_value_serde(LONG),
        )
        .to_stream()
        .to("tagg", Produced.with_(STRING, LONG))
    )
    return builder.build()


def app() -> Topology:
    """For ``streamhouse edge run examples.system_tests.smoke_client:app``."""
    return topology()


def streams_config(props: dict[str, str], name: str) -> dict[str, Any]:
    """``SmokeTestClient.getStreamsConfig``: the client's defaults, then the driver's properties."""
    full: dict[str, Any] = {
        "application.id": "SmokeTest",
        "client.id": f"SmokeTest-{name}",
        "processing.guarantee": "exactly_once_v2",
        "windowstore.changelog.additional.retention.ms": str(int(timedelta(days=3).total_seconds() * 1000)),
    }
    full.update(props)
    if "state.dir" not in full:  # Java's TestUtils.tempDirectory(); the services always give one
        full["state.dir"] = tempfile.mkdtemp(prefix="smoke-test-")
    return full


class SmokeTestClient:
    """The Java client's lifecycle: start, say when RUNNING, close on SIGTERM (the JVM's shutdown hook)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.uncaught_exception = False
        self.closed = threading.Event()
        self.running = threading.Event()
        self.streams: KafkaStreams | None = None

    def _on_state(self, new: Any, old: Any) -> None:
        say(f"{self.name} {instant()}: {old.value} -> {new.value}")
        if old.value == "REBALANCING" and new.value == "RUNNING":
            self.running.set()
        if new.value in ("NOT_RUNNING", "ERROR"):
            self.closed.set()

    def _on_uncaught(self, exc: BaseException) -> StreamThreadExceptionResponse:
        say(
            f"{self.name}: SMOKE-TEST-CLIENT-EXCEPTION",
            f"{self.name}: FATAL: An unexpected exception is encountered on thread "
            f"{threading.current_thread().name}: {exc!r}",
        )
        self.uncaught_exception = True
        return StreamThreadExceptionResponse.SHUTDOWN_CLIENT

    def start(self, props: dict[str, str]) -> None:
        streams = KafkaStreams(topology(self.name), streams_config(props, self.name))
        self.streams = streams
        streams.set_state_listener(self._on_state)
        streams.set_uncaught_exception_handler(self._on_uncaught)
        streams.start()
        if not self.running.wait(60):
            say(f"{self.name}: SMOKE-TEST-CLIENT-EXCEPTION: Didn't start in one minute")
        else:
            say(f"{self.name}: SMOKE-TEST-CLIENT-STARTED", f"{self.name} started at {instant()}")

    def close(self) -> None:
        assert self.streams is not None
        was_closed = self.streams.close(60)
        if was_closed and not self.uncaught_exception:
            say(f"{self.name}: SMOKE-TEST-CLIENT-CLOSED")
        elif was_closed:
            say(f"{self.name}: SMOKE-TEST-CLIENT-EXCEPTION: Got an uncaught exception")
        else:
            say(f"{self.name}: SMOKE-TEST-CLIENT-EXCEPTION: Didn't close in time.")


def main(argv: list[str] | None = None) -> int:
    """``StreamsSmokeTest <props> process``: the banner, then the client until SIGTERM."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: smoke_client.py <streams.properties> [name]", file=sys.stderr)
        return 1
    setup_process()
    props = load_properties(args[0])
    if not props.get("bootstrap.servers"):
        print("No bootstrap kafka servers specified in bootstrap.servers", file=sys.stderr)
        return 1
    if props.get("processing.guarantee") not in ("at_least_once", "exactly_once_v2"):
        print("processingGuarantee must be either at_least_once, exactly_once_v2", file=sys.stderr)
        return 1
    stop = wait_for_sigterm()
    say(
        "StreamsTest instance started (StreamsSmokeTest)",
        "command=process",
        f"props={java_props(props)}",
        "disableAutoTerminate=false",
    )
    client = SmokeTestClient(args[1] if len(args) > 1 else str(uuid.uuid4()))
    client.start(props)
    while not stop.wait(0.2):
        if client.closed.is_set():  # the instance stopped by itself (an uncaught exception)
            break
    client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
