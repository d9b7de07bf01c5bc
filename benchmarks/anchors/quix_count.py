"""Anchor: the count workload in Quix Streams, what a Python user would most likely pick instead.

Quix Streams pins its own confluent-kafka, so the app runs as a child process with the interpreter of
``benchmarks/.venv-quix`` (see ``benchmarks/quix_venv.py``). The app counts per key in its RocksDB
state store with a changelog topic (Quix's defaults), at-least-once, and writes one JSON output per
input. It gets the same embedded-broker client settings as every other system through
``consumer_extra_config`` / ``producer_extra_config``.

This file is two things: the child (run as a script by the quix venv's python — it must import only the
standard library and quixstreams at module level) and the harness side, ``bench()``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

SYSTEM = "quix-streams"
WORKLOAD = "count"
#: Quix manages these itself; passing them as extra config is rejected or overridden.
_QUIX_OWNED = {"bootstrap.servers", "group.id", "enable.auto.commit", "auto.offset.reset"}


def child_main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--commit-interval", type=float, required=True)
    ap.add_argument("--consumer-extra", required=True, help="JSON object")
    ap.add_argument("--producer-extra", required=True, help="JSON object")
    ap.add_argument("--topic-config", required=True, help="JSON object: extra config of created topics")
    a = ap.parse_args(argv)

    from quixstreams import Application
    from quixstreams.models.topics import TopicConfig

    app = Application(
        broker_address=a.bootstrap,
        consumer_group=a.group,
        auto_offset_reset="earliest",
        commit_interval=a.commit_interval,
        consumer_extra_config=json.loads(a.consumer_extra),
        producer_extra_config=json.loads(a.producer_extra),
        state_dir=a.state_dir,
        processing_guarantee="at-least-once",
        use_changelog_topics=True,
        loglevel="WARNING",
    )
    topic_extra = json.loads(a.topic_config)
    cfg = TopicConfig(num_partitions=1, replication_factor=1, extra_config=topic_extra)
    inp = app.topic(a.input, key_deserializer="bytes", value_deserializer="json", config=cfg)
    out = app.topic(a.output, key_serializer="bytes", value_serializer="json", config=cfg)

    stats_path = Path(a.stats)
    first = [True]

    def count(value: dict[str, Any], state: Any) -> dict[str, Any]:
        if first[0]:
            first[0] = False
            tmp = stats_path.with_suffix(".tmp")
            tmp.write_text(json.dumps({"first_consumed_at": time.time()}))
            tmp.replace(stats_path)
        c = state.get("count", 0) + 1
        state.set("count", c)
        return {"user": value["user"], "count": c}

    sdf = app.dataframe(inp)
    sdf = sdf.apply(count, stateful=True)
    sdf.to_topic(out)
    app.run()  # until SIGTERM from the harness; Quix commits and closes cleanly on it
    return 0


def bench(
    client: Any, input_topic: str, events: int, workdir: Path, run_id: str, timeout_s: float
) -> dict[str, Any]:
    """Harness side: make sure the pinned quix venv exists, run the app, time it from outside."""
    from benchmarks.common import (
        COMMIT_INTERVAL_S,
        TOPIC_RETENTION,
        ensure_topics,
        not_available,
        run_count_child,
    )
    from benchmarks.quix_venv import QUIX_VERSION, QuixVenvError, ensure_quix_venv, quix_versions

    try:
        python = ensure_quix_venv()
        versions = quix_versions()
    except (QuixVenvError, OSError, ValueError) as exc:
        return not_available(SYSTEM, WORKLOAD, events, f"quix venv: {exc}", quixstreams=QUIX_VERSION)
    output = f"bench-{run_id}-quix-out"
    ensure_topics(client, [output])
    consumer_extra = {k: v for k, v in client.consumer().items() if k not in _QUIX_OWNED}
    producer_extra = {k: v for k, v in client.producer().items() if k not in _QUIX_OWNED}
    stats = workdir / f"{run_id}-quix.stats.json"
    state_dir = workdir / f"{run_id}-quix-state"
    cmd = [
        str(python), str(Path(__file__).resolve()),
        "--bootstrap", client.bootstrap_servers, "--input", input_topic, "--output", output,
        "--group", f"bench-{run_id}-quix", "--state-dir", str(state_dir), "--stats", str(stats),
        "--commit-interval", str(COMMIT_INTERVAL_S),
        "--consumer-extra", json.dumps(consumer_extra), "--producer-extra", json.dumps(producer_extra),
        "--topic-config", json.dumps(client.topic_config(TOPIC_RETENTION)),
    ]  # fmt: skip
    return run_count_child(
        client, system=SYSTEM, workload=WORKLOAD, cmd=cmd, output_topic=output, events=events,
        stats_path=stats, log_path=workdir / f"{run_id}-quix.log", timeout_s=timeout_s,
        terminate_when_done=True, env={"PYTHONPATH": ""},
        extra={"versions": versions,
               "settings": {"commit_interval_s": COMMIT_INTERVAL_S, "guarantee": "at-least-once",
                            "state": "RocksDB (Quix default) with changelog topic",
                            "consumer_extra_config": consumer_extra,
                            "producer_extra_config": producer_extra}},
    )  # fmt: skip


if __name__ == "__main__":
    # Child mode: never import the harness here (it needs Streamhouse's confluent-kafka, not Quix's).
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) != str(Path(__file__).resolve().parent)]
    raise SystemExit(child_main())
