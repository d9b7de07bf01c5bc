"""The demo's summary: one row per step, the lake's tables (this run's rows beside the totals), and the
closing explanation of what the figures mean and where to look next.

Kept apart from the run so that the summary's shape (what ``run_demo`` returns and the tests read) is
defined in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from edge.broker import BrokerKind
from orchestration.demo_kafka import KafkaUse
from orchestration.demo_progress import console
from orchestration.settings import Settings


@dataclass
class TableRows:
    """A lake table's rows written by this demo run beside the rows it holds now: after a second run (or
    ``streamhouse generate``) the two differ, and one "rows" figure could not say which it is."""

    name: str
    #: the table's version now
    version: int | None
    #: rows this run wrote (bronze: records appended; silver/gold: rows of the days it replaced)
    run_rows: int
    #: rows in the table now (None: the Delta log does not count them)
    total_rows: int | None

    def describe(self) -> str:
        total = "?" if self.total_rows is None else f"{self.total_rows:,}"
        return f"version {self.version}, {self.run_rows:,} rows this run, {total} in the table"


#: The marks of a summary row: a step that did what it says, and one that did not (a comparison that
#: could not be made): a warning must never look like a pass.
PASS_MARK, WARN_MARK = "✓", "!"


@dataclass
class DemoSummary:
    rows: list[tuple[str, str]] = field(default_factory=list)
    #: the lake's tables, this run's rows and the totals (printed as their own table)
    tables: list[TableRows] = field(default_factory=list)
    #: steps whose row is a warning (printed with ``WARN_MARK`` in yellow, in the table too)
    warnings: list[str] = field(default_factory=list)

    def add(self, step: str, result: str) -> None:
        self.rows.append((step, result))
        console.print(f"[green]{PASS_MARK}[/green] {step}: {result}")

    def warn(self, step: str, result: str) -> None:
        """A row that is not a pass (e.g. a comparison not made): marked ``!`` in yellow, and in the
        summary table with the same mark, so it cannot be read as one of the ✓ steps."""
        self.rows.append((step, result))
        self.warnings.append(step)
        console.print(f"[bold yellow]{WARN_MARK}[/bold yellow] [yellow]{step}[/yellow]: {result}")

    def mark(self, step: str) -> str:
        """The mark of ``step``'s row: ``WARN_MARK`` for a warning, ``PASS_MARK`` otherwise."""
        return WARN_MARK if step in self.warnings else PASS_MARK

    def add_tables(self, tables: list[TableRows]) -> None:
        """The tables' rows, also as summary rows (``dict(summary.rows)["silver/orders"]``), not printed
        one by one: ``print_summary`` shows them in their own table."""
        self.tables = tables
        self.rows += [(t.name, t.describe()) for t in tables]


def rows_written(results: list[Any], into: dict[str, int] | None = None) -> dict[str, int]:
    """Rows each table got from these runs, by ``layer/table`` (the last two parts of the table's
    ``table_uri``: an asset's key can differ, ``quarantine/orders_quarantine`` writes
    ``quarantine/orders``), added to ``into``: bronze's ``records``, the others' ``rows_written``."""
    from orchestration.pipeline import materializations

    out = dict(into or {})
    for result in results:
        for meta in materializations(result).values():
            uri = str(meta.get("table_uri") or "")
            rows = meta.get("records", meta.get("rows_written"))
            if not uri or rows is None:
                continue
            name = "/".join(uri.rstrip("/").split("/")[-2:])
            out[name] = out.get(name, 0) + int(rows)
    return out


def lake_tables(lake_root: Path, written: dict[str, int]) -> list[TableRows]:
    """Every table of the lake: its version and rows now (the Delta log's counts), and the rows this run
    wrote (``written``, by ``layer/table``; 0 for a table it did not write)."""
    from assets.lake.catalog import list_tables

    out = []
    for info in list_tables(lake_root):
        name = f"{info.layer}/{info.name.split('.', 1)[1]}"
        out.append(TableRows(name, info.version, written.get(name, 0), info.rows))
    return out


def tables_table(tables: list[TableRows]) -> Table:
    """This run's rows and the tables' totals side by side, so a rerun's figures read right."""
    table = Table(title="Lake tables: this run and in total")
    table.add_column("table")
    table.add_column("version", justify="right")
    table.add_column("rows this run", justify="right")
    table.add_column("rows in the table", justify="right")
    for t in tables:
        total = "?" if t.total_rows is None else f"{t.total_rows:,}"
        table.add_row(t.name, str(t.version), f"{t.run_rows:,}" if t.run_rows else "-", total)
    return table


def print_summary(summary: DemoSummary, settings: Settings, where: object, kafka: KafkaUse) -> None:
    table = Table(title="Streamhouse demo")
    table.add_column("step")
    table.add_column("result")
    in_tables = {t.name for t in summary.tables}
    for name, result in summary.rows:
        if name in in_tables:
            continue
        if name in summary.warnings:
            table.add_row(f"{WARN_MARK} {name}", result, style="yellow")
        else:
            table.add_row(name, result)
    console.print(table)
    if summary.tables:
        console.print(tables_table(summary.tables))
    console.print(
        "[bold]Revenue, edge vs gold.[/bold] The edge app sums quantity * unit_price of every order it reads "
        "that passes its own filter (a product, a positive int quantity, a non-negative price), live, as "
        "records arrive: producer-retry duplicates count twice and an order missing its customer counts. "
        "Gold sums silver's orders in 5-minute windows: deduplicated by order_id, every malformed order "
        "quarantined, late orders placed in their own day. The two differ by those few records "
        "(well under 1%)."
    )
    console.print(
        "[bold]Malformed records.[/bold] The sample data mixes in broken JSON, orders and clicks missing "
        "their customer/user, quantities of 'many' or -1, negative prices and unparseable event times, plus "
        "exact duplicates and orders 6 h late. Silver sends each malformed record to quarantine/<topic> "
        "with the reason (see the checks in the UI), drops the duplicates, and late orders re-open their day."
    )
    servers = kafka.client.bootstrap_servers
    if kafka.origin == "configured":
        broker = f"Kafka: {servers}."
    elif kafka.kind == BrokerKind.TANSU.value:
        broker = (
            f"The local broker keeps running at {servers} (the embedded one keeps its topics in memory: "
            "`streamhouse broker stop` loses them, and the next demo then stops and offers `--reset`)."
        )
    else:
        broker = (
            f"The local broker keeps running at {servers}, its topics on disk (`streamhouse broker stop` "
            "stops it; the next start finds them again)."
        )
    console.print(
        f"[bold]See it in the Dagster UI:[/bold] `make dagster`, then open http://127.0.0.1:3000 "
        f"(Runs: this demo's runs; Lineage: topics → edge apps → bronze → silver → gold, with checks and "
        f"plots). Instance {where}, tables under {settings.lake_root}. {broker} More events: "
        "`streamhouse generate --events 1000 --rate 50`."
    )
