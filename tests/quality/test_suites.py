"""Suites and checks without a broker: coverage of every table, blocking flags, partition scoping, the
silver row rules, and the GX result/Data Docs rendering of measured outcomes."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest


def test_every_bronze_silver_and_gold_table_has_a_suite_and_its_checks_are_in_the_definitions():
    from assets.bronze.assets import BRONZE_TOPICS
    from assets.gold.assets import GOLD_TABLES
    from assets.silver.transform import SPECS
    from orchestration.definitions import defs
    from quality.suites import SUITES

    tables = {f"bronze.{t}" for t in BRONZE_TOPICS} | {f"silver.{t}" for t in SPECS}
    tables |= {f"gold.{t}" for t in GOLD_TABLES}
    assert set(SUITES) == tables

    graph = defs.resolve_asset_graph()
    assets = {k.to_user_string() for k in graph.get_all_asset_keys()}
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    for suite in SUITES.values():
        key = f"{suite.layer}/{suite.name}"
        assert key in assets
        assert {(key, e.name) for e in suite.expectations} <= checks
    # fail → blocking; warn and drop → reported only
    specs = {
        (spec.asset_key.to_user_string(), spec.name): spec
        for checks_def in defs.asset_checks or []
        for spec in checks_def.check_specs
    }
    for suite in SUITES.values():
        for e in suite.expectations:
            assert specs[(f"{suite.layer}/{suite.name}", e.name)].blocking == (e.action == "fail")
    # the daily job runs the checks of the tables it builds
    daily = defs.resolve_job_def("daily_job")
    assert {"quality_silver_orders", "quality_gold_revenue_tumbling_5m"} <= set(daily.graph.node_names())


def test_silver_row_rules_come_from_the_silver_expectations():
    from assets.silver.transform import SPECS
    from quality.suites import get_suite

    for topic, spec in SPECS.items():
        suite = get_suite(f"silver.{topic}")
        for rule in spec.expectations:
            mirrored = suite.expectation(rule.name)
            assert mirrored.action == rule.action and mirrored.sql == rule.violation
    assert [e.name for e in SPECS["orders"].drop_expectations][-3:] == [
        "event_time_on_record_day",
        "quantity_positive",
        "unit_price_non_negative",
    ]


def test_run_days_follow_the_partition_tags():
    from quality.checks import run_days

    assert run_days({"dagster/partition": "2026-01-05"}) == [date(2026, 1, 5)]
    tags = {
        "dagster/asset_partition_range_start": "2026-01-05",
        "dagster/asset_partition_range_end": "2026-01-07",
    }
    assert run_days(tags) == [date(2026, 1, 5), date(2026, 1, 6), date(2026, 1, 7)]
    assert run_days({}) is None


def test_unknown_table_names_the_closest_suite():
    from quality.suites import UnknownTableError, get_suite

    with pytest.raises(UnknownTableError, match=r"did you mean silver\.orders"):
        get_suite("silver.order")
    assert get_suite("gold/click_sessions").table == "gold.click_sessions"


def test_outcomes_become_gx_results_and_a_data_docs_page(tmp_path: Path):
    from quality.engine import Batch, Outcome
    from quality.gx import data_docs, validation_result
    from quality.suites import get_suite

    suite = get_suite("gold.revenue_hopping_10m")
    outcomes = [
        Outcome(e, e.name != "one_row_per_window", 100, 0 if e.name != "one_row_per_window" else 2, "x")
        for e in suite.expectations
    ]
    outcomes[1].sample = [{"window_start": "2026-01-05T00:00:00", "duplicate_rows": 2}]
    batch = Batch(suite.table, "/lake/gold/revenue_hopping_10m", 3, [date(2026, 1, 5)], 100)
    from datetime import UTC, datetime

    result = validation_result(suite, batch, outcomes, "run-1", datetime.now(UTC))
    assert not result.success
    assert result.statistics["unsuccessful_expectations"] == 1
    failed = [r for r in result.results if not r.success]
    assert failed[0].expectation_config.meta["name"] == "one_row_per_window"
    assert failed[0].result["unexpected_count"] == 2

    page = data_docs(suite, batch, outcomes, tmp_path / "quality", "run-1")
    assert page.is_file() and page.name == "2026-01-05.html"
    html = page.read_text()
    assert "one_row_per_window" in html and "gold.revenue_hopping_10m" in html
