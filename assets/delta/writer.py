"""`write_delta`: Spark computes and writes Parquet, deltalake commits it atomically.

Flow: load one snapshot -> skip if the app transactions are already committed -> check schema and
options against that snapshot -> let Spark write Parquet to staging -> move files into the table ->
ONE commit through the snapshot's handle (adds, removes, app txns, commit metadata). Writes that
remove files commit with zero retries, so any concurrent commit surfaces as CommitConflictError
instead of being silently rebased; on any failure the moved files are deleted again.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from deltalake import CommitProperties, DeltaTable, Field, Transaction
from deltalake.exceptions import CommitFailedError, DeltaError
from deltalake.exceptions import TableNotFoundError as DeltaTableNotFound
from deltalake.transaction import AddAction, RemoveAction, create_table_with_add_actions

from assets.delta.errors import (
    PartitionFilterError,
    SchemaMismatchError,
    WriteOptionsError,
)
from assets.delta.location import TableLocation, resolve
from assets.delta.native import replace_where_sql, use_native, write_native
from assets.delta.partitions import (
    normalize_where,
    parse_partition_value,
    partition_matches,
    spark_predicate,
)
from assets.delta.reader import FILE_NAME_COL, check_plain_parquet_readable, read_files
from assets.delta.schema import (
    SchemaPlan,
    primitive_column_types,
    reconcile,
    spark_schema_json,
    to_delta_schema,
)
from assets.delta.snapshot import ActiveFile, active_files, partition_columns, schema_json
from assets.delta.staging import (
    StagedFile,
    Staging,
    discard,
    new_staging,
    publish,
    remove_staging,
    write_staged,
)
from assets.delta.types import COMMIT_ID_KEY, AppTransaction, CommitResult, commit_conflict

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)
WriteMode = Literal["append", "overwrite", "overwrite_where", "merge"]
_MODES = ("append", "overwrite", "overwrite_where", "merge")
# commitInfo keys delta-rs generates or type-checks; user metadata with these names is namespaced.
_RESERVED_COMMIT_KEYS = {
    "timestamp",
    "operation",
    "engineInfo",
    "operationParameters",
    "readVersion",
    "isolationLevel",
    "isBlindAppend",
    "clientVersion",
}


def _validate_options(
    mode: str,
    where: Mapping[str, Any] | None,
    merge_keys: Sequence[str] | None,
    app_transactions: Sequence[AppTransaction],
    table_uri: str,
    append_outside_where: bool = False,
) -> None:
    if mode not in _MODES:
        raise WriteOptionsError(
            f"mode={mode!r} is not one of {_MODES} (table {table_uri}).", table_uri=table_uri
        )
    if where is not None and mode != "overwrite_where":
        raise WriteOptionsError(
            f"`where` is only used with mode='overwrite_where' (got mode={mode!r}) for table {table_uri}.",
            table_uri=table_uri,
        )
    if append_outside_where and mode != "overwrite_where":
        raise WriteOptionsError(
            f"append_outside_where is only used with mode='overwrite_where' (got mode={mode!r}) for "
            f"table {table_uri}.",
            table_uri=table_uri,
        )
    if mode == "merge" and not merge_keys:
        raise WriteOptionsError(
            f"mode='merge' needs merge_keys (the columns identifying a row) for table {table_uri}.",
            table_uri=table_uri,
        )
    if merge_keys and mode != "merge":
        raise WriteOptionsError(
            f"merge_keys are only used with mode='merge' (got mode={mode!r}) for table {table_uri}.",
            table_uri=table_uri,
        )
    ids = [t.app_id for t in app_transactions]
    if len(set(ids)) != len(ids):
        raise WriteOptionsError(
            f"app_transactions repeat an app_id: {ids} (table {table_uri}).", table_uri=table_uri
        )
    for t in app_transactions:
        if not t.app_id or t.version < 0:
            raise WriteOptionsError(
                f"AppTransaction needs a non-empty app_id and version >= 0, got {t!r} (table {table_uri}).",
                table_uri=table_uri,
            )


def _commit_metadata(mode: str, extra: Mapping[str, str] | None, read_version: int | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"streamhouse.mode": mode, "streamhouse.writer": "assets.delta.write_delta"}
    if read_version is not None:
        metadata["streamhouse.readVersion"] = str(read_version)
    for key, value in (extra or {}).items():
        metadata[f"streamhouse.{key}" if key in _RESERVED_COMMIT_KEYS else key] = value
    return metadata


def _partition_types(plan: SchemaPlan, parts: Sequence[str], table_uri: str) -> dict[str, str]:
    types = {f["name"]: f["type"] for f in plan.target["fields"]}
    missing = [p for p in parts if p not in types]
    if missing:
        raise SchemaMismatchError(
            f"Partition columns {missing} are not columns of the data written to {table_uri}.",
            table_uri=table_uri,
            columns=tuple(missing),
        )
    complex_parts = [p for p in parts if not isinstance(types[p], str)]
    if complex_parts:
        raise SchemaMismatchError(
            f"Partition columns {complex_parts} of {table_uri} must have primitive types.",
            table_uri=table_uri,
            columns=tuple(complex_parts),
        )
    return {p: types[p] for p in parts}


def _plan_merge(
    df: DataFrame,
    dt: DeltaTable | None,
    location: TableLocation,
    plan: SchemaPlan,
    parts: Sequence[str],
    partition_types: Mapping[str, str],
    merge_keys: Sequence[str],
) -> tuple[DataFrame, list[ActiveFile]]:
    """Upsert plan: rewrite only the files holding a merged key; new keys are simply inserted."""
    from pyspark.sql import functions as F

    keys = list(merge_keys)
    unknown = [k for k in keys if k not in plan.column_order]
    if unknown:
        raise WriteOptionsError(
            f"merge_keys {unknown} are not columns of {location.uri} (columns: {plan.column_order}).",
            table_uri=location.uri,
        )
    duplicate = df.groupBy(*keys).count().filter(F.col("count") > 1).limit(1).collect()
    if duplicate:
        raise WriteOptionsError(
            f"Merge source for {location.uri} has several rows for key "
            f"{ {k: duplicate[0][k] for k in keys} }; deduplicate the DataFrame on {keys} first.",
            table_uri=location.uri,
        )
    if dt is None:
        return df, []
    check_plain_parquet_readable(dt, location.uri)
    files = active_files(dt)
    table_schema = schema_json(dt)
    if parts and set(parts) <= set(keys):  # only partitions present in the source can hold its keys
        # Spark renders the values as strings (session time zone UTC): no Python-side tz conversion.
        wanted = {
            tuple(parse_partition_value(row[p], partition_types[p]) for p in parts)
            for row in df.select(*[F.col(p).cast("string").alias(p) for p in parts]).distinct().collect()
        }
        files = [
            f
            for f in files
            if tuple(parse_partition_value(f.partition_values[p], partition_types[p]) for p in parts)
            in wanted
        ]
    files = _prune_by_key_ranges(df, files, [k for k in keys if k not in parts], plan)
    if not files:
        return df, []

    key_df = df.select(*keys).distinct()
    target = read_files(df.sparkSession, location, table_schema, parts, files, with_file_name=True)
    hit_names = {
        row[0] for row in target.join(key_df, keys, "left_semi").select(FILE_NAME_COL).distinct().collect()
    }
    affected = [f for f in files if posixpath.basename(f.rel_path) in hit_names]
    if not affected:
        return df, []
    kept = read_files(df.sparkSession, location, table_schema, parts, affected).join(
        key_df, keys, "left_anti"
    )
    combined = kept.unionByName(df, allowMissingColumns=True).select(*plan.column_order)
    return combined, affected


_RANGE_PRUNABLE = {"byte", "short", "integer", "long", "date", "timestamp", "string"}


_EPOCH = datetime(1970, 1, 1)
_STATS_TIMESTAMP_SLACK = timedelta(milliseconds=1)


def _comparable(value: Any) -> Any:
    """delta-rs returns tz-aware datetimes; compare everything as naive UTC."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC).replace(tzinfo=None)
    return value


