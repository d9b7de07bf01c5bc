"""Port of Kafka Streams' ``EosTestClient`` (4.1.1) to the edge DSL, verified by Kafka's ``EosTestDriver``.

    python -m examples.system_tests.eos_client <streams.properties> [process|process-complex]

is ``StreamsEosTest <props> process`` (or ``process-complex``): the same banner, a state listener that
prints ``<millis>`` then ``StateChange: OLD -> NEW`` (the services wait for ``StateChange: REBALANCING
-> RUNNING`` and ``processed N records from topic``), a client that rebuilds its ``KafkaStreams`` after
an uncaught exception, and ``EOS-TEST-CLIENT-CLOSED`` after a clean stop on SIGTERM.

Topology (application ``EosTest``, default serdes String/Integer, no record cache so every update is
an output, 5 s commits so a kill lands in an open transaction): ``data`` is copied to ``echo``,
per-key ``min`` (Integer) and ``sum`` (Long) go to those topics; ``process-complex`` also copies
``data`` to the topic ``repartition``, reads it back and writes per-key ``max`` and ``cnt``. Kafka's
``verify`` / ``verify-complex`` then demand, partition by partition, exactly one output per input up to
the group's committed offsets, in input order, with the right running aggregate.

Differences, each forced by the setting rather than chosen: ``replication.factor`` is the properties
file's when it sets one (Kafka's client forces 3; the local broker is one node); the streams-group
``MemberEpochBump`` line is not printed (the edge uses the classic consumer group protocol).
``STREAMHOUSE_SYSTEM_TEST_SABOTAGE=sum`` starts every ``sum`` at -1.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from typing import Any

from edge import (
    KafkaStreams,
    Materialized,
    Produced,
    Serdes,
    StreamsBuilder,
    StreamThreadExceptionResponse,
)
from edge.topology import Topology
from examples.system_tests.common import (
    END,
    INT_MIN,
    java_props,
    load_properties,
    print_processor,
    sabotaged,
    say,
    setup_process,
    wait_for_sigterm,
)

APP_ID = "EosTest"
STRING = Serdes.string()
INT = Serdes.int()
LONG = Serdes.long()


def topology(with_repartitioning: bool = False) -> Topology:
    """``EosTestClient.createKafkaStreams``' topology."""
    builder = StreamsBuilder()
    data = builder.stream("data")
    data.to("echo")
    data.process(print_processor("data"))

    grouped = data.group_by_key()
    # min
    (
        grouped.aggregate(
            lambda: END,
            lambda _k, value, aggregate: value if value < aggregate else aggregate,
            materialized=Materialized.with_(None, INT),
        )
        .to_stream()
        .to("min", Produced.with_(STRING, INT))
    )
    # sum
    sum_start = -1 if sabotaged("sum") else 0
    (
        grouped.aggregate(
            lambda: sum_start,
            lambda _k, value, aggregate: value + aggregate,
            materialized=Materialized.with_(None, LONG),
        )
        .to_stream()
        .to("sum", Produced.with_(STRING, LONG))
    )

    if with_repartitioning:
        data.to("repartition")
        repartitioned = builder.stream("repartition")
        repartitioned.process(print_processor("repartition"))
        grouped_after = repartitioned.group_by_key()
        # max
        (
            grouped_after.aggregate(
                lambda: INT_MIN,
                lambda _k, value, aggregate: value if value > aggregate else aggregate,
                materialized=Materialized.with_(None, INT),
            )
            .to_stream()
            .to("max", Produced.with_(STRING, INT))
        )
        # count
        grouped_after.count().to_stream().to("cnt", Produced.with_(STRING, LONG))
    return builder.build()


def app() -> Topology:
    """For ``streamhouse edge run examples.system_tests.eos_client:app`` (application.id=EosTest)."""
    return topology(False)


def app_complex() -> Topology:
    return topology(True)


def streams_config(props: dict[str, str]) -> dict[str, Any]:
    """The Java client's overrides on top of the driver's properties (see the module docstring)."""
    full: dict[str, Any] = dict(props)
    full.update(
        {
            "application.id": APP_ID,
            "num.stream.threads": "1",
            "num.standby.replicas": "2",
            "probing.rebalance.interval.ms": "60000",
            "max.warmup.replicas": str(2**31 - 1),
            "replication.factor": props.get("replication.factor", "3"),
            "statestore.cache.max.bytes": "0",
            "commit.interval.ms": "5000",
            "default.key.serde": "string",
            "default.value.serde": "int",
        }
    )
    return full


class EosTestClient:
    """``EosTestClient.start()``: keep an instance running until SIGTERM, replacing it after a crash."""

    def __init__(self, props: dict[str, str], with_repartitioning: bool) -> None:
        self.props = props
        self.with_repartitioning = with_repartitioning
        self.streams: KafkaStreams | None = None
        self.uncaught_exception = False
        self.not_running = threading.Event()

    def _on_state(self, new: Any, old: Any) -> None:
        say(int(time.time() * 1000), f"StateChange: {old.value} -> {new.value}")
        if new.value == "NOT_RUNNING":
            self.not_running.set()

    def _on_uncaught(self, exc: BaseException) -> StreamThreadExceptionResponse:
        say(int(time.time() * 1000), "EOS-TEST-CLIENT-EXCEPTION")
        traceback.print_exception(exc, file=sys.stderr)
        self.uncaught_exception = True
        return StreamThreadExceptionResponse.SHUTDOWN_CLIENT

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            if self.streams is None:
                self.uncaught_exception = False
                self.not_running.clear()
                streams = KafkaStreams(topology(self.with_repartitioning), streams_config(self.props))
                streams.set_uncaught_exception_handler(self._on_uncaught)
                streams.set_state_listener(self._on_state)
                self.streams = streams
                streams.start()
            if self.uncaught_exception:
                self.streams.close(60)
                self.streams = None
            stop.wait(0.1)
        # the shutdown hook
        if self.streams is not None:
            self.streams.close(300)
            if not self.not_running.wait(300):
                print(
                    "State transition callback to NOT_RUNNING never received. Timed out after 5 minutes.",
                    file=sys.stderr,
                )
        if not self.uncaught_exception:
            say(int(time.time() * 1000), "EOS-TEST-CLIENT-CLOSED")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: eos_client.py <streams.properties> [process|process-complex]", file=sys.stderr)
        return 1
    setup_process()
    command = args[1] if len(args) > 1 else "process"
    if command not in ("process", "process-complex"):
        print(f"unknown command: {command}", file=sys.stderr)
        return 1
    props = load_properties(args[0])
    if not props.get("bootstrap.servers"):
        print("No bootstrap kafka servers specified in bootstrap.servers", file=sys.stderr)
        return 1
    if props.get("processing.guarantee") != "exactly_once_v2":
        print("processingGuarantee must be exactly_once_v2", file=sys.stderr)
        return 1
    stop = wait_for_sigterm()
    say(
        "StreamsTest instance started",
        f"kafka={props['bootstrap.servers']}",
        f"props={java_props(props)}",
        f"command={command}",
    )
    EosTestClient(props, command == "process-complex").run(stop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
