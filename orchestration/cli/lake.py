"""``streamhouse tables | describe | sql``: find, describe and query the lake's Delta tables by name.

The engine is ``assets.lake`` (DuckDB over deltalake's Arrow datasets); this module adds the lake root
from the settings, what only the orchestration layer knows (the Dagster asset checks guarding a table,
the Dagster run behind each commit) and the output formats.

This module holds the three commands; what they share lives beside it: printing
(``orchestration.cli.render``), the Dagster instance lookups (``orchestration.cli.instance_lookups``),
the result writers (``orchestration.cli.result_writers``) and the SQL shell
(``orchestration.cli.sql_shell``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from orchestration.cli.instance_lookups import asset_checks, run_ids
from orchestration.cli.render import echo_json, format_size, format_time, print_rich, rich_table
from orchestration.cli.result_writers import FORMATS, write_result
from orchestration.cli.sql_shell import sql_shell

if TYPE_CHECKING:
    from assets.lake import LakeSession

#: importable from here as before the lookups and the result writers moved to modules of their own
__all__ = [
    "DEFAULT_MAX_ROWS",
    "FORMATS",
    "asset_checks",
    "describe",
    "run_ids",
    "sql",
    "tables",
    "write_result",
]

#: Rows the readable table shows by default (the rest is announced, not printed).
DEFAULT_MAX_ROWS = 50


def _lake_root() -> str:
    from orchestration.settings import load_settings

    return str(load_settings().lake_root)


# ------------------------------------------------------------------------------------------ tables


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def tables(fmt: str) -> None:
    """Every Delta table under the lake root: name, layer, version, rows, files, size, partition
    columns and the last commit (time and operation).

    Query them by name with `streamhouse sql`; see one with `streamhouse describe NAME`.
    """
    from assets.lake import list_tables

    root = _lake_root()
    infos = list_tables(root)
    if fmt == "json":
        echo_json([i.as_dict() for i in infos])
        return
    if not infos:
        click.echo(f"no Delta tables under {root} (run the pipeline, or set STREAMHOUSE_LAKE_ROOT)")
        return
    columns = [
        "table",
        "layer",
        "version",
        "rows",
        "files",
        "size",
        "partitioned by",
        "last commit",
        "operation",
    ]
    rows = [
        (
            i.name,
            i.layer,
            i.version,
            i.rows if i.rows is not None else "?",
            i.files,
            format_size(i.size_bytes),
            ", ".join(i.partition_columns) or "-",
            format_time(i.last_commit),
            i.last_operation,
        )
        for i in infos
    ]
    print_rich(
        rich_table(f"Delta tables under {root}", columns, rows, right={"version", "rows", "files", "size"})
    )


# ------------------------------------------------------------------------------------------ describe


@click.command()
@click.argument("table")
@click.option("--history", "show_history", is_flag=True, help="Also list the table's commits.")
@click.option("--limit", type=click.IntRange(1, None), default=20, show_default=True, help="Commits shown.")
@click.option("--as-of", "as_of", default=None, help="Describe the schema as of a version or timestamp.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def describe(table: str, show_history: bool, limit: int, as_of: str | None, fmt: str) -> None:
    """A table's schema (types, nullability, meaning), partition columns, properties, the Dagster
    checks that guard it and their last result; with --history its commits (version, time, operation,
    Dagster run, rows added/removed, input versions)."""
    from assets.lake import describe as describe_table
    from assets.lake import discover, history, parse_as_of

    lake = discover(_lake_root())
    ref = lake.get(table)
    desc = describe_table(ref, parse_as_of(as_of))
    checks = asset_checks(ref.name)
    commits = history(ref, limit, run_ids(ref.name)) if show_history else None
    if fmt == "json":
        data = desc.as_dict()
        data["checks"] = checks
        if commits is not None:
            data["history"] = commits
        echo_json(data)
        return
    click.echo(f"{desc.name}  (version {desc.version}, {desc.uri})")
    if desc.description:
        click.echo(desc.description)
    print_rich(
        rich_table(
            "Columns",
            ["column", "type", "nullable", "partition", "meaning"],
            [
                (
                    c["name"],
                    c["type"],
                    "yes" if c["nullable"] else "no",
                    "yes" if c["partition"] else "",
                    c["description"],
                )
                for c in desc.columns
            ],
        )
    )
    click.echo(f"Partitioned by: {', '.join(desc.partition_columns) or '(not partitioned)'}")
    click.echo("Properties:")
    for key, value in desc.properties.items():
        click.echo(f"  {key}: {value}")
    if checks is None:
        click.echo("Checks: unknown (the Dagster definitions could not be loaded)")
    elif not checks:
        click.echo("Checks: no checks defined for this asset")
    else:
        _echo_checks(checks)
    if commits is not None:
        rows = [
            (
                c["version"],
                format_time(c["timestamp"]),
                c["operation"],
                c["dagster_run_id"] or "-",
                "?" if c["rows_added"] is None else c["rows_added"],
                "?" if c["rows_removed"] is None else c["rows_removed"],
                ", ".join(f"{k}@{v}" for k, v in (c["input_versions"] or {}).items()) or "-",
            )
            for c in commits
        ]
        print_rich(
            rich_table(
                "History (newest first)",
                ["version", "time", "operation", "dagster run", "+rows", "-rows", "inputs"],
                rows,
                right={"version", "+rows", "-rows"},
            )
        )


def _echo_checks(checks: list[dict]) -> None:
    """One line per check: its last verdict in the words and colours of ``streamhouse check``, Data
    Docs and the Dagster checks (``quality.verdict``), what it observed, then when and in which run;
    a count per verdict first, so five warnings do not read as five failures."""
    from collections import Counter

    from quality.verdict import COLOURS, ORDER

    counts = Counter(c["status"] for c in checks)
    summary = ", ".join(f"{counts[v]} {v}" for v in (*ORDER, "never run") if counts[v])
    click.echo(f"Checks (last result): {summary}")
    width = max(len(c["name"]) for c in checks)
    for check in checks:
        status = check["status"]
        word = click.style(status, fg=COLOURS[status]) if status in COLOURS else status
        # the checks' descriptions start with the verdict (for Dagster's UI): not said twice here
        said = (check.get("description") or "").removeprefix(f"{status}: ")
        seen = f" - {said[:97] + '...' if len(said) > 100 else said}" if said else ""
        when = f" ({check['time']}, run {check['run_id']})" if check.get("time") else ""
        click.echo(f"  {check['name']:<{width}}  {word}{seen}{when}")


# ------------------------------------------------------------------------------------------ sql


@click.command()
@click.argument("query", required=False)
@click.option(
    "--as-of",
    "as_of",
    default=None,
    metavar="VERSION|TIMESTAMP",
    help="Read every table as of this version (3) or time (2026-11-21T10:00:00Z). One table: TABLE@v3 "
    "or TABLE@2026-11-21T10:00:00Z in the query.",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write here instead of stdout.",
)
@click.option(
    "--max-rows",
    type=click.IntRange(1, None),
    default=DEFAULT_MAX_ROWS,
    show_default=True,
    help="Rows the readable table shows (csv/json/parquet write everything).",
)
@click.option("--stats", is_flag=True, help="Print the data files each table read (to stderr).")
@click.option(
    "--locked",
    is_flag=True,
    help="The SQL may read only the lake's tables: no other files, no network, no COPY/ATTACH/INSTALL "
    "(for SQL that someone else wrote).",
)
def sql(
    query: str | None,
    as_of: str | None,
    fmt: str,
    out: Path | None,
    max_rows: int,
    stats: bool,
    locked: bool,
) -> None:
    """Query the lake with DuckDB SQL; every table is a view named like `gold.revenue_tumbling_5m`.

    \b
      streamhouse sql "SELECT product_id, sum(revenue) FROM gold.revenue_tumbling_5m
                       WHERE window_date = DATE '2026-01-05' GROUP BY 1 ORDER BY 2 DESC"
      streamhouse sql "SELECT count(*) FROM silver.orders@v3"
      streamhouse sql --as-of 2026-11-21T10:00:00Z --format csv --out orders.csv "SELECT * FROM silver.orders"

    Only the files and columns a query needs are read: a filter on a partition column (window_date,
    event_date, session_date) skips the other days' files. Without QUERY: the SQL is read from standard
    input, or an interactive shell starts when standard input is a terminal.

    DuckDB's SQL can read and write any file the user can (read_csv, COPY ... TO, ATTACH): fine for
    your own queries; --locked confines SQL that someone else wrote to the lake's tables.
    """
    from assets.lake import LakeSession

    root = _lake_root()
    with LakeSession(root, as_of=as_of, count_reads=stats, locked=locked) as session:
        if query is None and sys.stdin.isatty():
            sql_shell(session, fmt, max_rows)
            return
        if query is None:
            query = sys.stdin.read()
        reader = session.reader(query)
        try:
            rows = write_result(reader, fmt, out, max_rows)
        finally:
            reader.close()
        if out is not None:
            click.echo(f"wrote {rows:,} rows to {out}", err=True)
        if stats:
            _print_stats(session)


def _print_stats(session: LakeSession) -> None:
    for table, files in sorted(session.scans.files.items()):
        click.echo(f"read {len(set(files))} file(s) of {table}", err=True)
    if not session.scans.files:
        click.echo("read no data files", err=True)