def _prune_by_key_ranges(
    df: DataFrame, files: list[ActiveFile], keys: Sequence[str], plan: SchemaPlan
) -> list[ActiveFile]:
    """Drop files whose min/max stats of some merge key cannot overlap the source's key range.

    With time-ordered or sequential keys this keeps an upsert of recent rows from scanning the whole
    table. A file without bounds for a key is always kept.
    """
    from pyspark.sql import functions as F

    types = {f["name"]: f["type"] for f in plan.target["fields"]}
    keys = [k for k in keys if types.get(k) in _RANGE_PRUNABLE]
    if not keys or not files or not any(f.min_values for f in files):
        return files

    # Timestamps travel as epoch microseconds: PySpark would convert them to the *process's* local
    # time zone, while the stats are UTC.
    def bound(fn: Any, key: str) -> Any:
        return F.unix_micros(fn(key)) if types[key] == "timestamp" else fn(key)

    row = df.agg(
        *[bound(F.min, k).alias(f"lo{i}") for i, k in enumerate(keys)],
        *[bound(F.max, k).alias(f"hi{i}") for i, k in enumerate(keys)],
    ).collect()[0]
    bounds = {
        name: _EPOCH + timedelta(microseconds=row[name])
        if types[keys[int(name[2:])]] == "timestamp" and row[name] is not None
        else row[name]
        for name in row.asDict()
    }

    def may_overlap(f: ActiveFile) -> bool:
        for i, key in enumerate(keys):
            lo, hi = _comparable(bounds[f"lo{i}"]), _comparable(bounds[f"hi{i}"])
            if lo is None:  # source keys all null: nothing can match
                return False
            f_lo, f_hi = _comparable(f.min_values.get(key)), _comparable(f.max_values.get(key))
            if types[key] == "timestamp" and isinstance(f_hi, datetime):
                # Native Delta (delta-spark) writes timestamp stats truncated to milliseconds, so its
                # max can be up to 1 ms below the real one; Delta's own data skipping widens it too.
                f_hi += _STATS_TIMESTAMP_SLACK
            try:
                if (f_hi is not None and f_hi < lo) or (f_lo is not None and f_lo > hi):
                    return False
            except TypeError:
                continue
        return True

    return [f for f in files if may_overlap(f)]


