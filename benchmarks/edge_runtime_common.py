"""Shared setup of the edge runtime benchmarks: a broker, a pre-filled changelog, the results file."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from edge.kafka import KafkaClientConfig
from edge.processor.partitioner import default_partition

ROOT = Path(__file__).resolve().parent.parent
RESULT_FILE = ROOT / "benchmarks" / "results" / "edge_runtime.json"


def fill_changelog(client: KafkaClientConfig, topic: str, partitions: int, per_partition: int) -> int:
    """Write ``per_partition`` distinct keys (long counts) into each changelog partition, keyed so each
    key lives on the partition murmur2 would put it (queries stay correct)."""
    p = Producer(client.producer(**{"linger.ms": 20, "batch.num.messages": 10000}))
    filled = [0] * partitions
    i = 0
    value = (1).to_bytes(8, "big", signed=True)
    target = per_partition * partitions
    written = 0
    while written < target:
        key = b"key-%08d" % i
        i += 1
        part = default_partition(key, partitions)
        if filled[part] >= per_partition:
            continue
        filled[part] += 1
        while True:
            try:
                p.produce(topic, value, key, partition=part)
                break
            except BufferError:
                p.poll(0.1)
        written += 1
        if written % 20000 == 0:
            p.poll(0)
    # a commit marker with no input positions ends each partition: the records count as committed state
    # (edge.runtime.markers; without it an at-least-once restore treats them as uncommitted)
    from edge.runtime.markers import MARKER_KEYS, encode_marker

    for part in range(partitions):
        p.produce(topic, encode_marker({}), MARKER_KEYS[0], partition=part)
    assert p.flush(60) == 0
    return written


def save_results(section: str, data: dict[str, Any]) -> dict[str, Any]:
    RESULT_FILE.parent.mkdir(parents=True, exist_ok=True)
    try:
        doc = json.loads(RESULT_FILE.read_text())
    except (FileNotFoundError, ValueError):
        doc = {}
    doc[section] = {
        **data,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "broker": "embedded (Tansu, in-memory)",
    }
    RESULT_FILE.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    return doc[section]
