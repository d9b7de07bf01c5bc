"""The demo/test domain: topic names, payload schemas and a deterministic sample-data generator.

Every record's Kafka timestamp is its event time (as Kafka Streams preserves it), so bronze can
partition by record timestamp without parsing. The generator is deterministic for a given seed and can
mix in late events (event time far behind the stream), invalid records (broken JSON, missing or
mistyped fields, impossible values) and exact duplicates (producer retries), in configurable ratios.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

import orjson

from edge.kafka import KafkaClientConfig, TopicSpec, create_topics
from edge.kafka.delivery import DeliveryTracker

ORDERS = "orders"
CUSTOMERS = "customers"
PRODUCTS = "products"
CLICKS = "clicks"
#: Logical topic name -> partitions. The physical topic name is ``<prefix><logical>``.
TOPICS: dict[str, int] = {ORDERS: 4, CUSTOMERS: 1, PRODUCTS: 1, CLICKS: 4}
#: Topics the edge apps write (``examples.revenue``); bronze ingests them like the raw ones.
EDGE_REVENUE = "edge_revenue_by_product"
#: Closed 5-minute revenue windows of ``examples.revenue_windows``, reconciled with gold (``quality``).
EDGE_REVENUE_5M = "edge_revenue_5m"
EDGE_OUTPUT_TOPICS: dict[str, int] = {EDGE_REVENUE: 4, EDGE_REVENUE_5M: 4}

#: Payload fields and their logical types, per topic (the contract silver enforces).
PAYLOAD_SCHEMAS: dict[str, dict[str, str]] = {
    ORDERS: {
        "order_id": "string",
        "customer_id": "string",
        "product_id": "string",
        "quantity": "int",
        "unit_price": "double",
        "event_time": "timestamp",
    },
    CUSTOMERS: {
        "customer_id": "string",
        "name": "string",
        "segment": "string",
        "country": "string",
        "updated_at": "timestamp",
    },
    PRODUCTS: {"product_id": "string", "name": "string", "category": "string", "list_price": "double"},
    CLICKS: {"event_id": "string", "user_id": "string", "page": "string", "event_time": "timestamp"},
}

#: The fixed base date of ``generate()``: tests and benchmarks compare against it, so their data and
#: partitions stay the same every day. The demo and ``streamhouse generate`` use ``recent_start()``.
DEFAULT_START = datetime(2026, 1, 5, tzinfo=UTC)
#: Shares of deliberately bad records that ``streamhouse generate`` (and its Dagster job) mix in, so a
#: user watching the pipeline sees late events re-open finished days and malformed ones quarantined:
#: late orders (event time 6 h behind the stream), malformed orders and clicks (broken JSON, missing or
#: mistyped fields, impossible values) and exact duplicates (producer retries).
LIVE_LATE_RATIO = 0.05
LIVE_INVALID_RATIO = 0.02
LIVE_DUPLICATE_RATIO = 0.01

#: How long the producers wait at the end for the last delivery reports (a million records take seconds).
FLUSH_TIMEOUT_S = 120.0
#: Every sample producer is idempotent: each partition keeps the order the records were produced in.
#: librdkafka's producer is not by default (Kafka's Java producer is since 3.0), and with up to a million
#: requests in flight a retried batch (a broker slow to answer under load, a just-created topic) lands
#: after the batches sent behind it: on a loaded machine 2,612 of the demo's clicks sat hours to days
#: behind newer ones of their partition. An event-time app reading them (``examples.click_sessions``)
#: takes stream time from the newest record, so it dropped those clicks as late ("expired window") and
#: the demo's edge-vs-gold comparison failed only on busy machines.
ORDERED_PRODUCER: dict[str, object] = {"enable.idempotence": True}

SEGMENTS = ["consumer", "smb", "enterprise"]
COUNTRIES = ["DE", "FR", "NL", "US", "GB"]
CATEGORIES = ["coffee", "tea", "bakery", "juice"]
PAGES = ["/", "/menu", "/product", "/cart", "/checkout", "/account"]


def recent_start(days: int, today: date | None = None) -> datetime:
    """Midnight (UTC) ``days`` days before ``today``: ``days`` whole days of data ending last midnight.

    The demo's data then falls in the most recent daily partitions, the ones the Dagster UI shows first.
    It ends at the last midnight rather than now because a daily partition exists only once its day is
    over (today's is not a partition yet, so a run for it could not be launched).
    """
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    today = today or datetime.now(UTC).date()
    midnight = datetime(today.year, today.month, today.day, tzinfo=UTC)
    return midnight - timedelta(days=days)


def topic_specs(prefix: str = "") -> list[TopicSpec]:
    """The topics the sample data goes to, as the demo's declaration (pipelines/demo) declares them."""
    from assets.pipeline.active import active_pipeline
    from assets.pipeline.topics import source_topic_specs

    return source_topic_specs(active_pipeline(), prefix)


def iso_ms(ms: int, _gmtime=time.gmtime, _strftime=time.strftime) -> str:
    """Event times travel as ISO-8601 UTC strings with millisecond precision."""
    seconds, millis = divmod(ms, 1000)
    return f"{_strftime('%Y-%m-%dT%H:%M:%S', _gmtime(seconds))}.{millis:03d}Z"


@dataclass(frozen=True)
class RawRecord:
    key: bytes | None
    value: bytes
    timestamp_ms: int


@dataclass
class SampleData:
    """Records per logical topic in production order, plus the ground truth used by tests."""

    records: dict[str, list[RawRecord]] = field(default_factory=dict)
    #: Count of each deliberately bad record kind per topic (``{"orders": {"invalid": 3, ...}}``).
    injected: dict[str, dict[str, int]] = field(default_factory=dict)

    def count(self) -> int:
        return sum(len(r) for r in self.records.values())

    def payloads(self, topic: str) -> Iterator[dict | None]:
        """Decoded payloads (None for undecodable ones), in production order."""
        for rec in self.records.get(topic, []):
            try:
                value = orjson.loads(rec.value)
            except orjson.JSONDecodeError:
                yield None
                continue
            yield value if isinstance(value, dict) else None


def _day_ms(start: datetime, days: int) -> tuple[int, int]:
    begin = int(start.timestamp() * 1000)
    return begin, begin + days * 86_400_000


def generate(
    events: int,
    *,
    seed: int = 7,
    start: datetime = DEFAULT_START,
    days: int = 3,
    customers: int = 50,
    products: int = 12,
    late_ratio: float = 0.0,
    invalid_ratio: float = 0.0,
    duplicate_ratio: float = 0.0,
    late_by: timedelta = timedelta(hours=6),
    id_prefix: str = "",
    include_dimensions: bool = True,
) -> SampleData:
    """About ``events`` orders+clicks over ``days`` days from ``start``, plus customer/product records.

    Half the events are orders, half clicks (clicks come in per-user bursts so sessions form). A late
    order keeps its (old) event time but is produced where it arrives, ``late_by`` after it: among the
    orders of that later time, as a delayed record reaches a live topic. (Appended at the end of the
    batch, as they once were, they came up to ``days`` late, not ``late_by``: an event-time app with a
    grace of a day dropped them while the lake kept them.) ``id_prefix`` keeps ids of several batches
    distinct.
    """
    rng = random.Random(seed)
    begin, end = _day_ms(start, days)
    data = SampleData()
    n_orders = events // 2
    n_clicks = events - n_orders

    product_rows = [
        {
            "product_id": f"p-{i:03d}",
            "name": f"product {i}",
            "category": CATEGORIES[i % len(CATEGORIES)],
            "list_price": round(1.5 + i * 0.75, 2),
        }
        for i in range(products)
    ]
    prices = {p["product_id"]: p["list_price"] for p in product_rows}
    if include_dimensions:
        data.records[PRODUCTS] = [
            RawRecord(p["product_id"].encode(), orjson.dumps(p), begin - 86_400_000) for p in product_rows
        ]
        cust: list[RawRecord] = []
        for i in range(customers):
            cid = f"c-{i:04d}"
            # First profile before any order, then up to two changes inside the range.
            times = [begin - 86_400_000, *sorted(rng.randrange(begin, end) for _ in range(rng.randrange(3)))]
            for version, ts in enumerate(times):
                profile = {
                    "customer_id": cid,
                    "name": f"customer {i}",
                    "segment": SEGMENTS[(i + version) % len(SEGMENTS)],
                    "country": COUNTRIES[(i * 3 + version) % len(COUNTRIES)],
                    "updated_at": iso_ms(ts),
                }
                cust.append(RawRecord(cid.encode(), orjson.dumps(profile), ts))
        cust.sort(key=lambda r: r.timestamp_ms)
        data.records[CUSTOMERS] = cust

    product_ids = list(prices)
    step = max(1, (end - begin) // max(1, n_orders))
    orders: list[RawRecord] = []
    n_late = 0
    late_ms = int(late_by.total_seconds() * 1000)
    for i in range(n_orders):
        ts = begin + i * step + rng.randrange(step)
        is_late = bool(late_ratio) and rng.random() < late_ratio
        if is_late:
            ts -= late_ms
        pid = product_ids[rng.randrange(len(product_ids))]
        cid = f"c-{rng.randrange(customers):04d}"
        order = {
            "order_id": f"{id_prefix}o-{seed}-{i}",
            "customer_id": cid,
            "product_id": pid,
            "quantity": 1 + rng.randrange(5),
            "unit_price": round(prices[pid] * (0.8 + rng.randrange(5) * 0.05), 2),
            "event_time": iso_ms(ts),
        }
        # the i-th slot is this order's arrival: a late one arrives late_by after its event time
        orders.append(RawRecord(cid.encode(), orjson.dumps(order), ts))
        n_late += is_late
    clicks: list[RawRecord] = []
    users = max(1, customers * 2)
    # Bursts: each burst is one user's clicks 5 s - 20 min apart; bursts of the same user are
    # scattered over the range so most gaps exceed the 30-minute session gap.
    produced = 0
    burst = 0
    while produced < n_clicks:
        uid = f"u-{rng.randrange(users):04d}"
        ts = begin + rng.randrange(end - begin)
        for _ in range(min(n_clicks - produced, 1 + rng.randrange(8))):
            if ts >= end:
                break
            click = {
                "event_id": f"{id_prefix}k-{seed}-{produced}",
                "user_id": uid,
                "page": PAGES[rng.randrange(len(PAGES))],
                "event_time": iso_ms(ts),
            }
            clicks.append(RawRecord(uid.encode(), orjson.dumps(click), ts))
            produced += 1
            ts += 5_000 + rng.randrange(20 * 60_000)
        burst += 1
    clicks.sort(key=lambda r: r.timestamp_ms)
    data.injected = {ORDERS: {"late": n_late}, CLICKS: {}}
    _inject(rng, orders, ORDERS, invalid_ratio, duplicate_ratio, data.injected[ORDERS], begin)
    _inject(rng, clicks, CLICKS, invalid_ratio, duplicate_ratio, data.injected[CLICKS], begin)
    data.records[ORDERS] = orders
    data.records[CLICKS] = clicks
    return data


def _invalid_order(rng: random.Random, base: dict) -> bytes:
    kind = rng.randrange(5)
    bad = dict(base)
    if kind == 0:
        return b'{"order_id": "broken'
    if kind == 1:
        bad.pop("customer_id")
    elif kind == 2:
        bad["quantity"] = "many"
    elif kind == 3:
        bad["quantity"] = -1
    else:
        bad["unit_price"] = -3.5
    return orjson.dumps(bad)


def _invalid_click(rng: random.Random, base: dict) -> bytes:
    kind = rng.randrange(3)
    bad = dict(base)
    if kind == 0:
        return b"\xff\xfenot json"
    if kind == 1:
        bad.pop("user_id")
    else:
        bad["event_time"] = "yesterday-ish"
    return orjson.dumps(bad)


def _inject(
    rng: random.Random,
    records: list[RawRecord],
    topic: str,
    invalid_ratio: float,
    duplicate_ratio: float,
    counts: dict[str, int],
    begin: int,
) -> None:
    """Append invalid copies and exact duplicates of random records (in place, deterministic)."""
    if not records:
        return
    make_bad: Callable[[random.Random, dict], bytes] = _invalid_order if topic == ORDERS else _invalid_click
    n_invalid = int(len(records) * invalid_ratio)
    n_dup = int(len(records) * duplicate_ratio)
    extra: list[tuple[int, RawRecord]] = []
    for i in range(n_invalid):
        src = records[rng.randrange(len(records))]
        base = orjson.loads(src.value)
        id_field = "order_id" if topic == ORDERS else "event_id"
        base[id_field] = f"bad-{base[id_field]}-{i}"
        extra.append(
            (rng.randrange(len(records) + 1), RawRecord(src.key, make_bad(rng, base), src.timestamp_ms))
        )
    for _ in range(n_dup):
        pos = rng.randrange(len(records))
        extra.append((min(len(records), pos + 1 + rng.randrange(50)), records[pos]))
    if extra:
        by_pos: dict[int, list[RawRecord]] = {}
        for pos, rec in extra:
            by_pos.setdefault(pos, []).append(rec)
        merged: list[RawRecord] = []
        for i, rec in enumerate(records):
            merged.extend(by_pos.get(i, ()))
            merged.append(rec)
        merged.extend(by_pos.get(len(records), ()))
        records[:] = merged
    counts["invalid"] = n_invalid
    counts["duplicate"] = n_dup


def produce(
    client: KafkaClientConfig,
    data: SampleData,
    *,
    prefix: str = "",
    create: bool = True,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Produce every record to ``<prefix><topic>`` (creating the topics first); returns counts per topic.

    Raises :class:`~edge.kafka.delivery.DeliveryError` (topic, partition, error) when a topic is missing
    or a record is not delivered: the demo must not go on to ingest records that never arrived.
    """
    if create:
        create_topics(client, topic_specs(prefix))
    tracker = DeliveryTracker(
        client,
        flush_timeout_s=FLUSH_TIMEOUT_S,
        **{
            **ORDERED_PRODUCER,
            "linger.ms": 20,
            "batch.num.messages": 10000,
            "queue.buffering.max.messages": 500000,
        },
    )
    tracker.require_topics(f"{prefix}{topic}" for topic, records in data.records.items() if records)
    counts: dict[str, int] = {}
    for topic, records in data.records.items():
        name = f"{prefix}{topic}"
        for i, rec in enumerate(records):
            tracker.produce(name, rec.value, rec.key, timestamp=rec.timestamp_ms)
            if progress is not None and i % 50_000 == 0:
                progress(i)
        counts[name] = len(records)
    tracker.finish()
    return counts


def interleaved(data: SampleData) -> list[tuple[str, RawRecord]]:
    """Every record as (topic, record), the topics interleaved in proportion (each in its own order).

    A paced producer sends them in this order so a person watching sees orders, clicks and dimension
    changes arrive together, as they would from live systems, rather than one topic after another.
    """
    queues = [(topic, records) for topic, records in data.records.items() if records]
    out: list[tuple[str, RawRecord]] = []
    # Each topic's i-th record is due at (i + 0.5) / len(topic) of the way through: merge on that.
    due = sorted(
        ((i + 0.5) / len(records), n, i) for n, (_, records) in enumerate(queues) for i in range(len(records))
    )
    for _, n, i in due:
        topic, records = queues[n]
        out.append((topic, records[i]))
    return out


def produce_paced(
    client: KafkaClientConfig,
    data: SampleData,
    *,
    prefix: str = "",
    rate: float | None = None,
    create: bool = True,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Produce ``data`` interleaved across topics at ``rate`` records/s (None: as fast as possible).

    ``progress`` gets the number of records produced so far, every 1% of them and at the end; returns
    counts per physical topic. Pacing holds the average rate from the start (a slow moment is caught
    up), sleeping in short steps so an interrupt stops it promptly. A missing topic or a record not
    delivered raises :class:`~edge.kafka.delivery.DeliveryError` (topic, partition, error) at once.
    """
    if rate is not None and rate <= 0:
        raise ValueError(f"rate must be > 0 records/s, got {rate}")
    if create:
        create_topics(client, topic_specs(prefix))
    tracker = DeliveryTracker(
        client,
        flush_timeout_s=FLUSH_TIMEOUT_S,
        **{**ORDERED_PRODUCER, "linger.ms": 5 if rate else 20, "batch.num.messages": 10000},
    )
    producer = tracker.producer
    tracker.require_topics(f"{prefix}{topic}" for topic, records in data.records.items() if records)
    records = interleaved(data)
    counts: dict[str, int] = {}
    every = max(1, len(records) // 100)
    started = time.monotonic()
    for n, (topic, rec) in enumerate(records, 1):
        name = f"{prefix}{topic}"
        if rate is not None:
            wait = started + (n - 1) / rate - time.monotonic()
            if wait > 0:
                producer.poll(0)
                time.sleep(min(wait, 0.5))
                while (wait := started + (n - 1) / rate - time.monotonic()) > 0:
                    time.sleep(min(wait, 0.5))
        tracker.produce(name, rec.value, rec.key, timestamp=rec.timestamp_ms)
        counts[name] = counts.get(name, 0) + 1
        if progress is not None and (n % every == 0 or n == len(records)):
            producer.poll(0)
            progress(n)
    tracker.finish()
    return counts


@dataclass
class LiveBatch:
    """What ``produce_live`` sent: records per physical topic and the bad records mixed in."""

    produced: dict[str, int]
    #: per logical topic, the deliberately bad records (``{"orders": {"late": 12, "invalid": 5, ...}}``)
    injected: dict[str, dict[str, int]]
    first_day: date
    last_day: date
    seconds: float

    @property
    def total(self) -> int:
        return sum(self.produced.values())


def produce_live(
    client: KafkaClientConfig,
    events: int,
    *,
    prefix: str = "",
    rate: float | None = None,
    today: date | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LiveBatch:
    """More sample events for a running pipeline: ``streamhouse generate`` and the Dagster job.

    ``events`` orders and clicks (half each) over yesterday, the latest complete daily partition, with
    the ``LIVE_*`` shares of late, malformed and duplicate records, and fresh ids each call (so silver
    keeps them all). Dimensions are not re-sent: the customers and products already on the topics
    stay valid. ``progress(sent, total)`` is called as records go out.
    """
    if events < 1:
        raise ValueError(f"events must be >= 1, got {events}")
    started = time.monotonic()
    start = recent_start(1, today)
    data = generate(
        events,
        seed=random.SystemRandom().randrange(2**31),
        start=start,
        days=1,
        late_ratio=LIVE_LATE_RATIO,
        invalid_ratio=LIVE_INVALID_RATIO,
        duplicate_ratio=LIVE_DUPLICATE_RATIO,
        id_prefix=f"live-{int(time.time() * 1000):x}-",
        include_dimensions=False,
    )
    total = data.count()
    produced = produce_paced(
        client,
        data,
        prefix=prefix,
        rate=rate,
        progress=(lambda n: progress(n, total)) if progress is not None else None,
    )
    # Late orders (6 h behind) may fall on the day before: the sensor then recomputes both days.
    first_ms = min(rec.timestamp_ms for records in data.records.values() for rec in records)
    first_day = datetime.fromtimestamp(first_ms / 1000, UTC).date()
    return LiveBatch(produced, data.injected, first_day, start.date(), time.monotonic() - started)
