"""The pipeline declaration as typed objects: what a team writes in its ``pipeline.yaml``.

One model is what every part of the lakehouse reads (assets, checks, sensors, replay, catalogue), so
the names and defaults live here and nowhere else. The model only describes; it never touches Kafka,
Spark or Delta. Unknown keys are refused (``extra="forbid"``) so a typo is an error with a
did-you-mean, not a silently ignored setting; the JSON Schema editors use is generated from these
classes (``assets.pipeline.schema``), so the two cannot drift.

Durations are integer milliseconds or text with a unit (``500ms``, ``30s``, ``5m``, ``1h``, ``7d``),
the same units ``edge`` takes as ``timedelta``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, field_validator

#: Logical field types of the data contract (docs/data-contract.md, "Field types": the typing rule).
FieldType = Literal["string", "int", "long", "double", "timestamp"]
#: What happens to a row that fails an expectation (docs/quality.md): ``warn`` keeps it and the check
#: warns, ``quarantine`` moves it to ``quarantine.<table>`` with its reason, ``fail`` keeps it and the
#: blocking check fails so nothing downstream materializes.
Action = Literal["warn", "quarantine", "fail"]
NAME_PATTERN = r"^[a-z][a-z0-9_]*$"

_UNITS_MS = {"ms": 1, "s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)\s*$")


def parse_duration(value: Any) -> Any:
    """``"5m"`` -> 300000; an int stays milliseconds; anything else is left for pydantic to refuse."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = _DURATION.match(value)
        if not match:
            raise ValueError(
                f"{value!r} is not a duration: write milliseconds or a number with ms, s, m, h or d"
            )
        return int(match.group(1)) * _UNITS_MS[match.group(2)]
    return value


Duration = Annotated[
    int,
    BeforeValidator(parse_duration),
    Field(ge=0),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 0, "description": "milliseconds"},
                {"type": "string", "pattern": _DURATION.pattern, "examples": ["30s", "5m", "1h", "7d"]},
            ]
        }
    ),
]
Name = Annotated[str, Field(pattern=NAME_PATTERN)]


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


# ---------------------------------------------------------------------------------------------- sources


class Source(Model):
    """A Kafka topic the lake ingests, named by its key in ``sources`` (with the deployment's topic
    prefix, if any). Its bronze table is derived: raw bytes + Kafka metadata, exactly once."""

    partitions: int = Field(default=1, ge=1, description="partitions to create when the topic is missing")
    replication_factor: int = Field(
        default=-1, description="replication factor to create the topic with; -1: the broker's default"
    )
    value_format: Literal["json"] = Field(
        default="json", description="payload format (json; the Schema Registry formats are not yet supported)"
    )
    description: str = ""


# ---------------------------------------------------------------------------------------------- expectations


class _Expectation(Model):
    name: Name | None = Field(
        default=None,
        description="unique within the table; default: `<column>_<kind>` (e.g. `quantity_range`)",
    )
    action: Action = "warn"
    description: str = ""
    message: str | None = Field(
        default=None, description="the reason a failing row is quarantined with; default: said from the rule"
    )

    def default_name(self) -> str:  # pragma: no cover - every kind overrides
        raise NotImplementedError

    @property
    def resolved_name(self) -> str:
        return self.name or self.default_name()


class NotNull(_Expectation):
    expect: Literal["not_null"]
    column: str

    def default_name(self) -> str:
        return f"{self.column}_not_null"


class InRange(_Expectation):
    expect: Literal["range"]
    column: str
    min: int | float | None = None
    max: int | float | None = None

    def default_name(self) -> str:
        return f"{self.column}_range"


class InSet(_Expectation):
    expect: Literal["in_set"]
    column: str
    values: list[str | int | float] = Field(min_length=1)

    def default_name(self) -> str:
        return f"{self.column}_in_set"


class Matches(_Expectation):
    expect: Literal["regex"]
    column: str
    pattern: str

    def default_name(self) -> str:
        return f"{self.column}_matches"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"pattern {pattern!r} is not a regular expression: {exc}") from None
        return pattern


class Unique(_Expectation):
    expect: Literal["unique"]
    columns: list[str] = Field(min_length=1)

    def default_name(self) -> str:
        return "_".join(self.columns) + "_unique"


