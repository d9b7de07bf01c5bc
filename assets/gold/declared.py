"""A declared gold table as the gold assets compute it: its inputs, its partition column, its DataFrame.

Every ``kind`` of ``gold_tables`` in pipeline.yaml comes down to the same three answers, so one asset
factory (``assets.gold.assets``) serves them all:

* **inputs**: the tables read, each with the days around a target day it needs (an event table is read
  by day, a change table or a table without event time whole);
* **partition column**: the daily column the table is replaced by;
* **compute**: the input DataFrames (by table name) and the target dates -> the rows of those dates.

Joins follow the data contract's as-of rule: an event joins the version of the change table valid at
its event time (``valid_from <= t < valid_to``), a LEFT join, so no event is lost.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING, Any

from assets.gold import windows
from assets.pipeline.model import AsOfJoin, Join, Pipeline, PythonTable, SqlTable, WindowAggregate
from assets.pipeline.references import joined_columns, table_columns

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

DAY_MS = 86_400_000
#: The partition column of silver's event tables (``assets.silver.transform.PARTITION_COL``).
EVENT_DATE = "event_date"

Compute = Callable[[Mapping[str, Any], Sequence[date]], Any]


@dataclass(frozen=True)
class InputTable:
    """A table a gold table reads: ``silver/orders`` by its ``event_date``, or a whole dimension."""

    layer: str
    name: str
    #: its daily partition column; None: read whole
    column: str | None
    before: int = 0
    after: int = 0

    @property
    def path(self) -> str:
        return f"{self.layer}/{self.name}"


@dataclass(frozen=True)
class GoldTable:
    name: str
    inputs: tuple[InputTable, ...]
    partition: str
    compute: Compute


def _days(ms: int) -> int:
    return -(-ms // DAY_MS)


def partition_of(pipeline: Pipeline, name: str) -> str | None:
    """The daily partition column of any declared table (None for one kept whole)."""
    if name in pipeline.event_tables:
        return EVENT_DATE if pipeline.event_tables[name].event_time else None
    if name in pipeline.change_tables:
        return None
    table = pipeline.gold_tables[name]
    if isinstance(table, WindowAggregate):
        return windows.partition_column(table)
    if isinstance(table, AsOfJoin | Join):
        return partition_of(pipeline, table.input)
    return table.partition_by


def _input(pipeline: Pipeline, name: str, before: int = 0, after: int = 0) -> InputTable:
    layer = "gold" if name in pipeline.gold_tables else "silver"
    column = partition_of(pipeline, name)
    return InputTable(layer, name, column, before if column else 0, after if column else 0)


def gold_table(pipeline: Pipeline, name: str) -> GoldTable:
    table = pipeline.gold_tables[name]
    if isinstance(table, WindowAggregate):
        events = pipeline.event_tables[table.input]
        before, after = windows.days_around(table)
        time_col, key = events.event_time or "", tuple(events.key)

        def window(frames: Mapping[str, Any], dates: Sequence[date]) -> Any:
            return windows.window_aggregate(table, frames[table.input], time_col, key, dates)

        return GoldTable(
            name, (_input(pipeline, table.input, before, after),), windows.partition_column(table), window
        )
    if isinstance(table, AsOfJoin | Join):
        partition = partition_of(pipeline, table.input) or EVENT_DATE
        inputs = (_input(pipeline, table.input), _input(pipeline, table.with_))
        return GoldTable(name, inputs, partition, _join(pipeline, table, partition))
    if isinstance(table, PythonTable):
        lookback = _days(table.lookback)
        inputs = tuple(_input(pipeline, _bare(t), before=lookback) for t in table.inputs)
        return GoldTable(name, inputs, table.partition_by, _python(table))
    return _sql(pipeline, name, table)


def _bare(table: str) -> str:
    return table.split(".", 1)[1] if table.startswith(("silver.", "gold.")) else table


def _in_dates(df: DataFrame, column: str, dates: Sequence[date]) -> DataFrame:
    from pyspark.sql import functions as F

    return df.filter(F.to_date(F.col(column)).isin([d.isoformat() for d in dates]))


def _join(pipeline: Pipeline, table: AsOfJoin | Join, partition: str) -> Compute:
    left_columns = table_columns(pipeline, table.input) or []
    taken = joined_columns(pipeline, table, left_columns)
    time_col = pipeline.event_tables[table.input].event_time if isinstance(table, AsOfJoin) else None

    def compute(frames: Mapping[str, Any], dates: Sequence[date]) -> Any:
        from pyspark.sql import functions as F

        left, right = frames[table.input].alias("l"), frames[table.with_].alias("r")
        condition = None
        for column in table.on:
            eq = F.col(f"l.{column}") == F.col(f"r.{column}")
            condition = eq if condition is None else condition & eq
        if time_col is not None:
            t = F.col(f"l.{time_col}")
            condition = (
                condition
                & (F.col("r.valid_from") <= t)
                & (F.col("r.valid_to").isNull() | (t < F.col("r.valid_to")))
            )
        how = "left" if isinstance(table, AsOfJoin) else table.how
        joined = left.join(right, condition, how)
        out = joined.select(
            *(F.col(f"l.{c}").alias(c) for c in left_columns), *(F.col(f"r.{c}").alias(c) for c in taken)
        )
        out = _in_dates(out, partition, dates)
        return out.select(*table.column_order) if table.column_order else out

    return compute


def _python(table: PythonTable) -> Compute:
    module_name, _, attr = table.function.partition(":")

    def compute(frames: Mapping[str, Any], dates: Sequence[date]) -> Any:
        function = getattr(importlib.import_module(module_name), attr)
        out = function(**{_bare(t): frames[_bare(t)] for t in table.inputs})
        out = _in_dates(out, table.partition_by, dates)
        return out.select(*table.column_order) if table.column_order else out

    return compute


_TABLE_REF = re.compile(r"\b(silver|gold)\.([a-z][a-z0-9_]*)\b")


def _sql(pipeline: Pipeline, name: str, table: SqlTable) -> GoldTable:
    """Each ``silver.<t>`` / ``gold.<t>`` of the query becomes a temporary view of the input frame."""
    refs = sorted({m.group(2) for m in _TABLE_REF.finditer(table.query)})
    lookback = _days(table.lookback)
    inputs = tuple(_input(pipeline, ref, before=lookback) for ref in refs)
    query = _TABLE_REF.sub(lambda m: f"__{m.group(1)}_{m.group(2)}", table.query)

    def compute(frames: Mapping[str, Any], dates: Sequence[date]) -> Any:
        spark = next(iter(frames.values())).sparkSession
        for inp in inputs:
            frames[inp.name].createOrReplaceTempView(f"__{inp.layer}_{inp.name}")
        out = _in_dates(spark.sql(query), table.partition_by, dates)
        return out.select(*table.column_order) if table.column_order else out

    return GoldTable(name, inputs, table.partition_by, compute)


def event_reach(pipeline: Pipeline) -> dict[str, tuple[int, int]]:
    """For each daily event table, the days (as offsets from an event's day) whose silver or gold rows
    an event can change: a gold day reading its input ``before``/``after`` days around it is changed
    by an event up to ``after`` days later or ``before`` days earlier, through every gold table that
    reads it, directly or through another gold table. The demo's: an order changes D-1..D+1 (hopping
    windows of the evening before, sessions either side)."""
    memo: dict[str, dict[str, tuple[int, int]]] = {}

    def through(name: str) -> dict[str, tuple[int, int]]:
        if name not in memo:
            reach: dict[str, tuple[int, int]] = {}
            for inp in gold_table(pipeline, name).inputs:
                if inp.column is None:
                    continue
                upstream = through(inp.name) if inp.layer == "gold" else {inp.name: (0, 0)}
                for table, (lo, hi) in upstream.items():
                    was = reach.get(table, (lo - inp.after, hi + inp.before))
                    reach[table] = (min(was[0], lo - inp.after), max(was[1], hi + inp.before))
            memo[name] = reach
        return memo[name]

    out = {name: (0, 0) for name, table in pipeline.event_tables.items() if table.event_time}
    for name in pipeline.gold_tables:
        for table, (lo, hi) in through(name).items():
            if table in out:
                out[table] = (min(out[table][0], lo), max(out[table][1], hi))
    return out
