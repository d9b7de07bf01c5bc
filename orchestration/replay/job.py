"""``replay_job``: a lake replay launched from Dagster, with the config ``streamhouse replay lake`` uses.

Launchpad config: ``{"ops": {"replay_lake": {"config": {"tables": ["silver/orders"], "from_date":
"2026-01-01", "to_date": "2026-01-03"}}}}``. The op plans the replay, then (unless ``dry_run``) runs
the rebuild as runs of the same assets (and their quality checks, unless ``run_checks`` is off) on the
same instance, tagged ``streamhouse/replay``, so their materializations, lineage and check results
look like any other run's; its own output metadata is the plan with the versions before → after.
"""

from dagster import Config, Definitions, MetadataValue, OpExecutionContext, Out, Output, job, op
from dagster_pyspark import PySparkResource
from pydantic import Field

from assets.resources import KafkaResource, LakeResource
from orchestration.all_assets import ALL_ASSETS
from orchestration.replay.lake import (
    LakeReplayPlan,
    parse_day,
    parse_timestamp,
    plan_lake_replay,
    run_lake_replay,
)
from quality.checks import QualityResource

REPLAY_JOB = "replay_job"


class ReplayConfig(Config):
    """A lake replay: the tables (and everything downstream), the days, the input version."""

    tables: list[str] = Field(
        description="tables to rebuild, e.g. ['silver/orders'] or ['gold.click_sessions']"
    )
    from_date: str | None = Field(
        default=None, description="first day (YYYY-MM-DD); default: every day present"
    )
    to_date: str | None = Field(default=None, description="last day (YYYY-MM-DD); default: every day present")
    as_of_version: int | None = Field(
        default=None, description="read the chosen tables' input as of this Delta version"
    )
    as_of_timestamp: str | None = Field(
        default=None, description="read the chosen tables' inputs as of this time (ISO-8601 or epoch ms)"
    )
    input_table: str | None = Field(
        default=None, description="which input the as-of applies to (needed when there are several)"
    )
    run_checks: bool = Field(
        default=True, description="run the quality checks of the rebuilt tables in the same runs"
    )
    dry_run: bool = Field(default=False, description="plan only: print what would be rebuilt")


def plan_from_config(config: ReplayConfig, defs: Definitions, lake_root: str) -> LakeReplayPlan:
    """The plan a ``ReplayConfig`` asks for (the CLI and the job share this)."""
    return plan_lake_replay(
        defs,
        lake_root,
        config.tables,
        start=parse_day(config.from_date, "from_date") if config.from_date else None,
        end=parse_day(config.to_date, "to_date") if config.to_date else None,
        as_of_version=config.as_of_version,
        as_of_timestamp=parse_timestamp(config.as_of_timestamp) if config.as_of_timestamp else None,
        input_table=config.input_table,
    )


def plan_markdown(plan: LakeReplayPlan) -> str:
    head = "| table | why | days | reads | version |\n| --- | --- | --- | --- | --- |"
    return "\n".join([head, *("| " + " | ".join(row) + " |" for row in plan.rows())])


@op(out=Out(dict, description="tables rebuilt: table -> versions before/after"))
def replay_lake(
    context: OpExecutionContext,
    config: ReplayConfig,
    kafka: KafkaResource,
    lake: LakeResource,
    pyspark: PySparkResource,
    quality: QualityResource,
) -> Output[dict]:
    """Plan and run a lake replay of the configured tables and everything downstream of them.

    Takes every resource the lake's assets need, so the rebuild runs with this job's own resources.
    """
    from quality.checks import QUALITY_CHECKS

    resources = {"kafka": kafka, "lake": lake, "pyspark": pyspark, "quality": quality}
    defs = Definitions(assets=ALL_ASSETS, asset_checks=QUALITY_CHECKS, resources=resources)
    plan = plan_from_config(config, defs, lake.lake_root)
    context.log.info(plan.summary())
    run_ids: list[str] = []
    if not config.dry_run:
        result = run_lake_replay(
            plan,
            defs,
            resources=resources,
            lake_root=lake.lake_root,
            instance=context.instance,
            checks=config.run_checks,
            progress=context.log.info,
        )
        run_ids = result.run_ids
    tables = {
        table: {"before": step.before.get(table), "after": step.after.get(table)}
        for step in plan.steps
        for table in step.tables
    }
    return Output(
        tables,
        metadata={
            "plan": MetadataValue.md(plan_markdown(plan)),
            "days": MetadataValue.json(plan.days),
            "source": MetadataValue.text(plan.source),
            "dry_run": MetadataValue.bool(config.dry_run),
            "run_ids": MetadataValue.json(run_ids),
            "versions": MetadataValue.json(tables),
        },
    )


@job(name=REPLAY_JOB, description="Rebuilds chosen lake tables and everything downstream (a replay).")
def replay_job() -> None:
    replay_lake()
