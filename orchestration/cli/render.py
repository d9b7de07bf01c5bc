"""How the CLI prints: JSON, rich tables and their cells, sizes and times.

Every command that shows something (``tables``, ``describe``, ``sql``, ``replay``, ``check``) prints
the same way: bytes as UTF-8 text (or base64), times in UTC, numbers with thousands separators, wide
tables unwrapped when the output is not a terminal. One module, so the commands agree.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

import click


def echo_json(data: Any) -> None:
    import orjson

    click.echo(orjson.dumps(data, default=json_default, option=orjson.OPT_INDENT_2).decode())


def json_default(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(raw).decode()
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def format_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1024 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def format_time(value: datetime | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.strftime("%Y-%m-%d %H:%M:%S UTC")


def rich_table(
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
        text = json_default(value)
        return text if len(text) <= 80 else text[:77] + "..."
    if isinstance(value, float):
        return f"{value:,.6g}" if abs(value) >= 1e15 else f"{value:,.10g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def print_rich(renderable: Any) -> None:
    from rich.console import Console

    Console(soft_wrap=False, width=None if sys.stdout.isatty() else 200).print(renderable)