def _remove_actions(files: Sequence[ActiveFile], now_ms: int) -> list[RemoveAction]:
    return [RemoveAction(f.rel_path, True, now_ms, f.size, dict(f.partition_values)) for f in files]


def _add_actions(files: Sequence[StagedFile], now_ms: int) -> list[AddAction]:
    return [
        AddAction(f.rel_path, f.size, dict(f.partition_values), now_ms, True, f.stats_json) for f in files
    ]


def _commit(
    location: TableLocation,
    dt: DeltaTable | None,
    plan: SchemaPlan,
    parts: Sequence[str],
    adds: list[AddAction],
    removes: list[RemoveAction],
    properties: dict[str, Any],
    strict: bool,
    replace_all: bool = False,
) -> int:
    """Commit and return the new version; CommitConflictError when another writer got in between."""
    read_version = dt.version() if dt is not None else None
    commit_props = CommitProperties(max_commit_retries=0 if strict else None, **properties)
    try:
        if dt is None:
            create_table_with_add_actions(
                location.uri,
                to_delta_schema(plan.target),
                adds,
                mode="error",
                partition_by=list(parts) or None,
                commit_properties=commit_props,
            )
            return 0
        if plan.evolves and replace_all:
            # Overwrite mode derives the removes itself (every file of this snapshot, the same set as
            # `removes`) and, unlike append mode, writes the new schema: one atomic commit.
            dt.create_write_transaction(
                adds,
                "overwrite",
                to_delta_schema(plan.target),
                partition_by=list(parts) or None,
                commit_properties=CommitProperties(max_commit_retries=0, **properties),
            )
            return dt.version() + 1
        if plan.evolves:
            # In append mode delta-rs 1.6.6 silently ignores a changed schema (and RemoveActions are
            # only allowed in append mode), so the new nullable columns are added by a metadata-only
            # commit just before the data commit. That intermediate version is a valid table (old
            # rows, new columns null) and a retry after a failed data commit sees no evolution left.
            dt.alter.add_columns(
                [Field.from_json(json.dumps(f)) for f in plan.new_fields],
                commit_properties=CommitProperties(
                    max_commit_retries=0,
                    custom_metadata={
                        **{k: v for k, v in properties["custom_metadata"].items() if k != COMMIT_ID_KEY},
                        "streamhouse.step": "schema_evolution",
                    },
                ),
            )
            dt.update_incremental()
            if dt.version() != (read_version or 0) + 1:
                raise commit_conflict(location, read_version, RuntimeError("commit during schema evolution"))
        expected = dt.version() + 1
        dt.create_write_transaction(
            [*adds, *removes],
            "append",
            to_delta_schema(plan.target),
            partition_by=list(parts) or None,
            commit_properties=commit_props,
        )
        if strict:
            return expected
        # delta-rs may have rebased a blind append past concurrent commits and does not refresh the
        # handle: find our commit by its id.
        dt.update_incremental()
        commit_id = properties["custom_metadata"].get(COMMIT_ID_KEY)
        for info in dt.history(limit=dt.version() - expected + 2):
            if info.get(COMMIT_ID_KEY) == commit_id:
                return int(info["version"])
        return dt.version()
    except CommitFailedError as exc:
        raise commit_conflict(location, read_version, exc) from exc
    except DeltaError as exc:
        if dt is None and DeltaTable.is_deltatable(location.uri):  # lost a race creating the table
            raise commit_conflict(location, read_version, exc) from exc
        raise


