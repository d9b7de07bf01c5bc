"""Spark's native Delta (delta-spark jars) as a second engine of the Delta layer, on the same tables.

`write_delta` and `read_spark` keep one API and one set of rules (schema checks, partition
predicates, app transactions, commit metadata); only the engine that writes the files and the log
entry changes. Which engine runs is the runtime Spark setting `spark.streamhouse.delta.native`
(`build_spark_session(delta_jars_available=...)` sets it):

* ``false``: Parquet staging + deltalake commit (`assets.delta.writer`), plain Parquet reads.
* ``true``: reads with ``format("delta")``; each write mode by the engine measured faster for it
  (`FASTER_ENGINE`: measured, deltalake is faster for every mode today, so writes stay there); the
  writes native Delta cannot do in one commit stay on deltalake whatever the measurements say.
* ``always``: native for every write it can do (tests and benchmarks force an engine with it).

Both engines produce the same table: native writes record the layer's commit metadata as JSON in
``userMetadata`` (`reader.history()` flattens it back into the entry, as deltalake's custom keys are),
app transactions as ``txnAppId``/``txnVersion`` (the same ``txn`` action the deltalake path writes
and reads), schema evolution as ``mergeSchema`` after the layer's own check, partition overwrites as
``replaceWhere`` after the layer's own "every row inside `where`" check.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deltalake import DeltaTable

from assets.delta.location import TableLocation
from assets.delta.partitions import to_partition_string
from assets.delta.types import COMMIT_ID_KEY, AppTransaction, CommitResult, commit_conflict
from assets.spark.delta_jars import NATIVE_DELTA_CONF

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ENGINE_KEY = "streamhouse.engine"
SETTINGS = ("false", "true", "always")

#: The engine each write mode uses when native Delta is on ("true"): the faster one measured by
#: benchmarks/delta_native.py (docs/benchmarks.md, "Native Delta"; `write_delta` of a cached 5-column
#: DataFrame, 10 day partitions, 2 shared cores, local[*]; results/delta_native*.json). Today that is
#: deltalake for every mode, so native Delta serves the reads:
#:
#: * overwrite (whole table) and overwrite_where (replaceWhere): deltalake, 1.5-3.8x faster at 1M and
#:   5M rows. Native Delta must rebuild the table's file list (a Spark job over the log) before it
#:   can remove files, plus its conflict checks; the deltalake path takes the removes from the
#:   snapshot it already loaded for the schema/app-transaction checks.
#: * append with one app transaction: deltalake, 1.50x (1M) and 1.59x (5M), median of 3.
#: * plain append: deltalake, 1.47x (1M) and 1.20x (5M), median of 3 (a first single run on a busier
#:   machine had native ahead by 1.17x/1.03x: noise). The JVM write of the data files costs the same;
#:   native Delta adds its own transaction setup, stats collection in the tasks and commit
#:   protocol, which outweigh the deltalake path's footer reads and renames at these sizes.
FASTER_ENGINE: dict[str, str] = {
    "append": "deltalake",
    "append_txn": "deltalake",
    "overwrite": "deltalake",
    "overwrite_where": "deltalake",
}
#: rows/s measured (deltalake, native) at 1M and 5M rows: the reason for `FASTER_ENGINE`.
MEASURED_ROWS_PER_S: dict[str, dict[int, tuple[int, int]]] = {
    "append": {1_000_000: (405_036, 276_017), 5_000_000: (554_465, 460_710)},
    "append_txn": {1_000_000: (410_964, 273_558), 5_000_000: (1_097_201, 690_782)},
    "overwrite_where": {1_000_000: (93_967, 24_970), 5_000_000: (479_127, 240_297)},
    "overwrite": {1_000_000: (135_293, 84_073), 5_000_000: (529_441, 346_730)},
}

# Delta's optimistic-concurrency failures (io.delta.exceptions.*, error classes DELTA_CONCURRENT_*).
_CONFLICT_MARKERS = (
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "ConcurrentWriteException",
    "MetadataChangedException",
    "ProtocolChangedException",
    "DELTA_CONCURRENT_",
    "DELTA_METADATA_CHANGED",
    "DELTA_PROTOCOL_CHANGED",
)


def native_setting(spark: SparkSession) -> str:
    """`spark.streamhouse.delta.native` of this session: "false", "true" or "always"."""
    value = (spark.conf.get(NATIVE_DELTA_CONF, "false") or "false").strip().lower()
    return value if value in SETTINGS else "false"


@contextlib.contextmanager
def delta_engine(spark: SparkSession, setting: str) -> Iterator[None]:
    """Temporarily switch the session's Delta engine ("false" | "true" | "always")."""
    if setting not in SETTINGS:
        raise ValueError(f"delta engine setting must be one of {SETTINGS}, got {setting!r}")
    before = spark.conf.get(NATIVE_DELTA_CONF, "false")
    spark.conf.set(NATIVE_DELTA_CONF, setting)
    try:
        yield
    finally:
        spark.conf.set(NATIVE_DELTA_CONF, before)


def write_kind(mode: str, app_transactions: Sequence[AppTransaction]) -> str:
    return "append_txn" if mode == "append" and app_transactions else mode


