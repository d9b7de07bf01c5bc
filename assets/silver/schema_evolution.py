"""Schema evolution of silver and quarantine tables: when a table may gain columns, and how.

A silver table gains columns only through its declaration (a field added to its ``fields`` in
pipeline.yaml: rows written before read null) or an explicit ``SchemaRule`` (``SCHEMA_RULES`` or a
run's ``add_columns``); anything else new is refused, so an upstream payload change can never widen a
table by accident. Kept apart from the asset definitions because both the read planner (a rule adding
columns forces a rebuild) and the writer (align to, or evolve, the existing table) ask these questions.
"""

from collections.abc import Iterable, Mapping
from typing import Any

from assets.silver.transform import SPECS, SchemaRule, SchemaRuleError

#: Explicit schema-evolution rules, per topic: the *only* way a silver table gains columns.
#: Example: ``SCHEMA_RULES[ORDERS] = SchemaRule({"coupon": "string"})``.
SCHEMA_RULES: dict[str, SchemaRule] = {}


def schema_rule(topic: str, add_columns: Mapping[str, str]) -> SchemaRule:
    """``SCHEMA_RULES[topic]`` plus a run's ``add_columns``, validated against the topic's contract."""
    base = SCHEMA_RULES.get(topic, SchemaRule())
    rule = SchemaRule({**base.add_columns, **add_columns})
    rule.validate(topic, SPECS[topic].contract)  # refused even when there is nothing to read
    return rule


def align(df: Any, table_uri: str, rule: SchemaRule, declared: Iterable[str] = ()) -> tuple[Any, bool]:
    """Match the existing table: columns a rule once added stay (null); new rule columns and fields
    newly ``declared`` in the pipeline evolve it (older rows read null)."""
    from pyspark.sql import functions as F

    from assets.delta import table_exists, table_schema

    if not table_exists(table_uri):
        return df, False
    existing = {f.name: f.dataType for f in table_schema(table_uri).fields}
    for name, data_type in existing.items():
        if name not in df.columns:
            df = df.withColumn(name, F.lit(None).cast(data_type))
    evolves = any(name not in existing for name in df.columns)
    if evolves:
        new = [c for c in df.columns if c not in existing]
        allowed = {*rule.add_columns, *declared}
        unknown = [c for c in new if c not in allowed]
        if unknown:
            raise SchemaRuleError(
                f"{table_uri}: columns {unknown} are not in the contract or a schema rule; add them with "
                "SCHEMA_RULES or the asset config `add_columns`",
                table=table_uri,
            )
    return df, evolves


def needs_new_columns(table_uri: str, rule: SchemaRule) -> bool:
    """A rule adds columns the table lacks: the requested days must be rebuilt to fill them."""
    from assets.delta import table_exists, table_schema

    if not rule.add_columns or not table_exists(table_uri):
        return False
    existing = {f.name for f in table_schema(table_uri).fields}
    return any(name not in existing for name in rule.add_columns)


def quarantine_evolves(q_uri: str, columns: list[str]) -> bool:
    """A quarantine table written before it recorded the failed expectations and run id gains them."""
    from assets.delta import table_exists, table_schema

    if not table_exists(q_uri):
        return False
    existing = {f.name for f in table_schema(q_uri).fields}
    return any(c not in existing for c in columns)
