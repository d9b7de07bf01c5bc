"""The Bytewax peer's dataflows, run by ``benchmarks/systems/bytewax_peer.py`` with the Bytewax venv's
interpreter (``benchmarks/.venv-bytewax``; only the standard library, bytewax, confluent-kafka, orjson).

    count       kop.input -> map(decode JSON, key by user) -> stateful_map(count) -> {"user","count"}
    enrichment  events and users merged, tagged -> stateful_flat_map per key (a user row is the state,
                an event emits event + tier/region: a left join, None before the row arrives)

One output per input, like the edge's apps with caching off. Bytewax's Kafka source assigns partitions
itself (no consumer group, no offset commits: resuming is the job of Bytewax's own recovery snapshots,
not configured here), so the state lives in memory only. The stats file gets the wall-clock time of the
first decoded input record (the clock's start); SIGTERM ends the process.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import bytewax.operators as op
import orjson
from bytewax.connectors.kafka import KafkaSinkMessage
from bytewax.connectors.kafka import operators as kop
from bytewax.dataflow import Dataflow
from bytewax.run import cli_main
from confluent_kafka import OFFSET_BEGINNING


def write_stats(path: str, data: dict[str, Any]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def build(a: argparse.Namespace) -> Dataflow:
    cfg: dict[str, str] = {k: str(v) for k, v in json.loads(a.config).items()}
    brokers = [a.bootstrap]
    loads, dumps = orjson.loads, orjson.dumps
    first = [True]

    def decode(msg: Any) -> tuple[str, Any]:
        if first[0]:
            first[0] = False
            write_stats(a.stats, {"first_consumed_at": time.time()})
        return msg.key.decode(), loads(msg.value)

    flow = Dataflow(f"bench-{a.workload}")
    events = kop.input("in", flow, brokers=brokers, topics=[a.input], starting_offset=OFFSET_BEGINNING,
                       add_config=cfg)  # fmt: skip
    keyed = op.map("decode", events.oks, decode)
    if a.workload == "count":

        def count(state: int | None, _event: Any) -> tuple[int, int]:
            n = (state or 0) + 1
            return n, n

        def encode(kv: tuple[str, int]) -> Any:
            return KafkaSinkMessage(kv[0].encode(), dumps({"user": kv[0], "count": kv[1]}))

        out = op.map("encode", op.stateful_map("count", keyed, count), encode)
    elif a.workload == "enrichment":
        users = kop.input("users", flow, brokers=brokers, topics=[a.input2], starting_offset=OFFSET_BEGINNING,
                          add_config=cfg)  # fmt: skip
        rows = op.map("decode-users", users.oks, lambda m: (m.key.decode(), ("t", loads(m.value))))
        tagged = op.map("tag", keyed, lambda kv: (kv[0], ("e", kv[1])))
        both = op.merge("merge", rows, tagged)

        def enrich(user: Any, item: tuple[str, Any]) -> tuple[Any, list[Any]]:
            kind, value = item
            if kind == "t":
                return value, []
            value["tier"] = user["tier"] if user else None
            value["region"] = user["region"] if user else None
            return user, [value]

        enriched = op.stateful_flat_map("enrich", both, enrich)
        out = op.map("encode", enriched, lambda kv: KafkaSinkMessage(kv[0].encode(), dumps(kv[1])))
    else:
        raise SystemExit(f"unknown workload {a.workload}")
    kop.output("out", out, brokers=brokers, topic=a.output, add_config=cfg)
    return flow


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload")
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--input2", default="")
    ap.add_argument("--output", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--config", default="{}", help="librdkafka settings (JSON) for the source and the sink")
    a = ap.parse_args()
    cli_main(build(a), workers_per_process=1)


if __name__ == "__main__":
    main()