def _find_commit(location: TableLocation, read_version: int | None, commit_id: str) -> int | None:
    """Version carrying `commit_id` (>= 0), -1 when provably absent, None when the log is unreadable."""
    try:
        dt = DeltaTable(location.uri)
        newer = dt.version() - (read_version if read_version is not None else -1)
        if newer <= 0:
            return -1
        for info in dt.history(limit=newer):
            if info.get(COMMIT_ID_KEY) == commit_id:
                return int(info["version"])
        return -1
    except DeltaTableNotFound:
        return -1
    except Exception:
        return None


class _Prepared(NamedTuple):
    dt: DeltaTable | None
    read_version: int | None
    plan: SchemaPlan
    parts: list[str]


def _prepare(
    location: TableLocation,
    data_schema: dict[str, Any],
    partition_by: Sequence[str] | None,
    app_transactions: Sequence[AppTransaction],
    schema_evolution: bool,
) -> _Prepared | CommitResult:
    """Load one snapshot; skip when the app transactions are committed; check schema and partitioning.

    Everything here is decided before any data is written, for the Spark and the Arrow writer alike.
    """
    dt = DeltaTable(location.uri) if DeltaTable.is_deltatable(location.uri) else None
    read_version = dt.version() if dt is not None else None
    if dt is not None and app_transactions:
        done = {t.app_id: dt.transaction_version(t.app_id) for t in app_transactions}
        if all(done[t.app_id] is not None and done[t.app_id] >= t.version for t in app_transactions):
            return CommitResult(location.uri, read_version or 0, True, 0, 0, 0)

    plan = reconcile(
        data_schema,
        schema_json(dt) if dt is not None else None,
        schema_evolution=schema_evolution,
        table_uri=location.uri,
        version=read_version,
    )
    if dt is not None:
        parts = partition_columns(dt)
        if partition_by is not None and list(partition_by) != parts:
            raise WriteOptionsError(
                f"partition_by={list(partition_by)} differs from the partition columns {parts} of existing "
                f"Delta table {location.uri} (version {read_version}); omit partition_by or match it.",
                table_uri=location.uri,
                version=read_version,
            )
    else:
        parts = list(partition_by or [])
    return _Prepared(dt, read_version, plan, parts)


def write_delta(
    df: DataFrame,
    table_uri: str | os.PathLike[str],
    *,
    mode: WriteMode = "append",
    partition_by: Sequence[str] | None = None,
    where: Mapping[str, object | Sequence[object]] | None = None,
    merge_keys: Sequence[str] | None = None,
    app_transactions: Sequence[AppTransaction] = (),
    schema_evolution: bool = False,
    commit_metadata: Mapping[str, str] | None = None,
    append_outside_where: bool = False,
) -> CommitResult:
    """Write a Spark DataFrame to a Delta table in one atomic commit.

    Modes: append; overwrite (replace all rows); overwrite_where (replace the partitions selected by
    `where`, every row of `df` must fall inside them); merge (upsert on `merge_keys`).
    ``append_outside_where`` (overwrite_where only) appends rows outside `where` to their partitions
    instead of refusing them: incremental runs rebuild some partitions and add to others in one commit.

    The checks above are the same for both engines; the files and the commit come from Spark's native
    Delta where the session has it on and it is the faster engine for this mode (`assets.delta.native`),
    else from Parquet staging + one deltalake commit.
    """
    location = resolve(table_uri)
    _validate_options(mode, where, merge_keys, app_transactions, location.uri, append_outside_where)
    schema = spark_schema_json(df.schema)
    prepared = _prepare(location, schema, partition_by, app_transactions, schema_evolution)
    if isinstance(prepared, CommitResult):
        return prepared
    dt, read_version, plan, parts = prepared
    partition_types = _partition_types(plan, parts, location.uri)
    data = df.select(*plan.column_order)
    native = use_native(df.sparkSession, mode, app_transactions, append_outside_where)

    removes: list[ActiveFile] = []
    typed_where: dict[str, list[Any]] = {}
    if mode == "overwrite" and dt is not None and not native:
        removes = active_files(dt)
    elif mode == "overwrite_where":
        typed_where = normalize_where(where, partition_types, table_uri=location.uri, version=read_version)
        outside = (
            [] if append_outside_where else data.filter(~spark_predicate(typed_where)).limit(1).collect()
        )
        if outside:
            sample = {p: outside[0][p] for p in parts}
            raise PartitionFilterError(
                f"overwrite_where on {location.uri}: DataFrame has rows outside where={dict(where or {})} "
                f"(e.g. partition {sample}); filter the DataFrame or widen the predicate.",
                table_uri=location.uri,
                version=read_version,
            )
        if dt is not None and not native:
            removes = [
                f
                for f in active_files(dt)
                if partition_matches(f.partition_values, typed_where, partition_types)
            ]
    elif mode == "merge":
        # The source is scanned several times (duplicate check, matching, rewrite); persisting it
        # makes every pass see the same rows even when it comes from a non-repeatable read.
        from pyspark import StorageLevel

        source = data.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            data, removes = _plan_merge(source, dt, location, plan, parts, partition_types, merge_keys or ())
            return _stage_and_commit(
                location, dt, plan, parts, _spark_stager(data, parts), removes, mode, app_transactions,
                commit_metadata,
            )  # fmt: skip
        finally:
            source.unpersist()
    if native:
        return write_native(
            data,
            location,
            mode=mode,
            parts=parts,
            create=dt is None,
            read_version=read_version,
            replace_where=replace_where_sql(typed_where, partition_types) if typed_where else None,
            app_transaction=app_transactions[0] if app_transactions else None,
            evolves=plan.evolves,
            metadata=_commit_metadata(mode, commit_metadata, read_version),
        )
    stage = _spark_stager(data, parts)
    return _stage_and_commit(
        location, dt, plan, parts, stage, removes, mode, app_transactions, commit_metadata
    )


