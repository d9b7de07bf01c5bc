"""Foreign-key joins and versioned stream-table joins on the embedded broker: internal topics created
and co-partitioned by the runtime, exact results, interactive queries (``as_of`` on versioned stores)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(180)]

APPS = "tests.edge.runtime.apps.table_join_app"


def _produce(client, topic: str, records: list[tuple[str, str | None, int | None]]) -> None:
    p = Producer(client.producer(partitioner="murmur2_random"))
    for key, value, ts in records:
        kwargs = {} if ts is None else {"timestamp": ts}
        p.produce(topic, None if value is None else value.encode(), key.encode(), **kwargs)
    assert p.flush(30) == 0


class _Reader:
    """Every (key, value, timestamp) of a topic, in partition order, read with read_committed."""

    def __init__(self, client, topic: str, group: str) -> None:
        conf = client.consumer(group, **{"auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer = Consumer(conf)
        self.consumer.subscribe([topic])
        self.records: list[tuple[str, str | None, int]] = []

    def wait_for(self, predicate, timeout: float = 90) -> None:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.consumer.consume(500, 0.2):
                if m.error() is not None:
                    if m.error().code() != KafkaError._PARTITION_EOF:
                        raise AssertionError(str(m.error()))
                    continue
                value = None if m.value() is None else m.value().decode()
                self.records.append((m.key().decode(), value, m.timestamp()[1]))
            if predicate(self):
                return
        raise AssertionError(f"outputs not reached within {timeout}s; got {self.records}")

    def latest(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for k, v, _ts in self.records:
            if v is None:
                out.pop(k, None)
            else:
                out[k] = v
        return out

    def close(self) -> None:
        self.consumer.close()


def _partitions(client, topic: str) -> int:
    meta = AdminClient(client.admin()).list_topics(timeout=30)
    return len(meta.topics[topic].partitions)


def test_foreign_key_join_across_differently_partitioned_tables(
    kafka_broker, make_topic, unique_name, spawn, tmp_path
):
    orders, customers, out = make_topic("orders", 3), make_topic("customers", 2), make_topic("out", 3)
    app = unique_name("fk")
    inst = spawn(app, f"{orders},{customers}", out, attr=f"{APPS}:fk_join", state_dir=tmp_path / "a")
    inst.wait_running()
    # the runtime created the internal topics, each partitioned like the table it is joined beside
    assert _partitions(kafka_broker, f"{app}-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic") == 2
    assert _partitions(kafka_broker, f"{app}-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic") == 3

    names = {f"c{i}": f"name{i}" for i in range(1, 6)}
    _produce(kafka_broker, customers, [(c, n, None) for c, n in names.items()])
    order_rows = {f"o{i}": (f"c{i % 5 + 1}", str(100 + i)) for i in range(1, 21)}
    _produce(kafka_broker, orders, [(o, f"{c}|{a}", None) for o, (c, a) in order_rows.items()])
    # the foreign key of o1 changes quickly; o2 is deleted; a customer is renamed, another deleted
    _produce(kafka_broker, orders, [("o1", f"{c}|{order_rows['o1'][1]}", None) for c in ("c2", "c3", "c4")])
    _produce(kafka_broker, orders, [("o2", None, None)])
    _produce(kafka_broker, customers, [("c5", "name5b", None), ("c3", None, None)])
    order_rows["o1"] = ("c4", order_rows["o1"][1])
    del order_rows["o2"]
    names["c5"] = "name5b"
    del names["c3"]
    expected = {o: f"{a}@{names[c]}" for o, (c, a) in order_rows.items() if c in names}

    reader = _Reader(kafka_broker, out, unique_name("reader"))
    try:
        reader.wait_for(lambda r: r.latest() == expected)
        # o1 only ever showed values it really had (the hash check drops answers for older values)
        amount = order_rows["o1"][1]
        seen = {v for k, v, _ts in reader.records if k == "o1"}
        assert seen <= {f"{amount}@name{i}" for i in range(1, 5)} | {None}
        assert "o2" not in reader.latest()
    finally:
        reader.close()
    status, body = inst.get("/v1/stores/fk-result/keys/o1")
    assert status == 200 and body["value"] == expected["o1"], body
    status, _ = inst.get("/v1/stores/fk-result/keys/o2")
    assert status == 404


def test_versioned_stream_table_join_joins_as_of_each_record(
    kafka_broker, make_topic, unique_name, spawn, tmp_path
):
    orders, customers, out = make_topic("vorders", 2), make_topic("vcustomers", 2), make_topic("vout", 2)
    app = unique_name("ver")
    inst = spawn(app, f"{orders},{customers}", out, attr=f"{APPS}:versioned_join", state_dir=tmp_path / "a")
    inst.wait_running()
    # the table: an update, a newer one, then an out-of-order one (history only)
    _produce(
        kafka_broker, customers, [("c1", "gold", 1000), ("c1", "platinum", 3000), ("c1", "silver", 2000)]
    )
    deadline = time.monotonic() + 60
    while True:  # wait until the table has all three (queried over HTTP, as of a time)
        status, body = inst.get("/v1/stores/customers-versioned/keys/c1?as_of=2500")
        if status == 200 and body["value"] == "silver":
            break
        assert time.monotonic() < deadline, body
        time.sleep(0.2)
    assert body["timestamp"] == 2000 and body["valid_to"] == 3000
    status, body = inst.get("/v1/stores/customers-versioned/keys/c1")
    assert status == 200 and (body["value"], body["timestamp"], body["valid_to"]) == ("platinum", 3000, None)
    status, body = inst.get("/v1/stores/customers-versioned/keys/c1?as_of=999")
    assert status == 404
    status, body = inst.get("/v1/stores/customers-versioned/keys/c1?from=1")
    assert status == 400

    _produce(
        kafka_broker,
        orders,
        [
            ("c1", "o-a", 1500),
            ("c1", "o-b", 2500),
            ("c1", "o-c", 3500),
            ("c1", "o-d", 500),
            ("c9", "o-e", 4000),
        ],
    )
    reader = _Reader(kafka_broker, out, unique_name("reader"))
    try:
        reader.wait_for(lambda r: len(r.records) >= 3)
        time.sleep(1.0)
        reader.wait_for(lambda r: True, timeout=2)
        assert reader.records == [
            ("c1", "o-a@gold", 1500),
            ("c1", "o-b@silver", 2500),
            ("c1", "o-c@platinum", 3500),
        ]
    finally:
        reader.close()
