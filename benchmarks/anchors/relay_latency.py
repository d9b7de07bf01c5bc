"""Anchor: end-to-end latency of a raw two-hop relay at a fixed rate, and the client settings behind it.

    generator (harness) --produce--> relay-in --[relay process: poll -> produce]--> relay-out --> sink

The generator produces at a fixed rate (1k events/s by default), embedding ``time.time_ns()`` taken just
before ``produce()`` in each value; the sink (its own process) records ``time.time_ns()`` when ``poll()``
hands it the record. All three run on one host, so they share one clock. The first ``warmup_s`` of
records are discarded (group join, first fetches, connection set-up).

No processing happens in the relay, so its latency is the floor any streaming app on this broker can
reach with these client settings; the enrichment app's latency is compared against it.

A run lasts ``duration_s`` (30 s in the quick set) and reports p50/p99 per ``slice_s`` (10 s) slice of
generation time besides the whole-run figures: on the embedded broker a fetch costs more the more record
batches a partition holds, so a client setting can look good for 10 s and fall behind after 20 s
(``fetch.wait.max.ms=2`` does, for a bare relay too); ``growth_p50`` / ``growth_p99`` (last slice / first
slice) show it. ``sweep=True`` repeats the relay under several librdkafka settings (one change at a
time, then combinations) with the relay's CPU cost for each; the quick set runs the shipped settings only.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import orjson
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

from benchmarks.common import DEFAULT_KEYS, event_key
from edge.kafka import BrokerProfile, KafkaClientConfig

SYSTEM = "raw-relay"
WORKLOAD = "relay-latency"
#: The same harness with the Streamhouse enrichment app in the middle (role "app").
APP_SYSTEM = "streamhouse-edge"
APP_WORKLOAD = "enrichment-latency"

#: Each entry: name -> (consumer overrides, producer overrides), applied on top of the embedded profile.
#: The baseline is the profile as shipped (fetch.wait.max.ms=10, librdkafka's linger.ms=5, Nagle on).
#: Single changes first, so the table shows what each one does, then combinations; the shipped settings
#: are the recommendation (what holds over a 30 s run on this broker).
#: What development runs showed (see docs/benchmarks.md): Tansu answers a fetch that finds no new data
#: only when fetch.wait.max.ms expires (new data does not wake it), so that wait is paid on every hop;
#: linger.ms=0 makes every record its own produce request and Tansu then queues requests (p99 in the
#: hundreds of ms), and even linger.ms=2 fattens the tail, so producers keep librdkafka's 5 ms;
#: Nagle and acks=1 make no consistent difference.
CONFIGS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "baseline": ({}, {}),
    "linger.ms=0": ({}, {"linger.ms": 0}),
    "linger.ms=2": ({}, {"linger.ms": 2}),
    "socket.nagle.disable": ({"socket.nagle.disable": True}, {"socket.nagle.disable": True}),
    "acks=1": ({}, {"acks": 1}),
    "fetch.wait.max.ms=1": ({"fetch.wait.max.ms": 1}, {}),
    "fetch.wait.max.ms=2+linger.ms=2": ({"fetch.wait.max.ms": 2}, {"linger.ms": 2}),
    #: once recommended from 6-10 s runs (p50 -20-30 %); NOT recommended: over 30 s its p50 ends above the
    #: shipped setting's and its p99 grows x6-11 (benchmarks/results/relay_latency_growth.json)
    "tuned": ({"fetch.wait.max.ms": 2}, {}),
}
#: Configurations run again (interleaved) after the sweep; their figures are medians over the runs,
#: because a single run's p99 on a shared 2-core machine moves by 2x from one minute to the next.
#: ``tuned`` (fetch.wait.max.ms=2) is in the sweep only: it falls behind within ~20 s (see the module doc).
REPEATED = ("baseline",)
#: seconds of generation time per slice of the per-slice percentiles
SLICE_S = 10.0


def _write_json(path: str | Path, data: Any) -> None:
    path = Path(path)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


# ------------------------------------------------------------------------------------ child roles


def relay_main(client: KafkaClientConfig, a: argparse.Namespace) -> None:
    cons_over, prod_over = json.loads(a.consumer_overrides), json.loads(a.producer_overrides)
    consumer = Consumer(client.consumer(a.group, **{"auto.offset.reset": "earliest", **cons_over}))
    producer = Producer(client.producer(**prod_over))

    def on_assign(c: Any, parts: list[TopicPartition]) -> None:
        _write_json(a.ready, {"assigned": [p.partition for p in parts]})

    consumer.subscribe([a.input], on_assign=on_assign)
    relayed = 0
    deadline = time.monotonic() + a.max_s
    try:
        while time.monotonic() < deadline and relayed < a.events:
            msg = consumer.poll(0.1)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise RuntimeError(f"relay consume error: {msg.error()}")
            producer.produce(a.output, msg.value(), msg.key())
            producer.poll(0)
            relayed += 1
        producer.flush(10)
    finally:
        consumer.close()
    print({"relayed": relayed}, flush=True)


def app_main(client: KafkaClientConfig, a: argparse.Namespace) -> None:
    """The Streamhouse enrichment app in place of the relay: same hops, same client overrides."""
    import threading

    from benchmarks.systems.streamhouse_count import build_enrichment_builder
    from edge.runtime import State, StreamsApp, StreamsConfig

    extra: dict[str, Any] = {}
    if a.poll_ms is not None:
        extra["poll_ms"] = a.poll_ms
    if a.optimization:
        extra["topology_optimization"] = a.optimization
    cfg = StreamsConfig(
        application_id=a.group,
        bootstrap_servers=client.bootstrap_servers,
        broker_profile=client.profile,
        state_dir=Path(a.state_dir),
        consumer_overrides=json.loads(a.consumer_overrides),
        producer_overrides=json.loads(a.producer_overrides),
        processing_guarantee=a.guarantee,
        http_enabled=False,
        **extra,
    )
    # the builder itself, so that topology.optimization (if set) applies as in a shipped app
    app = StreamsApp(build_enrichment_builder(a.input, a.table, a.output), cfg)
    stop = threading.Event()
    app.add_state_listener(
        lambda new, old: stop.set() if new in (State.ERROR, State.NOT_RUNNING, State.PENDING_ERROR) else None
    )
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    app.start()
    deadline = time.monotonic() + a.max_s
    # Ready once the whole table is loaded (its rows are processed records too), so no event races it.
    while not stop.is_set() and time.monotonic() < deadline:
        if app.state is State.RUNNING and app.stats.records_processed >= a.table_rows:
            _write_json(a.ready, {"running": True, "table_rows": app.stats.records_processed})
            break
        time.sleep(0.02)
    stop.wait(max(0.0, deadline - time.monotonic()))
    app.close(30)
    print({"processed": app.stats.records_processed, "error": repr(app.error)}, flush=True)


def sink_main(client: KafkaClientConfig, a: argparse.Namespace) -> None:
    # SIGTERM from the harness (records missing) still writes what was measured.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    cons_over = json.loads(a.consumer_overrides)
    consumer = Consumer(client.consumer(f"{a.group}-sink", **{"enable.auto.commit": False, **cons_over}))
    consumer.assign([TopicPartition(a.output, 0, OFFSET_BEGINNING)])
    consumer.poll(0.1)
    _write_json(a.ready, {"ready": True})
    latencies_us: list[int] = []
    seqs: list[int] = []
    received = 0
    loads, now_ns = orjson.loads, time.time_ns
    deadline = time.monotonic() + a.max_s
    try:
        while received < a.events and time.monotonic() < deadline:
            msg = consumer.poll(0.1)
            if msg is None or msg.error() is not None:
                continue
            t = now_ns()
            v = loads(msg.value())
            received += 1
            seq = v["seq"]
            if seq >= a.warmup_events:
                latencies_us.append((t - v["ts_ns"]) // 1000)
                seqs.append(seq)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    _write_json(a.stats, {"received": received, "latencies_us": latencies_us, "seqs": seqs})


def child_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("role", choices=["relay", "sink", "app"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--profile", default="embedded")
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--events", type=int, required=True)
    ap.add_argument("--warmup-events", type=int, default=0)
    ap.add_argument("--max-s", type=float, required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--stats", default="")
    ap.add_argument("--consumer-overrides", default="{}")
    ap.add_argument("--producer-overrides", default="{}")
    ap.add_argument("--table", default="")
    ap.add_argument("--table-rows", type=int, default=0)
    ap.add_argument("--state-dir", default="")
    ap.add_argument("--poll-ms", type=int, default=None)
    ap.add_argument("--guarantee", default="at_least_once")
    ap.add_argument("--optimization", default="")
    a = ap.parse_args(argv)
    client = KafkaClientConfig(a.bootstrap, BrokerProfile(a.profile))
    {"relay": relay_main, "sink": sink_main, "app": app_main}[a.role](client, a)
    return 0


# ------------------------------------------------------------------------------------ harness side


def generate(producer: Producer, topic: str, events: int, rate: float, pad: bytes = b"x" * 64) -> float:
    """Produce ``events`` records at ``rate``/s on a fixed schedule (no drift); returns the achieved rate."""
    interval = 1.0 / rate
    dumps, now_ns = orjson.dumps, time.time_ns
    t0 = time.perf_counter()
    for i in range(events):
        target = t0 + i * interval
        delay = target - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        value = dumps({"seq": i, "ts_ns": now_ns(), "pad": pad.decode()})
        producer.produce(topic, value, event_key(i % DEFAULT_KEYS))
        producer.poll(0)
    elapsed = time.perf_counter() - t0
    producer.flush(30)
    return events / elapsed if elapsed > 0 else float("nan")


def run_one(
    client: KafkaClientConfig,
    workdir: Path,
    run_id: str,
    name: str,
    consumer_overrides: dict[str, Any],
    producer_overrides: dict[str, Any],
    *,
    rate: float,
    duration_s: float,
    warmup_s: float,
    role: str = "relay",
    table: tuple[str, int] | None = None,
    poll_ms: int | None = None,
    guarantee: str | None = None,
    optimization: str | None = None,
    slice_s: float = SLICE_S,
) -> dict[str, Any]:
    from benchmarks.common import ensure_topics, percentiles, result, start_child

    system, workload = (SYSTEM, WORKLOAD) if role == "relay" else (APP_SYSTEM, APP_WORKLOAD)

    tag = "".join(ch if ch.isalnum() else "-" for ch in name)
    topic_in, topic_out = f"bench-{run_id}-relay-{tag}-in", f"bench-{run_id}-relay-{tag}-out"
    ensure_topics(client, [topic_in, topic_out])
    warm = int(rate * warmup_s)
    total = warm + int(rate * duration_s)
    max_s = warmup_s + duration_s + 60
    files = {r: workdir / f"{run_id}-relay-{tag}-{r}" for r in ("relay.ready", "sink.ready", "sink.json")}
    for f in files.values():
        f.unlink(missing_ok=True)
    common_args = [
        "--bootstrap", client.bootstrap_servers, "--profile", client.profile.value,
        "--input", topic_in, "--output", topic_out, "--group", f"bench-{run_id}-relay-{tag}",
        "--events", str(total), "--warmup-events", str(warm), "--max-s", str(max_s),
        "--consumer-overrides", json.dumps(consumer_overrides),
        "--producer-overrides", json.dumps(producer_overrides),
    ]  # fmt: skip
    mod = [sys.executable, "-m", "benchmarks.anchors.relay_latency"]
    middle = [*mod, role, *common_args, "--ready", str(files["relay.ready"])]
    if role == "app":
        assert table is not None
        middle += ["--table", table[0], "--table-rows", str(table[1]),
                   "--state-dir", str(workdir / f"{run_id}-relay-{tag}-state")]  # fmt: skip
        if poll_ms is not None:
            middle += ["--poll-ms", str(poll_ms)]
        if guarantee is not None:
            middle += ["--guarantee", guarantee]
        if optimization:
            middle += ["--optimization", optimization]
    relay = start_child(middle, workdir / f"{run_id}-relay-{tag}-{role}.log")
    sink = start_child(
        [*mod, "sink", *common_args, "--ready", str(files["sink.ready"]), "--stats", str(files["sink.json"])],
        workdir / f"{run_id}-relay-{tag}-sink.log",
    )
    settings: dict[str, Any] = {"consumer": consumer_overrides, "producer": producer_overrides}
    runtime: dict[str, Any] = {}
    if poll_ms is not None:
        runtime["poll.ms"] = poll_ms
    if guarantee is not None:
        runtime["processing.guarantee"] = guarantee
    if optimization:
        runtime["topology.optimization"] = optimization
    if runtime:
        settings["runtime"] = runtime
    try:
        deadline = time.monotonic() + 60
        while not (files["relay.ready"].exists() and files["sink.ready"].exists()):
            if time.monotonic() > deadline or not relay.alive() or not sink.alive():
                raise RuntimeError(
                    f"{role}/sink not ready after 60 s\n{role}: {relay.log_tail()}\nsink: {sink.log_tail()}"
                )
            time.sleep(0.05)
        producer = Producer(client.producer(**producer_overrides))
        achieved = generate(producer, topic_in, total, rate)
        # Everything is produced; the sink gets 10 s to see the rest, then writes what it has.
        sink_deadline = time.monotonic() + 10
        while sink.alive() and time.monotonic() < sink_deadline:
            time.sleep(0.05)
        sink.finish(timeout_s=10, terminate=True)
        relay.finish(timeout_s=10, terminate=True)
    except Exception as exc:
        relay.finish(timeout_s=5, terminate=True)
        sink.finish(timeout_s=5, terminate=True)
        return result(system, workload, 0, None, status="failed", config=name, reason=str(exc),
                      settings=settings)  # fmt: skip
    stats = json.loads(files["sink.json"].read_text()) if files["sink.json"].exists() else {}
    lat_ms = [u / 1000 for u in stats.get("latencies_us", [])]
    if not lat_ms:
        reason = f"sink received nothing\nrelay: {relay.log_tail()}\nsink: {sink.log_tail()}"
        return result(
            system, workload, 0, None, status="failed", config=name, settings=settings, reason=reason
        )
    pct = percentiles(lat_ms, (50, 90, 99, 99.9))
    slices = slice_percentiles(stats.get("seqs") or [], lat_ms, warm, rate, slice_s)
    wall = warmup_s + duration_s
    return result(
        system, workload, len(lat_ms), achieved,
        config=name, settings=settings, target_rate=rate, warmup_events=warm,
        received=stats.get("received"), lost=total - stats.get("received", 0),
        p50_ms=round(pct["p50"], 2), p90_ms=round(pct["p90"], 2), p99_ms=round(pct["p99"], 2),
        p999_ms=round(pct["p99.9"], 2), max_ms=round(max(lat_ms), 2),
        mean_ms=round(sum(lat_ms) / len(lat_ms), 2),
        relay_cpu_pct=round(100 * relay.cpu_s / wall, 1) if relay.cpu_s is not None else None,
        sink_cpu_pct=round(100 * sink.cpu_s / wall, 1) if sink.cpu_s is not None else None,
        duration_s=duration_s, slice_s=slice_s, slices=slices, **growth(slices),
    )  # fmt: skip


def slice_percentiles(
    seqs: list[int], lat_ms: list[float], warm: int, rate: float, slice_s: float
) -> list[dict[str, Any]]:
    """p50/p99 per ``slice_s`` seconds of generation time (record ``seq`` / ``rate``), warm-up excluded."""
    from benchmarks.common import percentiles

    if len(seqs) != len(lat_ms):
        return []
    per = max(1, int(rate * slice_s))
    buckets: dict[int, list[float]] = {}
    for seq, ms in zip(seqs, lat_ms, strict=True):
        buckets.setdefault((seq - warm) // per, []).append(ms)
    out = []
    for i in sorted(buckets):
        pct = percentiles(buckets[i], (50, 99))
        out.append({"from_s": round(i * slice_s, 1), "records": len(buckets[i]),
                    "p50_ms": round(pct["p50"], 2), "p99_ms": round(pct["p99"], 2)})  # fmt: skip
    return out


def growth(slices: list[dict[str, Any]]) -> dict[str, float | None]:
    """Last slice over first slice, p50 and p99: ~1 when latency holds, > 1.5 when it drifts."""
    full = [s for s in slices if s["records"] >= 0.5 * max(x["records"] for x in slices)] if slices else []
    if len(full) < 2 or not full[0]["p50_ms"] or not full[0]["p99_ms"]:
        return {"growth_p50": None, "growth_p99": None}
    first, last = full[0], full[-1]
    return {"growth_p50": round(last["p50_ms"] / first["p50_ms"], 2),
            "growth_p99": round(last["p99_ms"] / first["p99_ms"], 2)}  # fmt: skip


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def aggregate(name: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One result per configuration: medians over its runs, every run kept under ``runs``."""
    ok = [r for r in runs if r.get("status") == "ok"]
    if not ok:
        return runs[-1]
    agg = dict(ok[-1])
    agg["events"] = sum(r["events"] for r in ok)
    agg["events_per_s"] = round(sum(r["events_per_s"] for r in ok) / len(ok))
    keys = ("p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms", "relay_cpu_pct", "sink_cpu_pct",
            "growth_p50", "growth_p99")  # fmt: skip
    for k in keys:
        vals = [r[k] for r in ok if r.get(k) is not None]
        if vals:
            agg[k] = round(_median(vals), 2)
    agg["repeats"] = len(ok)
    kept = ("p50_ms", "p99_ms", "p999_ms", "relay_cpu_pct", "growth_p50", "growth_p99", "slices")
    agg["runs"] = [{k: r.get(k) for k in kept} for r in runs]
    agg.pop("slices", None)  # per run under "runs"
    agg["lost"] = sum(r.get("lost", 0) or 0 for r in ok)
    return agg


