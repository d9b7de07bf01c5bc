"""Bytewax 0.21.1 as a benchmark peer (``benchmarks/peer_flows/bytewax_flow.py``, its own venv).

The flow runs as a child process with ``benchmarks/.venv-bytewax/bin/python`` (created on first use by
``benchmarks/peer_venvs.py``), one worker, and is timed from outside like every system: the flow writes
the time of its first decoded input record, the harness notes when the expected number of outputs is on
the broker. Source and sink get the embedded-broker settings of ``KafkaClientConfig`` (librdkafka
names, as Quix gets them). Count and enrichment emit one output per input; the windowed count and the
stream-stream join are not run (``UNSUPPORTED`` says why).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from benchmarks import peer_venvs
from benchmarks.common import ensure_topics, not_available
from benchmarks.timed_child import run_timed_child

SYSTEM = "bytewax"
WORKLOADS = ("count", "enrichment")
UNSUPPORTED = {
    "windowed-count": "Bytewax's window operators (count_window, fold_window) emit a window once, when the "
    "watermark closes it, not one output per update; timing it to the final values needs the live-produced "
    "protocol of the coalescing peers, not built for Bytewax yet",
    "stream-stream-join": "Bytewax has no interval join (+-5 min around each order); join_window joins "
    "within fixed windows, a different result",
}
FLOW = Path(__file__).resolve().parents[1] / "peer_flows" / "bytewax_flow.py"


def availability() -> str | None:
    got = peer_venvs.ensure(peer_venvs.BYTEWAX)
    return got if isinstance(got, str) else None


def client_settings(client: Any) -> dict[str, Any]:
    """The embedded-broker settings librdkafka understands in both a consumer and a producer."""
    conf = client.consumer("bench-bytewax")
    keep = ("session.timeout.ms", "heartbeat.interval.ms", "fetch.wait.max.ms", "fetch.queue.backoff.ms")
    return {k: conf[k] for k in keep if k in conf}


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
) -> dict[str, Any]:
    """One workload as a child process: input events / (expected-th output - first input); unverified."""
    if workload not in WORKLOADS:
        return not_available(SYSTEM, workload, input_events, UNSUPPORTED.get(workload, "not implemented"))
    reason = availability()
    if reason:
        return not_available(SYSTEM, workload, input_events, reason)
    output = f"bench-{tag}-out"
    ensure_topics(client, [output])
    stats = workdir / f"{tag}.stats.json"
    settings = client_settings(client)
    cmd = [
        str(peer_venvs.BYTEWAX.python), str(FLOW), workload, "--bootstrap", client.bootstrap_servers,
        "--input", inputs[0], *(["--input2", inputs[1]] if len(inputs) > 1 else []),
        "--output", output, "--stats", str(stats), "--config", json.dumps(settings),
    ]  # fmt: skip
    return run_timed_child(
        client, system=SYSTEM, workload=workload, cmd=cmd, output_topic=output,
        input_events=input_events, expected_outputs=expected_outputs, stats_path=stats,
        log_path=workdir / f"{tag}.log", timeout_s=timeout_s, terminate_when_done=True,
        env={"PYTHONPATH": ""},
        extra={"version": peer_venvs.versions(peer_venvs.BYTEWAX),
               "settings": {"workers": 1, "recovery": "none (state in memory, no offsets committed)",
                            "epoch_interval": "default (10 s)", "client": settings,
                            "python": sys.version.split()[0]}},
    )  # fmt: skip
