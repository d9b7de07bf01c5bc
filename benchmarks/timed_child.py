"""``run_count_child`` for workloads whose output count is not their input count (windows drop late
records, a join emits one output per matching pair): same child, same outside timing, but the watcher
waits for the *expected* number of outputs and the rate is input records per second."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import run_count_child
from edge.kafka import KafkaClientConfig


def run_timed_child(
    client: KafkaClientConfig,
    *,
    system: str,
    workload: str,
    cmd: Sequence[str],
    output_topic: str,
    input_events: int,
    expected_outputs: int,
    stats_path: Path,
    log_path: Path,
    timeout_s: float,
    terminate_when_done: bool,
    env: Mapping[str, str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``events_per_s = input_events / (t_expected_outputs-th output - t_first_input)``; unverified (the
    caller checks the output against its truth)."""
    r = run_count_child(
        client, system=system, workload=workload, cmd=cmd, output_topic=output_topic,
        events=expected_outputs, stats_path=stats_path, log_path=log_path, timeout_s=timeout_s,
        terminate_when_done=terminate_when_done, verify=False, env=env, extra=extra,
    )  # fmt: skip
    r["events"] = input_events
    r["expected_outputs"] = expected_outputs
    if r.get("events_per_s") and r.get("elapsed_s"):
        r["events_per_s"] = round(input_events / r["elapsed_s"])
        cpu = r.get("child_cpu_s")
        r["cpu_s_per_1m_events"] = round(cpu / input_events * 1e6, 2) if cpu else None
    return r


def unverified(r: dict[str, Any], reason: str) -> dict[str, Any]:
    """A run whose output failed its check: no figure (a fast wrong result is not a result); the rate is
    kept as ``events_per_s_unverified`` and everything else as it was."""
    return {**r, "events_per_s": None, "status": "failed", "reason": reason,
            "events_per_s_unverified": r.get("events_per_s")}  # fmt: skip
