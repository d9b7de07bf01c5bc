"""Writing a query result (an Arrow record batch stream) as a readable table, CSV, JSON or Parquet.

``streamhouse sql`` and its shell stream results through here batch by batch, so a large result is
never held in memory; the readable table stops reading after ``max_rows`` and announces the rest.
CSV has no binary or nested values, so those columns become text.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from orchestration.cli.render import json_default, print_rich, rich_table

if TYPE_CHECKING:
    import pyarrow as pa

FORMATS = ("table", "csv", "json", "parquet")


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
            arrays.append(pa.array([None if v is None else json_default(v) for v in values], pa.string()))
        else:
            arrays.append(
                pa.array(
                    [None if v is None else orjson.dumps(v, default=json_default).decode() for v in values],
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
            sink.write((b",\n" if rows else b"\n") + orjson.dumps(row, default=json_default))
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
    print_rich(rich_table(None, columns, rows, right=numeric))
    if more:
        click.echo(
            f"(showing the first {max_rows:,} rows; more rows not shown: add LIMIT, raise --max-rows, or "
            "use --format csv|json|parquet --out FILE)",
            err=True,
        )
    else:
        click.echo(f"({have:,} row{'s' if have != 1 else ''})", err=True)
    return have
