"""Row-level expectations of the silver tables: the rules that decide which bronze record becomes a row.

They live here, next to the transform that enforces them while writing, and ``quality/`` imports them
into the Great Expectations suites (``quality/ → assets/ → edge/``; ``assets/`` never imports
``quality/``). Each expectation has an action, as in Databricks DLT:

* ``drop``: a failing row goes to ``quarantine/<topic>`` with the names of the expectations it failed,
  the run id and its Kafka position; the rest of the batch is written.
* ``warn``: the row is kept; the asset check reports how many rows fail (WARN severity).
* ``fail``: the row is kept, but the (blocking) asset check fails with ERROR severity, so nothing
  downstream materializes in that run.

An expectation is a Spark SQL predicate ``violation`` that is true for a failing row (NULL counts as
passing). ``drop`` expectations are evaluated on the parsed bronze record (columns: the typed contract
fields, ``_json`` — the value parsed as a Spark VARIANT —, ``payload`` — the JSON object as
MAP<STRING,STRING> — and ``_bronze_date``); ``warn``/``fail`` expectations only use typed columns, so the
checks can evaluate them on the written silver table. The same SQL runs on Spark and DuckDB.

**The typing rule** (docs/data-contract.md, "Field types"), JSON Schema's: a field's JSON type decides,
never its text. ``int``/``long``: a JSON number with an integral value in range (``3`` and ``3.0``);
``double``: any finite JSON number; ``string``: a JSON string; ``timestamp``: a JSON string holding an
ISO-8601 time. A numeric string (``"3"``), a boolean, an object or ``3.5`` for an int is rejected with a
reason naming the field, the JSON received and its type. Parsing the payload as a VARIANT keeps the JSON
type of each field, which a MAP<STRING,STRING> (``"3"`` and ``3`` both become ``3``) loses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from assets.sample_data import CATEGORIES, CLICKS, COUNTRIES, CUSTOMERS, ORDERS, PAGES, PRODUCTS, SEGMENTS

WARN = "warn"
DROP = "drop"
FAIL = "fail"
ACTIONS = (WARN, DROP, FAIL)


@dataclass(frozen=True)
class RowExpectation:
    """One row-level rule of a suite."""

    #: identifier, unique within the table's suite (``quantity_positive``); stored in quarantine rows
    name: str
    #: Spark SQL predicate, true when a row violates the expectation (NULL = passes)
    violation: str
    #: Spark SQL string expression: the readable reason recorded in quarantine (``reason`` column)
    message: str
    action: str
    #: the Great Expectations expectation this rule is, for suites and Data Docs (``expect_...``)
    gx_type: str
    gx_kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"expectation {self.name}: action must be one of {ACTIONS}, not {self.action!r}")


def _sql_str(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _in_set(column: str, values: list[str], action: str = WARN) -> RowExpectation:
    listed = ", ".join(_sql_str(v) for v in values)
    return RowExpectation(
        f"{column}_in_set",
        f"{column} NOT IN ({listed})",
        f"concat('{column} not in the known set: ', {column})",
        action,
        "expect_column_values_to_be_in_set",
        {"column": column, "value_set": list(values)},
    )


#: Rules beyond the typed contract, per topic (the contract's own rules are ``contract_expectations``).
EXTRA_EXPECTATIONS: dict[str, tuple[RowExpectation, ...]] = {
    ORDERS: (
        RowExpectation(
            "quantity_positive",
            "quantity <= 0",
            "'quantity must be > 0'",
            DROP,
            "expect_column_values_to_be_between",
            {"column": "quantity", "min_value": 1},
        ),
        RowExpectation(
            "unit_price_non_negative",
            "unit_price < 0",
            "'unit_price must be >= 0'",
            DROP,
            "expect_column_values_to_be_between",
            {"column": "unit_price", "min_value": 0},
        ),
        RowExpectation(
            "quantity_plausible",
            "quantity > 1000",
            "'quantity above 1000'",
            WARN,
            "expect_column_values_to_be_between",
            {"column": "quantity", "max_value": 1000},
        ),
    ),
    CLICKS: (_in_set("page", PAGES),),
    CUSTOMERS: (_in_set("segment", SEGMENTS), _in_set("country", COUNTRIES)),
    PRODUCTS: (
        RowExpectation(
            "list_price_non_negative",
            "list_price < 0",
            "'list_price must be >= 0'",
            DROP,
            "expect_column_values_to_be_between",
            {"column": "list_price", "min_value": 0},
        ),
        _in_set("category", CATEGORIES),
    ),
}

#: Logical type -> the Spark type name Great Expectations' ``expect_column_values_to_be_of_type`` shows.
GX_TYPE_NAMES = {
    "string": "StringType",
    "int": "IntegerType",
    "long": "LongType",
    "double": "DoubleType",
    "timestamp": "TimestampType",
}


#: Column of the parsed bronze record holding the value as a Spark VARIANT (NULL: not valid JSON).
JSON_COL = "_json"
#: The largest finite double: a number beyond it (``1e400``) is not a double.
_MAX_DOUBLE = "1.7976931348623157E308"
#: Integral range of each integer type, as doubles (the integral test reads the number as a double).
_INT_RANGE = {"int": ("-2147483648", "2147483647"), "long": ("-9.223372036854776E18", "9.223372036854775E18")}
_ARTICLE = {
    "int": "an int",
    "long": "a long",
    "double": "a double",
    "string": "a string",
    "timestamp": "a timestamp",
}


def _node(name: str) -> str:
    """The field's VARIANT (SQL NULL when absent, a VARIANT null for JSON ``null``)."""
    return f"variant_get({JSON_COL}, {_sql_str(f'$[{_sql_str(name)}]')})"


