"""Windowed aggregates of a declared gold table, in PySpark: tumbling, hopping and session windows.

The rules are docs/data-contract.md's, for any table declared ``kind: window_aggregate``:

* tumbling: ``[start, start + size)`` aligned to the epoch; partition = date(window_start)
* hopping: every window ``[s, s + size)`` with ``s`` a multiple of the hop that contains the event;
  partition = date(window_start) (windows starting late in a day need the next day's events)
* session: a group's events in time order; a gap of more than ``gap`` starts a new session -- an
  event exactly ``gap`` after the previous one stays in it, as Kafka Streams' session windows (and so
  the edge) decide; partition = date(session_start); events are read one day either side

Each function takes the input DataFrame (already restricted to the days the caller needs) and the
target dates, and returns only rows of those dates, so the caller replaces exactly those partitions.
A table's columns are its window bounds, its ``group_by`` columns, its aggregates, its computed
``columns``, then the partition column, unless ``column_order`` says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING

from assets.pipeline.model import Aggregate, WindowAggregate

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def partition_column(table: WindowAggregate) -> str:
    return "session_date" if table.window.type == "session" else "window_date"


def bounds(table: WindowAggregate) -> tuple[str, str]:
    return (
        ("session_start", "session_end") if table.window.type == "session" else ("window_start", "window_end")
    )


def days_around(table: WindowAggregate) -> tuple[int, int]:
    """Days of input read before and after each target day: a session may cross midnight either way;
    a hopping window starting on a day may end in the next."""
    day = 86_400_000
    w = table.window
    if w.type == "session":
        reach = -(-(w.gap or 0) // day)
        return max(1, reach), max(1, reach)
    if w.type == "hopping":
        return 0, max(1, -(-(w.size or 0) // day))
    return 0, 0


def _in_dates(col: str, dates: Sequence[date]) -> Column:
    from pyspark.sql import functions as F

    return F.to_date(F.col(col)).isin([d.isoformat() for d in dates])


def _aggregate(agg: Aggregate) -> Column:
    from pyspark.sql import functions as F

    value = F.lit(1) if agg.expression == "*" else F.expr(agg.expression)
    out = {
        "sum": F.sum,
        "count": F.count,
        "count_distinct": F.count_distinct,
        "min": F.min,
        "max": F.max,
        "avg": F.avg,
    }[agg.function](value)
    if agg.function in ("count", "count_distinct"):
        out = out.cast("bigint")
    return F.round(out, agg.round) if agg.round is not None else out


def _finish(table: WindowAggregate, df: DataFrame, dates: Sequence[date]) -> DataFrame:
    """The computed columns, the partition column, the declared order, and only the target dates."""
    from pyspark.sql import functions as F

    start, _ = bounds(table)
    for name, expression in table.columns.items():
        df = df.withColumn(name, F.expr(expression))
    df = df.withColumn(partition_column(table), F.to_date(F.col(start)))
    order = table.column_order or [
        *bounds(table),
        *table.group_by,
        *table.aggregates,
        *table.columns,
        partition_column(table),
    ]
    return df.select(*order).filter(_in_dates(start, dates))


def window_aggregate(
    table: WindowAggregate, events: DataFrame, time_col: str, key: Sequence[str], dates: Sequence[date]
) -> DataFrame:
    """``table`` computed over ``events`` (its ``from`` table) for ``dates``."""
    if table.window.type == "tumbling":
        return _tumbling(table, events, time_col, dates)
    if table.window.type == "hopping":
        return _hopping(table, events, time_col, dates)
    return _sessions(table, events, time_col, key, dates)


def _tumbling(table: WindowAggregate, events: DataFrame, time_col: str, dates: Sequence[date]) -> DataFrame:
    from pyspark.sql import functions as F

    w = F.window(time_col, f"{table.window.size} milliseconds")
    out = events.groupBy(w.alias("w"), *table.group_by).agg(
        *(_aggregate(a).alias(n) for n, a in table.aggregates.items())
    )
    out = out.select(
        F.col("w.start").alias("window_start"),
        F.col("w.end").alias("window_end"),
        *table.group_by,
        *table.aggregates,
    )
    return _finish(table, out, dates)


def _hopping(table: WindowAggregate, events: DataFrame, time_col: str, dates: Sequence[date]) -> DataFrame:
    """Hopping windows from per-hop partials instead of size/hop copies of each event.

    ``F.window(size, slide)`` expands every event into each window containing it and a distinct count
    doubles that again: a shuffle of many times the input, which made such a table grow faster than
    linearly with the data. Here each aggregate is first reduced per hop-long bucket and group, and a
    bucket's partials are credited to the windows containing it; a distinct count credits each value to
    the windows ``[max(b - span, previous bucket + 1), b]`` of each bucket ``b`` it occurs in, so a
    (value, window) pair is counted exactly once (by the value's first bucket inside the window) with a
    plain, map-side-combinable count. Windows whose size is not a multiple of the hop are expanded.
    """
    size, hop = table.window.size or 0, table.window.hop or 0
    if size % hop:
        return _hopping_expanded(table, events, time_col, dates)
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    span = size // hop - 1
    group = list(table.group_by)
    bucket = F.floor(F.unix_micros(time_col) / F.lit(hop * 1000)).alias("_b")
    partial_aggs: list[Column] = []
    final_aggs: list[Column] = []
    distinct: dict[str, Aggregate] = {}
    for name, agg in table.aggregates.items():
        value = F.lit(1) if agg.expression == "*" else F.expr(agg.expression)
        if agg.function == "count_distinct":
            distinct[name] = agg
            continue
        if agg.function == "avg":
            partial_aggs += [F.sum(value).alias(f"_s_{name}"), F.count(value).alias(f"_n_{name}")]
            final = F.sum(f"_s_{name}") / F.sum(f"_n_{name}")
        elif agg.function in ("min", "max"):
            partial_aggs.append(getattr(F, agg.function)(value).alias(f"_p_{name}"))
            final = getattr(F, agg.function)(f"_p_{name}")
        else:
            partial_aggs.append(
                (F.sum(value) if agg.function == "sum" else F.count(value)).alias(f"_p_{name}")
            )
            final = F.sum(f"_p_{name}")
            final = final.cast("bigint") if agg.function == "count" else final
        final_aggs.append((F.round(final, agg.round) if agg.round is not None else final).alias(name))
    rows = events.select(
        bucket, *(F.col(c) for c in group), *(F.col(c) for c in events.columns if c not in group)
    )
    windows = F.explode(F.sequence(F.col("_b") - span, F.col("_b"))).alias("_s")
    if final_aggs:
        partials = rows.groupBy("_b", *group).agg(*partial_aggs)
        out = (
            partials.select(windows, *group, *partials.columns[len(group) + 1 :])
            .groupBy("_s", *group)
            .agg(*final_aggs)
        )
    else:
        out = rows.select(windows, *group).distinct()
    for name, agg in distinct.items():
        value = F.expr(agg.expression).alias("_v")
        pairs = rows.select(*group, value, "_b").where(F.col("_v").isNotNull()).distinct()
        previous = F.lag("_b").over(Window.partitionBy(*group, "_v").orderBy("_b"))
        first = F.greatest(F.col("_b") - span, F.coalesce(previous + 1, F.col("_b") - span))
        credited = (
            pairs.select(*group, first.alias("_lo"), "_b")  # a window function cannot sit in a generator
            .select(*group, F.explode(F.sequence("_lo", "_b")).alias("_s"))
            .groupBy("_s", *group)
            .agg(F.count("*").cast("bigint").alias(name))
        )
        out = out.join(credited, ["_s", *group], "left").withColumn(
            name, F.coalesce(F.col(name), F.lit(0).cast("bigint"))
        )
    out = out.select(
        F.timestamp_millis(F.col("_s") * hop).alias("window_start"),
        F.timestamp_millis(F.col("_s") * hop + size).alias("window_end"),
        *group,
        *table.aggregates,
    )
    return _finish(table, out, dates)


def _hopping_expanded(
    table: WindowAggregate, events: DataFrame, time_col: str, dates: Sequence[date]
) -> DataFrame:
    from pyspark.sql import functions as F

    w = F.window(time_col, f"{table.window.size} milliseconds", f"{table.window.hop} milliseconds")
    out = events.groupBy(w.alias("w"), *table.group_by).agg(
        *(_aggregate(a).alias(n) for n, a in table.aggregates.items())
    )
    out = out.select(
        F.col("w.start").alias("window_start"),
        F.col("w.end").alias("window_end"),
        *table.group_by,
        *table.aggregates,
    )
    return _finish(table, out, dates)


def _sessions(
    table: WindowAggregate, events: DataFrame, time_col: str, key: Sequence[str], dates: Sequence[date]
) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    gap_s = (table.window.gap or 0) / 1000
    by = Window.partitionBy(*table.group_by).orderBy(time_col, *key)
    t = F.col(time_col).cast("double")
    marked = events.withColumn(
        "_new", F.when(F.lag(t).over(by).isNull() | (t - F.lag(t).over(by) > gap_s), 1).otherwise(0)
    )
    numbered = marked.withColumn(
        "_session", F.sum("_new").over(by.rowsBetween(Window.unboundedPreceding, Window.currentRow))
    )
    out = numbered.groupBy(*table.group_by, "_session").agg(
        F.min(time_col).alias("session_start"),
        F.max(time_col).alias("session_end"),
        *(_aggregate(a).alias(n) for n, a in table.aggregates.items()),
    )
    return _finish(table, out.drop("_session"), dates)
