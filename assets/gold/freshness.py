"""Which requested gold days must be recomputed: those whose input partitions changed.

A gold day reads a span of input partitions (a hopping day also reads the next silver day, a session
day the days either side). Each gold commit records, per day and input table, the input version it
read as a Delta app transaction (``streamhouse.input.<input table id>.<day>`` → version). A later run
recomputes a requested day only if one of its input partitions has different files now than at that
version (``assets.delta.changes``); days whose inputs are untouched keep their rows. So the sensor can
request the affected days generously (late events, windows across midnight) and pay only for days
whose inputs really changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from assets.delta.changes import WHOLE_TABLE, PartitionFiles, open_latest, record_count
from assets.delta.writer import AppTransaction


@dataclass(frozen=True)
class GoldInput:
    """One input table pinned at ``version``; a gold day reads partitions day-before..day+after."""

    name: str  # "silver/orders": the lineage name
    uri: str
    version: int
    column: str | None  # partition column; None: the whole table is read for every day
    before: int = 0
    after: int = 0

    def partitions(self, day: date) -> list[str]:
        if self.column is None:
            return [WHOLE_TABLE]
        return [(day + timedelta(days=i)).isoformat() for i in range(-self.before, self.after + 1)]

    def span(self, days: Sequence[date]) -> list[date]:
        """Input partitions the given gold days read."""
        return sorted({d + timedelta(days=i) for d in days for i in range(-self.before, self.after + 1)})


def input_id(table_id: str, day: date) -> str:
    return f"streamhouse.input.{table_id}.{day.isoformat()}"


@dataclass
class GoldPlan:
    stale: list[date] = field(default_factory=list)
    unchanged: list[date] = field(default_factory=list)
    #: input watermarks of the stale days that the commit advances
    transactions: list[AppTransaction] = field(default_factory=list)
    #: rows in the day-partitioned input partitions the stale days read (None: a file has no count);
    #: every gold table has at most as many rows as that, so it bounds the result's size
    input_rows: int | None = 0


def plan_gold(
    gold_uri: str, inputs: Sequence[GoldInput], days: Sequence[date], *, rebuild: bool = False
) -> GoldPlan:
    """Split ``days`` into stale (recompute) and unchanged (keep) by comparing input file lists."""
    gold = open_latest(gold_uri)
    loaded = [(inp, PartitionFiles.load(inp.uri, inp.version, inp.column)) for inp in inputs]
    plan = GoldPlan()
    for day in sorted(set(days)):
        stale = rebuild or gold is None
        advancing: list[AppTransaction] = []
        for inp, files in loaded:
            app_id = input_id(files.table_id, day)
            mark = gold.transaction_version(app_id) if gold is not None else None
            if mark is None or mark < inp.version:
                advancing.append(AppTransaction(app_id, inp.version))
            if not stale and (
                mark is None or mark > inp.version or not files.unchanged_since(mark, inp.partitions(day))
            ):
                stale = True
        if stale:
            plan.stale.append(day)
            plan.transactions.extend(advancing)
        else:
            plan.unchanged.append(day)
    plan.input_rows = record_count(
        f
        for inp, files in loaded
        if inp.column is not None
        for f in files.of(sorted({p for d in plan.stale for p in inp.partitions(d)}))
    )
    return plan