class Predicate(_Expectation):
    expect: Literal["sql"]
    valid_when: str = Field(description="Spark SQL predicate, true for a valid row (NULL counts as valid)")
    name: Name = Field(
        description="unique within the table (required: a predicate has no column to name it by)"
    )

    def default_name(self) -> str:
        return self.name


Expectation = Annotated[
    NotNull | InRange | InSet | Matches | Unique | Predicate,
    Field(discriminator="expect"),
]


# ---------------------------------------------------------------------------------------------- silver


class _SilverTable(Model):
    """A table read from the source of the same name (its bronze table, then typed and checked)."""

    description: str = ""
    owners: list[str] = Field(default_factory=list)
    fields: dict[Name, FieldType] = Field(
        min_length=1, description="payload fields and their logical types (the typing rule types them)"
    )
    expectations: list[Expectation] = Field(default_factory=list)


class EventTable(_SilverTable):
    """Typed events, one row per dedup key, partitioned by the day of their event time."""

    key: list[str] = Field(min_length=1, description="columns identifying one event: the dedup key")
    event_time: str | None = Field(
        default=None, description="timestamp field deciding the daily partition; none: not time-partitioned"
    )


class ChangeTable(_SilverTable):
    """A change feed applied in sequence order, whatever the arrival order: the current row per key
    (SCD1) or every version with its validity (SCD2); a delete removes the key (SCD1) or ends its last
    version's validity (SCD2). Applying the same changes again gives the same table."""

    format: Literal["upsert", "debezium"] = Field(
        default="upsert",
        description="`upsert`: each record is the whole row; `debezium`: an envelope {op, before, after, "
        "ts_ms} whose `after` (`before` for op = d) is the row and op = d a delete",
    )

    keys: list[str] = Field(min_length=1)
    sequence_by: str = Field(
        json_schema_extra={"examples": ["updated_at", "ts_ms"]},
        description="the timestamp field ordering changes of one key (later wins, whatever the arrival); "
        "debezium feeds may name `ts_ms`, the envelope's change time",
    )
    delete_when: str | None = Field(
        default=None,
        description="upsert feeds: a Spark SQL predicate over the fields, true for a record deleting its key",
    )
    scd_type: Literal[1, 2] = Field(
        default=1, description="1: current row per key; 2: valid_from/valid_to history"
    )


# ---------------------------------------------------------------------------------------------- gold


class Chart(Model):
    """The plot attached to each materialization: ``line`` (y summed per x, one line per ``series``
    value, the five largest), ``bar`` (y summed per x) or ``histogram`` (the distribution of x)."""

    kind: Literal["line", "bar", "histogram"] = "line"
    x: str
    y: str | None = Field(default=None, description="required for line and bar charts")
    series: str | None = None
    title: str | None = None


class _Gold(Model):
    description: str = ""
    owners: list[str] = Field(default_factory=list)
    chart: Chart | None = None
    column_order: list[str] = Field(
        default_factory=list, description="the table's columns in this order (default: as computed)"
    )


class Window(Model):
    type: Literal["tumbling", "hopping", "session"]
    size: Duration | None = Field(default=None, description="tumbling and hopping windows")
    hop: Duration | None = Field(default=None, description="hopping windows: how often one starts")
    gap: Duration | None = Field(
        default=None, description="session windows: inactivity that closes a session"
    )


AGGREGATE_FUNCTIONS = ("sum", "count", "count_distinct", "min", "max", "avg")
_AGGREGATE = re.compile(r"^\s*(" + "|".join(AGGREGATE_FUNCTIONS) + r")\s*\((.*)\)\s*$", re.S)


class Aggregate(Model):
    """``revenue: sum(quantity * unit_price)``: a function over a Spark SQL expression of the input."""

    function: Literal["sum", "count", "count_distinct", "min", "max", "avg"]
    expression: str
    round: int | None = None


def parse_aggregate(value: Any) -> Any:
    if isinstance(value, str):
        match = _AGGREGATE.match(value)
        if not match:
            raise ValueError(
                f"{value!r} is not an aggregate: write FUNCTION(expression) with one of "
                + ", ".join(AGGREGATE_FUNCTIONS)
            )
        return {"function": match.group(1), "expression": match.group(2).strip() or "*"}
    return value


