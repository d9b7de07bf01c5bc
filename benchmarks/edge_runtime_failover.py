"""Failover time: kill -9 one of two instances -> first output from the survivor for a moved partition.

    .venv/bin/python -m benchmarks.edge_runtime_failover [--records 200000] [--repeats 2]

Two count-app instances (real processes, 4 partitions) share a changelog pre-filled with ``--records``
distinct keys, so a takeover without a warm copy must restore about half of them. For
``num.standby.replicas`` 0 and 1: wait until both run (and, with standbys, until the survivor's standby
copies are warm), SIGKILL one instance, immediately produce one probe record per partition it owned, and
time until the survivor's output for each probe is on the output topic. The figure includes failure
detection (``session.timeout.ms`` = 2 s on the embedded profile) and the group rebalance.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.edge_runtime_common import fill_changelog, save_results
from edge.broker import local_broker, profile_for
from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.processor.partitioner import default_partition
from tests.edge.runtime.harness import Instance, OutputReader, produce, wait_assignment


def probe_keys(partitions: list[int], total: int, tag: str) -> dict[int, str]:
    keys: dict[int, str] = {}
    i = 0
    while len(keys) < len(partitions):
        key = f"probe-{tag}-{i}"
        p = default_partition(key.encode(), total)
        if p in partitions and p not in keys:
            keys[p] = key
        i += 1
    return keys


def run_once(client: KafkaClientConfig, tmp: Path, standbys: int, records: int, run: int) -> dict:
    parts = 4
    tag = f"s{standbys}r{run}"
    src, out, app = f"in-{tag}", f"out-{tag}", f"failover-{tag}"
    create_topics(client, [TopicSpec(src, parts), TopicSpec(out, parts)])
    cfg = {"num.standby.replicas": standbys, "commit.interval.ms": 200, "restore.batch.records": 10000}
    a = Instance(
        client,
        app_id=app,
        state_dir=tmp / f"{tag}-a",
        in_topic=src,
        out_topic=out,
        config=cfg,
        log_dir=tmp,
        name=f"{tag}-a",
    )
    try:
        a.wait_running(120)  # creates the changelog topic
        fill_changelog(client, f"{app}-counts-changelog", parts, records // parts)
        b = Instance(
            client,
            app_id=app,
            state_dir=tmp / f"{tag}-b",
            in_topic=src,
            out_topic=out,
            config=cfg,
            log_dir=tmp,
            name=f"{tag}-b",
        )
        owned = wait_assignment([a, b], parts, timeout=180)
        victim_parts = owned[a.server]
        if standbys:
            deadline = time.monotonic() + 120
            while (
                b.metric("streamhouse_edge_standby_records_applied_total")
                < records * len(victim_parts) / parts
            ):
                if time.monotonic() > deadline:
                    raise AssertionError("standbys did not warm up")
                time.sleep(0.2)
        reader = OutputReader(client, out, f"reader-{tag}", committed=False)
        reader.poll(1.0)
        probes = probe_keys(victim_parts, parts, tag)
        restored_before = b.metric("streamhouse_edge_restored_records_total")
        a.kill9()
        killed = time.monotonic()
        produce(client, src, [(k, {"probe": True}) for k in probes.values()])
        reader.wait_for(
            lambda r: {k for k, *_ in r.records} >= set(probes.values()), timeout=180, what="probes"
        )
        seen = {k: t for k, _, t, _ in reader.records if k in probes.values()}
        reader.close()
        restored = b.metric("streamhouse_edge_restored_records_total") - restored_before
        first = min(seen.values()) - killed
        last = max(seen.values()) - killed
        b.stop()
        return {
            "first_output_s": round(first, 3),
            "all_moved_partitions_s": round(last, 3),
            "takeover_restored_records": int(restored),
        }
    finally:
        a.stop()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="edge-failover-bench-"))
    results = {}
    with local_broker(log_dir=tmp) as broker:
        client = KafkaClientConfig(broker.bootstrap_servers, profile_for(broker.kind))
        for standbys in (0, 1):
            runs = [run_once(client, tmp, standbys, args.records, r) for r in range(args.repeats)]
            firsts = [r["first_output_s"] for r in runs]
            results[f"standbys_{standbys}"] = {
                "runs": runs,
                "first_output_s_median": round(statistics.median(firsts), 3),
            }
            print(f"num.standby.replicas={standbys}: kill -> first survivor output {firsts} s; runs {runs}")
    save_results(
        "failover" if args.records == 200_000 else f"failover_{args.records}_records",
        {
            "changelog_records": args.records,
            "partitions": 4,
            "instances": 2,
            "session_timeout_ms": 2000,
            "note": "includes failure detection (session timeout) and the group rebalance "
            "on the embedded broker",
            **results,
        },
    )


if __name__ == "__main__":
    main()
