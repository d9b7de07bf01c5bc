"""Hook: the count workload on the Streamhouse edge (DSL topology run by ``edge.runtime.StreamsApp``).

    stream(input, string key, JSON value) -> group_by_key -> count (RocksDB store, changelog, caching
    off so there is one output per input) -> to_stream -> {"user": key, "count": n} -> to(output, JSON)

Runs as a child process (own interpreter and GIL, like every other system) and is timed from outside.
The clock starts when the app reaches RUNNING -- i.e. *before* its first record is consumed, so the
figure is, if anything, slightly pessimistic for Streamhouse (no probe in the hot path).

Variants from the same hook:
* ``count`` -- at-least-once, the same 1 s commit interval as the anchors;
* ``count-alos-100ms`` / ``count-eos-100ms`` -- at-least-once vs exactly_once_v2, both committing every
  100 ms: the exactly-once overhead;
* ``count-2p-1inst`` / ``count-2p-2inst`` -- a 2-partition input with one and with two instances.

If the edge cannot be imported (or its API differs from what is used here) every figure is reported as
"not available: <reason>" -- never estimated.
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


def build_topology(input_topic: str, output_topic: str, caching: bool = False) -> Any:
    """``caching``: the record cache on (Kafka Streams' default; updates collapsed per key until the
    commit), for the coalesced comparison; off, one output per input."""
    from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder
    from edge.serde import Serdes

    store = Materialized.as_("counts")
    if not caching:
        store = store.with_caching_disabled()
    b = StreamsBuilder()
    (
        b.stream(input_topic, Consumed.with_(Serdes.string(), Serdes.json()))
        .group_by_key()
        .count(materialized=store)
        .to_stream()
        .map_values(lambda key, n: {"user": key, "count": n}, with_key=True)
        .to(output_topic, Produced.with_(Serdes.string(), Serdes.json()))
    )
    return b.build()


def enrich(event: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
    """The joiner: the event plus the user's tier and region (None when the user is not in the table)."""
    if user is None:
        return {**event, "tier": None, "region": None}
    return {**event, "tier": user["tier"], "region": user["region"]}


def build_enrichment_builder(input_topic: str, table_topic: str, output_topic: str) -> Any:
    """stream(events) LEFT JOIN table(users) on the key -> enriched JSON; one output per input.

    A left join so that events racing ahead of their table row still produce one output (the runtime
    does not order records across the two topics by timestamp); the matched share is reported.
    Returned unbuilt, so a ``StreamsApp`` applies its ``topology.optimization`` when it builds it.
    """
    from edge.dsl import Consumed, Materialized, Produced, StreamsBuilder
    from edge.serde import Serdes

    b = StreamsBuilder()
    users = b.table(table_topic, Consumed.with_(Serdes.string(), Serdes.json()), Materialized.as_("users"))
    (
        b.stream(input_topic, Consumed.with_(Serdes.string(), Serdes.json()))
        .left_join(users, enrich)
        .to(output_topic, Produced.with_(Serdes.string(), Serdes.json()))
    )
    return b


def build_enrichment_topology(input_topic: str, table_topic: str, output_topic: str) -> Any:
    """:func:`build_enrichment_builder`, built without optimization (Kafka's default)."""
    return build_enrichment_builder(input_topic, table_topic, output_topic).build()


def availability() -> str | None:
    """None if the edge runtime and DSL import and a count topology builds; otherwise the reason."""
    try:
        from edge.runtime import StreamsApp, StreamsConfig  # noqa: F401

        build_topology("bench-probe-in", "bench-probe-out")
        build_enrichment_topology("bench-probe-in", "bench-probe-table", "bench-probe-out")
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# ------------------------------------------------------------------------------------ child


