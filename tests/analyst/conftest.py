"""A small lake written by Spark through the real Delta layer: a daily gold table with three versions
(create, append a day, replace a day) and a silver table, for the analyst-access tests."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

DAYS = [date(2026, 1, 1) + timedelta(days=i) for i in range(4)]
PRODUCTS = 6


@dataclass
class AnalystLake:
    root: Path
    gold: str  # gold/revenue_tumbling_5m
    silver: str  # silver/orders
    # when the gold table's versions 0, 1, 2 were committed: the log files' modification times, which is
    # what Delta time travel by timestamp goes by (commitInfo.timestamp is taken a little earlier)
    commit_times: list[datetime]


def _gold_rows(days: list[date], factor: float = 1.0) -> list[tuple]:
    rows = []
    for day in days:
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        for i in range(24):
            ws = start + timedelta(minutes=5 * i)
            product = f"p-{i % PRODUCTS:03d}"
            rows.append(
                (
                    ws,
                    ws + timedelta(minutes=5),
                    product,
                    round((i + 1) * 1.25 * factor, 2),
                    i % 3 + 1,
                    i % 5 + 1,
                    day,
                )
            )
    return rows


GOLD_SCHEMA = (
    "window_start timestamp, window_end timestamp, product_id string, revenue double, orders long, "
    "units long, window_date date"
)


@pytest.fixture(scope="session")
def analyst_lake(spark, tmp_path_factory: pytest.TempPathFactory) -> AnalystLake:
    from assets.delta import write_delta

    root = tmp_path_factory.mktemp("analyst") / "lake"
    gold = str(root / "gold" / "revenue_tumbling_5m")
    silver = str(root / "silver" / "orders")
    (root / "_plots" / "revenue_tumbling_5m").mkdir(parents=True)  # not a table: must be skipped

    def frame(rows: list[tuple]):
        # Two files per day: the pruning test must tell one day's files from the others'.
        return spark.createDataFrame(rows, GOLD_SCHEMA).repartition(2)

    write_delta(frame(_gold_rows(DAYS[:3])), gold, mode="overwrite", partition_by=["window_date"])
    time.sleep(0.3)
    write_delta(frame(_gold_rows(DAYS[3:])), gold, mode="append")
    time.sleep(0.3)
    write_delta(
        frame(_gold_rows(DAYS[1:2], factor=2.0)),
        gold,
        mode="overwrite_where",
        where={"window_date": DAYS[1]},
        commit_metadata={"streamhouse.inputs": '{"silver/orders": 0}'},
    )
    orders = spark.createDataFrame(
        [(f"o-{i}", f"c-{i % 7}", f"p-{i % PRODUCTS:03d}", i % 4 + 1, 2.5, DAYS[i % 4]) for i in range(80)],
        "order_id string, customer_id string, product_id string, quantity int, unit_price double, "
        "event_date date",
    )
    write_delta(orders, silver, mode="overwrite", partition_by=["event_date"])
    log = Path(gold) / "_delta_log"
    times = [datetime.fromtimestamp((log / f"{v:020d}.json").stat().st_mtime, tz=UTC) for v in range(3)]
    return AnalystLake(root, gold, silver, times)


@pytest.fixture
def lake_env(analyst_lake: AnalystLake, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AnalystLake:
    """The CLI pointed at the analyst lake (and at an empty Dagster home)."""
    monkeypatch.setenv("STREAMHOUSE_LAKE_ROOT", str(analyst_lake.root))
    monkeypatch.setenv("STREAMHOUSE_DAGSTER_HOME", str(tmp_path / "dagster"))
    monkeypatch.setenv("STREAMHOUSE_STATE_DIR", str(tmp_path / "state"))
    return analyst_lake
