"""`assets.lake.sql` and `spark_views` against the table as Spark reads it, now and as of earlier versions."""

from __future__ import annotations

import pytest

from assets.delta import read_spark
from assets.lake import LakeSession, find_tables, spark_views, sql
from tests.analyst.conftest import DAYS, AnalystLake
from tests.delta.helpers import rows_of, spark_rows

pytestmark = pytest.mark.spark

COLUMNS = ["window_start", "window_end", "product_id", "revenue", "orders", "units", "window_date"]


def _sql_rows(query: str, lake: AnalystLake, **kwargs) -> list[tuple]:
    table = sql(query, lake_root=lake.root, arrow=True, **kwargs)
    return rows_of(table.to_pylist(), table.column_names)


def test_select_star_equals_the_table_read_through_spark(spark, analyst_lake: AnalystLake):
    got = _sql_rows("SELECT * FROM gold.revenue_tumbling_5m", analyst_lake)
    assert got == spark_rows(read_spark(spark, analyst_lake.gold), COLUMNS)
    assert len(got) == 24 * len(DAYS)


def test_aggregate_and_join_equal_spark_sql_over_spark_views(spark, analyst_lake: AnalystLake):
    registered = spark_views(spark, lake_root=analyst_lake.root)
    assert registered == ["gold.revenue_tumbling_5m", "silver.orders"]
    query = (
        "SELECT g.window_date, g.product_id, sum(g.revenue) AS revenue, count(DISTINCT o.order_id) AS n "
        "FROM {gold} g JOIN {silver} o ON o.product_id = g.product_id AND o.event_date = g.window_date "
        "GROUP BY 1, 2"
    )
    cols = ["window_date", "product_id", "revenue", "n"]
    duck = _sql_rows(query.format(gold="gold.revenue_tumbling_5m", silver="silver.orders"), analyst_lake)
    sparked = spark_rows(
        spark.sql(query.format(gold="`gold.revenue_tumbling_5m`", silver="`silver.orders`")), cols
    )
    assert duck == sparked and duck


def test_pandas_result_by_default(analyst_lake: AnalystLake):
    df = sql("SELECT count(*) AS n FROM gold.revenue_tumbling_5m", lake_root=analyst_lake.root)
    assert list(df.columns) == ["n"] and int(df["n"][0]) == 24 * len(DAYS)


@pytest.mark.parametrize("version", [0, 1])
def test_table_at_version_returns_that_versions_rows(spark, analyst_lake: AnalystLake, version: int):
    expected = spark_rows(read_spark(spark, analyst_lake.gold, version=version), COLUMNS)
    assert _sql_rows(f"SELECT * FROM gold.revenue_tumbling_5m@v{version}", analyst_lake) == expected
    assert _sql_rows("SELECT * FROM gold.revenue_tumbling_5m", analyst_lake, as_of=version) == expected
    latest = spark_rows(read_spark(spark, analyst_lake.gold), COLUMNS)
    assert expected != latest  # v2 doubled day 2's revenue: time travel must show the old values


def test_time_travel_by_timestamp_and_two_versions_in_one_query(spark, analyst_lake: AnalystLake):
    t0, t1, t2 = analyst_lake.commit_times
    between = t0 + (t1 - t0) / 2
    expected = spark_rows(read_spark(spark, analyst_lake.gold, version=0), COLUMNS)
    stamp = between.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"
    assert _sql_rows(f"SELECT * FROM gold.revenue_tumbling_5m@{stamp}", analyst_lake) == expected
    assert _sql_rows("SELECT * FROM gold.revenue_tumbling_5m", analyst_lake, as_of=between) == expected
    diff = sql(
        "SELECT sum(new.revenue) - sum(old.revenue) AS d FROM gold.revenue_tumbling_5m@v1 old "
        "JOIN gold.revenue_tumbling_5m new USING (window_start, product_id) "
        f"WHERE new.window_date = DATE '{DAYS[1]}'",
        lake_root=analyst_lake.root,
        arrow=True,
    )
    day_revenue = sum(round((i + 1) * 1.25, 2) for i in range(24))
    assert diff.column("d")[0].as_py() == pytest.approx(day_revenue)
    later = t1 + (t2 - t1) / 2
    assert _sql_rows("SELECT * FROM gold.revenue_tumbling_5m", analyst_lake, as_of=later) == spark_rows(
        read_spark(spark, analyst_lake.gold, version=1), COLUMNS
    )


def test_spark_views_as_of_a_version(spark, analyst_lake: AnalystLake):
    spark_views(
        spark,
        lake_root=analyst_lake.root,
        as_of={"gold.revenue_tumbling_5m": 0},
        tables=["gold.revenue_tumbling_5m"],
    )
    got = spark_rows(spark.table("`gold.revenue_tumbling_5m`"), COLUMNS)
    assert got == spark_rows(read_spark(spark, analyst_lake.gold, version=0), COLUMNS)
    spark_views(spark, lake_root=analyst_lake.root)  # back to latest for the other tests


def test_table_mentions_skip_literals_and_comments():
    mentions = find_tables(
        "SELECT 'gold.x@v1' AS s -- gold.y\n"
        'FROM gold.revenue_tumbling_5m@v3 JOIN "silver"."orders" o /* gold.z */'
    )
    assert [(m.name, m.as_of) for m in mentions] == [
        ("gold.revenue_tumbling_5m", "v3"),
        ("silver.orders", None),
    ]


def test_a_session_reads_one_version_per_query(analyst_lake: AnalystLake):
    with LakeSession(analyst_lake.root) as session:
        n = session.arrow(
            "SELECT (SELECT count(*) FROM gold.revenue_tumbling_5m@v0) AS v0, "
            "(SELECT count(*) FROM gold.revenue_tumbling_5m) AS latest"
        ).to_pylist()[0]
    assert n == {"v0": 72, "latest": 96}