AggregateSpec = Annotated[
    Aggregate,
    BeforeValidator(parse_aggregate),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": _AGGREGATE.pattern, "examples": ["sum(quantity * unit_price)"]},
                {
                    "type": "object",
                    "properties": {
                        "function": {"enum": list(AGGREGATE_FUNCTIONS)},
                        "expression": {"type": "string"},
                        "round": {"type": "integer"},
                    },
                    "required": ["function", "expression"],
                    "additionalProperties": False,
                },
            ]
        }
    ),
]


class WindowAggregate(_Gold):
    kind: Literal["window_aggregate"]
    input: str = Field(alias="from", description="the event table aggregated")
    window: Window
    group_by: list[str] = Field(default_factory=list)
    aggregates: dict[Name, AggregateSpec] = Field(min_length=1)
    columns: dict[Name, str] = Field(
        default_factory=dict,
        description="more columns computed from each result row (its bounds, keys and aggregates), Spark SQL",
    )


class AsOfJoin(_Gold):
    """Each event joined to the row of an SCD2 change table valid at its event time."""

    kind: Literal["as_of_join"]
    input: str = Field(alias="from")
    with_: str = Field(alias="with", description="an SCD2 change table")
    on: list[str] = Field(min_length=1)
    columns: list[str] = Field(
        default_factory=list, description="columns taken from the joined table; default all"
    )


class Join(_Gold):
    kind: Literal["join"]
    how: Literal["left", "inner"] = "left"
    input: str = Field(alias="from")
    with_: str = Field(alias="with")
    on: list[str] = Field(min_length=1)
    columns: list[str] = Field(default_factory=list)


class SqlTable(_Gold):
    kind: Literal["sql"]
    query: str = Field(description="Spark SQL over declared tables, named `silver.<t>` or `gold.<t>`")
    partition_by: str = Field(description="the date column the table is partitioned by (daily)")
    lookback: Duration = Field(default=0, description="how many days before a changed day it also rebuilds")


class PythonTable(_Gold):
    kind: Literal["python"]
    function: str = Field(description="`module:function` taking the input DataFrames by name, returning one")
    inputs: list[str] = Field(min_length=1)
    partition_by: str = Field(description="the date column the table is partitioned by (daily)")
    lookback: Duration = Field(default=0, description="how many days before a changed day it also reads")


GoldTable = Annotated[
    WindowAggregate | AsOfJoin | Join | SqlTable | PythonTable,
    Field(discriminator="kind"),
]


# ---------------------------------------------------------------------------------------------- edge apps


class EdgeAppRef(Model):
    """An edge app the lineage graph shows between topics (built without a broker to read its topics)."""

    application_id: str | None = Field(
        default=None,
        description="its application.id (consumer group, internal topic prefix); default: its key",
    )
    target: str = Field(description="`module:attr` of its topology, as `streamhouse edge run` takes it")
    server: str = Field(default="127.0.0.1:7070", description="host:port of its query/metrics server")
    guarantee: Literal["at_least_once", "exactly_once_v2"] = "at_least_once"
    description: str = ""


class Pipeline(Model):
    """A team's lakehouse: the sources it ingests, the tables it keeps, the apps it watches."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"},
    )

    name: Name
    description: str = ""
    owners: list[str] = Field(default_factory=list, description="`team:<name>` or e-mail addresses")
    generator: str | None = Field(
        default=None, description="`module:function` producing sample events (used by `streamhouse demo`)"
    )
    sources: dict[Name, Source] = Field(min_length=1)
    event_tables: dict[Name, EventTable] = Field(default_factory=dict)
    change_tables: dict[Name, ChangeTable] = Field(default_factory=dict)
    gold_tables: dict[Name, GoldTable] = Field(default_factory=dict)
    edge_apps: dict[Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")], EdgeAppRef] = Field(
        default_factory=dict
    )

    def silver_tables(self) -> dict[str, EventTable | ChangeTable]:
        return {**self.event_tables, **self.change_tables}
