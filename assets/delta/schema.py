"""Delta schema derivation and compatibility checks.

The table schema always comes from Spark's schema JSON (the Delta schema format *is* Spark's), never
from Arrow: Arrow would turn timestamps into nanosecond/NTZ types that pull in reader features other
engines cannot read. Every field is made nullable, exactly as Spark does when writing Parquet, so a
DataFrame built from `spark.range` (non-null `id`) can later be appended to by a nullable one.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from deltalake import Schema as DeltaSchema

from assets.delta.errors import SchemaMismatchError

_UNSUPPORTED = {"void", "null", "variant", "interval", "calendarinterval"}


def _make_nullable(data_type: Any) -> Any:
    if isinstance(data_type, dict):
        kind = data_type.get("type")
        if kind == "struct":
            return {
                "type": "struct",
                "fields": [
                    {
                        **f,
                        "nullable": True,
                        "type": _make_nullable(f["type"]),
                        "metadata": f.get("metadata", {}),
                    }
                    for f in data_type["fields"]
                ],
            }
        if kind == "array":
            return {
                **data_type,
                "elementType": _make_nullable(data_type["elementType"]),
                "containsNull": True,
            }
        if kind == "map":
            return {
                **data_type,
                "keyType": _make_nullable(data_type["keyType"]),
                "valueType": _make_nullable(data_type["valueType"]),
                "valueContainsNull": True,
            }
    return data_type


def _strip_metadata(data_type: Any) -> Any:
    """Type identity for comparisons: no field metadata, everything nullable."""
    data_type = _make_nullable(copy.deepcopy(data_type))

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "metadata"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(data_type)


def _type_name(data_type: Any) -> str:
    return data_type if isinstance(data_type, str) else str(data_type.get("type"))


def spark_schema_json(spark_schema: Any) -> dict[str, Any]:
    """Delta schema JSON (as a dict) for a `pyspark.sql.types.StructType`, all fields nullable."""
    schema = _make_nullable(json.loads(spark_schema.json()))
    for f in schema["fields"]:
        if _type_name(f["type"]).split("(")[0] in _UNSUPPORTED:
            raise SchemaMismatchError(
                f"Column {f['name']!r} has Spark type {f['type']!r}, which Delta cannot store; "
                "cast it to a concrete type (e.g. `F.lit(None).cast('string')`) before writing.",
                columns=(f["name"],),
            )
    return schema


def arrow_schema_json(arrow_schema: Any) -> dict[str, Any]:
    """Delta schema JSON (as a dict) for a `pyarrow.Schema`, all fields nullable, as for Spark."""
    return _make_nullable(json.loads(DeltaSchema.from_arrow(arrow_schema).to_json()))


def to_delta_schema(schema_json: dict[str, Any]) -> DeltaSchema:
    return DeltaSchema.from_json(json.dumps(schema_json))


def table_schema_json(delta_schema: DeltaSchema) -> dict[str, Any]:
    return json.loads(delta_schema.to_json())


def field_names(schema_json: dict[str, Any]) -> list[str]:
    return [f["name"] for f in schema_json["fields"]]


def primitive_column_types(schema_json: dict[str, Any], exclude: set[str]) -> dict[str, str]:
    """Top-level primitive columns -> Delta type name (the columns that get min/max stats)."""
    return {
        f["name"]: f["type"]
        for f in schema_json["fields"]
        if isinstance(f["type"], str) and f["name"] not in exclude
    }


@dataclass(frozen=True)
class SchemaPlan:
    """How a DataFrame's columns map onto the table: final schema, column order, added fields."""

    target: dict[str, Any]
    column_order: list[str]
    new_fields: list[dict[str, Any]] = field(default_factory=list)

    @property
    def evolves(self) -> bool:
        return bool(self.new_fields)


def reconcile(
    df_schema: dict[str, Any],
    table_schema: dict[str, Any] | None,
    *,
    schema_evolution: bool,
    table_uri: str,
    version: int | None,
) -> SchemaPlan:
    """Check the DataFrame against the table schema and decide the schema to commit.

    Missing columns and type changes are always errors (they would make old and new files disagree);
    new columns are allowed only with `schema_evolution=True` and are appended as nullable fields.
    """
    if table_schema is None:
        return SchemaPlan(target=df_schema, column_order=field_names(df_schema))

    df_fields = {f["name"]: f for f in df_schema["fields"]}
    table_fields = {f["name"]: f for f in table_schema["fields"]}
    df_lower = {name.lower(): name for name in df_fields}

    missing = [name for name in table_fields if name not in df_fields]
    case_only = [f"{df_lower[n.lower()]}!={n}" for n in missing if n.lower() in df_lower]
    changed = [
        f"{name} ({_type_name(table_fields[name]['type'])} -> {_type_name(df_fields[name]['type'])})"
        for name in table_fields
        if name in df_fields
        and _strip_metadata(table_fields[name]["type"]) != _strip_metadata(df_fields[name]["type"])
    ]
    new = [name for name in df_fields if name not in table_fields]

    problems = []
    if missing:
        problems.append(f"missing columns {missing}" + (f" (case differs: {case_only})" if case_only else ""))
    if changed:
        problems.append(f"type changes {changed}")
    if new and not schema_evolution:
        problems.append(f"new columns {new} (pass schema_evolution=True to add them)")
    if problems:
        bad = tuple(missing + [c.split(" ")[0] for c in changed] + (new if not schema_evolution else []))
        raise SchemaMismatchError(
            f"DataFrame schema does not match Delta table {table_uri} at version {version}: "
            + "; ".join(problems)
            + ". Select/cast the DataFrame to the table schema, or evolve the table deliberately.",
            table_uri=table_uri,
            version=version,
            columns=bad,
        )

    new_fields = [copy.deepcopy(df_fields[name]) for name in new]
    target = {"type": "struct", "fields": [*copy.deepcopy(table_schema["fields"]), *new_fields]}
    return SchemaPlan(target=target, column_order=field_names(target), new_fields=new_fields)
