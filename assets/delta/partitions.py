"""Partition values: Spark's directory encoding, Delta's string encoding, and `where` predicates.

Delta stores partition values as strings in the log; Spark encodes them in `col=value` directory
names (Hive escaping, `__HIVE_DEFAULT_PARTITION__` for null). Predicates are compared on *typed*
values (both sides parsed with the column's Delta type) so `{"day": date(2024, 1, 1)}` and
`{"n": 5}` match regardless of how the value was spelled in the log.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import unquote

from assets.delta.errors import PartitionFilterError

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def parse_partition_dir(rel_dir: str, partition_cols: Sequence[str]) -> dict[str, str | None]:
    """`a=1/b=x%20y` -> {"a": "1", "b": "x y"}; checks the directory layout matches the columns."""
    segments = [s for s in rel_dir.split("/") if s]
    values: dict[str, str | None] = {}
    for segment in segments:
        key, sep, raw = segment.partition("=")
        if not sep:
            raise ValueError(f"not a partition directory segment: {segment!r} in {rel_dir!r}")
        key = unquote(key)
        values[key] = None if raw == HIVE_NULL else unquote(raw)
    if list(values) != list(partition_cols):
        raise ValueError(f"partition directories {rel_dir!r} do not match partition columns {partition_cols}")
    return values


def to_partition_string(value: Any) -> str | None:
    """Python value -> Delta partition value string."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def parse_partition_value(text: str | None, delta_type: str) -> Any:
    """Delta partition string -> typed Python value used for comparisons."""
    if text is None:
        return None
    if delta_type in {"byte", "short", "integer", "long"}:
        return int(text)
    if delta_type in {"float", "double"}:
        return float(text)
    if delta_type.startswith("decimal"):
        return Decimal(text)
    if delta_type == "boolean":
        return text.strip().lower() == "true"
    if delta_type == "date":
        return date.fromisoformat(text[:10])
    if delta_type in {"timestamp", "timestamp_ntz"}:
        parsed = datetime.fromisoformat(text.strip())
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(UTC).replace(tzinfo=None)
        return parsed
    return text


def normalize_where(
    where: Mapping[str, object | Sequence[object]] | None,
    partition_types: Mapping[str, str],
    *,
    table_uri: str,
    version: int | None,
) -> dict[str, list[Any]]:
    """Validate a partition predicate and return column -> list of *typed* accepted values.

    delta-rs silently ignores filters on non-partition columns (and would then replace the whole
    table), so every key is checked here.
    """
    if not where:
        raise PartitionFilterError(
            f"mode='overwrite_where' on {table_uri} needs a non-empty `where` partition predicate "
            f"over the partition columns {list(partition_types)}; "
            "use mode='overwrite' to replace everything.",
            table_uri=table_uri,
            version=version,
        )
    if not partition_types:
        raise PartitionFilterError(
            f"Delta table {table_uri} is not partitioned, so overwrite_where cannot select partitions "
            f"(got where keys {list(where)}); use mode='overwrite' or mode='merge'.",
            table_uri=table_uri,
            version=version,
        )
    unknown = [key for key in where if key not in partition_types]
    if unknown:
        raise PartitionFilterError(
            f"`where` keys {unknown} are not partition columns of Delta table {table_uri} "
            f"(version {version}); partition columns are {list(partition_types)}.",
            table_uri=table_uri,
            version=version,
        )
    normalized: dict[str, list[Any]] = {}
    for key, raw in where.items():
        values = list(raw) if isinstance(raw, list | tuple | set | frozenset) else [raw]
        if not values:
            raise PartitionFilterError(
                f"`where[{key!r}]` is an empty list for Delta table {table_uri}; give at least one value.",
                table_uri=table_uri,
                version=version,
            )
        try:
            normalized[key] = [
                parse_partition_value(to_partition_string(v), partition_types[key]) for v in values
            ]
        except (ValueError, ArithmeticError) as exc:
            raise PartitionFilterError(
                f"`where[{key!r}]` values {values!r} cannot be read as the partition column's type "
                f"{partition_types[key]!r} in Delta table {table_uri}: {exc}",
                table_uri=table_uri,
                version=version,
            ) from exc
    return normalized


def partition_matches(
    partition_values: Mapping[str, str | None],
    typed_where: Mapping[str, list[Any]],
    partition_types: Mapping[str, str],
) -> bool:
    """True when a file's partition values satisfy every key of the predicate."""
    for key, accepted in typed_where.items():
        value = parse_partition_value(partition_values.get(key), partition_types[key])
        if value not in accepted:
            return False
    return True


def spark_predicate(typed_where: Mapping[str, list[Any]]) -> Any:
    """The same predicate as a Spark Column (null-aware), for validating the DataFrame's rows."""
    from pyspark.sql import functions as F

    def spark_literal(value: Any) -> Any:
        # Naive datetimes are UTC here; PySpark would read a naive datetime as process-local time.
        if isinstance(value, datetime) and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value

    condition = None
    for key, accepted in typed_where.items():
        non_null = [spark_literal(v) for v in accepted if v is not None]
        clause = F.col(key).isin(non_null) if non_null else F.lit(False)
        if len(non_null) != len(accepted):
            clause = clause | F.col(key).isNull()
        clause = F.coalesce(clause, F.lit(False))
        condition = clause if condition is None else condition & clause
    return condition
