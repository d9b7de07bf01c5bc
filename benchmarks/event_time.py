"""Event-time inputs for the windowed benchmarks, their exact expected results, and the checks.

Two inputs, each produced once per run to topics every system reads, with Kafka record timestamps set to
the event time (so no system needs a timestamp extractor):

* **windowed count** (:func:`prepare_windowed_input`): the count workload's JSON events
  (``user-00000``…, ~100 bytes) with event time advancing ~60 ms per event -- 1,000 events per minute,
  so 1M events span ~1,000 one-minute windows -- in offset order except for 1 % of the records, pushed
  back by up to 5 s (a little disorder: the few of them that cross a window boundary the stream has
  already left arrive after their window closed);
* **stream-stream join** (:func:`prepare_join_input`): ``orders`` and ``payments`` keyed by order id,
  each topic in event-time order; most orders have one payment within ±5 minutes, some none, some two,
  some a payment outside the window.

The expected result is computed while generating, under each system's documented lateness rule, and
the output topics are checked against it completely (every key and window), untimed:

* Kafka Streams / Streamhouse: stream time is per partition (the largest timestamp seen); a record is
  late and dropped when its window's end ``<= stream time - grace``;
* Quix Streams (``closing_strategy="key"``, its default): the same inequality, but with the largest
  timestamp seen *for the record's key*.
"""

from __future__ import annotations

import random
import time
from typing import Any

import numpy as np
import orjson
from confluent_kafka import Producer

from benchmarks.common import (
    DEFAULT_KEYS,
    bulk_producer_config,
    consume_until_eof,
    end_offsets,
    ensure_topics,
    event_key,
)
from edge.kafka import KafkaClientConfig

#: Tumbling windows of one minute, no grace (``TimeWindows.of_size_with_no_grace(60_000)``).
WINDOW_MS = 60_000
#: Event-time density of the windowed input: 1,000 events per minute of event time.
EVENTS_PER_WINDOW = 1_000
#: Share of records pushed back in event time, and by how much at most.
DISORDER_SHARE = 0.01
DISORDER_MAX_MS = 5_000
#: First event time (a minute boundary, so window indexes are easy to read).
BASE_MS = 1_760_000_040_000 - 1_760_000_040_000 % WINDOW_MS

#: Join: ``JoinWindows.of_time_difference_and_grace(300_000, 60_000)``; 1,000 orders per minute.
JOIN_DIFF_MS = 300_000
JOIN_GRACE_MS = 60_000
ORDERS_PER_MINUTE = 1_000


# --------------------------------------------------------------------------------------- windowed


class WindowedTruth:
    """The expected final count of every (key, window) under both lateness rules.

    Counts live in ``keys x windows`` arrays (10k x ~1,000 uint32 = 40 MB), not in dicts.
    """

    def __init__(self, keys: int, first_window: int, windows: int) -> None:
        self.keys = keys
        self.first_window = first_window  # window start / WINDOW_MS of column 0
        self.all = np.zeros((keys, windows), dtype=np.uint32)
        #: (key index, window column) of records each rule drops as late
        self.late: dict[str, list[tuple[int, int]]] = {"partition": [], "key": []}

    def expected(self, rule: str) -> np.ndarray:
        counts = self.all.copy()
        for k, w in self.late[rule]:
            counts[k, w] -= 1
        return counts

    def outputs(self, rule: str, events: int) -> int:
        """Output records with one output per counted input (caching off / ``.current()``)."""
        return events - len(self.late[rule])

    def summary(self, events: int) -> dict[str, Any]:
        return {
            "windows": int(self.all.shape[1]),
            "key_windows": int(np.count_nonzero(self.all)),
            "late_partition_rule": len(self.late["partition"]),
            "late_key_rule": len(self.late["key"]),
            "expected_outputs_partition_rule": self.outputs("partition", events),
            "expected_outputs_key_rule": self.outputs("key", events),
        }


def key_partition(key: bytes, partitions: int) -> int:
    """The partition a keyed record of these inputs goes to: its number (``user-00042``,
    ``order-0000042``) modulo ``partitions``. Explicit, so the truth knows each partition's records (the
    partition rule's stream time is per partition) and every input of a join is co-partitioned."""
    return int(key[key.rindex(b"-") + 1 :]) % partitions


