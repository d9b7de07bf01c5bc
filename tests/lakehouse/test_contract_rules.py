"""Every rule of docs/data-contract.md at its boundary, end to end: crafted records through the real
broker, bronze, silver and gold (Spark, Delta), one pipeline run for the whole module.

Each test is named after the rule it proves; the records sit exactly on the rule's edge (an order at a
window's end, a click exactly one gap after the previous one, an order at a profile change instant,
numbers sent as strings, duplicates with different payloads, unknown dimension keys).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from confluent_kafka import Producer
from dagster import DagsterInstance

from assets import contract
from assets.delta import read_arrow
from assets.sample_data import iso_ms, topic_specs
from edge.kafka import KafkaClientConfig, create_topics
from examples.revenue import is_valid_order
from tests.lakehouse import reference

pytestmark = [pytest.mark.broker, pytest.mark.spark, pytest.mark.slow]

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
MS = timedelta(milliseconds=1)
GAP = timedelta(minutes=30)


def _ms(ts: datetime) -> int:
    return int(ts.timestamp() * 1000)


def _us(ts: datetime) -> int:
    return int(ts.replace(tzinfo=ts.tzinfo or UTC).timestamp() * 1_000_000)


def _order(order_id: Any, at: datetime, customer: str = "c-2", product: str = "p-2", **fields: Any) -> dict:
    return {
        "order_id": order_id,
        "customer_id": customer,
        "product_id": product,
        "quantity": 1,
        "unit_price": 1.0,
        "event_time": iso_ms(_ms(at)),
        **fields,
    }


#: Valid orders, by rule (id -> payload).
CHANGE = T0 + timedelta(hours=2)  # customer c-1's profile changes at this instant
VALID_ORDERS = {
    "o-before-change": _order("o-before-change", CHANGE - MS, "c-1", "p-1", unit_price=2.0),
    "o-at-change": _order("o-at-change", CHANGE, "c-1", "p-1", unit_price=2.0),
    "o-int-as-float": _order("o-int-as-float", T0 + timedelta(minutes=5) - MS, quantity=3.0, unit_price=1.5),
    "o-window-end": _order("o-window-end", T0 + timedelta(minutes=5), quantity=2, unit_price=5),
    "o-dup": _order("o-dup", T0 + timedelta(minutes=6)),
    "o-unknown-customer": _order("o-unknown-customer", T0 + timedelta(hours=3), "c-404", "p-1"),
    "o-unknown-product": _order("o-unknown-product", T0 + timedelta(hours=3, minutes=1), "c-2", "p-404"),
    "o-unknown-both": _order("o-unknown-both", T0 + timedelta(hours=3, minutes=2), "c-404", "p-404"),
    "o-before-first-profile": _order(
        "o-before-first-profile", T0 + timedelta(hours=2, minutes=30), "c-3", "p-1"
    ),
}
#: The second copy of o-dup: same id, later offset (same key, so same partition), another payload.
DUP_SECOND_COPY = _order("o-dup", T0 + timedelta(minutes=7), quantity=4)
#: Orders that break the typing rule: marker in the value -> (reason, failed expectation).
INVALID_ORDERS: dict[str, tuple[dict | bytes, str, str]] = {
    "o-quantity-string": (
        _order("o-quantity-string", T0, quantity="3"),
        'quantity is not an int: received "3" (a string)',
        "quantity_is_int",
    ),
    "o-price-string": (
        _order("o-price-string", T0, unit_price="5.0"),
        'unit_price is not a double: received "5.0" (a string)',
        "unit_price_is_double",
    ),
    "o-quantity-fraction": (
        _order("o-quantity-fraction", T0, quantity=3.5),
        "quantity is not an int: received 3.5 (a number that is not integral)",
        "quantity_is_int",
    ),
    "o-quantity-bool": (
        _order("o-quantity-bool", T0, quantity=True),
        "quantity is not an int: received true (a boolean)",
        "quantity_is_int",
    ),
    "o-quantity-too-big": (
        _order("o-quantity-too-big", T0, quantity=2_147_483_648),
        "quantity is not an int: received 2147483648 (a number outside the int range)",
        "quantity_is_int",
    ),
    "o-price-bool": (
        _order("o-price-bool", T0, unit_price=False),
        "unit_price is not a double: received false (a boolean)",
        "unit_price_is_double",
    ),
    "o-time-number": (
        _order("o-time-number", T0, event_time=_ms(T0)),
        f"event_time is not a timestamp: received {_ms(T0)} (a number)",
        "event_time_is_timestamp",
    ),
    "o-time-text": (
        _order("o-time-text", T0, event_time="yesterday-ish"),
        'event_time is not a timestamp: received "yesterday-ish" (a string that is not an ISO-8601 time)',
        "event_time_is_timestamp",
    ),
    "o-repeated-field": (
        b'{"order_id": "o-repeated-field", "customer_id": "c-2", "product_id": "p-2", "quantity": 1, '
        b'"quantity": 2, "unit_price": 1.0, "event_time": "' + iso_ms(_ms(T0)).encode() + b'"}',
        "payload is not a JSON object (invalid JSON, not an object, or a field name repeated)",
        "payload_is_json_object",
    ),
    "o-other-day": (
        _order("o-other-day", T0 - timedelta(days=1)),
        "event_time is not on the record timestamp's day",
        "event_time_on_record_day",
    ),
}
#: An order whose id is a JSON number (found in quarantine by its customer).
NUMERIC_ID = _order(12345, T0, customer="c-numeric-id")
NUMERIC_ID_REASON = "order_id is not a string: received 12345 (a number)"

CLICKS = {  # user -> click times
    "u-gap": [T0, T0 + GAP, T0 + 2 * GAP + MS],  # exactly the gap: same session; one ms more: new session
    "u-short": [T0 + timedelta(milliseconds=900), T0 + timedelta(milliseconds=1100)],  # 0.2 s over a second
    "u-subsecond": [T0 + timedelta(seconds=5), T0 + timedelta(seconds=5, milliseconds=999)],
    "u-long": [T0 + i * GAP for i in range(5)] + [T0 + timedelta(seconds=8322.9)],
}
PROFILES = [  # (customer, updated_at, segment)
    ("c-1", T0 - timedelta(days=1), "consumer"),
    ("c-1", CHANGE, "smb"),
    ("c-2", T0 - timedelta(days=1), "enterprise"),
    ("c-3", T0 + timedelta(hours=3), "consumer"),  # after c-3's order: that order has no profile
]
PRODUCTS = [("p-1", "espresso", "coffee", 2.5), ("p-2", "green tea", "tea", 1.5)]


@dataclass
class ContractLake:
    lake: Path
    silver_orders: dict[str, dict]
    quarantine_orders: list[dict]
    quarantine_clicks: list[dict]
    tumbling: dict[tuple[int, str], dict]
    hopping: dict[int, dict]
    sessions: dict[tuple[str, int], dict]
    enriched: dict[str, dict]
    checks: dict[tuple[str, str], Any]
    ref: Any = None
    schemas: dict[str, pa.Schema] = field(default_factory=dict)

    def uri(self, layer: str, name: str) -> str:
        return f"{self.lake}/{layer}/{name}"


def _produce(client: KafkaClientConfig, prefix: str) -> None:
    create_topics(client, topic_specs(prefix))
    producer = Producer(client.producer())

    def send(topic: str, key: str, value: dict | bytes, ts: datetime) -> None:
        raw = value if isinstance(value, bytes) else orjson.dumps(value)
        producer.produce(f"{prefix}{topic}", key=key.encode(), value=raw, timestamp=_ms(ts))

    for pid, name, category, price in PRODUCTS:
        send(
            "products", pid, {"product_id": pid, "name": name, "category": category, "list_price": price}, T0
        )
    for cid, at, segment in PROFILES:
        profile = {
            "customer_id": cid,
            "name": cid,
            "segment": segment,
            "country": "DE",
            "updated_at": iso_ms(_ms(at)),
        }
        send("customers", cid, profile, at)
    for order in VALID_ORDERS.values():
        send("orders", order["customer_id"], order, datetime.fromisoformat(order["event_time"]))
    send("orders", DUP_SECOND_COPY["customer_id"], DUP_SECOND_COPY, T0 + timedelta(minutes=7))
    for value, _reason, _name in INVALID_ORDERS.values():
        send("orders", "c-2", value, T0)  # record time T0: o-other-day's event time is a day earlier
    send("orders", NUMERIC_ID["customer_id"], NUMERIC_ID, T0)
    for i, (user, times) in enumerate(CLICKS.items()):
        for j, at in enumerate(times):
            click = {
                "event_id": f"k-{i}-{j}",
                "user_id": user,
                "page": "/menu",
                "event_time": iso_ms(_ms(at)),
            }
            send("clicks", user, click, at)
    send(
        "clicks",
        "u-bad",
        {"event_id": "k-bad", "user_id": "u-bad", "page": 7, "event_time": iso_ms(_ms(T0))},
        T0,
    )
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def contract_lake(kafka_broker: KafkaClientConfig, spark, tmp_path_factory) -> Iterator[ContractLake]:
    from orchestration.definitions import build_definitions
    from orchestration.jobs import DAILY_JOB, INGEST_JOB
    from orchestration.resources import ExistingSparkResource
    from orchestration.runs import range_tags
    from orchestration.settings import Settings

    lake = tmp_path_factory.mktemp("contract") / "lake"
    lake.mkdir()
    prefix = f"ct{uuid.uuid4().hex[:8]}."
    settings = Settings(
        broker_profile=kafka_broker.profile, bootstrap_servers=kafka_broker.bootstrap_servers, lake_root=lake
    )
    defs = build_definitions(settings, topic_prefix=prefix, spark=ExistingSparkResource())
    instance = DagsterInstance.ephemeral()
    _produce(kafka_broker, prefix)
    ingest = defs.resolve_job_def(INGEST_JOB).execute_in_process(instance=instance, raise_on_error=False)
    day = T0.date().isoformat()
    daily = defs.resolve_job_def(DAILY_JOB).execute_in_process(
        instance=instance, tags=range_tags(day, day), raise_on_error=False
    )
    checks = {
        (ev.asset_key.to_user_string(), ev.check_name): ev
        for result in (ingest, daily)
        for ev in result.get_asset_check_evaluations()
    }

    def rows(layer: str, name: str) -> list[dict]:
        return read_arrow(f"{lake}/{layer}/{name}").to_pylist()

    out = ContractLake(
        lake=lake,
        silver_orders={r["order_id"]: r for r in rows("silver", "orders")},
        quarantine_orders=rows("quarantine", "orders"),
        quarantine_clicks=rows("quarantine", "clicks"),
        tumbling={(_us(r["window_start"]), r["product_id"]): r for r in rows("gold", "revenue_tumbling_5m")},
        hopping={_us(r["window_start"]): r for r in rows("gold", "revenue_hopping_10m")},
        sessions={(r["user_id"], _us(r["session_start"])): r for r in rows("gold", "click_sessions")},
        enriched={r["order_id"]: r for r in rows("gold", "orders_enriched")},
        checks=checks,
    )
    out.ref = reference.connect_bronze({t: f"{lake}/bronze/{t}" for t in reference.FIELDS})
    for path in sorted(lake.glob("*/*")):
        if (path / "_delta_log").is_dir():
            out.schemas[f"{path.parent.name}.{path.name}"] = read_arrow(str(path)).schema
    yield out


def _quarantined(rows: list[dict], marker: str) -> dict:
    found = [r for r in rows if marker.encode() in r["value"]]
    assert len(found) == 1, (marker, found)
    return found[0]


# -- Field types: the typing rule ---------------------------------------------------------------------


def test_contract_numeric_strings_are_quarantined(contract_lake: ContractLake) -> None:
    for marker in ("o-quantity-string", "o-price-string"):
        _value, reason, name = INVALID_ORDERS[marker]
        row = _quarantined(contract_lake.quarantine_orders, marker)
        assert row["reason"] == reason and row["failed_expectations"] == [name]
        assert marker not in contract_lake.silver_orders
    # ... and so they are in no gold table either
    assert not {"o-quantity-string", "o-price-string"} & set(contract_lake.enriched)


def test_contract_int_accepts_integral_numbers_only(contract_lake: ContractLake) -> None:
    assert contract_lake.silver_orders["o-int-as-float"]["quantity"] == 3  # 3.0 is an int
    for marker in ("o-quantity-fraction", "o-quantity-bool", "o-quantity-too-big"):
        _value, reason, name = INVALID_ORDERS[marker]
        row = _quarantined(contract_lake.quarantine_orders, marker)
        assert (row["reason"], row["failed_expectations"]) == (reason, [name])


def test_contract_double_accepts_any_json_number(contract_lake: ContractLake) -> None:
    assert contract_lake.silver_orders["o-window-end"]["unit_price"] == 5.0  # JSON 5 for a double
    row = _quarantined(contract_lake.quarantine_orders, "o-price-bool")
    assert row["reason"] == INVALID_ORDERS["o-price-bool"][1]


def test_contract_strings_and_timestamps_must_be_json_strings(contract_lake: ContractLake) -> None:
    row = _quarantined(contract_lake.quarantine_orders, "c-numeric-id")
    assert row["reason"] == NUMERIC_ID_REASON and row["failed_expectations"] == ["order_id_is_string"]
    for marker in ("o-time-number", "o-time-text"):
        row = _quarantined(contract_lake.quarantine_orders, marker)
        assert row["reason"] == INVALID_ORDERS[marker][1]
    row = _quarantined(contract_lake.quarantine_clicks, "k-bad")
    assert row["reason"] == "page is not a string: received 7 (a number)"


def test_contract_payload_repeating_a_field_is_quarantined(contract_lake: ContractLake) -> None:
    row = _quarantined(contract_lake.quarantine_orders, "o-repeated-field")
    assert row["failed_expectations"] == ["payload_is_json_object"]
    assert row["reason"] == INVALID_ORDERS["o-repeated-field"][1]


def test_contract_event_time_on_record_day(contract_lake: ContractLake) -> None:
    row = _quarantined(contract_lake.quarantine_orders, "o-other-day")
    assert row["failed_expectations"] == ["event_time_on_record_day"]


def test_contract_edge_applies_the_typing_rule() -> None:
    """The edge app accepts exactly the numeric values silver accepts."""
    for order in VALID_ORDERS.values():
        assert is_valid_order(None, order), order
    for marker in ("o-quantity-string", "o-price-string", "o-quantity-fraction", "o-quantity-bool"):
        assert not is_valid_order(None, INVALID_ORDERS[marker][0]), marker
    assert not is_valid_order(None, INVALID_ORDERS["o-price-bool"][0])


# -- Duplicates -------------------------------------------------------------------------------------


def test_contract_duplicates_with_different_payloads_first_copy_wins(contract_lake: ContractLake) -> None:
    row = contract_lake.silver_orders["o-dup"]
    assert row["quantity"] == 1 and row["event_time"].replace(tzinfo=UTC) == T0 + timedelta(minutes=6)
    # the dropped copy is in no gold window: [10:05, 10:10) holds o-window-end (2 x 5.0) and o-dup (1 x 1.0)
    w = contract_lake.tumbling[(_us(T0 + timedelta(minutes=5)), "p-2")]
    assert (w["orders"], w["units"], w["revenue"]) == (2, 3, 11.0)
    assert not any(r["reason"] for r in contract_lake.quarantine_orders if b'"o-dup"' in r["value"])


def test_contract_duplicates_first_ingested_wins_on_rebuild(spark) -> None:
    """A full rebuild picks the copy the incremental run kept: ingest time first, then the position."""
    from assets.silver.transform import deduplicate

    t1, t2 = datetime(2026, 3, 2, 11, 0), datetime(2026, 3, 2, 12, 0)
    rows = [
        ("o", 1, t2, 0, 5),
        ("o", 2, t1, 3, 9),
        ("o", 3, t1, 3, 10),
        ("p", 4, t1, 1, 1),
        ("p", 5, t1, 0, 7),
    ]
    df = spark.createDataFrame(
        rows,
        "order_id string, quantity int, _ingest_time timestamp, _kafka_partition int, _kafka_offset bigint",
    )
    first = {r.order_id: r.quantity for r in deduplicate(df, ("order_id",)).collect()}
    assert first == {"o": 2, "p": 5}
    last = {r.order_id: r.quantity for r in deduplicate(df, ("order_id",), latest=True).collect()}
    assert last == {"o": 1, "p": 4}


# -- Windows ----------------------------------------------------------------------------------------


def test_contract_window_end_is_exclusive(contract_lake: ContractLake) -> None:
    tumbling = contract_lake.tumbling
    first = tumbling[(_us(T0), "p-2")]  # 10:04:59.999 is in [10:00, 10:05)
    assert (first["orders"], first["units"], first["revenue"]) == (1, 3, 4.5)
    assert first["window_end"].replace(tzinfo=UTC) == T0 + timedelta(minutes=5)
    # hopping: [09:55, 10:05) holds 10:04:59.999 only; [09:56, 10:06) adds 10:05:00; [09:57, 10:07) 10:06
    hop = {m: contract_lake.hopping[_us(T0 + timedelta(minutes=m))] for m in (-5, -4, -3)}
    assert [(h["orders"], h["revenue"], h["customers"]) for h in hop.values()] == [
        (1, 4.5, 1),
        (2, 14.5, 1),
        (3, 15.5, 1),
    ]
    assert _us(T0 - timedelta(minutes=6)) not in contract_lake.hopping


# -- Sessions ---------------------------------------------------------------------------------------


def test_contract_session_gap_is_inclusive_and_ends_at_last_click(contract_lake: ContractLake) -> None:
    s = contract_lake.sessions
    first = s[("u-gap", _us(T0))]
    assert first["clicks"] == 2 and first["session_end"].replace(tzinfo=UTC) == T0 + GAP
    assert s[("u-gap", _us(T0 + 2 * GAP + MS))]["clicks"] == 1


def test_contract_session_duration_is_truncated(contract_lake: ContractLake) -> None:
    s = contract_lake.sessions
    durations = {
        user: (s[(user, _us(times[0]))]["duration_s"], s[(user, _us(times[0]))]["duration_ms"])
        for user, times in CLICKS.items()
    }
    assert durations == {
        "u-gap": (1800, 1_800_000),
        "u-short": (0, 200),  # 0.2 s crossing a second boundary: not 1 s
        "u-subsecond": (0, 999),
        "u-long": (8322, 8_322_900),  # not 8323
    }


# -- Profile versions and joins ---------------------------------------------------------------------


def test_contract_profile_change_instant_takes_the_new_version(contract_lake: ContractLake) -> None:
    e = contract_lake.enriched
    assert e["o-before-change"]["segment"] == "consumer"
    assert e["o-at-change"]["segment"] == "smb"
    assert e["o-at-change"]["profile_valid_from"].replace(tzinfo=UTC) == CHANGE


def test_contract_unknown_dimension_keys_are_kept_and_marked(contract_lake: ContractLake) -> None:
    e = contract_lake.enriched
    assert set(e) == set(contract_lake.silver_orders)  # a left join: no order lost
    missing = {oid: row["missing_dimensions"] for oid, row in e.items() if row["missing_dimensions"]}
    assert missing == {
        "o-unknown-customer": ["customer_profile"],
        "o-unknown-product": ["product"],
        "o-unknown-both": ["customer_profile", "product"],
        "o-before-first-profile": ["customer_profile"],
    }
    assert e["o-unknown-product"]["segment"] == "enterprise" and e["o-unknown-product"]["category"] is None
    assert e["o-unknown-customer"]["amount"] == 1.0  # revenue kept
    # The referential checks block (the gap is an error to fix upstream), counting those rows.
    customer = contract_lake.checks[("gold/orders_enriched", "customer_exists_at_order_time")]
    product = contract_lake.checks[("gold/orders_enriched", "product_exists")]
    assert not customer.passed and customer.metadata["failing_rows"].value == 3
    assert not product.passed and product.metadata["failing_rows"].value == 2
    assert contract_lake.checks[("gold/orders_enriched", "missing_dimensions_marked")].passed


# -- The written contract, the tables and the reference agree -----------------------------------------


def _type_name(t: pa.DataType) -> str:
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"array<{_type_name(t.value_type)}>"
    if pa.types.is_struct(t):
        return "struct<" + ", ".join(f"{f.name}: {_type_name(f.type)}" for f in t) + ">"
    if pa.types.is_timestamp(t):
        return "timestamp"
    names = {pa.int32(): "int", pa.int64(): "bigint", pa.float64(): "double", pa.date32(): "date"}
    return names.get(t) or ("binary" if pa.types.is_binary(t) or pa.types.is_large_binary(t) else str(t))


def test_contract_documents_every_column_of_every_table(contract_lake: ContractLake) -> None:
    schemas = contract_lake.schemas
    assert {"silver.orders", "gold.orders_enriched", "quarantine.orders", "bronze.orders"} <= set(schemas)
    for table, schema in schemas.items():
        layer = table.split(".")[0]
        documented = contract.columns(table) or contract.columns(f"{layer}.<topic>")
        actual = {f.name: _type_name(f.type) for f in schema}
        assert actual == documented, table


def test_contract_reference_recomputation_agrees_at_the_boundaries(contract_lake: ContractLake) -> None:
    con = contract_lake.ref
    tumbling = reference.tumbling(con)
    assert tumbling.keys() == contract_lake.tumbling.keys()
    for key, (rev, n, units) in tumbling.items():
        row = contract_lake.tumbling[key]
        assert (row["orders"], row["units"]) == (n, units) and row["revenue"] == pytest.approx(rev, abs=0.006)
    hopping = reference.hopping(con)
    assert hopping.keys() == contract_lake.hopping.keys()
    for key, (rev, n, c) in hopping.items():
        row = contract_lake.hopping[key]
        assert (row["orders"], row["customers"]) == (n, c) and row["revenue"] == pytest.approx(rev, abs=0.006)
    sessions = {
        k: (_us(r["session_end"]), r["clicks"], r["pages"], r["duration_s"], r["duration_ms"])
        for k, r in contract_lake.sessions.items()
    }
    assert sessions == reference.session_rows(con)
    enriched = {
        k: (
            r["segment"],
            r["country"],
            r["category"],
            r["amount"],
            r["missing_dimensions"],
            None if r["profile_valid_from"] is None else _us(r["profile_valid_from"]),
        )
        for k, r in contract_lake.enriched.items()
    }
    assert enriched == reference.enriched_rows(con)
