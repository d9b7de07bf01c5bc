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

from assets.pipeline.model import ChangeTable, EventTable, InRange, InSet, Matches, NotNull, Predicate, Unique
from assets.pipeline.model import Expectation as DeclaredExpectation

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


def _in_set(column: str, values: list[Any]) -> tuple[str, str, str, dict[str, Any]]:
    listed = ", ".join(_sql_literal(v) for v in values)
    return (
        f"{column} NOT IN ({listed})",
        f"concat('{column} not in the known set: ', {column})",
        "expect_column_values_to_be_in_set",
        {"column": column, "value_set": list(values)},
    )


def _sql_literal(value: Any) -> str:
    return _sql_str(value) if isinstance(value, str) else repr(value)


#: The declaration's action words -> silver's (``quarantine`` moves the row: it is dropped from silver).
ACTION_OF = {"warn": WARN, "quarantine": DROP, "fail": FAIL}


def declared_expectation(e: DeclaredExpectation) -> RowExpectation:
    """One expectation of a ``pipeline.yaml`` table as silver enforces it and GX shows it."""
    if isinstance(e, InRange):
        parts = [f"{e.column} < {e.min}"] if e.min is not None else []
        parts += [f"{e.column} > {e.max}"] if e.max is not None else []
        if e.min is not None and e.max is not None:
            said = f"{e.column} must be within [{e.min}, {e.max}]"
        else:
            said = f"{e.column} must be >= {e.min}" if e.min is not None else f"{e.column} must be <= {e.max}"
        kwargs: dict[str, Any] = {"column": e.column}
        kwargs.update({k: v for k, v in (("min_value", e.min), ("max_value", e.max)) if v is not None})
        violation, message, gx_type = " OR ".join(parts), _sql_str(said), "expect_column_values_to_be_between"
    elif isinstance(e, InSet):
        violation, message, gx_type, kwargs = _in_set(e.column, e.values)
    elif isinstance(e, NotNull):
        violation, message = f"{e.column} IS NULL", _sql_str(f"{e.column} is null")
        gx_type, kwargs = "expect_column_values_to_not_be_null", {"column": e.column}
    elif isinstance(e, Matches):
        violation = f"NOT regexp_like({e.column}, {_sql_str(e.pattern)})"
        message = f"concat('{e.column} does not match {_sql_str(e.pattern)[1:-1]}: ', {e.column})"
        gx_type, kwargs = "expect_column_values_to_match_regex", {"column": e.column, "regex": e.pattern}
    elif isinstance(e, Predicate):
        violation, message = (
            f"NOT ({e.valid_when})",
            _sql_str(f"{e.resolved_name}: {e.valid_when} does not hold"),
        )
        gx_type = "unexpected_rows_expectation"
        kwargs = {"unexpected_rows_query": f"SELECT * FROM {{batch}} WHERE NOT ({e.valid_when})"}
    else:
        raise TypeError(f"{type(e).__name__} is not a row-level expectation")
    if e.message is not None:
        message = _sql_str(e.message)
    return RowExpectation(e.resolved_name, violation, message, ACTION_OF[e.action], gx_type, kwargs)


def declared_expectations(table: EventTable | ChangeTable) -> tuple[RowExpectation, ...]:
    """The table's row-level expectations as declared (``unique`` is a table-level check: ``quality``)."""
    return tuple(declared_expectation(e) for e in table.expectations if not isinstance(e, Unique))


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


def row_expectations(
    contract: Mapping[str, str], time_col: str | None, declared: tuple[RowExpectation, ...] = ()
) -> list[RowExpectation]:
    """Every row-level expectation of a silver table, in the order reasons are reported: the typed
    contract's, then the declared ones."""
    return [*contract_expectations(contract, time_col), *declared]