def json_kind_sql(name: str) -> str:
    """Spark SQL: the field's JSON type (string, number, boolean, object, array, null), NULL if absent."""
    schema = f"schema_of_variant({_node(name)})"
    return (
        f"CASE WHEN {schema} = 'STRING' THEN 'string' WHEN {schema} = 'BOOLEAN' THEN 'boolean' "
        f"WHEN {schema} IN ('BIGINT', 'DOUBLE', 'FLOAT', 'INT', 'SMALLINT', 'TINYINT') "
        f"OR {schema} LIKE 'DECIMAL%' THEN 'number' WHEN {schema} LIKE 'OBJECT%' THEN 'object' "
        f"WHEN {schema} LIKE 'ARRAY%' THEN 'array' WHEN {schema} = 'VOID' THEN 'null' END"
    )


def _as_double(name: str) -> str:
    return f"try_variant_get({_node(name)}, '$', 'double')"


def _integral(name: str, typ: str) -> str:
    low, high = _INT_RANGE[typ]
    d = _as_double(name)
    return f"({d} = floor({d}) AND {d} BETWEEN {low} AND {high})"


def typed_sql(name: str, typ: str) -> str:
    """Spark SQL: the field's value of logical type ``typ`` under the typing rule, NULL when its JSON
    type does not fit (the ``<field>_is_<type>`` expectation then quarantines the row)."""
    kind = json_kind_sql(name)
    node = _node(name)
    if typ in _INT_RANGE:
        spark_type = "int" if typ == "int" else "bigint"
        return (
            f"CASE WHEN ({kind}) = 'number' AND {_integral(name, typ)} "
            f"THEN try_variant_get({node}, '$', '{spark_type}') END"
        )
    if typ == "double":
        d = _as_double(name)
        return f"CASE WHEN ({kind}) = 'number' AND abs({d}) <= {_MAX_DOUBLE} THEN {d} END"
    if typ == "string":
        return f"CASE WHEN ({kind}) = 'string' THEN variant_get({node}, '$', 'string') END"
    if typ == "timestamp":
        text = f"variant_get({node}, '$', 'string')"
        return f"CASE WHEN ({kind}) = 'string' THEN try_cast({text} AS timestamp) END"
    raise ValueError(f"no typing rule for logical type {typ!r}; known: {sorted(_ARTICLE)}")


def _received_sql(name: str, typ: str) -> str:
    """Spark SQL string: why a present field is not of ``typ``: the JSON received and what it is."""
    kind = json_kind_sql(name)
    if typ in _INT_RANGE:
        d = _as_double(name)
        number = (
            f"CASE WHEN {d} = floor({d}) THEN 'a number outside the {typ} range' "
            "ELSE 'a number that is not integral' END"
        )
    elif typ == "double":
        number = "'a number outside the double range'"
    else:
        number = "'a number'"
    what = (
        f"CASE ({kind}) WHEN 'number' THEN {number} "
        + ("WHEN 'string' THEN 'a string that is not an ISO-8601 time' " if typ == "timestamp" else "")
        + f"WHEN 'object' THEN 'an object' WHEN 'array' THEN 'an array' ELSE concat('a ', ({kind})) END"
    )
    prefix = _sql_str(f"{name} is not {_ARTICLE[typ]}: received ")
    return f"concat({prefix}, to_json({_node(name)}), ' (', {what}, ')')"


def contract_expectations(contract: Mapping[str, str], time_col: str | None) -> list[RowExpectation]:
    """The typed contract as expectations: a JSON object, every field present and of its type (the
    typing rule above), and the event time on the Kafka record's day (bronze partitions by record
    timestamp)."""
    out = [
        RowExpectation(
            "payload_is_json_object",
            "payload IS NULL",
            "'payload is not a JSON object (invalid JSON, not an object, or a field name repeated)'",
            DROP,
            "expect_column_values_to_not_be_null",
            {"column": "payload"},
        )
    ]
    for name, typ in contract.items():
        raw = f"payload[{_sql_str(name)}]"
        out.append(
            RowExpectation(
                f"{name}_not_null",
                f"payload IS NOT NULL AND {raw} IS NULL",
                _sql_str(f"missing {name}"),
                DROP,
                "expect_column_values_to_not_be_null",
                {"column": name},
            )
        )
        out.append(
            RowExpectation(
                f"{name}_is_{typ}",
                f"{raw} IS NOT NULL AND {name} IS NULL",
                _received_sql(name, typ),
                DROP,
                "expect_column_values_to_be_of_type",
                {"column": name, "type_": GX_TYPE_NAMES[typ]},
            )
        )
    if time_col is not None:
        out.append(
            RowExpectation(
                f"{time_col}_on_record_day",
                f"to_date({time_col}) != _bronze_date",
                _sql_str(f"{time_col} is not on the record timestamp's day"),
                DROP,
                "expect_column_pair_values_to_be_equal",
                {"column_A": f"to_date({time_col})", "column_B": "record date"},
            )
        )
    return out


def row_expectations(topic: str, contract: Mapping[str, str], time_col: str | None) -> list[RowExpectation]:
    """Every row-level expectation of ``silver/<topic>``, in the order reasons are reported."""
    return [*contract_expectations(contract, time_col), *EXTRA_EXPECTATIONS.get(topic, ())]
