"""Which bronze files a silver run still has to read, day by day.

Bronze is append-only, so a silver day only needs the bronze files added since it was last built.
Each silver commit records, per day, the bronze version it read as a Delta app transaction
(``streamhouse.bronze.<bronze table id>.<day>`` → version) on the silver table *and* on its quarantine
table, in the same commit as the rows. The next run reads, for every requested day, only the files in
bronze now that were not there at that day's watermark, and appends what they yield; a record whose key
silver already holds is a duplicate and is dropped. When the new files cannot be told apart (compaction
rewrote bronze files, or the watermark's snapshot left the retained log) the whole day is read again
and quarantined records are matched by Kafka position too, so nothing is added twice.

A day is rebuilt, its partitions replaced, when it has no watermark for the current bronze table (never
built, or bronze was recreated and has a new table id), or when the run asks for a full refresh (a
logic change, or a schema rule that adds columns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING

from assets.delta.changes import PartitionFiles, open_latest, record_count
from assets.delta.location import resolve
from assets.delta.snapshot import ActiveFile, open_table
from assets.delta.writer import AppTransaction

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def watermark_id(bronze_table_id: str, day: date) -> str:
    return f"streamhouse.bronze.{bronze_table_id}.{day.isoformat()}"


def dimension_watermark_id(bronze_table_id: str) -> str:
    return f"streamhouse.bronze.{bronze_table_id}"


def bronze_table_id(bronze_uri: str) -> str:
    """Delta's table id (``metaData.id``): a recreated bronze table gets a new one."""
    return open_table(resolve(bronze_uri)).metadata().id


def transaction_version(table_uri: str, app_id: str) -> int | None:
    table = open_latest(table_uri)
    return table.transaction_version(app_id) if table is not None else None


@dataclass
class BronzeReadPlan:
    """What one silver run reads from bronze and how it writes it."""

    bronze: PartitionFiles
    #: days rebuilt from every bronze file of the day (their silver partitions are replaced)
    rebuild_days: list[date] = field(default_factory=list)
    #: days that only get rows from bronze files added since their watermark (appended)
    append_days: list[date] = field(default_factory=list)
    #: bronze files to read: every file of the rebuild days, the new files of the append days
    files: list[ActiveFile] = field(default_factory=list)
    #: append days whose new files could not be told apart (compacted bronze): all their files read
    rescanned_days: list[date] = field(default_factory=list)
    #: watermarks behind the bronze version: the app transactions the commit advances
    advancing: list[AppTransaction] = field(default_factory=list)
    #: append days whose files to read may hold records a written table already has: rescanned days,
    #: and days where the tables' watermarks differ (one table committed, then the run failed)
    overlap_days: list[date] = field(default_factory=list)

    @property
    def records(self) -> int | None:
        """Bronze records in ``files`` (None when a file's count is not in the log)."""
        return record_count(self.files)

    @property
    def appended_days_read(self) -> list[date]:
        """Append days with bronze files to read (only their existing rows must be matched)."""
        read = {f.partition_values.get(self.bronze.column or "") for f in self.files}
        return [d for d in self.append_days if d.isoformat() in read]

    @property
    def up_to_date(self) -> bool:
        """Nothing to read and nothing to rebuild: every requested day already saw this bronze version."""
        return not self.files and not self.rebuild_days and not self.advancing


def plan_bronze_read(
    bronze_uri: str,
    bronze_version: int,
    table_uris: Sequence[str],
    days: Sequence[date],
    *,
    column: str,
    rebuild: bool = False,
) -> BronzeReadPlan:
    """Per requested day: rebuild or append, and which bronze files to read.

    ``table_uris`` are the tables the run writes (silver and quarantine); a day's watermark is the
    lowest of theirs, so a run that committed one table and failed before the other catches up.
    """
    bronze = PartitionFiles.load(bronze_uri, bronze_version, column)
    plan = BronzeReadPlan(bronze)
    targets = [open_latest(uri) for uri in table_uris]
    for day in sorted(set(days)):
        key = day.isoformat()
        app_id = watermark_id(bronze.table_id, day)
        marks = [t.transaction_version(app_id) if t is not None else None for t in targets]
        mark = None if any(m is None for m in marks) else min(m for m in marks if m is not None)
        if mark is None or mark < bronze_version:
            plan.advancing.append(AppTransaction(app_id, bronze_version))
        if rebuild or mark is None or mark > bronze_version:
            plan.rebuild_days.append(day)
            plan.files.extend(bronze.of([key]))
            continue
        plan.append_days.append(day)
        if mark == bronze_version:
            continue
        if len(set(marks)) > 1:
            plan.overlap_days.append(day)
        added = bronze.added_since(mark, key)
        if added is None:
            # The watermark snapshot is gone or files were rewritten (compaction): read the whole day;
            # the append's anti-join keeps rows that silver already holds from being added twice.
            plan.rescanned_days.append(day)
            if day not in plan.overlap_days:
                plan.overlap_days.append(day)
            plan.files.extend(bronze.of([key]))
        else:
            plan.files.extend(added)
    return plan


def read_plan(spark: SparkSession, plan: BronzeReadPlan) -> DataFrame:
    """The bronze rows of ``plan.files`` (an empty frame with bronze's schema when there are none)."""
    from assets.delta.reader import read_files

    b = plan.bronze
    return read_files(spark, b.location, b.schema, b.partition_columns, plan.files)


def read_whole(spark: SparkSession, bronze_uri: str, bronze_version: int) -> tuple[DataFrame, int | None]:
    """Every bronze row at ``bronze_version``, for a dimension table rebuilt as a whole, and how many
    there are (from the log's statistics; None when a file has no count).

    Read as the event tables read theirs, from the version's Parquet files, not through Delta's Spark
    reader: a 101-row ``silver_customers`` took 28-93 s in the demo, most of it the first use of Delta's
    classes in the JVM (the read), then two Delta writes through Spark. With the count the caller
    writes a small table through Arrow (``SMALL_BATCH_ROWS``), and the step never touches Delta in Spark.
    """
    bronze = PartitionFiles.load(bronze_uri, bronze_version, None)
    files = [f for group in bronze.files.values() for f in group]
    plan = BronzeReadPlan(bronze, files=files)
    return read_plan(spark, plan), record_count(files)
