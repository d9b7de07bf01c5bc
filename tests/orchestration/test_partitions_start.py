"""Issue 25 item 6: after a demo the UI showed "325 missing" daily partitions and a grey graph, because
the partitions started on a fixed 2026-01-01 whatever the data. Issue 46 item 9: a start a week back
still showed "Missing (2)" for days before the data. Unset, ``partitions_start`` is now the day before
the first day silver holds (its evening hopping windows hold the first orders), or on an empty lake the
days the demo will fill."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from dagster import DailyPartitionsDefinition

ROOT = Path(__file__).resolve().parents[2]
TODAY = date(2026, 11, 27)


def _env(home: Path) -> dict[str, str]:
    return {"STREAMHOUSE_HOME": str(home)}


def test_an_empty_lake_starts_with_the_days_the_demo_fills(tmp_path: Path) -> None:
    from assets.partitions import RECENT_DAYS, default_start

    start = default_start(_env(tmp_path), today=TODAY)
    assert start == (TODAY - timedelta(days=RECENT_DAYS)).isoformat()
    keys = DailyPartitionsDefinition(start_date=start, timezone="UTC").get_partition_keys(
        current_time=datetime(2026, 11, 27, 12, tzinfo=UTC)
    )
    # The demo's three days ending last midnight, and late events hours before them, are partitions...
    demo_days = {(TODAY - timedelta(days=d)).isoformat() for d in (1, 2, 3, 4)}
    assert demo_days <= set(keys)
    # ...and the UI lists those days and the evening before, not days long before (325 "missing" ones).
    assert len(keys) == RECENT_DAYS == len(demo_days) + 1


def test_days_silver_already_holds_stay_partitions(tmp_path: Path) -> None:
    from assets.partitions import default_start, first_data_day

    for table, day in (("orders", "2026-10-02"), ("clicks", "2026-10-05")):
        (tmp_path / ".state" / "lake" / "silver" / table / f"event_date={day}").mkdir(parents=True)
    assert first_data_day(_env(tmp_path)) == date(2026, 10, 2)
    assert default_start(_env(tmp_path), today=TODAY) == "2026-10-01"  # and the evening before
    lake = tmp_path / "elsewhere"
    (lake / "silver" / "orders" / "event_date=2026-11-25").mkdir(parents=True)
    env = {**_env(tmp_path), "STREAMHOUSE_LAKE_ROOT": str(lake)}  # the settings' lake root is followed
    assert default_start(env, today=TODAY) == "2026-11-24"


def test_no_partition_before_the_data_is_missing_after_a_demo(tmp_path: Path) -> None:
    """The demo's lake: orders and clicks on the three days ending last midnight and late orders on the
    day before. The pipeline builds every event day and the day before each (``affected_days``): every
    partition the UI lists is one the demo built, none "missing" before the data."""
    from assets.partitions import affected_days, default_start

    days = [(TODAY - timedelta(days=d)).isoformat() for d in (4, 3, 2, 1)]
    for table in ("orders", "clicks"):
        for day in days[1:] if table == "clicks" else days:
            (tmp_path / ".state" / "lake" / "silver" / table / f"event_date={day}").mkdir(parents=True)
    start = default_start(_env(tmp_path), today=TODAY)
    assert start == (TODAY - timedelta(days=5)).isoformat()
    keys = DailyPartitionsDefinition(start_date=start, timezone="UTC").get_partition_keys(
        current_time=datetime(2026, 11, 27, 12, tzinfo=UTC)
    )
    built = {d for d in affected_days({"orders": days, "clicks": days[1:]}) if d >= start}
    assert set(keys) <= built, sorted(set(keys) - built)


def test_the_code_location_loads_with_the_start_unset(tmp_path: Path) -> None:
    """No partitions_start anywhere: the definitions load (nothing to disagree with) with the default."""
    code = (
        "from orchestration.definitions import defs; from assets.partitions import PARTITION_START as s;"
        "print(s, len(defs.resolve_job_def('daily_job').partitions_def.get_partition_keys()))"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "STREAMHOUSE_HOME": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    start, count = out.stdout.split()
    assert date.fromisoformat(start) >= datetime.now(UTC).date() - timedelta(days=7)
    assert int(count) <= 7
