"""The Pathway peer's programs, run by ``benchmarks/systems/pathway_peer.py`` with the Pathway venv's
interpreter (``benchmarks/.venv-pathway``; only the standard library and pathway).

    count       read JSON events -> groupby(user).reduce(count) -> write JSON
    windowed    windowby(ts, tumbling 1 min, instance=user).reduce(user, start, count) -> write JSON
                (no cutoff: Pathway's default keeps every window open, so no record counts as late)
    join        orders.interval_join(payments, ts, ts, interval(-5 min, +5 min), order == order)

Pathway computes in minibatches (``autocommit_duration_ms``) and writes each changed row once per
batch, as an insertion (``diff`` 1) and a retraction (``diff`` -1) of the row it replaces: it
coalesces. The harness (``benchmarks/coalesced.py``) times it to the moment every key holds its final
value. No persistence is configured: the state lives in memory.
"""

from __future__ import annotations

import argparse
import json

import pathway as pw


class Event(pw.Schema):
    user: str
    seq: int
    amount: float
    kind: str
    ts: int


class Order(pw.Schema):
    order: int
    customer: int
    amount: float
    ts: int


class Payment(pw.Schema):
    order: int
    paid: float
    ts: int


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("workload", choices=["count", "windowed-count", "stream-stream-join"])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--input2", default="")
    ap.add_argument("--output", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--autocommit-ms", type=int, default=1000)
    ap.add_argument("--config", default="{}", help="librdkafka settings (JSON) for reading and writing")
    a = ap.parse_args()
    extra = {k: str(v) for k, v in json.loads(a.config).items()}
    rd = {"bootstrap.servers": a.bootstrap, "group.id": a.group, "auto.offset.reset": "earliest", **extra}
    wr = {"bootstrap.servers": a.bootstrap}

    def read(topic: str, schema: type[pw.Schema]) -> pw.Table:
        return pw.io.kafka.read(
            rd, topic, schema=schema, format="json", autocommit_duration_ms=a.autocommit_ms
        )

    if a.workload == "count":
        ev = read(a.input, Event)
        out = ev.groupby(ev.user).reduce(ev.user, count=pw.reducers.count())
    elif a.workload == "windowed-count":
        ev = read(a.input, Event)
        out = ev.windowby(ev.ts, window=pw.temporal.tumbling(duration=60_000), instance=ev.user).reduce(
            user=pw.this._pw_instance, start=pw.this._pw_window_start, count=pw.reducers.count()
        )
    else:
        orders, payments = read(a.input, Order), read(a.input2, Payment)
        out = orders.interval_join(
            payments, orders.ts, payments.ts, pw.temporal.interval(-300_000, 300_000),
            orders.order == payments.order,
        ).select(
            order=orders.order, customer=orders.customer, amount=orders.amount, paid=payments.paid,
            dt=payments.ts - orders.ts,
        )  # fmt: skip
    pw.io.kafka.write(out, wr, a.output, format="json")
    pw.run(monitoring_level=pw.MonitoringLevel.NONE)


if __name__ == "__main__":
    main()