def unsupported_reason(
    mode: str, app_transactions: Sequence[AppTransaction], append_outside_where: bool
) -> str | None:
    """Why native Delta cannot do this write in ONE commit (None when it can)."""
    if mode == "merge":
        return "merge keeps the layer's file-pruned upsert (native MERGE is a different plan)"
    if append_outside_where:
        return "replaceWhere cannot also append rows outside the predicate in the same commit"
    if len(app_transactions) > 1:
        return "the DataFrame writer records one app transaction (txnAppId/txnVersion) per commit"
    return None


def use_native(
    spark: SparkSession,
    mode: str,
    app_transactions: Sequence[AppTransaction],
    append_outside_where: bool = False,
) -> bool:
    """Whether `write_delta` writes this through native Delta on this session."""
    setting = native_setting(spark)
    if setting == "false" or unsupported_reason(mode, app_transactions, append_outside_where):
        return False
    return setting == "always" or FASTER_ENGINE.get(write_kind(mode, app_transactions)) == "native"


def _sql_literal(value: Any, delta_type: str) -> str:
    text = to_partition_string(value)
    assert text is not None
    quoted = "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return quoted if delta_type == "string" else f"CAST({quoted} AS {delta_type.upper()})"


def replace_where_sql(typed_where: Mapping[str, list[Any]], partition_types: Mapping[str, str]) -> str:
    """The `where` predicate (typed values, None = null partition) as a replaceWhere SQL string."""
    clauses = []
    for key, accepted in typed_where.items():
        column = "`" + key.replace("`", "``") + "`"
        parts = []
        non_null = [v for v in accepted if v is not None]
        if non_null:
            literals = ", ".join(_sql_literal(v, partition_types[key]) for v in non_null)
            parts.append(f"{column} IN ({literals})")
        if len(non_null) != len(accepted):
            parts.append(f"{column} IS NULL")
        clauses.append("(" + " OR ".join(parts) + ")")
    return " AND ".join(clauses)


def _is_conflict(exc: BaseException) -> bool:
    text = f"{type(exc).__name__}: {exc}"
    return any(marker in text for marker in _CONFLICT_MARKERS)


def user_metadata(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The layer's commit metadata a native write stored as JSON in `userMetadata` ({} if none)."""
    raw = entry.get("userMetadata")
    if not isinstance(raw, str) or not raw.startswith("{"):
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _find_native_commit(location: TableLocation, read_version: int | None, commit_id: str) -> dict | None:
    dt = DeltaTable(location.uri)
    newer = dt.version() - (read_version if read_version is not None else -1)
    for info in dt.history(limit=max(newer, 1)):
        if user_metadata(info).get(COMMIT_ID_KEY) == commit_id:
            return info
    return None


def write_native(
    data: DataFrame,
    location: TableLocation,
    *,
    mode: str,
    parts: Sequence[str],
    create: bool,
    read_version: int | None,
    replace_where: str | None,
    app_transaction: AppTransaction | None,
    evolves: bool,
    metadata: Mapping[str, Any],
) -> CommitResult:
    """One native Delta write = one commit; returns what it committed (or skipped)."""
    commit_id = uuid.uuid4().hex
    meta = {**metadata, ENGINE_KEY: "delta-spark", COMMIT_ID_KEY: commit_id}
    writer = data.write.format("delta").option("userMetadata", json.dumps(meta, sort_keys=True))
    if app_transaction is not None:
        writer = writer.option("txnAppId", app_transaction.app_id).option(
            "txnVersion", str(app_transaction.version)
        )
    if evolves:
        writer = writer.option("mergeSchema", "true")
    if create and parts:
        writer = writer.partitionBy(*parts)
    if mode == "append":
        writer = writer.mode("append")
    elif mode == "overwrite":
        writer = writer.mode("overwrite")
    elif mode == "overwrite_where":
        assert replace_where
        writer = writer.mode("overwrite").option("replaceWhere", replace_where)
    else:  # pragma: no cover - use_native() never routes other modes here
        raise ValueError(f"native Delta does not write mode={mode!r}")
    try:
        writer.save(location.spark_path(""))
    except Exception as exc:
        if _is_conflict(exc):
            raise commit_conflict(location, read_version, exc) from exc
        raise
    info = _find_native_commit(location, read_version, commit_id)
    if info is None:
        # Delta skipped the write itself: a concurrent writer committed this app transaction first.
        version = DeltaTable(location.uri).version()
        return CommitResult(location.uri, version, True, 0, 0, 0)
    metrics = info.get("operationMetrics") or {}
    return CommitResult(
        table_uri=location.uri,
        version=int(info["version"]),
        skipped=False,
        files_added=int(metrics.get("numFiles", 0) or 0),
        files_removed=int(metrics.get("numRemovedFiles", 0) or 0),
        rows_written=int(metrics.get("numOutputRows", 0) or 0),
    )


def read_native(spark: SparkSession, location: TableLocation, version: int | None) -> DataFrame:
    """``format("delta")`` at `version` (None = latest)."""
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", str(version))
    return reader.load(location.spark_path(""))