def bench(
    client: KafkaClientConfig,
    workdir: Path,
    run_id: str,
    *,
    rate: float = 1000.0,
    duration_s: float = 30.0,
    warmup_s: float = 1.0,
    configs: dict[str, tuple[dict[str, Any], dict[str, Any]]] | None = None,
    repeats: int = 3,
    role: str = "relay",
    table: tuple[str, int] | None = None,
    poll_ms: dict[str, int] | None = None,
    repeated: tuple[str, ...] = REPEATED,
    guarantee: dict[str, str] | None = None,
    optimization: dict[str, str] | None = None,
    sweep: bool = False,
) -> list[dict[str, Any]]:
    """Run each configuration, then repeat the ``repeated`` ones until each has ``repeats`` runs.

    ``configs`` defaults to the shipped settings only (``baseline``); ``sweep=True`` runs every entry of
    ``CONFIGS``. ``role="app"`` puts the Streamhouse enrichment app (table ``(topic, rows)``) where the
    relay was; ``poll_ms`` / ``guarantee`` / ``optimization`` optionally set the runtime's ``poll.ms``,
    ``processing.guarantee`` and ``topology.optimization`` per configuration name.
    """
    configs = configs or (CONFIGS if sweep else {"baseline": CONFIGS["baseline"]})
    order = list(configs)
    order += [n for _ in range(repeats - 1) for n in repeated if n in configs]
    runs: dict[str, list[dict[str, Any]]] = {n: [] for n in configs}
    for i, name in enumerate(order):
        cons, prod = configs[name]
        r = run_one(client, workdir, f"{run_id}{i}", name, cons, prod, rate=rate, duration_s=duration_s,
                    warmup_s=warmup_s, role=role, table=table, poll_ms=(poll_ms or {}).get(name),
                    guarantee=(guarantee or {}).get(name),
                    optimization=(optimization or {}).get(name))  # fmt: skip
        per_slice = " ".join(f"{s['p50_ms']}/{s['p99_ms']}" for s in r.get("slices") or [])
        print(f"  {role} {name:<22} p50 {r.get('p50_ms')} ms  p99 {r.get('p99_ms')} ms  "
              f"p999 {r.get('p999_ms')} ms  relay cpu {r.get('relay_cpu_pct')}%  "
              f"per {SLICE_S:g} s (p50/p99): {per_slice}", flush=True)  # fmt: skip
        runs[name].append(r)
    out = [aggregate(n, rs) for n, rs in runs.items()]
    base = next((r for r in out if r.get("config") == "baseline" and r.get("status") == "ok"), None)
    for r in out:
        if base is not None and r.get("status") == "ok":
            r["p50_vs_baseline"] = round(r["p50_ms"] / base["p50_ms"], 2)
            r["p99_vs_baseline"] = round(r["p99_ms"] / base["p99_ms"], 2)
    return out


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(child_main())
