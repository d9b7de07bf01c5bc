"""Issue 46 item 4: one quality verdict everywhere. For the same data `streamhouse check` said "0 errors,
9 warnings", the Dagster UI a yellow "Failed", `describe` five "FAILED" without severity, and Data Docs
a red validation. Every place now says passed, warning or error (``quality.verdict``), a warning never
a failure: `check`'s rows and summary, the Dagster check results' description and ``verdict``
metadata, `describe`'s checks (Data Docs: ``test_data_docs.py``). Item 9: a freshness check passed
with "-333 days"; it now says the newest record is that long *after* the reference time.

DuckDB over hand-written Delta tables: no broker, no Spark.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.quality.test_not_compared import D, _orders, _tumbling, _write

TABLE = "gold.revenue_tumbling_5m"


@pytest.fixture
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """silver/orders and the gold windows of one day, consistent; no edge table (its comparison is a
    warning: not compared). The CLI's settings point here."""
    root = tmp_path / "lake"
    orders = _orders()
    _write(str(root / "silver" / "orders"), orders, "event_date")
    _write(str(root / "gold" / "revenue_tumbling_5m"), _tumbling(orders), "window_date")
    monkeypatch.setenv("STREAMHOUSE_LAKE_ROOT", str(root))
    monkeypatch.setenv("STREAMHOUSE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("STREAMHOUSE_DAGSTER_HOME", str(tmp_path / "dagster"))
    return root


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    from orchestration.cli.main import main

    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def _result_column(out: str, expectation: str) -> str:
    line = next(x for x in out.splitlines() if f" {expectation} " in x)
    cells = [c.strip() for c in re.split(r"[│|]", line)]
    return cells[cells.index(expectation) + 2]  # expectation, action, result


def test_check_says_passed_warning_error_and_counts_them(lake: Path, capsys) -> None:
    code, out = _cli(capsys, "check", TABLE, "--day", D.isoformat(), "--no-docs")
    assert code == 0, out
    assert _result_column(out, "edge_windows_match_gold") == "warning"
    assert _result_column(out, "totals_match_silver") == "passed"
    assert "FAIL" not in out and "skipped" not in out
    assert "1 table(s): 9 passed, 1 warning(s), 0 error(s)" in out

    # A negative revenue: a `fail` expectation does not hold: an error, exit 1.
    rows = _tumbling(_orders())
    rows[0]["revenue"] = -1.0
    _write(str(lake / "gold" / "revenue_tumbling_5m"), rows, "window_date")
    code, out = _cli(capsys, "check", TABLE, "--day", D.isoformat(), "--no-docs")
    assert code == 1
    assert _result_column(out, "revenue_non_negative") == "error"
    assert _result_column(out, "edge_windows_match_gold") == "warning"
    assert re.search(r"1 table\(s\): \d+ passed, 1 warning\(s\), 2 error\(s\)", out), out

    code, out = _cli(capsys, "check", TABLE, "--day", D.isoformat(), "--no-docs", "--format", "json")
    verdicts = {r["expectation"]: r["verdict"] for r in json.loads(out)}
    assert verdicts["revenue_non_negative"] == "error" and verdicts["edge_windows_match_gold"] == "warning"
    assert verdicts["one_row_per_window_and_product"] == "passed"


def test_dagster_check_results_say_the_verdict(lake: Path) -> None:
    from dagster import AssetCheckSeverity, AssetKey

    from quality.checks import build_checks, results
    from quality.runner import run_suite
    from quality.suites import get_suite

    run = run_suite(get_suite(TABLE), str(lake), days=[D])
    by_name = {r.check_name: r for r in results(run, AssetKey(["gold", "revenue_tumbling_5m"]))}
    warning, passed = by_name["edge_windows_match_gold"], by_name["totals_match_silver"]
    # Dagster draws a not-passed WARN result as a yellow "Failed": the words beside it say warning.
    assert not warning.passed and warning.severity == AssetCheckSeverity.WARN
    assert (warning.description or "").startswith("warning: not compared: no table bronze.edge_revenue_5m")
    assert "(reported, blocks nothing)" in (warning.description or "")
    assert warning.metadata["verdict"].value == "warning"
    assert passed.passed and passed.metadata["verdict"].value == "passed"
    assert (passed.description or "").startswith("passed: ")
    # and each check's own description says what a violation would be, in the same words
    (checks,) = [build_checks(get_suite(TABLE))]
    specs = {s.name: s.description or "" for s in checks.check_specs}
    assert "if it does not hold: warning, reported, blocks nothing" in specs["no_missing_windows"]
    assert "if it does not hold: error, blocks what is downstream" in specs["totals_match_silver"]
    assert not any(d.startswith("[") for d in specs.values())


def test_describe_shows_the_last_verdict_of_each_check_not_failed(lake: Path, tmp_path: Path, capsys) -> None:
    from dagster import (
        AssetCheckResult,
        AssetCheckSeverity,
        AssetKey,
        DagsterInstance,
        asset,
        asset_check,
        materialize,
    )

    key = AssetKey(["gold", "revenue_tumbling_5m"])

    @asset(key=key)
    def table() -> None:
        return None

    def check(name: str, passed: bool, severity: AssetCheckSeverity, description: str) -> Any:
        @asset_check(asset=key, name=name)
        def _check():  # type: ignore[no-untyped-def]
            return AssetCheckResult(passed=passed, severity=severity, description=description)

        return _check

    checks = [
        check("orders_positive", True, AssetCheckSeverity.ERROR, "passed: 0 of 12 rows fail"),
        check("no_missing_windows", False, AssetCheckSeverity.WARN, "warning: 3 unexpected rows (reported)"),
        check("totals_match_silver", False, AssetCheckSeverity.ERROR, "error: 1 unexpected rows (blocks)"),
    ]
    home = tmp_path / "dagster"
    home.mkdir()
    with DagsterInstance.from_config(str(home)) as instance:
        materialize([table, *checks], instance=instance, raise_on_error=False)

    code, out = _cli(capsys, "describe", TABLE)
    assert code == 0, out
    assert "FAILED" not in out and "SUCCEEDED" not in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert lines["no_missing_windows"].split()[1] == "warning"
    assert "- 3 unexpected rows (reported)" in lines["no_missing_windows"]
    assert lines["totals_match_silver"].split()[1] == "error"
    assert lines["orders_positive"].split()[1] == "passed"
    assert lines["edge_windows_match_gold"].split()[1:3] == ["never", "run"]
    assert "Checks (last result): 1 passed, 1 warning, 1 error, 7 never run" in out

    code, out = _cli(capsys, "describe", TABLE, "--format", "json")
    checks_json = {c["name"]: c for c in json.loads(out)["checks"]}
    warn = checks_json["no_missing_windows"]
    assert (warn["status"], warn["dagster_status"], warn["severity"]) == ("warning", "FAILED", "WARN")


def test_freshness_says_newer_than_the_reference_not_a_negative_age(lake: Path, capsys) -> None:
    """`check bronze.orders --as-of` a time before the data (the docs' example on the demo's data): the
    check passes, as the newest record is not older than allowed, and says it is newer, in words."""
    newest = datetime(2026, 3, 2, 23, 58, tzinfo=UTC)
    rows = [
        {
            "key": b"k",
            "value": b"{}",
            "topic": "orders",
            "partition": 0,
            "offset": i,
            "event_timestamp": newest - timedelta(hours=i),
            "event_date": (newest - timedelta(hours=i)).date(),
        }
        for i in range(3)
    ]
    _write(str(lake / "bronze" / "orders"), rows, "event_date")
    code, out = _cli(
        capsys, "check", "bronze.orders", "--as-of", "2026-01-08T00:00:00Z", "--no-docs", "--format", "json"
    )
    assert code == 0, out
    (fresh,) = [r for r in json.loads(out) if r["expectation"] == "event_timestamp_fresh"]
    assert fresh["verdict"] == "passed"
    assert fresh["observed"] == (
        "newest is 53 days 23 h 58 min after the reference time 2026-01-08T00:00:00+00:00: newer than it "
        "(at most 1 day allowed); newest 2026-03-02 23:58:00"
    )
    assert not re.search(r"-\d+ day", fresh["observed"])

    code, out = _cli(capsys, "check", "bronze.orders", "--as-of", "2026-03-05T12:00:00Z", "--no-docs")
    assert code == 0
    line = next(x for x in out.splitlines() if "event_timestamp_fresh" in x)
    assert "warning" in line and "newest is 2 days 12 h 2 min before the reference time" in line