def generate_windowed(
    n: int, keys: int = DEFAULT_KEYS, seed: int = 7, partitions: int = 1
) -> tuple[list[tuple[bytes, bytes, int]], WindowedTruth]:
    """(key, JSON value, timestamp ms) records and their truth; deterministic. With ``partitions`` > 1
    the partition rule's stream time is kept per partition (:func:`key_partition`)."""
    rng = random.Random(seed)
    names = [event_key(k) for k in range(keys)]
    step = WINDOW_MS / EVENTS_PER_WINDOW
    stamps = []
    for i in range(n):
        ts = BASE_MS + int(i * step)
        if rng.random() < DISORDER_SHARE:
            ts = max(BASE_MS, ts - rng.randrange(1, DISORDER_MAX_MS + 1))
        stamps.append(ts)
    first_window = BASE_MS // WINDOW_MS
    windows = max(stamps) // WINDOW_MS - first_window + 1 if stamps else 1
    truth = WindowedTruth(keys, first_window, windows)
    partition_time = [-1] * partitions
    key_time = [-1] * keys
    late_p, late_k = truth.late["partition"], truth.late["key"]
    out = []
    dumps = orjson.dumps
    for i, ts in enumerate(stamps):
        k = rng.randrange(keys)
        w = ts // WINDOW_MS
        col = w - first_window
        truth.all[k, col] += 1
        end = (w + 1) * WINDOW_MS
        p = k % partitions  # key_partition(names[k], partitions)
        if ts > partition_time[p]:
            partition_time[p] = ts
        if end <= partition_time[p]:
            late_p.append((k, col))
        if ts > key_time[k]:
            key_time[k] = ts
        elif end <= key_time[k]:
            late_k.append((k, col))
        key = names[k]
        value = dumps(
            {
                "user": key.decode(),
                "seq": i,
                "amount": (i * 7919) % 10_000 / 100,
                "kind": "click" if i % 3 else "view",
                "ts": ts,
            }
        )
        out.append((key, value, ts))
    return out, truth


def produce_timestamped(
    client: KafkaClientConfig, topic: str, records: list[tuple[bytes, bytes, int]], partitions: int = 1
) -> float:
    """Produce (key, value, timestamp) records in order, each to its :func:`key_partition`; returns
    seconds. Raises if any delivery failed."""
    failures: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None and len(failures) < 5:
            failures.append(str(err))

    producer = Producer(bulk_producer_config(client))
    produce = producer.produce
    t0 = time.perf_counter()
    for n, (key, value, ts) in enumerate(records, 1):
        while True:
            try:
                produce(
                    topic, value, key, key_partition(key, partitions), timestamp=ts, on_delivery=on_delivery
                )
                break
            except BufferError:
                producer.poll(0.05)
        if n % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    if remaining or failures:
        raise RuntimeError(f"producing to {topic}: {remaining} undelivered, errors: {failures}")
    return time.perf_counter() - t0


def _fresh_topic(client: KafkaClientConfig, topic: str, partitions: int = 1) -> None:
    # the events carry historical timestamps (BASE_MS): a time-based retention would let Apache Kafka
    # delete them while a system reads them (its consumer then resets and reads the input twice)
    ensure_topics(client, [topic], partitions, **{"retention.ms": "-1"})
    have = sum(end_offsets(client, topic))
    if have:
        raise RuntimeError(f"input topic {topic} already holds {have} records; use a new name")


def prepare_windowed_input(
    client: KafkaClientConfig, topic: str, n: int, keys: int = DEFAULT_KEYS, partitions: int = 1
) -> tuple[dict[str, Any], WindowedTruth]:
    """Create ``topic`` and fill it with the timestamped events once."""
    _fresh_topic(client, topic, partitions)
    records, truth = generate_windowed(n, keys, partitions=partitions)
    dt = produce_timestamped(client, topic, records, partitions)
    info = {
        "topic": topic,
        "partitions": partitions,
        "events": n,
        "keys": keys,
        "window_ms": WINDOW_MS,
        "event_time_span_min": round((records[-1][2] - records[0][2]) / 60_000, 1) if records else 0,
        "disorder": f"{DISORDER_SHARE:.0%} of records up to {DISORDER_MAX_MS} ms back",
        "produce_s": round(dt, 3),
        **truth.summary(n),
    }
    return info, truth


def verify_windowed(
    client: KafkaClientConfig,
    topic: str,
    truth: WindowedTruth,
    rule: str,
    events: int,
    *,
    start_field: str,
    count_field: str,
) -> dict[str, Any]:
    """Read the output back: the final (largest) count of every (key, window) must equal the truth.

    Output keys are the plain user keys; values carry the window start (ms) and the count under the
    given field names (Streamhouse: ``start``/``count``; Quix: ``start``/``value``).
    """
    seen = np.zeros_like(truth.all)
    bad = {"key": 0, "window": 0}
    first, windows = truth.first_window, truth.all.shape[1]
    loads = orjson.loads

    def handle(batch: list[Any]) -> None:
        for m in batch:
            v = loads(m.value())
            k = int(m.key()[5:])
            col = v[start_field] // WINDOW_MS - first
            if not 0 <= k < truth.keys:
                bad["key"] += 1
                continue
            if not 0 <= col < windows or v[start_field] % WINDOW_MS:
                bad["window"] += 1
                continue
            c = v[count_field]
            if c > seen[k, col]:
                seen[k, col] = c

    records = consume_until_eof(client, topic, timeout_s=180, handle=handle)
    expected = truth.expected(rule)
    wrong = int(np.count_nonzero(seen != expected))
    want = truth.outputs(rule, events)
    return {
        "rule": rule,
        "output_records": records,
        "expected_output_records": want,
        "key_windows_checked": int(np.count_nonzero(expected)),
        "key_windows_wrong": wrong,
        "sum_of_final_counts": int(seen.sum(dtype=np.int64)),
        "expected_sum": int(expected.sum(dtype=np.int64)),
        "bad_keys": bad["key"],
        "bad_windows": bad["window"],
        "correct": wrong == 0 and records >= want and not bad["key"] and not bad["window"],
    }


