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
fields, ``payload`` — the JSON object as MAP<STRING,STRING> — and ``_bronze_date``); ``warn``/``fail``
expectations only use typed columns, so the checks can evaluate them on the written silver table. The
same SQL runs on Spark and DuckDB.
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


def contract_expectations(contract: Mapping[str, str], time_col: str | None) -> list[RowExpectation]:
    """The typed contract as expectations: a JSON object, every field present and of its type, and the
    event time on the Kafka record's day (bronze partitions by record timestamp)."""
    out = [
        RowExpectation(
            "payload_is_json_object",
            "payload IS NULL",
            "'payload is not a JSON object'",
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
                f"concat({_sql_str(f'{name} is not a {typ}: ')}, {raw})",
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
