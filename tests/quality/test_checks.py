"""Expectation suites as Dagster asset checks, end to end: real broker, Spark, Delta and Dagster runs.

A clean run passes every check; injected nulls, out-of-range values, duplicate keys, orphan
references, stale data and a broken gold total are quarantined, reported or blocking with the right
counts; a failed blocking check stops the downstream assets of its run and the next clean run recovers.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest

from assets.sample_data import (
    CUSTOMERS,
    DEFAULT_START,
    EDGE_OUTPUT_TOPICS,
    ORDERS,
    RawRecord,
    SampleData,
    generate,
    produce,
)

DAY = DEFAULT_START.date().isoformat()
#: freshness reference: one hour after the one day of sample data
AS_OF = (DEFAULT_START + timedelta(days=1, hours=1)).isoformat()


def _evaluations(*results: Any) -> dict[tuple[str, str], Any]:
    out = {}
    for result in results:
        for ev in result.get_asset_check_evaluations():
            out[(ev.asset_key.to_user_string(), ev.check_name)] = ev
    return out


def _meta(ev: Any, key: str) -> Any:
    return ev.metadata[key].value


def _materialized(result: Any) -> set[str]:
    return {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}


def _daily_run(ql: Any, run_config: dict | None = None) -> Any:
    """The daily job for DAY, not raising when a blocking check fails (the result says so)."""
    from orchestration.runs import range_tags

    return ql.defs.resolve_job_def("daily_job").execute_in_process(
        instance=ql.instance, tags=range_tags(DAY, DAY), run_config=run_config, raise_on_error=False
    )


def _all_check_keys() -> set[tuple[str, str]]:
    from quality.suites import SUITES

    return {(f"{s.layer}/{s.name}", e.name) for s in SUITES.values() for e in s.expectations}


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
def test_clean_run_passes_every_check_with_data_docs(quality_lake):
    from orchestration.pipeline import run_daily, run_ingest

    ql = quality_lake(AS_OF)
    data = generate(4000, days=1, seed=11, id_prefix=f"{uuid.uuid4().hex[:4]}-")
    produce(ql.client, data, prefix=ql.prefix)
    ingest = run_ingest(ql.defs, ql.instance)
    daily = run_daily(ql.defs, ingest.affected_days, ql.instance)
    assert ingest.result.success and all(r.success for r in daily)

    evals = _evaluations(ingest.result, *daily)
    # Every expectation of every table ran as a check, but those of the edge apps' bronze tables: no edge
    # app ran, so those tables do not exist and their assets are not materialized (checks skipped).
    edge = {k for k in _all_check_keys() if k[0] in {f"bronze/{t}" for t in EDGE_OUTPUT_TOPICS}}
    assert edge and set(evals) == _all_check_keys() - edge
    # The only results not passed are the comparisons with the edge's missing table: warnings saying so.
    failed = {k: ev for k, ev in evals.items() if not ev.passed}
    assert set(failed) == {("gold/revenue_tumbling_5m", "edge_windows_match_gold")}
    for ev in failed.values():
        assert ev.severity.value == "WARN" and "not compared" in (ev.description or "")
    gold = _materialized(daily[0]) | {k for r in daily[1:] for k in _materialized(r)}
    assert {"gold/revenue_tumbling_5m", "gold/orders_enriched", "gold/click_sessions"} <= gold

    ev = evals[("gold/revenue_tumbling_5m", "totals_match_silver")]
    assert _meta(ev, "failing_rows") == 0 and _meta(ev, "expectation").startswith(
        "unexpected_rows_expectation"
    )
    page = Path(_meta(ev, "data_docs_path"))
    assert page.is_file() and page.is_relative_to(ql.docs)
    assert _meta(ev, "data_docs") == page.resolve().as_uri()
    assert "totals_match_silver" in page.read_text()
    assert (ql.docs / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html").is_file()


def _order(order_id: str, customer: str, ts_ms: int) -> RawRecord:
    from assets.sample_data import iso_ms

    payload = {
        "order_id": order_id,
        "customer_id": customer,
        "product_id": "p-001",
        "quantity": 2,
        "unit_price": 3.0,
        "event_time": iso_ms(ts_ms),
    }
    return RawRecord(customer.encode(), orjson.dumps(payload), ts_ms)


@pytest.mark.broker
@pytest.mark.spark
@pytest.mark.slow
def test_bad_data_is_quarantined_reported_and_blocks(quality_lake, spark, monkeypatch, capsys):
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import write_deltalake

    from assets.delta import read_arrow
    from orchestration.cli.main import main
    from orchestration.pipeline import materializations, run_ingest
    from quality.runner import parse_as_of, run_suite
    from quality.suites import get_suite

    ql = quality_lake(AS_OF)
    tag = uuid.uuid4().hex[:4]
    data = generate(3000, days=1, seed=5, id_prefix=f"{tag}-", invalid_ratio=0.02, duplicate_ratio=0.02)
    noon = int(DEFAULT_START.timestamp() * 1000) + 12 * 3_600_000
    data.records[ORDERS].append(_order(f"{tag}-orphan", "c-9999", noon))  # no such customer
    produce(ql.client, data, prefix=ql.prefix)
    ingest = run_ingest(ql.defs, ql.instance)
    assert ingest.result.success
    first = _daily_run(ql)
    evals = _evaluations(first)

    # Nothing disappears: every bronze record is a silver row, a dropped duplicate or quarantined.
    mats = materializations(first)
    silver, quarantine = read_arrow(ql.uri("silver", ORDERS)), read_arrow(ql.uri("quarantine", ORDERS))
    bronze_rows = read_arrow(ql.uri("bronze", ORDERS)).num_rows
    meta = mats["silver/orders"]
    assert meta["rows_in"] == bronze_rows == meta["rows_passed"] + meta["rows_quarantined"]
    assert bronze_rows == silver.num_rows + quarantine.num_rows + meta["duplicates_dropped"]
    assert quarantine.num_rows == data.injected[ORDERS]["invalid"] > 0
    assert meta["duplicates_dropped"] == data.injected[ORDERS]["duplicate"] > 0
    assert set(quarantine.column("run_id").to_pylist()) == {first.run_id}

    # Quarantined rows name the expectations they failed; the drop checks report exactly those counts.
    per_expectation = Counter(pc.list_flatten(quarantine.column("failed_expectations")).to_pylist())
    assert {"quantity_positive", "unit_price_non_negative", "customer_id_not_null"} & set(per_expectation)
    assert per_expectation == {k: v for k, v in meta["expectations_dropped"].items() if v}
    for name, count in per_expectation.items():
        ev = evals[("silver/orders", name)]
        assert not ev.passed and ev.severity.value == "WARN" and _meta(ev, "failing_rows") == count
        assert _meta(ev, "failing_sample") and _meta(ev, "action") == "drop"
    assert evals[("silver/orders", "order_id_not_null")].passed  # not injected

    # The orphan order is caught (ERROR) with its sample row; Data Docs name the failed expectation.
    orphan = evals[("gold/orders_enriched", "customer_exists_at_order_time")]
    assert not orphan.passed and orphan.severity.value == "ERROR"
    assert _meta(orphan, "failing_rows") == 1
    assert [r["order_id"] for r in _meta(orphan, "failing_sample")] == [f"{tag}-orphan"]
    page = Path(_meta(orphan, "data_docs_path")).read_text()
    assert "customer_exists_at_order_time" in page
    assert not first.success  # a failed blocking check fails the run

    # A duplicate key in silver: the blocking uniqueness check fails and no gold asset materializes.
    dup = silver.filter(pc.equal(silver.column("event_date"), pa.scalar(DEFAULT_START.date()))).slice(0, 1)
    write_deltalake(ql.uri("silver", ORDERS), dup, mode="append")
    blocked = _daily_run(ql)
    ev = _evaluations(blocked)[("silver/orders", "order_id_unique")]
    assert not ev.passed and ev.severity.value == "ERROR" and _meta(ev, "failing_rows") == 2
    assert _meta(ev, "failing_sample")[0]["duplicate_rows"] == 2
    assert not blocked.success
    # Only what is downstream of silver/orders is blocked: click sessions (from silver/clicks) still run.
    done = _materialized(blocked)
    assert "gold/click_sessions" in done
    assert not done & {"gold/revenue_tumbling_5m", "gold/revenue_hopping_10m", "gold/orders_enriched"}

    # The fix: the missing customer profile arrives and silver is rebuilt: the next run passes.
    profile = {
        "customer_id": "c-9999",
        "name": "late customer",
        "segment": "smb",
        "country": "DE",
        "updated_at": DEFAULT_START.isoformat().replace("+00:00", "Z"),
    }
    start_ms = int(DEFAULT_START.timestamp() * 1000)
    fix = SampleData(records={CUSTOMERS: [RawRecord(b"c-9999", orjson.dumps(profile), start_ms)]})
    produce(ql.client, fix, prefix=ql.prefix, create=False)
    assert run_ingest(ql.defs, ql.instance).result.success
    refresh = {"ops": {"silver_orders": {"config": {"full_refresh": True}}}}
    recovered = _daily_run(ql, refresh)
    evals = _evaluations(recovered)
    assert recovered.success
    assert [k for k, e in evals.items() if not e.passed and e.severity.value == "ERROR"] == []
    assert {"gold/revenue_tumbling_5m", "gold/orders_enriched"} <= _materialized(recovered)

    # Stale data: the newest order is three days old at the reference time (reported, not blocking).
    stale = run_suite(
        get_suite("bronze.orders"),
        str(ql.lake),
        spark=lambda: spark,
        as_of=parse_as_of((DEFAULT_START + timedelta(days=4)).isoformat()),
    )
    (fresh,) = [o for o in stale.outcomes if o.expectation.name == "event_timestamp_fresh"]
    assert not fresh.success and fresh.expectation.action == "warn" and not stale.errors

    # A broken gold total: `streamhouse check` reports it and exits 1.
    monkeypatch.setenv("STREAMHOUSE_LAKE_ROOT", str(ql.lake))
    monkeypatch.setenv("STREAMHOUSE_STATE_DIR", str(ql.state))
    tumbling = read_arrow(ql.uri("gold", "revenue_tumbling_5m"))
    revenue = tumbling.column("revenue").to_pylist()
    revenue[0] += 100.0
    broken = tumbling.set_column(
        tumbling.schema.get_field_index("revenue"), "revenue", pa.array(revenue, pa.float64())
    )
    write_deltalake(ql.uri("gold", "revenue_tumbling_5m"), broken, mode="overwrite")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["check", "gold.revenue_tumbling_5m", "--day", DAY])
    out = capsys.readouterr().out
    assert exit_info.value.code == 1
    line = next(x for x in out.splitlines() if "totals_match_silver" in x)
    assert "error" in line and "1 error(s)" in out and "Data Docs:" in out

    with pytest.raises(SystemExit) as exit_info:
        main(["check", "gold.revenue_tumbling_5mm"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_info.value.code == 2
    assert err == [
        "error: no expectation suite for table gold.revenue_tumbling_5mm; did you mean "
        "gold.revenue_tumbling_5m?"
    ]
