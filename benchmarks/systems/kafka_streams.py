"""Kafka Streams 4.1.1 as a benchmark peer: the edge's benchmark topologies in Java, on the same broker.

The app is ``jvm/kafka-streams-bench`` (built by ``make install`` through
``scripts/install_kafka_streams_bench.py``; the build record says why when it could not be built). Each
workload runs as ``java -cp 'classes:libs/*' io.streamhouse.bench.KafkaStreamsBench <workload> ...``, a
direct child of the harness, so its CPU seconds (JIT and GC threads included) come from ``wait4`` like
every other system's. It is timed from outside: the app writes the wall-clock time of its first input
record (a ``peek`` at the source), the harness notes when the expected number of outputs is on the broker.

Settings, as the edge's benchmark apps: at-least-once, ``commit.interval.ms=1000``, record caches off
(``statestore.cache.max.bytes=0``: one output per update), one stream thread, RocksDB stores with
changelogs; the embedded-broker consumer settings of ``KafkaClientConfig`` in their Java names. The rest
is Kafka's defaults (an idempotent producer with ``acks=all``; Streams sets the producer's ``linger.ms``
to 100) -- see docs/benchmarks.md, "Peers", for what that makes unfair.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from benchmarks.common import COMMIT_INTERVAL_S, ensure_topics, not_available
from benchmarks.timed_child import run_timed_child

SYSTEM = "kafka-streams"
VERSION = "4.1.1"
#: workload name in the results -> the app's workload argument
APPS = {"count": "count", "windowed-count": "windowed", "enrichment": "enrich", "stream-stream-join": "join"}
WORKLOADS = tuple(APPS)
UNSUPPORTED: dict[str, str] = {}


def _install() -> Any:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    import install_kafka_streams_bench as installer

    return installer


def availability() -> str | None:
    """None when the app is built and ``java`` runs; otherwise why it is not available."""
    if not shutil.which("java"):
        return "no `java` on PATH (Kafka Streams needs a JRE 17+)"
    installer = _install()
    rec = installer.read_record()
    if rec.get("status") != "ok":
        rec = installer.build(installer.default_dest())  # cached; builds once if make install did not
    if rec.get("status") != "ok":
        return f"the Kafka Streams app could not be built: {rec.get('reason')}"
    return None


def java_client_settings(client: Any) -> list[str]:
    """The embedded-broker consumer settings (``KafkaClientConfig.consumer()``) in Kafka's Java names."""
    conf = client.consumer("probe")
    names = {"session.timeout.ms": "session.timeout.ms", "heartbeat.interval.ms": "heartbeat.interval.ms",
             "fetch.wait.max.ms": "fetch.max.wait.ms"}  # fmt: skip
    out = [f"consumer.{java}={conf[rd]}" for rd, java in names.items() if rd in conf]
    out.append("consumer.allow.auto.create.topics=false")
    return out


def command(
    client: Any,
    *,
    workload: str,
    inputs: list[str],
    output: str,
    app_id: str,
    state_dir: Path,
    stats: Path,
    retention_ms: int | None = None,
    threads: int = 1,
) -> tuple[list[str], dict[str, Any]]:
    """The app's command line for ``workload`` and the settings it runs with (for the result).
    ``threads``: ``num.stream.threads`` (one per input partition to use as many cores)."""
    installer = _install()
    dest = installer.default_dest()
    ms = int(COMMIT_INTERVAL_S * 1000)
    settings = java_client_settings(client)
    if threads != 1:
        settings.append(f"num.stream.threads={threads}")
    cmd = [
        "java", "-XX:+UseParallelGC", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp", f"{dest / 'classes'}:{dest / 'libs'}/*", installer.MAIN_CLASS, APPS[workload],
        "--bootstrap", client.bootstrap_servers, "--input", inputs[0],
        *(["--input2", inputs[1]] if len(inputs) > 1 else []),
        "--output", output, "--app-id", app_id, "--state-dir", str(state_dir),
        "--stats", str(stats), "--commit-interval-ms", str(ms),
        *(["--retention-ms", str(retention_ms)] if retention_ms is not None else []),
        *[a for s in settings for a in ("-c", s)],
    ]  # fmt: skip
    rec = installer.read_record()
    described = {
        "version": rec.get("kafka_streams_version", VERSION),
        "settings": {"processing_guarantee": "at_least_once", "commit_interval_ms": ms,
                     "statestore.cache.max.bytes": 0, "num.stream.threads": threads,
                     "jvm": "-XX:+UseParallelGC, default heap", "client": settings,
                     "build": json.dumps({k: rec.get(k) for k in ("main_class", "jars")})},
    }  # fmt: skip
    return cmd, described


def run(
    client: Any,
    *,
    workload: str,
    inputs: list[str],
    input_events: int,
    expected_outputs: int,
    workdir: Path,
    tag: str,
    timeout_s: float,
    retention_ms: int | None = None,
) -> dict[str, Any]:
    """One workload as a child JVM: input events / (expected-th output - first input); unverified."""
    reason = availability()
    if reason:
        return not_available(SYSTEM, workload, input_events, reason)
    output = f"bench-{tag}-out"
    ensure_topics(client, [output])
    stats = workdir / f"{tag}.stats.json"
    cmd, described = command(
        client, workload=workload, inputs=inputs, output=output, app_id=f"bench-{tag}",
        state_dir=workdir / f"{tag}-state", stats=stats, retention_ms=retention_ms,
    )  # fmt: skip
    return run_timed_child(
        client, system=SYSTEM, workload=workload, cmd=cmd, output_topic=output,
        input_events=input_events, expected_outputs=expected_outputs, stats_path=stats,
        log_path=workdir / f"{tag}.log", timeout_s=timeout_s, terminate_when_done=True, extra=described,
    )  # fmt: skip
