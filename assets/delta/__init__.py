"""Delta Lake layer: Spark writes Parquet, deltalake (delta-rs) commits; readers for Spark/Arrow/DuckDB.

Where the delta-spark jars are on Spark's classpath (`make install` resolves them), reads and the
write modes measured faster natively go through Spark's native Delta instead (`assets.delta.native`);
the checks, the tables and the guarantees below are the same. Without the jars a write is: Spark
writes Parquet into `<table>/_staging/<write id>/` -> footer stats + partition values per file ->
files move into the table -> ONE commit through a `DeltaTable` handle loaded before the write (adds,
removes, app transactions, commit metadata). The table schema always comes from Spark's schema JSON
(micro timestamps, reader version 1, no `timestampNanos`/`timestampNtz` features), so every Delta
reader can read the tables.

Modes of `write_delta`:
- `append`; `overwrite` (replace all rows);
- `overwrite_where` (`where={partition column: value | [values]}`, None = null partition; keys must be
  partition columns and every row of the DataFrame must fall inside the predicate);
- `merge` (upsert on `merge_keys`: only the files holding a matching key are rewritten).

`write_delta_arrow` writes an Arrow table the same way with pyarrow instead of Spark (append,
overwrite): ingestion uses it, since its batches are already Arrow and the JVM hand-off would dominate.

Guarantees: a write is one version or nothing (conflicting concurrent commits raise
CommitConflictError: retry); a retry carrying already-committed `AppTransaction`s is skipped; schema
changes raise SchemaMismatchError unless `schema_evolution=True` adds nullable columns (same commit for
`overwrite`; a metadata-only commit right before the data commit for the other modes, because
delta-rs 1.6.6 ignores schema changes in append-mode transactions). Files moved into the table are
deleted again when the commit provably did not land.
"""

from assets.delta.arrow_writer import write_delta_arrow
from assets.delta.errors import (
    CommitConflictError,
    DeltaLayerError,
    PartitionFilterError,
    SchemaMismatchError,
    StreamhouseError,
    TableNotFoundError,
    WriteOptionsError,
)
from assets.delta.maintenance import checkpoint, optimize, vacuum
from assets.delta.reader import (
    duckdb_relation,
    history,
    read_arrow,
    read_spark,
    table_schema,
    table_version,
)
from assets.delta.snapshot import app_transaction_versions, table_exists
from assets.delta.writer import AppTransaction, CommitResult, write_delta

__all__ = [
    "AppTransaction",
    "CommitConflictError",
    "CommitResult",
    "DeltaLayerError",
    "PartitionFilterError",
    "SchemaMismatchError",
    "StreamhouseError",
    "TableNotFoundError",
    "WriteOptionsError",
    "app_transaction_versions",
    "checkpoint",
    "duckdb_relation",
    "history",
    "optimize",
    "read_arrow",
    "read_spark",
    "table_exists",
    "table_schema",
    "table_version",
    "vacuum",
    "write_delta",
    "write_delta_arrow",
]