def child_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--profile", default="embedded")
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--app-id", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--guarantee", default="at_least_once")
    ap.add_argument("--commit-interval-ms", type=int, required=True)
    ap.add_argument("--restore-probe", action="store_true", help="exit once RUNNING (after restoring)")
    ap.add_argument("--app", choices=["count", "enrich"], default="count")
    ap.add_argument("--table", default="", help="table topic of the enrich app")
    ap.add_argument("--caching", action="store_true", help="count: the record cache on")
    a = ap.parse_args(argv)

    from benchmarks.common import write_stats_file
    from edge.kafka import BrokerProfile
    from edge.runtime import State, StreamsApp, StreamsConfig

    cfg = StreamsConfig(
        application_id=a.app_id,
        bootstrap_servers=a.bootstrap,
        broker_profile=BrokerProfile(a.profile),
        state_dir=Path(a.state_dir),
        processing_guarantee=a.guarantee,
        commit_interval_ms=a.commit_interval_ms,
        http_enabled=False,
    )
    topology = (
        build_topology(a.input, a.output, a.caching)
        if a.app == "count"
        else build_enrichment_topology(a.input, a.table, a.output)
    )
    app = StreamsApp(topology, cfg)
    stats: dict[str, Any] = {}
    stop = threading.Event()

    def on_state(new: State, old: State) -> None:
        if new is State.RUNNING and "first_consumed_at" not in stats:
            stats["first_consumed_at"] = time.time()
            write_stats_file(a.stats, stats)
            if a.restore_probe:
                stop.set()
        if new in (State.ERROR, State.NOT_RUNNING, State.PENDING_ERROR):
            stop.set()

    app.add_state_listener(on_state)
    stats["start_called_at"] = time.time()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    app.start()

    def first_processed() -> None:
        while not stop.is_set() and app.stats.records_processed == 0:
            time.sleep(0.002)
        stats["first_batch_processed_at"] = time.time()

    threading.Thread(target=first_processed, daemon=True).start()
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
        restored_records=app.stats.restored_records,
        restore_seconds=round(app.stats.restore_seconds, 3),
        restores=[p.as_dict() for p in app.stats.restores],
    )
    write_stats_file(a.stats, stats)
    return 0 if app.error is None else 1


# ------------------------------------------------------------------------------------ harness


def _run(
    client: Any,
    input_topic: str,
    events: int,
    workdir: Path,
    run_id: str,
    timeout_s: float,
    *,
    workload: str,
    guarantee: str,
    commit_interval_ms: int,
    instances: int = 1,
    app: str = "count",
    table_topic: str = "",
) -> dict[str, Any]:
    from benchmarks.common import (
        ChildRun,
        ensure_topics,
        read_stats_file,
        result,
        start_child,
        verify_counts,
        wait_for_outputs,
    )

    tag = f"{run_id}-sh-{workload}"
    output = f"bench-{tag}-out"
    parts = len(_partitions(client, input_topic))
    ensure_topics(client, [output], partitions=parts)
    settings = {
        "application_id": f"bench-{tag}",
        "processing_guarantee": guarantee,
        "commit_interval_ms": commit_interval_ms,
        "instances": instances,
        "input_partitions": parts,
        "state": "RocksDB store 'counts' (caching disabled) with changelog"
        if app == "count"
        else "RocksDB table store 'users' (from the table topic), left join",
    }
    children: list[ChildRun] = []
    stats_files = []
    t_launch = time.time()
    for i in range(instances):
        stats = workdir / f"{tag}-{i}.stats.json"
        stats.unlink(missing_ok=True)
        stats_files.append(stats)
        cmd = [
            sys.executable, "-m", "benchmarks.systems.streamhouse_count",
            "--bootstrap", client.bootstrap_servers, "--profile", client.profile.value,
            "--input", input_topic, "--output", output, "--app-id", f"bench-{tag}",
            "--state-dir", str(workdir / f"{tag}-state-{i}"), "--stats", str(stats),
            "--guarantee", guarantee, "--commit-interval-ms", str(commit_interval_ms),
            "--app", app, "--table", table_topic,
        ]  # fmt: skip
        children.append(start_child(cmd, workdir / f"{tag}-{i}.log"))
    eos = guarantee == "exactly_once_v2"
    try:
        if instances > 1:
            # Start the clock only when every instance is RUNNING with its share of the partitions,
            # otherwise the figure would include a rebalance.
            _wait_all_running(stats_files, children, timeout_s=60)
        watch = wait_for_outputs(
            client, output, events, timeout_s=timeout_s, read_committed=eos,
            alive=lambda: all(c.alive() for c in children),
        )  # fmt: skip
    finally:
        for c in children:
            c.finish(timeout_s=60, terminate=True)
    all_stats = [read_stats_file(s, timeout_s=2.0) or {} for s in stats_files]
    firsts = [s.get("first_consumed_at") for s in all_stats]
    base = {
        "settings": settings,
        "output_topic": output,
        "child_exit_codes": [c.returncode for c in children],
        "child_cpu_s": [c.cpu_s for c in children],
        "child_stats": all_stats,
    }
    if not watch.reached or None in firsts:
        logs = "\n".join(c.log_tail(15) for c in children)
        reason = (
            f"only {watch.seen}/{events} outputs within {timeout_s:.0f}s"
            if not watch.reached
            else "an instance never reached RUNNING"
        )
        return result(
            SYSTEM, workload, events, None, status="failed", reason=f"{reason}; logs:\n{logs}", **base
        )
    start = max(firsts) if instances > 1 else firsts[0]
    elapsed = watch.end_wall - start
    cpu = sum(c.cpu_s or 0 for c in children)
    obj = result(
        SYSTEM, workload, events, events / elapsed,
        elapsed_s=round(elapsed, 3), startup_s=round(start - t_launch, 3),
        cpu_s_per_1m_events=round(cpu / events * 1e6, 2) if cpu else None,
        **base,
    )  # fmt: skip
    if eos:
        obj["verification"] = {"note": "exactly-once output read with read_committed by the watcher"}
    elif app == "enrich":
        obj["verification"] = verify_enrichment(client, output, events)
    else:
        obj["verification"] = verify_counts(client, output, events)
    return obj


