"""Streamhouse side of the windowed benchmarks: a tumbling-window count and a stream-stream join.

    windowed: stream(input, string, JSON) -> group_by_key -> windowed_by(TimeWindows 1 min, no grace)
              -> count (RocksDB window store "wcounts", changelog, caching off: one output per update)
              -> to_stream -> (user, {"user", "start", "count"}) -> to(output, JSON)
    join:     stream(orders).join(stream(payments), joiner, JoinWindows ±5 min, grace 1 min) -> to(output)

Each app runs as a child process (its own interpreter, like every system) and is timed from outside;
the clock starts when the app reaches RUNNING, before its first record (as in ``streamhouse_count``).
If the DSL lacks what a topology needs (``windowed_by``, stream-stream ``join``), ``availability_*``
returns the reason and the figure is reported as "not available: <reason>".
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

SYSTEM = "streamhouse-edge"


def build_windowed_topology(
    input_topic: str, output_topic: str, retention_ms: int | None = None, caching: bool = False
) -> Any:
    """``retention_ms`` None: the window store's default retention (size + grace = 1 minute).
    ``caching``: the record cache on (Kafka Streams' default), for the coalesced comparison."""
    from benchmarks.event_time import WINDOW_MS
    from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder
    from edge.dsl.windows import TimeWindows
    from edge.serde import Serdes

    store = Materialized.as_("wcounts")
    if not caching:
        store = store.with_caching_disabled()
    if retention_ms is not None:
        store = store.with_retention(retention_ms)
    b = StreamsBuilder()
    (
        b.stream(input_topic, Consumed.with_(Serdes.string(), Serdes.json()))
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(WINDOW_MS))
        .count(materialized=store)
        .to_stream()
        .map(lambda wk, n: (wk.key, {"user": wk.key, "start": wk.window.start, "count": n}))
        .to(output_topic, Produced.with_(Serdes.string(), Serdes.json()))
    )
    return b.build()


def join_order_payment(order: dict[str, Any], payment: dict[str, Any]) -> dict[str, Any]:
    """The joiner: the order with what was paid and how long after the order (negative: before)."""
    return {
        "order": order["order"],
        "customer": order["customer"],
        "amount": order["amount"],
        "paid": payment["paid"],
        "dt": payment["ts"] - order["ts"],
    }


def build_join_topology(orders_topic: str, payments_topic: str, output_topic: str) -> Any:
    from benchmarks.event_time import JOIN_DIFF_MS, JOIN_GRACE_MS
    from edge.dsl import Consumed, Produced, StreamsBuilder
    from edge.dsl.windows import JoinWindows
    from edge.serde import Serdes

    b = StreamsBuilder()
    consumed = Consumed.with_(Serdes.string(), Serdes.json())
    orders = b.stream(orders_topic, consumed)
    payments = b.stream(payments_topic, consumed)
    (
        orders.join(
            payments,
            join_order_payment,
            JoinWindows.of_time_difference_and_grace(JOIN_DIFF_MS, JOIN_GRACE_MS),
        ).to(output_topic, Produced.with_(Serdes.string(), Serdes.json()))
    )
    return b.build()


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:300]


def availability_windowed() -> str | None:
    """None if the windowed-count topology builds; otherwise why not (e.g. no ``windowed_by`` yet)."""
    try:
        from edge.dsl.grouped import KGroupedStream
        from edge.runtime import StreamsApp, StreamsConfig  # noqa: F401

        if not hasattr(KGroupedStream, "windowed_by"):
            return "the DSL has no KGroupedStream.windowed_by yet (edge/dsl/grouped.py)"
        build_windowed_topology("bench-probe-in", "bench-probe-out")
    except Exception as exc:
        return f"the windowed-count topology does not build: {_why(exc)}"
    return None


def availability_join() -> str | None:
    """None if the stream-stream join topology builds; otherwise why not."""
    try:
        from edge.runtime import StreamsApp, StreamsConfig  # noqa: F401

        build_join_topology("bench-probe-orders", "bench-probe-payments", "bench-probe-out")
    except Exception as exc:
        what = "KStream.join(stream, joiner, JoinWindows)"
        return f"the stream-stream join topology ({what}) does not build: {_why(exc)}"
    return None


# ------------------------------------------------------------------------------------ child


