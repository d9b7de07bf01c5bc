"""Only the files (and columns) a query needs are read: the files each scan is given after Arrow's pruning
(the ones it opens) and the bytes the process reads, counted, not assumed."""

from __future__ import annotations

import pytest

from assets.delta.location import resolve
from assets.delta.snapshot import active_files, open_table
from assets.lake import LakeSession
from tests.analyst.conftest import DAYS, AnalystLake

pytestmark = pytest.mark.spark


def _files_by_day(uri: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in active_files(open_table(resolve(uri))):
        out.setdefault(f.partition_values["window_date"], set()).add(f.rel_path)
    return out


def test_one_day_reads_only_that_days_files(analyst_lake: AnalystLake):
    by_day = _files_by_day(analyst_lake.gold)
    day = DAYS[2].isoformat()
    assert len(by_day) == len(DAYS) and all(len(files) >= 1 for files in by_day.values())
    with LakeSession(analyst_lake.root, count_reads=True) as session:
        n = session.arrow(
            "SELECT count(*) AS n, sum(revenue) AS r FROM gold.revenue_tumbling_5m "
            f"WHERE window_date = DATE '{day}'"
        ).to_pylist()[0]["n"]
        read = set(session.scans.files["gold.revenue_tumbling_5m"])
    assert n == 24
    assert read == by_day[day]

    with LakeSession(analyst_lake.root, count_reads=True) as session:
        session.arrow("SELECT sum(revenue) FROM gold.revenue_tumbling_5m")
        everything = set(session.scans.files["gold.revenue_tumbling_5m"])
    assert everything == set().union(*by_day.values())
    assert len(read) < len(everything)


def test_range_on_the_partition_column_and_stats_prune_too(analyst_lake: AnalystLake):
    by_day = _files_by_day(analyst_lake.gold)
    with LakeSession(analyst_lake.root, count_reads=True) as session:
        session.arrow(f"SELECT count(*) FROM gold.revenue_tumbling_5m WHERE window_date >= DATE '{DAYS[2]}'")
        read = set(session.scans.files["gold.revenue_tumbling_5m"])
    assert read == by_day[DAYS[2].isoformat()] | by_day[DAYS[3].isoformat()]
    with LakeSession(analyst_lake.root, count_reads=True) as session:
        # no file holds more than 5 units: the min/max statistics rule every file out (DuckDB pushes
        # integer, string and date comparisons into the scan; floating-point ones it filters after reading)
        assert session.arrow(
            "SELECT count(*) AS n FROM gold.revenue_tumbling_5m WHERE units > 10"
        ).to_pylist() == [{"n": 0}]
        assert session.scans.files_read == 0


def test_one_column_reads_fewer_bytes_than_all_columns(analyst_lake: AnalystLake):
    def bytes_read(query: str) -> int:
        # a fresh session each time: a dataset caches the Parquet footers it has read
        with LakeSession(analyst_lake.root, count_bytes=True) as session:
            session.arrow(query)
            return session.scans.bytes_read

    one_column = bytes_read("SELECT sum(units) FROM gold.revenue_tumbling_5m")
    all_columns = bytes_read("SELECT * FROM gold.revenue_tumbling_5m")
    assert 0 < one_column < all_columns
