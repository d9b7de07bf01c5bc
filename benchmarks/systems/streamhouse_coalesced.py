"""Streamhouse with the record cache on, timed like the coalescing peers (``benchmarks/coalesced.py``).

With the cache (Kafka Streams' default, ``statestore.cache.max.bytes`` 10 MB) the count and the
windowed count forward one collapsed update per key (window) and commit interval instead of one per
input: the same shape of output as Pathway's per-tick batches. So this entry runs the edge's benchmark
apps (``streamhouse_count.py``, ``streamhouse_windowed.py``) with ``--caching`` under Pathway's
protocol -- warm-up record first, the N events produced while it runs, the clock stopped when every key
holds its true final value -- at the commit interval equal to Pathway's 1 s tick. Its outputs are
upserts (a KTable's changelog): each replaces the key's value in the watcher.

Run by the peers hook (``benchmarks/systems/peers.py``) as one more system beside Pathway.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any

from benchmarks.coalesced import run_coalesced
from benchmarks.common import COMMIT_INTERVAL_S, DEFAULT_KEYS, not_available
from benchmarks.systems.pathway_peer import _count, _warmup

SYSTEM = "streamhouse-edge-cached"
WORKLOADS = ("count", "windowed-count")
COALESCES = True
UNSUPPORTED = {
    "enrichment": "a stream-table join has no store to cache: one output per input (see streamhouse-edge)",
    "stream-stream-join": "a stream-stream join has no record cache: one output per join (streamhouse-edge)",
}


def availability() -> str | None:
    return None


def _windowed(topic: str, n: int, keys: int) -> tuple[Any, dict[Hashable, Counter[Hashable]]]:
    """The windowed input and every (user, window start)'s final count under Kafka's lateness rule
    (stream time per partition: a record whose window closed is dropped, as the edge drops it)."""
    import numpy as np

    from benchmarks.event_time import WINDOW_MS, generate_windowed

    recs, wt = generate_windowed(n, keys)
    final = wt.expected("partition")
    truth: dict[Hashable, Counter[Hashable]] = {}
    for k, col in zip(*np.nonzero(final), strict=True):
        start = (wt.first_window + int(col)) * WINDOW_MS
        truth[(f"user-{int(k):05d}", start)] = Counter({int(final[k, col]): 1})

    def records() -> Iterable[tuple[str, bytes, bytes, int | None]]:
        return ((topic, k, v, ts) for k, v, ts in recs)

    return records, truth


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
    size: int | None = None,
    keys: int = DEFAULT_KEYS,
) -> dict[str, Any]:
    """One workload with the record cache on, timed to every key's final value."""
    if workload not in WORKLOADS:
        return not_available(SYSTEM, workload, input_events, UNSUPPORTED.get(workload, "not implemented"))
    n = size or input_events
    topic, output = f"bench-{tag}-in", f"bench-{tag}-out"
    ms = int(COMMIT_INTERVAL_S * 1000)
    common = [
        "--bootstrap", client.bootstrap_servers, "--profile", client.profile.value, "--input", topic,
        "--output", output, "--app-id", f"bench-{tag}", "--state-dir", str(workdir / f"{tag}-state"),
        "--stats", str(workdir / f"{tag}.stats.json"), "--commit-interval-ms", str(ms), "--caching",
    ]  # fmt: skip
    if workload == "count":
        records, truth, _ = _count(topic, n, keys)
        warm = [_warmup(topic, None)]
        cmd = [sys.executable, "-m", "benchmarks.systems.streamhouse_count", "--app", "count", *common]

        def decode(v: dict[str, Any]) -> tuple[Any, Any, None]:
            return v["user"], v["count"], None

    else:
        from benchmarks.event_time import BASE_MS

        records, truth = _windowed(topic, n, keys)
        warm = [_warmup(topic, BASE_MS)]
        cmd = [sys.executable, "-m", "benchmarks.systems.streamhouse_windowed", "--app", "windowed", *common]

        def decode(v: dict[str, Any]) -> tuple[Any, Any, None]:
            return (v["user"], v["start"]), v["count"], None

    return run_coalesced(
        client, system=SYSTEM, workload=workload, cmd=cmd, input_topics=[topic], output_topic=output,
        records=records, warmup=warm, truth=truth, decode=decode, events=input_events,
        log_path=workdir / f"{tag}.log", timeout_s=timeout_s,
        extra={"settings": {"record_cache": "on (statestore.cache.max.bytes default)",
                            "commit_interval_ms": ms, "processing_guarantee": "at_least_once",
                            "state": "RocksDB with changelog"},
               "input": {"topics": [topic], "events": input_events, "produced": "while the system runs"}},
    )  # fmt: skip