def verify_enrichment(client: Any, topic: str, expected_events: int) -> dict[str, Any]:
    import orjson

    from benchmarks.common import consume_until_eof

    matched = [0]

    def handle(batch: list[Any]) -> None:
        for m in batch:
            if orjson.loads(m.value()).get("tier") is not None:
                matched[0] += 1

    records = consume_until_eof(client, topic, timeout_s=180, handle=handle)
    return {
        "output_records": records,
        "matched": matched[0],
        "matched_share": round(matched[0] / records, 4) if records else None,
        "correct": records >= expected_events,
    }


def _partitions(client: Any, topic: str) -> list[int]:
    from confluent_kafka.admin import AdminClient

    meta = AdminClient(client.admin()).list_topics(topic, timeout=10).topics[topic]
    return sorted(meta.partitions)


def _wait_all_running(stats_files: list[Path], children: list[Any], timeout_s: float) -> None:
    from benchmarks.common import read_stats_file

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all((read_stats_file(s) or {}).get("first_consumed_at") for s in stats_files):
            return
        if not all(c.alive() for c in children):
            raise RuntimeError("an instance exited before RUNNING")
        time.sleep(0.05)


def bench(
    client: Any, input_topic: str, events: int, workdir: Path, run_id: str, timeout_s: float
) -> dict[str, Any]:
    """The headline count figure (at-least-once, 1 s commit interval like the anchors)."""
    from benchmarks.common import COMMIT_INTERVAL_S, not_available

    reason = availability()
    if reason:
        return not_available(SYSTEM, "count", events, reason)
    return _run(
        client, input_topic, events, workdir, run_id, timeout_s,
        workload="count", guarantee="at_least_once", commit_interval_ms=int(COMMIT_INTERVAL_S * 1000),
    )  # fmt: skip


def bench_enrichment(
    client: Any, input_topic: str, table_topic: str, events: int, workdir: Path, run_id: str, timeout_s: float
) -> dict[str, Any]:
    """Stream-table enrichment throughput: the count input joined with the 10k-row user table."""
    from benchmarks.common import COMMIT_INTERVAL_S, not_available

    reason = availability()
    if reason:
        return not_available(SYSTEM, "enrichment", events, reason)
    return _run(
        client, input_topic, events, workdir, run_id, timeout_s, workload="enrichment",
        guarantee="at_least_once", commit_interval_ms=int(COMMIT_INTERVAL_S * 1000), app="enrich",
        table_topic=table_topic,
    )  # fmt: skip


def bench_eos_overhead(
    client: Any,
    input_topic: str,
    events: int,
    workdir: Path,
    run_id: str,
    timeout_s: float,
    rounds: int = 2,
    enough_time: Any = None,
) -> list[dict[str, Any]]:
    """At-least-once vs exactly_once_v2, both at a 100 ms commit interval, interleaved ``rounds`` times.

    Each figure is the best of its rounds (the same rule as the count workload).
    """
    from benchmarks.common import not_available

    reason = availability()
    if reason:
        return [not_available(SYSTEM, w, events, reason) for w in ("count-alos-100ms", "count-eos-100ms")]
    runs: dict[str, list[dict[str, Any]]] = {"at_least_once": [], "exactly_once_v2": []}
    for rnd in range(rounds):
        if rnd and enough_time is not None and not enough_time():
            break
        for guarantee, workload in (
            ("at_least_once", "count-alos-100ms"),
            ("exactly_once_v2", "count-eos-100ms"),
        ):
            r = _run(client, input_topic, events, workdir, f"{run_id}e{rnd}", timeout_s,
                     workload=workload, guarantee=guarantee, commit_interval_ms=100)  # fmt: skip
            runs[guarantee].append(r)
    alos, eos = (_best(rs) for rs in runs.values())
    if alos.get("events_per_s") and eos.get("events_per_s"):
        eos["overhead_vs_alos"] = round(1 - eos["events_per_s"] / alos["events_per_s"], 3)
    return [alos, eos]


