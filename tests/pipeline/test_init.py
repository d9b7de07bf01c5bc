"""``streamhouse pipeline init``: a pipeline that checks clean and builds its lake as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from orchestration.cli.main import cli

STREAMHOUSE = str(Path(sys.executable).parent / "streamhouse")


def test_init_writes_a_pipeline_that_checks_clean_and_never_overwrites(tmp_path: Path) -> None:
    folder = tmp_path / "Card-Payments"
    made = CliRunner().invoke(cli, ["pipeline", "init", str(folder)])
    assert made.exit_code == 0, made.output
    assert sorted(p.name for p in folder.iterdir()) == ["card_payments_data.py", "pipeline.yaml"]
    assert "streamhouse demo --pipeline" in made.output
    checked = CliRunner().invoke(cli, ["pipeline", "check", str(folder)])
    assert checked.exit_code == 0, checked.output
    assert "pipeline 'card_payments' is valid: 1 source(s), 1 event table(s)" in checked.output
    before = (folder / "pipeline.yaml").read_text()
    again = CliRunner().invoke(cli, ["pipeline", "init", str(folder)])
    assert again.exit_code == 2 or "already exists" in str(again.exception)
    assert (folder / "pipeline.yaml").read_text() == before


@pytest.mark.slow
def test_the_scaffold_builds_its_lake_with_demo_pipeline(user_env: dict[str, str], tmp_path: Path) -> None:
    """init, then demo --pipeline: bronze holds every payment, quarantine the bad amounts, and the hourly
    gold table equals the valid payments counted per merchant and hour straight from bronze."""
    subprocess.run([STREAMHOUSE, "pipeline", "init", "shop"], cwd=tmp_path, check=True, capture_output=True)
    lake, env = tmp_path / "lake", user_env
    run = subprocess.run(
        [STREAMHOUSE, "demo", "--pipeline", "shop"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
    assert "gold/merchant_hourly" in run.stdout
    from assets.delta import duckdb_relation

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    duckdb_relation(con, str(lake / "bronze" / "payments"), view_name="bronze")
    duckdb_relation(con, str(lake / "quarantine" / "payments"), view_name="quarantine")
    duckdb_relation(con, str(lake / "gold" / "merchant_hourly"), view_name="gold")
    valid = """
        SELECT json_extract_string(v, '$.merchant_id') AS m, json_extract(v, '$.amount')::DOUBLE AS amount,
               json_extract_string(v, '$.paid_at')::TIMESTAMPTZ::TIMESTAMP AS t
        FROM (SELECT decode(value) AS v FROM bronze) WHERE json_extract(v, '$.amount')::DOUBLE >= 0"""
    expected = con.sql(
        f"SELECT time_bucket(INTERVAL 1 HOUR, t), m, count(*), round(sum(amount), 2) "
        f"FROM ({valid}) GROUP BY ALL"
    ).fetchall()
    actual = con.sql("SELECT window_start, merchant_id, payments, revenue FROM gold").fetchall()
    bad = con.sql(
        "SELECT count(*) FROM bronze WHERE json_extract(decode(value), '$.amount')::DOUBLE < 0"
    ).fetchall()
    assert con.sql("SELECT count(*) FROM quarantine").fetchall() == bad
    normal = sorted((w.replace(tzinfo=None), m, n, round(r, 2)) for w, m, n, r in actual)
    assert normal == sorted((w.replace(tzinfo=None), m, n, round(r, 2)) for w, m, n, r in expected)


def test_generate_says_it_is_the_demos_when_another_pipeline_is_configured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    iot = Path(__file__).resolve().parents[2] / "examples" / "iot"
    monkeypatch.setenv("STREAMHOUSE_PIPELINE", str(iot))
    result = CliRunner().invoke(cli, ["generate", "--events", "5"])
    assert result.exit_code == 2
    assert f"`streamhouse demo --pipeline {iot}` runs its own generator" in result.output
