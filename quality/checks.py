"""The suites as Dagster asset checks: one ``multi_asset_check`` per table, one check per expectation.

A check op measures its table's suite once (for the days the run built: the run's partition tags; the
whole table otherwise), writes the Data Docs page and yields one ``AssetCheckResult`` per expectation:

* ``fail`` → severity ERROR and ``blocking=True``: downstream assets of the table do not materialize in
  that run (the run fails); the next clean run recovers;
* ``warn`` and ``drop`` → severity WARN, reported only (``drop`` rows are already in quarantine);
* not measured (its table or an optional input does not exist yet) → not passed, severity WARN, the
  reason as description: a check that compared nothing never shows as Passed.

Each result carries its verdict (``quality.verdict``: passed, warning, error) as the first word of its
description and as ``verdict`` metadata: the UI's badge says "Failed" for every result that is not
passed, yellow with a warning sign for severity WARN, so the words beside it say which it is.
Metadata of every result besides: the expectation, its action, the observed value, the failing-row
count, a sample of failing rows and a link to the rendered Data Docs page. Resources are looked up by key
(``lake``, ``pyspark``, ``quality``) so this package does not import ``orchestration/``.
"""

from datetime import date, timedelta
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    ConfigurableResource,
    MetadataValue,
    multi_asset_check,
)
from pydantic import Field

from quality.engine import ARROW_MAX_ROWS, Outcome
from quality.runner import SuiteRun, parse_as_of, run_suite
from quality.suites import FAIL, SPARK, SUITES, Expectation, Suite
from quality.verdict import EFFECT, ERROR, WARNING

PARTITION_TAG = "dagster/partition"
RANGE_START_TAG = "dagster/asset_partition_range_start"
RANGE_END_TAG = "dagster/asset_partition_range_end"


class QualityResource(ConfigurableResource):
    """Where Data Docs go and how freshness is judged."""

    docs_dir: str = Field(default=".state/quality", description="GX project + Data Docs (under state_dir)")
    as_of: str = Field(
        default="", description="reference time of freshness expectations (ISO-8601); empty: now"
    )
    data_docs: bool = Field(default=True, description="render a Data Docs page for every validation")
    sample_rows: int = Field(default=5, description="failing rows kept in each check's metadata")
    arrow_max_rows: int = Field(
        default=ARROW_MAX_ROWS,
        description="bronze/silver batches of at most this many rows are measured by DuckDB instead of "
        "Spark (0: always Spark)",
    )


def run_days(tags: dict[str, str]) -> list[date] | None:
    """The days a daily run built, from its partition tags (None: not a partitioned run)."""
    if PARTITION_TAG in tags:
        return [date.fromisoformat(tags[PARTITION_TAG])]
    start, end = tags.get(RANGE_START_TAG), tags.get(RANGE_END_TAG)
    if start and end:
        first, last = date.fromisoformat(start), date.fromisoformat(end)
        return [first + timedelta(days=i) for i in range((last - first).days + 1)]
    return None


def _expectation_text(e: Expectation) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in e.gx_kwargs.items() if k != "unexpected_rows_query")
    return f"{e.gx_type}({args})" + (f" — {e.description}" if e.description else "")


def check_description(o: Outcome) -> str:
    """The check result's description, which the UI shows beside its badge: the verdict first (the
    badge itself says "Failed" for a warning too), then what was observed and what the verdict does:
    ``warning: 3 of 120 rows fail (reported, blocks nothing)``."""
    effect = EFFECT[o.verdict]
    return f"{o.verdict}: {o.observed}" + (f" ({effect})" if effect else "")


