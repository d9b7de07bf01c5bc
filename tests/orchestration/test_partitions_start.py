"""Issue 25 item 6: after a demo the UI showed "325 missing" daily partitions and a grey graph, because
the partitions started on a fixed 2026-01-01 whatever the data. Unset, ``partitions_start`` is now a
week before today, or the first day silver holds if earlier; the demo's three days are always in it."""

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


def test_unset_start_is_a_week_back_covering_the_demo_days(tmp_path: Path) -> None:
    from assets.partitions import RECENT_DAYS, default_start

    start = default_start(_env(tmp_path), today=TODAY)
    assert start == (TODAY - timedelta(days=RECENT_DAYS)).isoformat()
    keys = DailyPartitionsDefinition(start_date=start, timezone="UTC").get_partition_keys(
        current_time=datetime(2026, 11, 27, 12, tzinfo=UTC)
    )
    # The demo's three days ending last midnight, and late events hours before them, are partitions...
    demo_days = {(TODAY - timedelta(days=d)).isoformat() for d in (1, 2, 3, 4)}
    assert demo_days <= set(keys)
    # ...and the UI lists a week of days, not every day since a fixed start (325 "missing" ones).
    assert len(keys) == RECENT_DAYS


def test_days_silver_already_holds_stay_partitions(tmp_path: Path) -> None:
    from assets.partitions import default_start, first_data_day

    for table, day in (("orders", "2026-10-02"), ("clicks", "2026-10-05")):
        (tmp_path / ".state" / "lake" / "silver" / table / f"event_date={day}").mkdir(parents=True)
    assert first_data_day(_env(tmp_path)) == date(2026, 10, 2)
    assert default_start(_env(tmp_path), today=TODAY) == "2026-10-02"
    lake = tmp_path / "elsewhere"
    (lake / "silver" / "orders" / "event_date=2026-11-25").mkdir(parents=True)
    env = {**_env(tmp_path), "STREAMHOUSE_LAKE_ROOT": str(lake)}  # the settings' lake root is followed
    assert default_start(env, today=TODAY) == "2026-11-20"


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
