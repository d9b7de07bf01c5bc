"""`write_delta_arrow`: an Arrow table straight to Delta, with no JVM in the loop.

For ingestion the data is already columnar in Python (a consumed Kafka batch), and handing it to Spark
only to have Spark write Parquet costs more than everything else together. pyarrow writes the Parquet
files, and the commit goes through exactly the same path as `write_delta` (same snapshot checks, app
transaction idempotency, schema rules, publish/discard), so the two writers produce the same tables:
Spark reads what this one writes and vice versa.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Literal

import pyarrow as pa

from assets.delta.errors import PartitionFilterError, SchemaMismatchError, WriteOptionsError
from assets.delta.location import resolve
from assets.delta.partitions import normalize_where, partition_matches, to_partition_string
from assets.delta.schema import arrow_schema_json
from assets.delta.snapshot import ActiveFile, active_files
from assets.delta.staging import StagedFile, Staging, write_staged_arrow
from assets.delta.writer import (
    AppTransaction,
    CommitResult,
    _partition_types,
    _prepare,
    _stage_and_commit,
    _validate_options,
)

ArrowWriteMode = Literal["append", "overwrite", "overwrite_where"]


def write_delta_arrow(
    table: pa.Table,
    table_uri: str | os.PathLike[str],
    *,
    mode: ArrowWriteMode = "append",
    partition_by: Sequence[str] | None = None,
    where: Mapping[str, object | Sequence[object]] | None = None,
    app_transactions: Sequence[AppTransaction] = (),
    schema_evolution: bool = False,
    commit_metadata: Mapping[str, str] | None = None,
    append_outside_where: bool = False,
) -> CommitResult:
    """Write an Arrow table to a Delta table in one atomic commit (modes: append, overwrite, and
    overwrite_where: replace the partitions selected by ``where``, as `write_delta` does, including
    ``append_outside_where``).

    Timestamps must be microsecond precision with a time zone (Delta `timestamp`): other units or
    naive timestamps would need table features not every reader has, so they are refused up front.
    """
    location = resolve(table_uri)
    if mode not in ("append", "overwrite", "overwrite_where"):
        raise WriteOptionsError(
            f"write_delta_arrow supports mode='append', 'overwrite' or 'overwrite_where', got {mode!r} "
            f"(table {location.uri}); use write_delta with a Spark DataFrame for merge.",
            table_uri=location.uri,
        )
    _validate_options(mode, where, None, app_transactions, location.uri, append_outside_where)
    _check_arrow_types(table.schema, location.uri)
    prepared = _prepare(
        location, arrow_schema_json(table.schema), partition_by, app_transactions, schema_evolution
    )
    if isinstance(prepared, CommitResult):
        return prepared
    dt, read_version, plan, parts = prepared
    partition_types = _partition_types(plan, parts, location.uri)
    data = table.select(plan.column_order)
    removes: list[ActiveFile] = active_files(dt) if mode == "overwrite" and dt is not None else []
    if mode == "overwrite_where":
        typed_where = normalize_where(where, partition_types, table_uri=location.uri, version=read_version)
        if not append_outside_where:
            _check_inside(data, parts, typed_where, partition_types, location.uri, read_version, where)
        if dt is not None:
            removes = [
                f
                for f in active_files(dt)
                if partition_matches(f.partition_values, typed_where, partition_types)
            ]

    def stage(staging: Staging, column_types: Mapping[str, str]) -> list[StagedFile]:
        return write_staged_arrow(data, staging, parts, column_types)

    return _stage_and_commit(
        location, dt, plan, parts, stage, removes, mode, app_transactions, commit_metadata
    )


def _check_inside(
    data: pa.Table,
    parts: Sequence[str],
    typed_where: Mapping[str, list[object]],
    partition_types: Mapping[str, str],
    table_uri: str,
    version: int | None,
    where: Mapping[str, object] | None,
) -> None:
    """Every row must fall inside ``where``; checked on the distinct partition values, with the same
    matching the files to replace are chosen by."""
    distinct = data.select(list(parts)).group_by(list(parts)).aggregate([]).to_pylist()
    for row in distinct:
        values = {p: to_partition_string(row[p]) for p in parts}
        if not partition_matches(values, typed_where, partition_types):
            raise PartitionFilterError(
                f"overwrite_where on {table_uri}: the table has rows outside where={dict(where or {})} "
                f"(e.g. partition {values}); filter the rows or widen the predicate.",
                table_uri=table_uri,
                version=version,
            )


def _check_arrow_types(schema: pa.Schema, table_uri: str) -> None:
    bad = []
    for f in schema:
        t = f.type
        if pa.types.is_timestamp(t) and (t.unit != "us" or t.tz is None):
            bad.append(f"{f.name} ({t}: use pa.timestamp('us', tz='UTC'))")
        elif pa.types.is_null(t):
            bad.append(f"{f.name} (null type: cast it to a concrete type)")
    if bad:
        raise SchemaMismatchError(
            f"Arrow columns Delta cannot store as-is for {table_uri}: {', '.join(bad)}.",
            table_uri=table_uri,
            columns=tuple(b.split(" ")[0] for b in bad),
        )
