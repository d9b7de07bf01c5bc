"""Sample data of the IoT pipeline: device registry changes and sensor readings, with the faults a real
feed has -- device changes sent out of order and twice, readings sent twice, malformed readings.

``sample`` is deterministic for a seed; ``produce_sample`` sends it to Kafka (each record's timestamp is
its event time, as the pipeline's silver rule ``<time>_on_record_day`` expects).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import orjson

from edge.kafka import KafkaClientConfig

SITES = ["berlin", "lyon", "porto"]
MODELS = ["th-1", "th-2"]


@dataclass
class Sample:
    #: topic -> (key, value, timestamp ms) in production order
    records: dict[str, list[tuple[bytes, bytes, int]]] = field(default_factory=dict)
    #: how many of each deliberate fault were mixed in
    injected: dict[str, int] = field(default_factory=dict)


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def sample(start: datetime, *, days: int = 2, devices: int = 6, seed: int = 7) -> Sample:
    """``devices`` devices reporting every few minutes for ``days`` days from ``start`` (UTC midnight)."""
    rng = random.Random(seed)
    out = Sample(records={"devices": [], "readings": []}, injected={})
    changes: list[tuple[bytes, bytes, int]] = []
    for d in range(devices):
        device = f"dev-{d}"
        t = start - timedelta(hours=1)  # installed before the first reading
        for _version in range(rng.randint(1, 3)):
            body = {
                "device_id": device,
                "site": rng.choice(SITES),
                "model": rng.choice(MODELS),
                "changed_at": _iso(t),
            }
            changes.append((device.encode(), orjson.dumps(body), _ms(t)))
            t += timedelta(hours=rng.randint(6, 30), minutes=rng.randint(0, 59))
    # A change feed in the wild: later versions of a device arrive before earlier ones, some twice.
    rng.shuffle(changes)
    twice = rng.sample(changes, k=max(1, len(changes) // 5))
    out.records["devices"] = changes + twice
    out.injected["device_changes_out_of_order"] = len(changes)
    out.injected["device_changes_duplicated"] = len(twice)
    n = 0
    for d in range(devices):
        device = f"dev-{d}"
        t = start + timedelta(minutes=rng.randint(0, 10))
        end = start + timedelta(days=days)
        while t < end:
            n += 1
            body = {
                "reading_id": f"r-{seed}-{n}",
                "device_id": device,
                "read_at": _iso(t),
                "temperature": round(rng.gauss(21, 4), 2),
                "humidity": round(rng.uniform(30, 80), 1),
            }
            out.records["readings"].append((device.encode(), orjson.dumps(body), _ms(t)))
            # a device goes silent now and then (a new session after more than 20 minutes)
            t += timedelta(
                minutes=rng.choice([3, 5, 7, 11, 19, 20, 35, 90]), milliseconds=rng.randint(0, 999)
            )
    readings = out.records["readings"]
    for i in rng.sample(range(len(readings)), k=len(readings) // 50):
        readings.append(readings[i])  # a producer retry: the same record again
    out.injected["readings_duplicated"] = len(readings) // 51
    bad = [
        {"reading_id": "bad-1", "device_id": "sensor 9", "temperature": 20.0, "humidity": 40.0},
        {"reading_id": "bad-2", "device_id": "dev-1", "temperature": 900.0, "humidity": 40.0},
        {"reading_id": "bad-3", "device_id": "dev-2", "temperature": "hot", "humidity": 40.0},
        {"reading_id": "bad-4", "device_id": "dev-3", "humidity": 40.0},
    ]
    for i, body in enumerate(bad):
        t = start + timedelta(hours=3, minutes=i)
        readings.append((b"bad", orjson.dumps({**body, "read_at": _iso(t)}), _ms(t)))
    out.injected["readings_malformed"] = len(bad)
    return out


def produce_sample(
    client: KafkaClientConfig,
    prefix: str = "",
    *,
    start: datetime | None = None,
    days: int = 2,
    seed: int = 7,
) -> dict[str, int]:
    """Send ``sample(...)`` to ``<prefix>devices`` and ``<prefix>readings``; returns the records sent per
    topic and the faults mixed in."""
    from confluent_kafka import Producer

    if start is None:
        today = datetime.now(UTC).date()
        start = datetime(today.year, today.month, today.day, tzinfo=UTC) - timedelta(days=days)
    data = sample(start, days=days, seed=seed)
    producer = Producer(client.producer(**{"enable.idempotence": True}))
    for topic, records in data.records.items():
        for key, value, ts in records:
            producer.produce(f"{prefix}{topic}", value=value, key=key, timestamp=ts)
            producer.poll(0)
    left = producer.flush(60)
    if left:
        raise RuntimeError(
            f"{left} sample records not delivered to {prefix}readings/{prefix}devices within 60 s"
        )
    return {**{topic: len(records) for topic, records in data.records.items()}, **data.injected}
