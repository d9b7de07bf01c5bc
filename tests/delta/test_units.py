"""Pure-Python pieces of the Delta layer: partition encoding, predicates, stats, schema checks."""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyarrow import fs as pafs

from assets.delta.errors import PartitionFilterError, SchemaMismatchError
from assets.delta.location import resolve
from assets.delta.partitions import (
    normalize_where,
    parse_partition_dir,
    partition_matches,
    to_partition_string,
)
from assets.delta.schema import reconcile
from assets.delta.stats import file_stats


def test_partition_dirs_are_unescaped_and_null_aware() -> None:
    assert parse_partition_dir("a=x%20y%252F/b=__HIVE_DEFAULT_PARTITION__", ["a", "b"]) == {
        "a": "x y%2F",
        "b": None,
    }
    assert parse_partition_dir("ts=2024-01-01 01%3A02%3A03.5", ["ts"]) == {"ts": "2024-01-01 01:02:03.5"}
    with pytest.raises(ValueError, match="do not match"):
        parse_partition_dir("b=1/a=2", ["a", "b"])


def test_partition_strings_and_typed_matching() -> None:
    assert to_partition_string(True) == "true"
    assert to_partition_string(date(2024, 1, 2)) == "2024-01-02"
    aware = datetime(2024, 1, 1, 2, 0, tzinfo=UTC)
    assert to_partition_string(aware) == "2024-01-01 02:00:00.000000"
    types = {"day": "date", "n": "integer", "ts": "timestamp"}
    where = normalize_where(
        {"day": "2024-01-02", "n": [5, None], "ts": aware}, types, table_uri="t", version=3
    )
    assert partition_matches({"day": "2024-01-02", "n": None, "ts": "2024-01-01 02:00:00"}, where, types)
    assert partition_matches({"day": "2024-01-02", "n": "5", "ts": "2024-01-01T02:00:00Z"}, where, types)
    assert not partition_matches({"day": "2024-01-03", "n": "5", "ts": "2024-01-01 02:00:00"}, where, types)


def test_partition_predicate_validation_names_the_problem() -> None:
    with pytest.raises(PartitionFilterError, match=r"\['x'\] are not partition columns.*version 4") as err:
        normalize_where({"x": 1}, {"day": "date"}, table_uri="/lake/t", version=4)
    assert err.value.table_uri == "/lake/t" and err.value.version == 4
    with pytest.raises(PartitionFilterError, match="cannot be read as"):
        normalize_where({"day": "not-a-date"}, {"day": "date"}, table_uri="t", version=0)


def test_stats_from_footer(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    table = pa.table(
        {
            "i": pa.array([3, None, 1], pa.int64()),
            "s": pa.array(["b", "a" * 40, None]),
            "long_only": pa.array(["z" * 40, "y" * 40, None]),
            "d": pa.array([1.5, math.nan, -2.0]),
            "ts": pa.array([datetime(2024, 1, 1, 0, 0, 0, 7), None, None], pa.timestamp("us", tz="UTC")),
            "day": pa.array([date(2024, 1, 5), date(2024, 1, 1), None]),
            "flag": pa.array([True, False, None]),
        }
    )
    pq.write_table(table, path, row_group_size=2)
    types = {
        "i": "long",
        "s": "string",
        "long_only": "string",
        "d": "double",
        "ts": "timestamp",
        "day": "date",
    }
    stats = json.loads(file_stats(str(path), pafs.LocalFileSystem(), types).stats_json)
    assert stats["numRecords"] == 3
    assert stats["nullCount"] == {"i": 1, "s": 1, "long_only": 1, "d": 0, "ts": 2, "day": 1}
    assert stats["minValues"]["i"] == 1 and stats["maxValues"]["i"] == 3
    assert stats["minValues"]["s"] == "a" * 32 and stats["maxValues"]["s"] == "b"  # prefix is a valid min
    assert "long_only" not in stats["maxValues"]  # a truncated max would be wrong: omitted
    assert stats["minValues"]["ts"] == stats["maxValues"]["ts"] == "2024-01-01T00:00:00.000007Z"
    assert stats["minValues"]["day"] == "2024-01-01" and stats["maxValues"]["day"] == "2024-01-05"
    assert "flag" not in stats.get("minValues", {})


def test_schema_reconcile_rules() -> None:
    def schema(*fields: tuple[str, str]) -> dict:
        return {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields],
        }

    table = schema(("id", "long"), ("v", "string"))
    plan = reconcile(
        schema(("v", "string"), ("id", "long")), table, schema_evolution=False, table_uri="t", version=1
    )
    assert plan.column_order == ["id", "v"] and not plan.evolves
    with pytest.raises(SchemaMismatchError, match="case differs") as err:
        reconcile(
            schema(("ID", "long"), ("v", "string")), table, schema_evolution=True, table_uri="t", version=1
        )
    assert "id" in err.value.columns
    plan = reconcile(
        schema(("id", "long"), ("v", "string"), ("extra", "date")),
        table,
        schema_evolution=True,
        table_uri="t",
        version=1,
    )
    assert plan.column_order == ["id", "v", "extra"] and [f["name"] for f in plan.new_fields] == ["extra"]


def test_locations() -> None:
    local = resolve("file:///tmp/lake/t/")
    assert local.uri == "/tmp/lake/t" and local.spark_root == "file:///tmp/lake/t"
    assert resolve(Path("/tmp/x")).fs_path("a=1/f.parquet") == "/tmp/x/a=1/f.parquet"
