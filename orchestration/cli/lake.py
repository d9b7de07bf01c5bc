"""``streamhouse tables | describe | sql``: find, describe and query the lake's Delta tables by name.

The engine is ``assets.lake`` (DuckDB over deltalake's Arrow datasets); this module adds the lake root
from the settings, what only the orchestration layer knows (the Dagster asset checks guarding a table,
the Dagster run behind each commit) and the output formats.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    import pyarrow as pa

    from assets.lake import LakeSession

#: Rows the readable table shows by default (the rest is announced, not printed).
DEFAULT_MAX_ROWS = 50
FORMATS = ("table", "csv", "json", "parquet")


def _lake_root() -> str:
    from orchestration.settings import load_settings

    return str(load_settings().lake_root)


def _echo_json(data: Any) -> None:
    import orjson

    click.echo(orjson.dumps(data, default=_json_default, option=orjson.OPT_INDENT_2).decode())


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(raw).decode()
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _when(value: datetime | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def _table(
    title: str | None, columns: list[str], rows: Iterable[Iterable[Any]], right: set[str] = frozenset()
):
    from rich.table import Table

    table = Table(title=title, title_justify="left", show_lines=False, header_style="bold")
    for c in columns:
        table.add_column(c, justify="right" if c in right else "left", overflow="fold")
    for row in rows:
        table.add_row(*[_cell(v) for v in row])
    return table


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        text = value.isoformat(sep=" ")
        return text.replace("+00:00", "")
    if isinstance(value, bytes | bytearray):
        text = _json_default(value)
        return text if len(text) <= 80 else text[:77] + "..."
    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) >= 1e15 else f"{value:,.10g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _print(renderable: Any) -> None:
    from rich.console import Console

    Console(soft_wrap=False, width=None if sys.stdout.isatty() else 200).print(renderable)


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
        _echo_json([i.as_dict() for i in infos])
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
            _size(i.size_bytes),
            ", ".join(i.partition_columns) or "-",
            _when(i.last_commit),
            i.last_operation,
        )
        for i in infos
    ]
    _print(_table(f"Delta tables under {root}", columns, rows, right={"version", "rows", "files", "size"}))


# ------------------------------------------------------------------------------------------ describe


def asset_checks(table: str) -> list[dict[str, Any]] | None:
    """The Dagster asset checks defined for the table's asset and their last result (None when the
    suites cannot be loaded).

    The checks are the table's expectation suite (``quality.checks`` makes one check per expectation,
    and no other asset checks exist), read from ``quality.suites``: loading the whole code location
    (``orchestration.definitions``: every asset, Spark, the resources) to list them made ``describe``
    take 7-9.5 s. Dagster itself is imported only when its instance exists, for the last results."""
    try:
        from quality.suites import SUITES
    except Exception:  # describing a table must not depend on the quality suites loading
        return None
    suite = next((s for s in SUITES.values() if s.table == table), None)
    if suite is None:
        return []
    instance = _instance()
    out = []
    for name in sorted(e.name for e in suite.expectations):
        last: dict[str, Any] = {"status": "never run"}
        if instance is not None:
            try:
                from dagster import AssetCheckKey, AssetKey

                check = AssetCheckKey(AssetKey(suite.asset_key_path), name)
                records = instance.event_log_storage.get_asset_check_execution_history(check, limit=1)
                if records:
                    rec = records[0]
                    last = {
                        "status": str(rec.status.value),
                        "run_id": rec.run_id,
                        "time": _when_ts(rec.create_timestamp),
                    }
            except Exception:
                pass
        out.append({"name": name, **last})
    return out


def _when_ts(ts: float | None) -> str | None:
    from datetime import UTC

    return datetime.fromtimestamp(ts, tz=UTC).isoformat() if ts else None


def _instance() -> Any:
    """The Dagster instance at the settings' dagster_home, if one was ever created there."""
    from orchestration.settings import load_settings

    home = Path(load_settings().dagster_home)
    if not home.is_dir():
        return None
    try:
        from dagster import DagsterInstance

        return DagsterInstance.from_config(str(home))
    except Exception:
        return None


def run_ids(table: str, limit: int = 1000) -> dict[int, str]:
    """Delta version -> the Dagster run that materialized it, from the instance's materializations."""
    instance = _instance()
    if instance is None:
        return {}
    try:
        from dagster import AssetKey

        records = instance.fetch_materializations(AssetKey(table.split(".")), limit=limit).records
    except Exception:
        return {}
    out: dict[int, str] = {}
    for record in records:
        mat = record.asset_materialization
        meta = mat.metadata if mat is not None else {}
        version = meta.get("delta_version")
        value = getattr(version, "value", version)
        if isinstance(value, int) and value not in out and not _skipped(meta):
            out[value] = record.run_id
    return out