# --------------------------------------------------------------------------------------- join


def order_key(i: int) -> bytes:
    return b"order-%07d" % i


def generate_join(
    n: int, seed: int = 11
) -> tuple[list[tuple[bytes, bytes, int]], list[tuple[bytes, bytes, int]], np.ndarray]:
    """Orders and payments (each list in timestamp order) with ~n records in all, and the number of joined
    outputs each order must produce (payments within ±5 minutes of its order, inclusive)."""
    rng = random.Random(seed)
    orders_n = max(1, n // 2)
    step = 60_000 / ORDERS_PER_MINUTE
    dumps = orjson.dumps
    orders, payments = [], []
    joins = np.zeros(orders_n, dtype=np.uint8)
    for i in range(orders_n):
        key = order_key(i)
        ts = BASE_MS + int(i * step)
        amount = (i * 7919) % 100_000 / 100
        orders.append((key, dumps({"order": i, "customer": i % 5_000, "amount": amount, "ts": ts}), ts))
        r = rng.random()
        if r < 0.03:  # no payment
            offsets = []
        elif r < 0.06:  # paid late, outside the window
            offsets = [rng.randrange(JOIN_DIFF_MS + 1, 2 * JOIN_DIFF_MS)]
        elif r < 0.09:  # two payments (a split payment)
            offsets = [rng.randrange(-JOIN_DIFF_MS, JOIN_DIFF_MS + 1) for _ in range(2)]
        else:
            offsets = [rng.randrange(-JOIN_DIFF_MS, JOIN_DIFF_MS + 1)]
        for off in offsets:
            pts = max(0, ts + off)
            payments.append((key, dumps({"order": i, "paid": amount, "ts": pts}), pts))
            if abs(pts - ts) <= JOIN_DIFF_MS:
                joins[i] += 1
    payments.sort(key=lambda r: r[2])  # a stable sort: equal timestamps keep their order
    return orders, payments, joins


def prepare_join_input(
    client: KafkaClientConfig, orders_topic: str, payments_topic: str, n: int, partitions: int = 1
) -> tuple[dict[str, Any], np.ndarray]:
    """Both topics with ``partitions`` partitions, an order and its payments in the same one."""
    _fresh_topic(client, orders_topic, partitions)
    _fresh_topic(client, payments_topic, partitions)
    orders, payments, joins = generate_join(n)
    dt = produce_timestamped(client, orders_topic, orders, partitions) + produce_timestamped(
        client, payments_topic, payments, partitions
    )
    info = {
        "partitions": partitions,
        "orders_topic": orders_topic,
        "payments_topic": payments_topic,
        "orders": len(orders),
        "payments": len(payments),
        "events": len(orders) + len(payments),
        "expected_joins": int(joins.sum()),
        "join_window": f"±{JOIN_DIFF_MS} ms, grace {JOIN_GRACE_MS} ms",
        "produce_s": round(dt, 3),
    }
    return info, joins


def verify_join(client: KafkaClientConfig, topic: str, joins: np.ndarray) -> dict[str, Any]:
    """Every order must have exactly its expected number of joined outputs, each within the window."""
    seen = np.zeros(len(joins), dtype=np.int64)
    bad = {"key": 0, "outside": 0}
    loads = orjson.loads

    def handle(batch: list[Any]) -> None:
        for m in batch:
            i = int(m.key()[6:])
            if not 0 <= i < len(joins):
                bad["key"] += 1
                continue
            seen[i] += 1
            v = loads(m.value())
            if abs(v["dt"]) > JOIN_DIFF_MS or v["order"] != i:
                bad["outside"] += 1

    records = consume_until_eof(client, topic, timeout_s=180, handle=handle)
    want = int(joins.sum())
    wrong = int(np.count_nonzero(seen != joins))
    return {
        "output_records": records,
        "expected_output_records": want,
        "orders_checked": len(joins),
        "orders_wrong": wrong,
        "bad_keys": bad["key"],
        "outside_window": bad["outside"],
        "correct": records == want and wrong == 0 and not bad["key"] and not bad["outside"],
    }