def _best(rs: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in rs if r.get("events_per_s")]
    best = dict(max(ok, key=lambda r: r["events_per_s"]) if ok else rs[-1])
    best["rounds"] = [{"events_per_s": r.get("events_per_s"), "status": r.get("status")} for r in rs]
    best["figure"] = f"best of {len(rs)} interleaved rounds"
    return best


def bench_restore(
    client: Any, count_result: dict[str, Any], workdir: Path, timeout_s: float
) -> dict[str, Any]:
    """Restore rate: a fresh instance (empty state dir) of the count app rebuilds its RocksDB store from
    the changelog the count run wrote (one changelog record per input: ``events`` records, 10k keys)."""
    from benchmarks.common import not_available, read_stats_file, result, start_child

    workload = "changelog-restore"
    reason = availability()
    if reason:
        return not_available(SYSTEM, workload, 0, reason)
    settings = count_result.get("settings") or {}
    app_id = settings.get("application_id")
    if not count_result.get("events_per_s") or not app_id:
        return not_available(SYSTEM, workload, 0, "needs a successful Streamhouse count run (its changelog)")
    from edge.state import changelog_topic_name

    tag = f"{app_id}-restore"
    stats = workdir / f"{tag}.stats.json"
    stats.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "benchmarks.systems.streamhouse_count",
        "--bootstrap", client.bootstrap_servers, "--profile", client.profile.value,
        "--input", count_result["input_topic"], "--output", count_result["output_topic"], "--app-id", app_id,
        "--state-dir", str(workdir / f"{tag}-state"), "--stats", str(stats),
        "--guarantee", "at_least_once", "--commit-interval-ms", "1000", "--restore-probe",
    ]  # fmt: skip
    child = start_child(cmd, workdir / f"{tag}.log")
    deadline = time.monotonic() + timeout_s
    while child.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    child.finish(timeout_s=30, terminate=True)
    st = read_stats_file(stats, timeout_s=2.0) or {}
    restored, secs = st.get("restored_records") or 0, st.get("restore_seconds") or 0.0
    base = {
        "changelog_topic": changelog_topic_name(app_id, "counts"),
        "child_exit_code": child.returncode,
        "child_cpu_s": child.cpu_s,
        "child_stats": {k: v for k, v in st.items() if k != "restores"},
    }
    if not restored or not secs:
        return result(SYSTEM, workload, restored, None, status="failed",
                      reason=f"nothing restored; log tail:\n{child.log_tail()}", **base)  # fmt: skip
    start_to_running = st["first_consumed_at"] - st["start_called_at"] if "first_consumed_at" in st else None
    return result(
        SYSTEM, workload, restored, restored / secs, restore_seconds=secs,
        start_to_running_s=round(start_to_running, 3) if start_to_running else None,
        records_per_s_incl_startup=round(restored / start_to_running) if start_to_running else None,
        **base,
    )  # fmt: skip


def bench_instances(
    client: Any, input_topic_2p: str, events: int, workdir: Path, run_id: str, timeout_s: float
) -> list[dict[str, Any]]:
    """A 2-partition input processed by one instance, then by two."""
    from benchmarks.common import COMMIT_INTERVAL_S, not_available

    reason = availability()
    if reason:
        return [not_available(SYSTEM, w, events, reason) for w in ("count-2p-1inst", "count-2p-2inst")]
    ms = int(COMMIT_INTERVAL_S * 1000)
    one = _run(client, input_topic_2p, events, workdir, run_id, timeout_s,
               workload="count-2p-1inst", guarantee="at_least_once", commit_interval_ms=ms)  # fmt: skip
    two = _run(client, input_topic_2p, events, workdir, run_id, timeout_s,
               workload="count-2p-2inst", guarantee="at_least_once", commit_interval_ms=ms,
               instances=2)  # fmt: skip
    if one.get("events_per_s") and two.get("events_per_s"):
        two["speedup_vs_1"] = round(two["events_per_s"] / one["events_per_s"], 2)
    return [one, two]


if __name__ == "__main__":
    raise SystemExit(child_main())
