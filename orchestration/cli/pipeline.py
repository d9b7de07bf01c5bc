"""``streamhouse pipeline init|check|schema``: a declaration made, judged before it runs, described.

``check`` prints every problem as ``file:line: message`` (an editor or CI log links each to its
line) and exits 2 when there is one, like every user mistake; on success it prints what the
declaration holds. ``schema`` prints the JSON Schema editors validate ``pipeline.yaml`` with.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.group()
def pipeline() -> None:
    """Make, check and describe a pipeline declaration (pipeline.yaml; docs/pipelines.md)."""


@pipeline.command("check")
@click.argument("folder", type=click.Path(path_type=Path))
def check(folder: Path) -> None:
    """Check FOLDER/pipeline.yaml: keys, types, references to tables and columns, cycles."""
    from assets.pipeline import check_pipeline, declaration_file

    declared, problems = check_pipeline(folder)
    for problem in problems:
        click.echo(str(problem), err=True)
    if problems or declared is None:
        noun = "problem" if len(problems) == 1 else "problems"
        click.secho(f"{declaration_file(folder)}: {len(problems)} {noun}", fg="red", err=True)
        sys.exit(2)
    click.echo(
        f"{declaration_file(folder)}: pipeline {declared.name!r} is valid: "
        f"{len(declared.sources)} source(s), {len(declared.event_tables)} event table(s), "
        f"{len(declared.change_tables)} change table(s), {len(declared.gold_tables)} gold table(s), "
        f"{len(declared.edge_apps)} edge app(s)"
    )


@pipeline.command("init")
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
def init(folder: Path) -> None:
    """Make a small pipeline in FOLDER that runs as written: a topic, an event table with expectations,
    a gold aggregate and a sample generator."""
    from assets.pipeline.scaffold import scaffold

    for path in scaffold(folder):
        click.echo(f"wrote {path}")
    click.echo(
        f"next: `streamhouse pipeline check {folder}`, then `streamhouse demo --pipeline {folder}` builds "
        f"its lake; `STREAMHOUSE_PIPELINE={folder.resolve()} make dagster` shows it in the UI "
        "(docs/pipelines.md)"
    )


@pipeline.command("schema")
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path),
    default=None,
    help="write it to this file instead of stdout",
)
def schema(output: Path | None) -> None:
    """Print the JSON Schema of pipeline.yaml (the same as docs/pipeline.schema.json)."""
    from assets.pipeline.schema import pipeline_json_schema_text

    text = pipeline_json_schema_text()
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}")