def _skipped(meta: Mapping[str, Any]) -> bool:
    flag = meta.get("commit_skipped")
    return bool(getattr(flag, "value", flag))


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
        _echo_json(data)
        return
    click.echo(f"{desc.name}  (version {desc.version}, {desc.uri})")
    if desc.description:
        click.echo(desc.description)
    _print(
        _table(
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
        click.echo("Checks:")
        for check in checks:
            extra = f" ({check['time']}, run {check['run_id']})" if check.get("time") else ""
            click.echo(f"  {check['name']}: {check['status']}{extra}")
    if commits is not None:
        rows = [
            (
                c["version"],
                _when(c["timestamp"]),
                c["operation"],
                c["dagster_run_id"] or "-",
                "?" if c["rows_added"] is None else c["rows_added"],
                "?" if c["rows_removed"] is None else c["rows_removed"],
                ", ".join(f"{k}@{v}" for k, v in (c["input_versions"] or {}).items()) or "-",
            )
            for c in commits
        ]
        _print(
            _table(
                "History (newest first)",
                ["version", "time", "operation", "dagster run", "+rows", "-rows", "inputs"],
                rows,
                right={"version", "+rows", "-rows"},
            )
        )


# ------------------------------------------------------------------------------------------ sql


def write_result(reader: Any, fmt: str, out: Path | None, max_rows: int) -> int:
    """Write a record batch stream in `fmt` to `out` (or stdout); returns the rows written (for
    `table`, the rows shown)."""
    if fmt == "table":
        return _show(reader, max_rows)
    if fmt == "parquet" and out is None and sys.stdout.isatty():
        raise click.UsageError("parquet is binary: give --out FILE (or redirect standard output)")
    sink = open(out, "wb") if out is not None else sys.stdout.buffer  # noqa: SIM115
    try:
        if fmt == "csv":
            return _write_csv(reader, sink)
        if fmt == "json":
            return _write_json(reader, sink)
        return _write_parquet(reader, sink)
    finally:
        if out is not None:
            sink.close()
        else:
            sink.flush()


def _write_csv(reader: Any, sink: Any) -> int:
    import pyarrow.csv as pacsv

    rows = 0
    writer = None
    for batch in reader:
        batch = _textual(batch)
        if writer is None:
            writer = pacsv.CSVWriter(sink, batch.schema)
        writer.write_batch(batch)
        rows += batch.num_rows
    if writer is None:
        writer = pacsv.CSVWriter(sink, _textual_schema(reader.schema))
    writer.close()
    return rows


def _textual_schema(schema: pa.Schema) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([pa.field(f.name, pa.string()) if _needs_text(f.type) else f for f in schema])


def _needs_text(t: Any) -> bool:
    import pyarrow.types as pt

    return bool(pt.is_binary(t) or pt.is_large_binary(t) or pt.is_nested(t) or pt.is_dictionary(t))


def _textual(batch: pa.RecordBatch) -> pa.RecordBatch:
    """CSV has no binary or nested values: those columns are written as text (UTF-8 / base64 / JSON)."""
    import orjson
    import pyarrow as pa

    if not any(_needs_text(f.type) for f in batch.schema):
        return batch
    arrays = []
    for field, column in zip(batch.schema, batch.columns, strict=True):
        if not _needs_text(field.type):
            arrays.append(column)
            continue
        values = column.to_pylist()
        if pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type):
            arrays.append(pa.array([None if v is None else _json_default(v) for v in values], pa.string()))
        else:
            arrays.append(
                pa.array(
                    [None if v is None else orjson.dumps(v, default=_json_default).decode() for v in values],
                    pa.string(),
                )
            )
    return pa.RecordBatch.from_arrays(arrays, schema=_textual_schema(batch.schema))


def _write_json(reader: Any, sink: Any) -> int:
    """A JSON array of objects; timestamps as ISO 8601, binary as UTF-8 text (or base64)."""
    import orjson

    rows = 0
    sink.write(b"[")
    for batch in reader:
        for row in batch.to_pylist():
            sink.write((b",\n" if rows else b"\n") + orjson.dumps(row, default=_json_default))
            rows += 1
    sink.write(b"\n]\n" if rows else b"]\n")
    return rows


def _write_parquet(reader: Any, sink: Any) -> int:
    import pyarrow.parquet as pq

    rows = 0
    with pq.ParquetWriter(sink, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
            rows += batch.num_rows
    return rows


def _show(reader: Any, max_rows: int) -> int:
    import pyarrow as pa

    kept: list[pa.RecordBatch] = []
    have = 0
    more = False
    for batch in reader:
        if have + batch.num_rows > max_rows:
            kept.append(batch.slice(0, max_rows - have))
            have = max_rows
            more = True
            break
        kept.append(batch)
        have += batch.num_rows
    if more:
        reader.close()  # the rest is never computed
    columns = [f.name for f in reader.schema]
    if not columns:
        click.echo("OK")
        return 0
    rows = [tuple(r.values()) for b in kept for r in b.to_pylist()]
    numeric = {
        f.name
        for f in reader.schema
        if pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
    }
    _print(_table(None, columns, rows, right=numeric))
    if more:
        click.echo(
            f"(showing the first {max_rows:,} rows; more rows not shown: add LIMIT, raise --max-rows, or "
            "use --format csv|json|parquet --out FILE)",
            err=True,
        )
    else:
        click.echo(f"({have:,} row{'s' if have != 1 else ''})", err=True)
    return have


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
            _shell(session, fmt, max_rows)
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


def _shell(session: LakeSession, fmt: str, max_rows: int) -> None:
    """A small SQL shell: statements end with `;`, `.tables` lists the tables, `.quit` leaves."""
    from edge.errors import StreamhouseError

    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    names = session.register_all()
    click.echo(
        f"Streamhouse lake at {session.lake.root}: {len(names)} tables (.tables lists them, .quit leaves)"
    )
    buffer: list[str] = []
    while True:
        try:
            line = input("lake> " if not buffer else "  ..> ")
        except EOFError:
            click.echo()
            return
        except KeyboardInterrupt:
            click.echo()
            buffer.clear()
            continue
        stripped = line.strip()
        if not buffer and stripped in (".quit", ".exit", "\\q", "quit", "exit"):
            return
        if not buffer and stripped == ".tables":
            click.echo("\n".join(session.lake.names()))
            continue
        if not stripped and not buffer:
            continue
        buffer.append(line)
        if not stripped.endswith(";"):
            continue
        text = "\n".join(buffer)
        buffer.clear()
        try:
            reader = session.reader(text)
            try:
                write_result(reader, "table" if fmt == "parquet" else fmt, None, max_rows)
            finally:
                reader.close()
        except StreamhouseError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
