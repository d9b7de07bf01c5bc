"""`streamhouse tables | describe | sql`: output formats round-trip, friendly errors exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from assets.lake import sql
from orchestration.cli.main import main
from tests.analyst.conftest import DAYS, AnalystLake

pytestmark = pytest.mark.spark
ROOT = Path(__file__).resolve().parents[2]
QUERY = "SELECT * FROM gold.revenue_tumbling_5m ORDER BY window_start, product_id"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_tables_lists_every_table_with_its_facts(lake_env: AnalystLake, capsys):
    code, out, _ = run(capsys, "tables", "--format", "json")
    assert code == 0
    tables = {t["name"]: t for t in json.loads(out)}
    assert set(tables) == {"gold.revenue_tumbling_5m", "silver.orders"}  # _plots is not a table
    gold = tables["gold.revenue_tumbling_5m"]
    assert gold["layer"] == "gold" and gold["version"] == 2 and gold["rows"] == 24 * len(DAYS)
    assert gold["partition_columns"] == ["window_date"] and gold["files"] >= len(DAYS)
    assert (
        gold["size_bytes"] > 0
        and gold["last_commit"]
        and gold["last_operation"].endswith("(overwrite_where)")
    )
    code, out, _ = run(capsys, "tables")
    assert code == 0 and "gold.revenue_tumbling_5m" in out and "window_date" in out


def test_describe_schema_checks_and_history(lake_env: AnalystLake, capsys):
    code, out, _ = run(capsys, "describe", "gold.revenue_tumbling_5m", "--history", "--format", "json")
    assert code == 0
    desc = json.loads(out)
    cols = {c["name"]: c for c in desc["columns"]}
    assert cols["revenue"]["type"] == "double" and cols["revenue"]["nullable"] is True
    assert cols["window_date"]["partition"] and "partition" in cols["window_date"]["description"]
    assert desc["partition_columns"] == ["window_date"] and desc["properties"]["min_reader_version"] == 1
    # the asset checks defined for gold/revenue_tumbling_5m in the Definitions (quality suites are being
    # added; none may exist yet); the Dagster home is empty, so none has run
    assert isinstance(desc["checks"], list)
    assert all(c["name"] and c["status"] == "never run" for c in desc["checks"])
    history = {h["version"]: h for h in desc["history"]}
    assert history[0]["rows_added"] == 72 and history[0]["rows_removed"] == 0
    assert history[1]["rows_added"] == 24 and history[1]["rows_removed"] == 0
    assert history[2]["rows_added"] == 24 and history[2]["rows_removed"] == 24  # day 2 replaced
    assert history[2]["input_versions"] == {"silver/orders": 0}
    code, out, _ = run(capsys, "describe", "gold/revenue_tumbling_5m", "--history")
    assert code == 0 and "silver/orders@0" in out and "window_date" in out
    assert (
        ("no checks defined" in out) if not desc["checks"] else all(c["name"] in out for c in desc["checks"])
    )


def test_describe_history_names_the_dagster_run(lake_env: AnalystLake, capsys, tmp_path: Path, monkeypatch):
    """A table materialized by a Dagster run: describe --history shows the run id of each version."""
    from dagster import DagsterInstance, MaterializeResult, asset, materialize

    from assets.delta import write_delta_arrow

    lake = tmp_path / "lake"
    home = tmp_path / "dagster-home"
    home.mkdir()
    monkeypatch.setenv("STREAMHOUSE_LAKE_ROOT", str(lake))
    monkeypatch.setenv("STREAMHOUSE_DAGSTER_HOME", str(home))

    @asset(key=["gold", "daily_totals"])
    def daily_totals():  # no annotation: dagster resolves annotations at definition time
        commit = write_delta_arrow(
            pa.table({"day": ["2026-01-01"], "total": [1.0]}), str(lake / "gold" / "daily_totals")
        )
        return MaterializeResult(metadata={"delta_version": commit.version})

    instance = DagsterInstance.from_config(str(home))
    first = materialize([daily_totals], instance=instance).run_id
    second = materialize([daily_totals], instance=instance).run_id
    code, out, _ = run(capsys, "describe", "gold.daily_totals", "--history", "--format", "json")
    assert code == 0
    assert {h["version"]: h["dagster_run_id"] for h in json.loads(out)["history"]} == {0: first, 1: second}


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_output_formats_round_trip(lake_env: AnalystLake, capsys, tmp_path: Path, fmt: str):
    expected = sql(QUERY, lake_root=lake_env.root, arrow=True)
    out_file = tmp_path / f"result.{fmt}"
    code, _, err = run(capsys, "sql", QUERY, "--format", fmt, "--out", str(out_file))
    assert code == 0 and f"wrote {expected.num_rows:,} rows" in err
    if fmt == "parquet":
        back = pq.read_table(out_file)
    elif fmt == "csv":
        back = pacsv.read_csv(out_file, convert_options=pacsv.ConvertOptions(column_types=expected.schema))
    else:
        records = json.loads(out_file.read_text())
        back = pa.Table.from_pylist(
            [{k: _parse(expected.schema.field(k).type, v) for k, v in r.items()} for r in records],
            schema=expected.schema,
        )
    assert back.cast(expected.schema).equals(expected)
    # the same bytes on standard output
    code, out, _ = run(capsys, "sql", QUERY, "--format", fmt) if fmt != "parquet" else (0, "", "")
    if fmt == "csv":
        assert out.encode() == out_file.read_bytes()
    if fmt == "json":
        assert json.loads(out) == json.loads(out_file.read_text())


def _parse(t: pa.DataType, value):
    from datetime import date, datetime

    if value is None:
        return None
    if pa.types.is_timestamp(t):
        return datetime.fromisoformat(value)
    if pa.types.is_date(t):
        return date.fromisoformat(value)
    return value


def test_readable_table_caps_rows_with_a_note(lake_env: AnalystLake, capsys):
    code, out, err = run(capsys, "sql", QUERY, "--max-rows", "5")
    assert code == 0 and "showing the first 5 rows" in err
    assert out.count("p-00") == 5
    code, out, err = run(capsys, "sql", "--as-of", "0", "SELECT count(*) AS n FROM gold.revenue_tumbling_5m")
    assert code == 0 and "72" in out and "(1 row)" in err


def test_sql_stats_counts_the_files_of_one_day(lake_env: AnalystLake, capsys):
    code, _, err = run(
        capsys,
        "sql",
        "--stats",
        f"SELECT count(*) FROM gold.revenue_tumbling_5m WHERE window_date = DATE '{DAYS[0]}'",
    )
    assert code == 0 and "read 2 file(s) of gold.revenue_tumbling_5m" in err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["sql", "SELECT * FROM gold.revenue_tumbling_5mm"],
            "unknown table gold.revenue_tumbling_5mm; did you mean gold.revenue_tumbling_5m",
        ),
        (["sql", "SELECT * FROM golden.orders"], "did you mean silver.orders"),
        (["describe", "silver.order"], "unknown table silver.order; did you mean silver.orders"),
        (
            ["sql", "SELECT revenu FROM gold.revenue_tumbling_5m"],
            'unknown column "revenu" at line 1, column 8; did you mean revenue',
        ),
        (
            ["sql", "SELECT * FROM gold.revenue_tumbling_5m@v7"],
            "gold.revenue_tumbling_5m has no version 7: valid versions are 0..2",
        ),
        (
            ["sql", "--as-of", "9", "SELECT * FROM silver.orders"],
            "silver.orders has no version 9: valid versions are 0..0",
        ),
        (
            ["sql", "--as-of", "2001-01-01", "SELECT * FROM silver.orders"],
            "silver.orders did not exist yet at 2001-01-01",
        ),
        (["sql", "SELECT *\nFORM gold.revenue_tumbling_5m@v1"], "SQL syntax error at line 2, column 6"),
        (
            ["sql", "SELECT sum(revenue FROM gold.revenue_tumbling_5m"],
            "SQL syntax error at line 1, column 20",
        ),
    ],
)
def test_mistakes_give_friendly_errors_and_exit_2(
    lake_env: AnalystLake, capsys, args: list[str], expected: str
):
    code, out, err = run(capsys, *args)
    assert code == 2, (out, err)
    assert err.startswith("error: ") and expected in err, err
    assert "Traceback" not in err + out


def test_error_in_a_real_process_has_no_stack_trace(lake_env: AnalystLake, tmp_path: Path):
    env = {
        **os.environ,
        "STREAMHOUSE_LAKE_ROOT": str(lake_env.root),
        "STREAMHOUSE_DAGSTER_HOME": str(tmp_path),
    }
    env.pop("STREAMHOUSE_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "orchestration.cli.main", "sql", "SELECT * FROM gold.revenue_tumbling_5m@v99"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: gold.revenue_tumbling_5m has no version 99: valid versions are 0..2"


def test_interactive_shell_runs_statements_until_quit(lake_env: AnalystLake, capsys, monkeypatch):
    from assets.lake import LakeSession
    from orchestration.cli.sql_shell import sql_shell

    lines = iter(
        [
            ".tables",
            "SELECT count(*) AS n",
            "FROM gold.revenue_tumbling_5m@v0;",
            "SELECT nope FROM silver.orders;",
            "SHOW ALL TABLES;",
            ".quit",
        ]
    )
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    with LakeSession(lake_env.root) as session:
        sql_shell(session, "table", 10)
    out, err = capsys.readouterr()
    assert "gold.revenue_tumbling_5m\nsilver.orders" in out
    assert "72" in out  # the two-line statement ran
    assert 'error: unknown column "nope"' in err  # a mistake does not end the shell
    assert "revenue_tumbling_5m" in out.split("72", 1)[1]  # SHOW ALL TABLES lists the registered views


def test_locked_sql_reads_the_lake_and_nothing_else(lake_env: AnalystLake, capsys, tmp_path):
    """Unlocked, DuckDB reads and writes any file the user can; --locked confines SQL to the lake."""
    secret = tmp_path / "secret.csv"
    secret.write_text("k,v\nkey,hunter2\n")
    copy_to = tmp_path / "exfiltrated.csv"
    escapes = [
        f"SELECT * FROM read_csv('{secret}')",
        f"COPY (SELECT 1 AS x) TO '{copy_to}'",
        f"ATTACH '{tmp_path / 'other.db'}' AS other",
        "SET enable_external_access = true",
    ]
    code, out, _ = run(capsys, "sql", escapes[0], "--format", "csv")
    assert code == 0 and "hunter2" in out  # what an unlocked session allows
    for query in escapes:
        code, out, err = run(capsys, "sql", "--locked", query)
        assert code == 2 and "hunter2" not in out, (query, out, err)
        assert err.startswith("error: ") and "Traceback" not in err, err
    assert not copy_to.exists() and not (tmp_path / "other.db").exists()
    # lake tables, a pinned version and the session's as-of all still work when locked
    code, out, _ = run(
        capsys, "sql", "--locked", "--format", "json",
        "SELECT (SELECT count(*) FROM gold.revenue_tumbling_5m) AS now, "
        "(SELECT count(*) FROM gold.revenue_tumbling_5m@v0) AS v0",
    )  # fmt: skip
    assert code == 0 and json.loads(out) == [{"now": 24 * len(DAYS), "v0": 72}]
    code, out, _ = run(
        capsys, "sql", "--locked", "--as-of", "1", "--format", "json",
        "SELECT count(*) AS n FROM gold.revenue_tumbling_5m",
    )  # fmt: skip
    assert code == 0 and json.loads(out) == [{"n": 96}], out
    assert sql("SELECT count(*) AS n FROM gold.revenue_tumbling_5m", locked=True)["n"][0] == 24 * len(DAYS)