def results(run: SuiteRun, key: AssetKey) -> list[AssetCheckResult]:
    """One check result per expectation of ``run`` (also used to test the mapping)."""
    out = []
    docs: dict[str, Any] = {}
    if run.docs is not None:
        docs = {
            "data_docs": MetadataValue.url(run.docs.resolve().as_uri()),
            "data_docs_path": MetadataValue.path(str(run.docs)),
        }
    for o in run.outcomes:
        e = o.expectation
        # Not measured (no table yet): not passed, since it compared nothing, but a warning that blocks
        # nothing. Dagster can only say "Failed" for a result that is not passed: severity WARN makes it
        # the yellow badge with a warning sign, and the description starts with the verdict's word.
        out.append(
            AssetCheckResult(
                check_name=e.name,
                asset_key=key,
                passed=o.success,
                severity=AssetCheckSeverity.ERROR if o.verdict == ERROR else AssetCheckSeverity.WARN,
                description=check_description(o),
                metadata={
                    "verdict": MetadataValue.text(o.verdict),
                    "expectation": MetadataValue.text(_expectation_text(e)),
                    "action": MetadataValue.text(e.action),
                    "observed_value": MetadataValue.text(str(o.observed)),
                    "failing_rows": MetadataValue.int(o.failing_rows),
                    "element_count": MetadataValue.int(o.element_count),
                    "failing_sample": MetadataValue.json(o.sample),
                    "days": MetadataValue.json([d.isoformat() for d in run.batch.days or []]),
                    "delta_version": MetadataValue.int(
                        run.batch.version if run.batch.version is not None else -1
                    ),
                    "engine": MetadataValue.text(run.batch.engine or "none"),
                    **docs,
                },
            )
        )
    return out


def _on_violation(e: Expectation) -> str:
    """What a violation of ``e`` is, in the verdict's words: ``warning, reported, blocks nothing``."""
    word = ERROR if e.action == FAIL else WARNING
    return f"{word}, {EFFECT[word]} (action {e.action})"


def build_checks(suite: Suite) -> AssetChecksDefinition:
    key = AssetKey(suite.asset_key_path)
    specs = [
        AssetCheckSpec(
            e.name,
            asset=key,
            blocking=e.action == FAIL,
            description=f"{_expectation_text(e)} (if it does not hold: {_on_violation(e)})",
            metadata={"action": e.action, "gx_expectation": e.gx_type},
        )
        for e in suite.expectations
    ]
    resources = {"lake", "quality"} | ({"pyspark"} if suite.engine == SPARK else set())

    @multi_asset_check(
        name=f"quality_{suite.layer}_{suite.name}",
        specs=specs,
        required_resource_keys=resources,
        description=f"Great Expectations suite of {suite.table}: {suite.description}",
    )
    def _check(context: AssetCheckExecutionContext):
        quality: QualityResource = context.resources.quality
        lake = context.resources.lake
        spark = (lambda: context.resources.pyspark.spark_session) if suite.engine == SPARK else None
        docs_dir = Path(quality.docs_dir) if quality.data_docs else None
        run = run_suite(
            suite,
            lake.lake_root,
            days=run_days(dict(context.run.tags)),
            spark=spark,
            as_of=parse_as_of(quality.as_of),
            docs_dir=docs_dir,
            run_name=context.run.run_id,
            sample_rows=quality.sample_rows,
            arrow_max_rows=quality.arrow_max_rows,
            build_index=False,
        )
        if docs_dir is not None:
            from quality.gx import schedule_index

            schedule_index(docs_dir)  # once for the run's burst of checks, not once per check
        passed = sum(1 for o in run.outcomes if o.success)
        errors = [o.expectation.name for o in run.errors]
        warnings = [o.expectation.name for o in run.warnings]
        context.log.info(
            f"{suite.table}: {run.verdict}, {passed}/{len(run.outcomes)} expectations passed "
            f"on {run.batch.rows:,} rows ({run.batch.label}) in {run.seconds:.2f}s "
            f"({run.batch.engine}: measured in {run.measure_seconds:.2f}s, Data Docs {run.docs_seconds:.2f}s)"
            + (f"; error: {', '.join(errors)}" if errors else "")
            + (f"; warning: {', '.join(warnings)}" if warnings else "")
            + (f"; Data Docs: {run.docs}" if run.docs else "")
        )
        yield from results(run, key)

    return _check


QUALITY_CHECKS: list[AssetChecksDefinition] = [build_checks(s) for s in SUITES.values()]
