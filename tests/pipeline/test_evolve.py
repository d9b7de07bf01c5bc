"""A pipeline changed under a lake that holds data, as a team changes its own.

The IoT example is copied and built with ``streamhouse demo --pipeline``; then a field is added (new
readings carry it): the next run keeps every old row, with the new column null, and Delta records the
schema change. Then a window's size is changed: the next run refuses to mix old and new windows,
saying which table and how to rebuild it, and `streamhouse replay lake` rebuilds it with the new size.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
STREAMHOUSE = str(Path(sys.executable).parent / "streamhouse")


def _run(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([STREAMHOUSE, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def test_a_field_added_and_a_window_changed_under_a_lake_with_data(
    user_env: dict[str, str], tmp_path: Path
) -> None:
    from assets.delta import duckdb_relation, history

    iot = tmp_path / "iot"
    shutil.copytree(ROOT / "examples" / "iot", iot, ignore=shutil.ignore_patterns("__pycache__"))
    lake, env = tmp_path / "lake", user_env
    # unique topics on the shared broker: the copy's sources get their own names
    for name in ("readings", "devices"):
        _edit(iot / "pipeline.yaml", f"  {name}: {{partitions:", f"  evo_{name}: {{partitions:")
        _edit(iot / "pipeline.yaml", f"\n  {name}:\n", f"\n  evo_{name}:\n")
    for old, new in (("from: readings", "from: evo_readings"), ("with: devices", "with: evo_devices")):
        (iot / "pipeline.yaml").write_text((iot / "pipeline.yaml").read_text().replace(old, new))
    _edit(
        iot / "iot_data.py",
        'records={"devices": [], "readings": []}',
        'records={"evo_devices": [], "evo_readings": []}',
    )
    text = (iot / "iot_data.py").read_text().replace('out.records["readings"]', 'out.records["evo_readings"]')
    (iot / "iot_data.py").write_text(text.replace('out.records["devices"]', 'out.records["evo_devices"]'))
    _edit(iot / "pipeline.yaml", "FROM gold.readings_at_site", "FROM gold.evo_readings_at_site")
    _edit(iot / "pipeline.yaml", "  readings_at_site:\n", "  evo_readings_at_site:\n")
    first = _run(["demo", "--pipeline", str(iot)], env, tmp_path)
    assert first.returncode == 0, (first.stdout[-2000:], first.stderr[-2000:])
    silver = str(lake / "silver" / "evo_readings")
    before = duckdb_relation(duckdb.connect(), silver).aggregate("count(*)").fetchall()[0][0]

    # 1. A field added: new readings carry it (another seed: new reading ids), old rows read null.
    _edit(
        iot / "pipeline.yaml", "      humidity: double\n", "      humidity: double\n      battery: double\n"
    )
    _edit(
        iot / "iot_data.py",
        '"humidity": round(rng.uniform(30, 80), 1),',
        '"humidity": round(rng.uniform(30, 80), 1), "battery": 3.7,',
    )
    _edit(iot / "iot_data.py", "    seed: int = 7,", "    seed: int = 8,")
    second = _run(["demo", "--pipeline", str(iot)], env, tmp_path)
    assert second.returncode == 0, (second.stdout[-2000:], second.stderr[-2000:])
    con = duckdb.connect()
    rows = duckdb_relation(con, silver).aggregate("count(*), count(battery), min(battery)").fetchall()[0]
    assert rows[0] > before and rows[1] == rows[0] - before and rows[2] == 3.7  # old rows: null battery
    assert any("streamhouse.fields" in e and "battery" in e["streamhouse.fields"] for e in history(silver))

    # 2. A window's size changed: the next run refuses, naming the table and the way to rebuild it.
    _edit(iot / "pipeline.yaml", "window: {type: tumbling, size: 1h}", "window: {type: tumbling, size: 2h}")
    third = _run(["demo", "--pipeline", str(iot)], env, tmp_path)
    assert third.returncode == 2, (third.stdout[-2000:], third.stderr[-2000:])
    assert "gold/device_hourly was built by other logic" in third.stderr and "Traceback" not in third.stderr
    assert "streamhouse replay lake gold.device_hourly" in third.stderr
    replay = _run(
        ["replay", "lake", "gold.device_hourly"], {**env, "STREAMHOUSE_PIPELINE": str(iot)}, tmp_path
    )
    assert replay.returncode == 0, (replay.stdout[-2000:], replay.stderr[-2000:])
    hourly = duckdb_relation(duckdb.connect(), str(lake / "gold" / "device_hourly"))
    sizes = hourly.aggregate("min(window_end - window_start), max(window_end - window_start)").fetchall()[0]
    assert {s.total_seconds() for s in sizes} == {7200.0}
