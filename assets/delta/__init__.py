"""Delta Lake layer: Spark writes Parquet, deltalake (delta-rs) commits; readers for Spark/Arrow/DuckDB."""

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
]
