"""Anchor: the windowed count in Quix Streams, ``sdf.tumbling_window(60_000).count().current()``.

Same setup as the count anchor (``quix_count.py``): the pinned ``quixstreams`` in
``benchmarks/.venv-quix``, RocksDB state with its changelog topic, at-least-once, 1 s commits, the
embedded-broker client settings through ``consumer_extra_config`` / ``producer_extra_config``. Windows
use the Kafka record timestamp (Quix's default) and Quix's default closing strategy (``"key"``);
``.current()`` emits ``{"start", "end", "value"}`` on every update, keyed by the input key.

The first-consumed probe sits in the value deserializer (orjson, like Quix's own JSON deserializer):
one flag test per record, not an extra dataframe step.

Like ``quix_count.py`` this file is the child (run by the quix venv's python; standard library and
quixstreams only at module level) and the harness side, ``bench()``.
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
WORKLOAD = "windowed-count"
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
    ap.add_argument("--window-ms", type=int, required=True)
    ap.add_argument("--consumer-extra", required=True, help="JSON object")
    ap.add_argument("--producer-extra", required=True, help="JSON object")
    ap.add_argument("--topic-config", required=True, help="JSON object: extra config of created topics")
    a = ap.parse_args(argv)

    from quixstreams import Application
    from quixstreams.models.serializers.json import JSONDeserializer
    from quixstreams.models.topics import TopicConfig

    stats_path = Path(a.stats)

    class ProbeJSONDeserializer(JSONDeserializer):
        """Quix's JSON deserializer (orjson when installed) that notes when the first record arrives."""

        first = True

        def __call__(self, value: bytes, ctx: Any) -> Any:
            if self.first:
                self.first = False
                tmp = stats_path.with_suffix(".tmp")
                tmp.write_text(json.dumps({"first_consumed_at": time.time()}))
                tmp.replace(stats_path)
            return super().__call__(value, ctx)

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
    cfg = TopicConfig(num_partitions=1, replication_factor=1, extra_config=json.loads(a.topic_config))
    inp = app.topic(a.input, key_deserializer="bytes", value_deserializer=ProbeJSONDeserializer(), config=cfg)
    out = app.topic(a.output, key_serializer="bytes", value_serializer="json", config=cfg)
    sdf = app.dataframe(inp)
    sdf = sdf.tumbling_window(a.window_ms).count().current()
    sdf.to_topic(out)
    app.run()  # until SIGTERM from the harness
    return 0


def bench(
    client: Any,
    input_topic: str,
    events: int,
    expected_outputs: int,
    workdir: Path,
    run_id: str,
    timeout_s: float,
) -> dict[str, Any]:
    """Harness side: the pinned quix venv, the app as a child, timed from outside (unverified here)."""
    from benchmarks.common import COMMIT_INTERVAL_S, TOPIC_RETENTION, ensure_topics, not_available
    from benchmarks.event_time import WINDOW_MS
    from benchmarks.quix_venv import QUIX_VERSION, QuixVenvError, ensure_quix_venv, quix_versions
    from benchmarks.timed_child import run_timed_child

    try:
        python = ensure_quix_venv()
        versions = quix_versions()
    except (QuixVenvError, OSError, ValueError) as exc:
        return not_available(SYSTEM, WORKLOAD, events, f"quix venv: {exc}", quixstreams=QUIX_VERSION)
    output = f"bench-{run_id}-quixw-out"
    ensure_topics(client, [output])
    consumer_extra = {k: v for k, v in client.consumer().items() if k not in _QUIX_OWNED}
    producer_extra = {k: v for k, v in client.producer().items() if k not in _QUIX_OWNED}
    stats = workdir / f"{run_id}-quixw.stats.json"
    cmd = [
        str(python), str(Path(__file__).resolve()),
        "--bootstrap", client.bootstrap_servers, "--input", input_topic, "--output", output,
        "--group", f"bench-{run_id}-quixw", "--state-dir", str(workdir / f"{run_id}-quixw-state"),
        "--stats", str(stats), "--commit-interval", str(COMMIT_INTERVAL_S), "--window-ms", str(WINDOW_MS),
        "--consumer-extra", json.dumps(consumer_extra), "--producer-extra", json.dumps(producer_extra),
        "--topic-config", json.dumps(client.topic_config(TOPIC_RETENTION)),
    ]  # fmt: skip
    return run_timed_child(
        client, system=SYSTEM, workload=WORKLOAD, cmd=cmd, output_topic=output, input_events=events,
        expected_outputs=expected_outputs, stats_path=stats, log_path=workdir / f"{run_id}-quixw.log",
        timeout_s=timeout_s, terminate_when_done=True, env={"PYTHONPATH": ""},
        extra={"versions": versions,
               "settings": {"commit_interval_s": COMMIT_INTERVAL_S, "guarantee": "at-least-once",
                            "window": f"tumbling_window({WINDOW_MS}).count().current()",
                            "closing_strategy": "key (Quix default)",
                            "state": "RocksDB (Quix default) with changelog topic",
                            "consumer_extra_config": consumer_extra,
                            "producer_extra_config": producer_extra}},
    )  # fmt: skip


if __name__ == "__main__":
    # Child mode: never import the harness here (it needs Streamhouse's confluent-kafka, not Quix's).
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) != str(Path(__file__).resolve().parent)]
    raise SystemExit(child_main())
