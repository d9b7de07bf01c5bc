"""Change tables on Spark, at the rules' edges: Debezium envelopes and declared deletes, applied in
sequence order whatever the arrival order, SCD1 and SCD2, the same on a replay.

Bronze rows are made as the ingest writes them (raw value bytes with their Kafka position) and go
through silver's own split and apply, from a declaration loaded like any pipeline's.
"""

from __future__ import annotations

import json
import textwrap
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from assets.bronze.ingest import ARROW_SCHEMA
from assets.pipeline import load_pipeline
from assets.silver.transform import apply_changes, silver_spec, split

pytestmark = [pytest.mark.spark]

DECLARATION = """\
name: crm
sources:
  accounts: {}
  plans: {}
change_tables:
  accounts:
    format: debezium
    fields: {account_id: string, tier: string}
    keys: [account_id]
    sequence_by: ts_ms
    scd_type: SCD
  plans:
    fields: {plan_id: string, price: double, changed_at: timestamp, status: string}
    keys: [plan_id]
    sequence_by: changed_at
    delete_when: status = 'retired'
    scd_type: SCD
"""


def _t(minute: int) -> datetime:
    return datetime(2026, 3, 2, 10, minute, tzinfo=UTC)


def _bronze(spark: Any, topic: str, values: list[dict[str, Any]]) -> Any:
    rows = [
        {
            "key": None,
            "value": json.dumps(v).encode(),
            "topic": topic,
            "partition": 0,
            "offset": i,
            "event_timestamp": _t(0),
            "headers": [],
            "ingest_time": _t(0),
            "event_date": date(2026, 3, 2),
        }
        for i, v in enumerate(values)
    ]
    return spark.createDataFrame(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA).to_pandas())


def _debezium(op: str, account: str, tier: str, minute: int) -> dict[str, Any]:
    row = {"account_id": account, "tier": tier}
    return {
        "op": op,
        "before": row if op == "d" else None,
        "after": None if op == "d" else row,
        "ts_ms": int(_t(minute).timestamp() * 1000),
    }


#: Arrival order, not change order: a1's delete arrives first, an update is sent twice.
ACCOUNTS = [
    _debezium("d", "a1", "gold", 30),
    _debezium("c", "a1", "free", 0),
    _debezium("u", "a1", "gold", 10),
    _debezium("u", "a1", "gold", 10),
    _debezium("c", "a2", "free", 5),
    _debezium("c", "a1", "pro", 40),  # re-created after its delete
]
PLANS = [
    {"plan_id": "p1", "price": 9.0, "changed_at": "2026-03-02T10:20:00Z", "status": "retired"},
    {"plan_id": "p1", "price": 5.0, "changed_at": "2026-03-02T10:00:00Z", "status": "active"},
    {"plan_id": "p2", "price": 7.0, "changed_at": "2026-03-02T10:10:00Z", "status": "active"},
    {"plan_id": "p2", "price": 8.0, "changed_at": "2026-03-02T10:15:00Z", "status": "active"},
]


def _apply(spark: Any, tmp_path: Path, table: str, values: list[dict[str, Any]], scd: int) -> list[tuple]:
    (tmp_path / "pipeline.yaml").write_text(textwrap.dedent(DECLARATION).replace("SCD", str(scd)))
    pipeline = load_pipeline(tmp_path)
    spec = silver_spec(table, pipeline.change_tables[table])
    frames = split(_bronze(spark, table, values), spec)
    assert frames.quarantine.count() == 0
    out = apply_changes(frames.valid, spec)
    columns = [*spec.keys, *(c for c in ("tier", "price") if c in out.columns)]
    if scd == 2:
        columns += ["valid_from", "valid_to"]
    rows = [tuple(r[c] for c in columns) for r in out.collect()]
    return sorted(tuple(v.astimezone(UTC).minute if isinstance(v, datetime) else v for v in r) for r in rows)


def test_debezium_scd2_a_delete_ends_a_validity_and_a_recreate_starts_one(spark: Any, tmp_path: Path) -> None:
    assert _apply(spark, tmp_path, "accounts", ACCOUNTS, 2) == [
        ("a1", "free", 0, 10),
        ("a1", "gold", 10, 30),  # ended by the delete at :30
        ("a1", "pro", 40, None),
        ("a2", "free", 5, None),
    ]


def test_debezium_scd1_keeps_the_latest_row_unless_it_was_deleted(spark: Any, tmp_path: Path) -> None:
    assert _apply(spark, tmp_path, "accounts", ACCOUNTS, 1) == [("a1", "pro"), ("a2", "free")]
    deleted = [*ACCOUNTS[:-1]]  # without the re-create, a1's last change is its delete
    assert _apply(spark, tmp_path, "accounts", deleted, 1) == [("a2", "free")]


def test_declared_deletes_of_an_upsert_feed(spark: Any, tmp_path: Path) -> None:
    assert _apply(spark, tmp_path, "plans", PLANS, 1) == [("p2", 8.0)]
    assert _apply(spark, tmp_path, "plans", PLANS, 2) == [
        ("p1", 5.0, 0, 20),  # retired at :20
        ("p2", 7.0, 10, 15),
        ("p2", 8.0, 15, None),
    ]
    assert _apply(spark, tmp_path, "plans", [*PLANS, *PLANS], 2) == _apply(spark, tmp_path, "plans", PLANS, 2)


def test_the_declaration_refuses_what_a_feed_cannot_mean(tmp_path: Path) -> None:
    from assets.pipeline import check_pipeline

    bad = DECLARATION.replace("sequence_by: ts_ms", "sequence_by: ts_ms\n    delete_when: tier = 'x'")
    bad = bad.replace("sequence_by: changed_at", "sequence_by: price").replace("SCD", "2")
    (tmp_path / "pipeline.yaml").write_text(bad)
    messages = [p.message for p in check_pipeline(tmp_path)[1]]
    assert messages == [
        "change_tables.accounts.delete_when: a debezium feed's deletes are its op = d records",
        "change_tables.plans.sequence_by: 'price' is a double; versions are ordered (and SCD2 validity "
        "measured) by a timestamp",
    ]
