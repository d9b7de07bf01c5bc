"""Issue 25 item 8: `streamhouse describe TABLE` took 7-9.5 s, most of it loading the whole Dagster code
location (every asset, Spark, the resources) to list the table's checks. The checks are the table's
expectation suite, read from ``quality.suites``; Dagster is imported only when its instance exists,
for the checks' last results."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, date, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = "gold.revenue_tumbling_5m"

PROBE = """
import json, sys, time
started = time.perf_counter()
from orchestration.cli.main import main
try:
    main(["describe", sys.argv[1], "--format", "json"])
except SystemExit as exc:
    assert not exc.code, exc.code
heavy = ["orchestration.definitions", "pyspark", "dagster", "great_expectations"]
print(json.dumps({"loaded": [m for m in heavy if m in sys.modules], "s": time.perf_counter() - started}))
"""


def _describe(tmp_path: Path, dagster_home: Path) -> tuple[dict, dict]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "STREAMHOUSE_HOME": str(tmp_path),
        "STREAMHOUSE_LAKE_ROOT": str(tmp_path / "lake"),
        "STREAMHOUSE_DAGSTER_HOME": str(dagster_home),
        "PYTHONPATH": str(ROOT),
    }
    out = subprocess.run(
        [sys.executable, "-c", PROBE, TABLE],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    *described, probe = out.stdout.strip().splitlines()
    return json.loads("\n".join(described)), json.loads(probe)


def test_describe_lists_checks_without_loading_the_code_location(tmp_path: Path) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    from quality.suites import get_suite

    row = {
        "window_start": datetime(2026, 3, 2, tzinfo=UTC),
        "product_id": "p",
        "window_date": date(2026, 3, 2),
    }
    write_deltalake(
        str(tmp_path / "lake" / "gold" / "revenue_tumbling_5m"),
        pa.Table.from_pylist([row]),
        partition_by=["window_date"],
    )
    expected = sorted(e.name for e in get_suite(TABLE).expectations)

    data, probe = _describe(tmp_path, tmp_path / "no-instance")
    assert [c["name"] for c in data["checks"]] == expected
    assert {c["status"] for c in data["checks"]} == {"never run"}
    assert probe["loaded"] == [], probe  # neither the code location, nor Spark, nor even Dagster

    # With an instance, the last result of each check is read from it (and nothing more is loaded).
    from dagster import AssetCheckResult, AssetKey, DagsterInstance, asset, asset_check, materialize

    home = tmp_path / "dagster"
    home.mkdir()
    key = AssetKey(["gold", "revenue_tumbling_5m"])

    @asset(key=key)
    def table() -> None:
        return None

    @asset_check(asset=key, name="orders_positive")
    def orders_positive():  # type: ignore[no-untyped-def]  # no annotation: a string one does not resolve
        return AssetCheckResult(passed=True)

    with DagsterInstance.from_config(str(home)) as instance:
        assert materialize([table, orders_positive], instance=instance).success
    data, probe = _describe(tmp_path, home)
    status = {c["name"]: c["status"] for c in data["checks"]}
    assert status.pop("orders_positive") == "passed"  # the verdict's word (quality.verdict)
    assert set(status.values()) == {"never run"}
    assert "orchestration.definitions" not in probe["loaded"] and "pyspark" not in probe["loaded"]
