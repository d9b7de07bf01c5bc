"""``streamhouse check [TABLE...]``: run the expectation suites outside Dagster and print the results.

Each expectation's result is a verdict of ``quality.verdict``: passed (green), warning (yellow: a
``warn``/``drop`` expectation that does not hold, or one that could not be compared) or error (red: a
``fail`` expectation that does not hold), the words and colours Data Docs, ``describe`` and the Dagster
checks use. Exit status: 0 without errors (warnings and quarantined rows are printed, not fatal), 1 with
one, 2 for a user mistake (unknown table, bad date), as every command.
"""

from __future__ import annotations

import sys
from datetime import date
from typing import Any

import click

from edge.errors import StreamhouseError


class CheckUsageError(StreamhouseError):
    pass


def _spark_factory(settings: Any) -> Any:
    """A Spark session only if a Spark suite runs: the running one, else one built from the settings."""
    session: list[Any] = []

    def get() -> Any:
        if not session:
            from pyspark.sql import SparkSession

            active = SparkSession.getActiveSession()
            if active is None:
                from assets.spark.session import build_spark_session
                from orchestration.resources import spark_config_from_settings

                conf = dict(spark_config_from_settings(settings))
                master = conf.pop("spark.master", "local[*]")
                conf.pop("spark.app.name", None)
                active = build_spark_session(
                    master,
                    app_name="streamhouse-check",
                    ui_enabled=False,
                    extra_conf=conf,
                    delta_jars_available=settings.native_delta(),
                    delta_jars=settings.spark_delta_jars(),
                )
                active.sparkContext.setLogLevel("ERROR")
            session.append(active)
        return session[0]

    return get


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CheckUsageError(f"--day {value!r} is not a date (YYYY-MM-DD)") from None


@click.command()
@click.argument("tables", nargs=-1)
@click.option("--day", "days", multiple=True, help="Check only this day of partitioned tables (repeatable).")
@click.option("--as-of", "as_of", default=None, help="Reference time of freshness expectations (ISO-8601).")
@click.option("--no-docs", is_flag=True, help="Do not render Data Docs.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def check(tables: tuple[str, ...], days: tuple[str, ...], as_of: str | None, no_docs: bool, fmt: str) -> None:
    """Run the Great Expectations suites of TABLE... (default: every table that exists) and print one
    row per expectation with its result: passed, warning (reported) or error (action `fail`; exit 1).

    Tables are named like `streamhouse tables` names them (`silver.orders`, `gold.revenue_tumbling_5m`).
    Data Docs are written under STATE_DIR/quality; the last line names the index page.
    """
    import uuid

    from assets.delta import table_exists
    from assets.lake.layout import table_uri
    from orchestration.settings import load_settings
    from quality.runner import parse_as_of, run_suite
    from quality.suites import SUITES, get_suite

    settings = load_settings()
    root = str(settings.lake_root)
    suites = [get_suite(t) for t in tables] if tables else list(SUITES.values())
    if not tables:
        suites = [s for s in suites if table_exists(table_uri(root, s.layer, s.name))]
        if not suites:
            from assets.pipeline.active import active_pipeline, pipeline_folder

            raise CheckUsageError(
                f"no table of pipeline {active_pipeline().name!r} ({pipeline_folder()}) under {root}: "
                "nothing built yet, or the lake belongs to another pipeline (the `pipeline` setting, "
                "STREAMHOUSE_PIPELINE, names it)"
            )
    try:
        reference = parse_as_of(as_of)
    except ValueError:
        raise CheckUsageError(f"--as-of {as_of!r} is not an ISO-8601 time") from None
    day_list = [_day(d) for d in days] or None
    docs_dir = None if no_docs else settings.state_dir / "quality"
    spark = _spark_factory(settings)
    run_name = f"cli-{uuid.uuid4().hex[:8]}"
    runs = [
        run_suite(
            s,
            root,
            days=day_list,
            spark=spark,
            as_of=reference,
            docs_dir=docs_dir,
            run_name=run_name,
            build_index=False,
        )
        for s in suites
    ]
    if docs_dir is not None:
        from quality.gx import build_index

        build_index(docs_dir)  # once, after every suite's pages
    from assets.pipeline.active import active_pipeline
    from assets.pipeline.fingerprint import stale_tables

    # Tables whose declared logic changed since they were built: old and new logic must not be mixed.
    stale = stale_tables(active_pipeline(), root, [(s.layer, s.name) for s in suites])
    errors = sum(len(r.errors) for r in runs) + len(stale)
    if fmt == "json":
        from orchestration.cli.render import echo_json

        echo_json(
            [
                {
                    "table": r.suite.table,
                    "expectation": o.expectation.name,
                    "action": o.expectation.action,
                    "severity": o.expectation.severity,
                    "verdict": o.verdict,
                    "success": o.success,
                    "compared": o.compared,
                    "observed": str(o.observed),
                    "failing_rows": o.failing_rows,
                    "element_count": o.element_count,
                    "sample": o.sample,
                    "data_docs": str(r.docs) if r.docs else None,
                }
                for r in runs
                for o in r.outcomes
            ]
            + [
                {
                    "table": table,
                    "expectation": "built_by_declared_logic",
                    "action": "fail",
                    "verdict": "error",
                    "success": False,
                    "observed": why,
                }
                for table, why in stale.items()
            ]
        )
    else:
        from orchestration.cli.render import print_rich, rich_table
        from quality.verdict import COLOURS

        rows = []
        for r in runs:
            for o in r.outcomes:
                e = o.expectation
                # The verdict's word and colour, as Data Docs and the Dagster checks show it (a check that
                # compared nothing is a warning whose observed value says why).
                result = f"[{COLOURS[o.verdict]}]{o.verdict}[/]"
                rows.append((r.suite.table, e.name, e.action, result, o.failing_rows, str(o.observed)[:100]))
        for table, why in stale.items():
            rows.append(
                (table, "built_by_declared_logic", "fail", f"[{COLOURS['error']}]error[/]", None, why)
            )
        columns = ["table", "expectation", "action", "result", "failing rows", "observed"]
        print_rich(rich_table("Expectation suites", columns, rows, right={"failing rows"}))
        warned = sum(len(r.warnings) for r in runs)
        passed = sum(1 for r in runs for o in r.outcomes if o.success)
        click.echo(
            f"{len(runs)} table(s): {passed} passed, "
            + click.style(f"{warned} warning(s)", fg=COLOURS["warning"] if warned else None)
            + ", "
            + click.style(f"{errors} error(s)", fg=COLOURS["error"] if errors else None)
        )
        for why in stale.values():
            click.secho(f"needs full_refresh: {why}", fg=COLOURS["error"])
        docs = next((r.docs for r in runs if r.docs), None)
        if docs is not None:
            index = docs_dir / "gx" / "uncommitted" / "data_docs" / "local_site" / "index.html"  # type: ignore[operator]
            click.echo(f"Data Docs: {index}")
    if errors:
        sys.exit(1)