def child_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--app", choices=["windowed", "join"], required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--profile", default="embedded")
    ap.add_argument("--input", required=True, help="windowed: the input; join: orders")
    ap.add_argument("--input2", default="", help="join: payments")
    ap.add_argument("--output", required=True)
    ap.add_argument("--app-id", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--commit-interval-ms", type=int, required=True)
    ap.add_argument("--retention-ms", type=int, default=None, help="windowed: the window store's retention")
    ap.add_argument("-c", "--config", action="append", default=[], help="runtime setting key=value")
    ap.add_argument("--caching", action="store_true", help="windowed: the record cache on")
    a = ap.parse_args(argv)

    from benchmarks.common import write_stats_file
    from edge.kafka import BrokerProfile
    from edge.runtime import State, StreamsApp, StreamsConfig

    cfg = StreamsConfig.from_mapping(
        dict(kv.split("=", 1) for kv in a.config),
        application_id=a.app_id,
        bootstrap_servers=a.bootstrap,
        broker_profile=BrokerProfile(a.profile),
        state_dir=Path(a.state_dir),
        processing_guarantee="at_least_once",
        commit_interval_ms=a.commit_interval_ms,
        http_enabled=False,
    )
    if a.app == "windowed":
        topology = build_windowed_topology(a.input, a.output, a.retention_ms, a.caching)
    else:
        topology = build_join_topology(a.input, a.input2, a.output)
    app = StreamsApp(topology, cfg)
    stats: dict[str, Any] = {}
    stop = threading.Event()

    def on_state(new: State, old: State) -> None:
        if new is State.RUNNING and "first_consumed_at" not in stats:
            stats["first_consumed_at"] = time.time()
            write_stats_file(a.stats, stats)
        if new in (State.ERROR, State.NOT_RUNNING, State.PENDING_ERROR):
            stop.set()

    app.add_state_listener(on_state)
    stats["start_called_at"] = time.time()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    app.start()
    stop.wait()
    clean = app.close(60)
    stats.update(
        records_processed=app.stats.records_processed,
        batches=app.stats.batches,
        process_seconds=round(app.stats.process_seconds, 3),
        rebalances=app.stats.rebalances,
        final_state=app.state.value,
        closed_cleanly=clean,
        error=repr(app.error) if app.error else None,
    )
    write_stats_file(a.stats, stats)
    return 0 if app.error is None else 1


# ------------------------------------------------------------------------------------ harness


def run(
    client: Any,
    *,
    app: str,
    inputs: list[str],
    input_events: int,
    expected_outputs: int,
    workdir: Path,
    tag: str,
    timeout_s: float,
    workload: str,
    retention_ms: int | None = None,
) -> dict[str, Any]:
    """Run one app as a child and time it from outside: input events / (N-th output - RUNNING)."""
    from benchmarks.common import COMMIT_INTERVAL_S, ensure_topics
    from benchmarks.timed_child import run_timed_child

    output = f"bench-{tag}-out"
    ensure_topics(client, [output])
    stats = workdir / f"{tag}.stats.json"
    ms = int(COMMIT_INTERVAL_S * 1000)
    cmd = [
        sys.executable, "-m", "benchmarks.systems.streamhouse_windowed", "--app", app,
        "--bootstrap", client.bootstrap_servers, "--profile", client.profile.value,
        "--input", inputs[0], "--input2", inputs[1] if len(inputs) > 1 else "", "--output", output,
        "--app-id", f"bench-{tag}", "--state-dir", str(workdir / f"{tag}-state"), "--stats", str(stats),
        "--commit-interval-ms", str(ms),
        *(["--retention-ms", str(retention_ms)] if retention_ms is not None else []),
    ]  # fmt: skip
    state = (
        "RocksDB window store 'wcounts' (caching disabled) with changelog, retention "
        + ("default (size + grace)" if retention_ms is None else f"{retention_ms} ms")
        if app == "windowed"
        else "two RocksDB window stores (this/other side) with changelogs"
    )
    return run_timed_child(
        client, system=SYSTEM, workload=workload, cmd=cmd, output_topic=output,
        input_events=input_events, expected_outputs=expected_outputs, stats_path=stats,
        log_path=workdir / f"{tag}.log", timeout_s=timeout_s, terminate_when_done=True,
        extra={"settings": {"application_id": f"bench-{tag}", "processing_guarantee": "at_least_once",
                            "commit_interval_ms": ms, "state": state}},
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(child_main())