#: Writes the data into a staging directory and describes each file: (staging, column types) -> files.
Stager = Callable[[Staging, Mapping[str, str]], list[StagedFile]]


def _spark_stager(data: DataFrame, parts: Sequence[str]) -> Stager:
    return lambda staging, column_types: write_staged(data, staging, parts, column_types)


def _stage_and_commit(
    location: TableLocation,
    dt: DeltaTable | None,
    plan: SchemaPlan,
    parts: Sequence[str],
    stage: Stager,
    removes: list[ActiveFile],
    mode: str,
    app_transactions: Sequence[AppTransaction],
    commit_metadata: Mapping[str, str] | None,
) -> CommitResult:
    """`stage` writes the data to staging, files move into the table, one commit; cleans up on failure.

    Shared by the Spark writer and the Arrow writer, so both get the same publish/commit/discard rules.
    """
    read_version = dt.version() if dt is not None else None
    column_types = primitive_column_types(plan.target, exclude=set(parts))
    staging = new_staging(location)
    commit_id = staging.write_id
    moved: list[str] = []
    keep_files = False
    try:
        staged = stage(staging, column_types)
        moved = publish(staging, staged)
        now_ms = int(time.time() * 1000)
        metadata = _commit_metadata(mode, commit_metadata, read_version)
        properties: dict[str, Any] = {"custom_metadata": {**metadata, COMMIT_ID_KEY: commit_id}}
        if app_transactions:
            properties["app_transactions"] = [
                Transaction(t.app_id, t.version, now_ms) for t in app_transactions
            ]
        strict = bool(removes) or mode != "append" or bool(app_transactions) or plan.evolves
        try:
            version = _commit(
                location,
                dt,
                plan,
                parts,
                _add_actions(staged, now_ms),
                _remove_actions(removes, now_ms),
                properties,
                strict,
                replace_all=mode == "overwrite",
            )
        except BaseException:
            # Ambiguous: the log entry may have been written before the error (post-commit hook, I/O
            # error on the response, ...). Deleting files a version references would corrupt the table,
            # so the moved files are deleted only when our commit id is provably absent from the log.
            # The error still propagates: a retry with the same app transactions is then a no-op.
            found = _find_commit(location, read_version, commit_id)
            keep_files = found is None or found >= 0
            if found is not None and found >= 0:
                log.warning("write to %s failed after committing version %s", location.uri, found)
            raise
        keep_files = True
    finally:
        if not keep_files:
            discard(location, moved)
        remove_staging(staging)
    return CommitResult(
        table_uri=location.uri,
        version=version,
        skipped=False,
        files_added=len(staged),
        files_removed=len(removes),
        rows_written=sum(f.num_records for f in staged),
    )
