"""What a schema cannot check: that every name a declaration uses is declared, and no table feeds itself.

Tables share one namespace (a bare name in ``from:`` is unambiguous), columns are checked against the
table they are read from, Spark SQL expressions are parsed (by DuckDB's parser, which reads the SQL
both engines share) to find the columns and tables they name, and gold tables must not form a cycle.
An expression the parser cannot read is left to Spark at run time rather than refused here.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from assets.pipeline.model import (
    AsOfJoin,
    ChangeTable,
    EventTable,
    InRange,
    InSet,
    Join,
    Matches,
    NotNull,
    Pipeline,
    Predicate,
    PythonTable,
    SqlTable,
    Unique,
    WindowAggregate,
)
from assets.pipeline.yaml_source import Problem, YamlSource

#: Columns every SCD2 change table adds to its declared fields.
SCD2_COLUMNS = ("valid_from", "valid_to")


def table_columns(pipeline: Pipeline, name: str, ordered: bool = True) -> list[str] | None:
    """The columns of a declared table (in ``column_order`` unless not ``ordered``), or None where only
    running it tells (SQL and Python tables, unless their ``column_order`` says)."""
    gold = pipeline.gold_tables.get(name)
    if ordered and gold is not None and gold.column_order:
        return list(gold.column_order)
    if name in pipeline.event_tables:
        t = pipeline.event_tables[name]
        return [*t.fields, *(["event_date"] if t.event_time else [])]
    if name in pipeline.change_tables:
        c = pipeline.change_tables[name]
        envelope = [c.sequence_by] if c.sequence_by not in c.fields else []
        return [*c.fields, *envelope, *(SCD2_COLUMNS if c.scd_type == 2 else ())]
    if isinstance(gold, WindowAggregate):
        session = gold.window.type == "session"
        bounds = ["session_start", "session_end"] if session else ["window_start", "window_end"]
        date_col = "session_date" if session else "window_date"
        return [*bounds, *gold.group_by, *gold.aggregates, *gold.columns, date_col]
    if isinstance(gold, AsOfJoin | Join):
        left = table_columns(pipeline, gold.input) or []
        return [*left, *joined_columns(pipeline, gold, left)]
    return None


def joined_columns(pipeline: Pipeline, gold: AsOfJoin | Join, left: list[str]) -> list[str]:
    """The columns a join takes from its ``with`` table: those declared, else every column that is
    neither a join key nor already on the left."""
    if gold.columns:
        return list(gold.columns)
    right = table_columns(pipeline, gold.with_) or []
    return [c for c in right if c not in gold.on and c not in left]


def check_references(pipeline: Pipeline, source: YamlSource, folder: Path) -> list[Problem]:
    return list(_References(pipeline, source, folder).problems())


class _References:
    def __init__(self, pipeline: Pipeline, source: YamlSource, folder: Path) -> None:
        self.p = pipeline
        self.source = source
        self.folder = folder

    def problems(self) -> Iterator[Problem]:
        yield from self._unique_table_names()
        for name, table in self.p.event_tables.items():
            yield from self._silver(("event_tables", name), name, table)
            yield from self._columns(("event_tables", name, "key"), table.key, table.fields, name)
            if table.event_time is not None:
                yield from self._timestamp(
                    ("event_tables", name, "event_time"), table.event_time, table, name
                )
        for name, table in self.p.change_tables.items():
            where = ("change_tables", name)
            yield from self._silver(where, name, table)
            yield from self._columns((*where, "keys"), table.keys, table.fields, name)
            envelope = ["ts_ms"] if table.format == "debezium" else []
            if table.sequence_by not in [*table.fields, *envelope]:
                yield self._unknown_column(
                    (*where, "sequence_by"), table.sequence_by, [*table.fields, *envelope], name
                )
            elif table.fields.get(table.sequence_by, "timestamp") != "timestamp":
                yield self.source.problem(
                    (*where, "sequence_by"),
                    f"{_dotted(where)}.sequence_by: {table.sequence_by!r} is a "
                    f"{table.fields[table.sequence_by]}; versions are ordered (and SCD2 validity measured) "
                    "by a timestamp",
                )
            if table.delete_when is not None:
                if table.format == "debezium":
                    yield self.source.problem(
                        (*where, "delete_when"),
                        f"{_dotted(where)}.delete_when: a debezium feed's deletes are its op = d records",
                    )
                else:
                    yield from self._expression(
                        (*where, "delete_when"), table.delete_when, list(table.fields), name
                    )
        yield from self._gold()
        yield from self._functions()

    # -- silver

    def _unique_table_names(self) -> Iterator[Problem]:
        seen: dict[str, str] = {}
        for kind in ("event_tables", "change_tables", "gold_tables"):
            for name in getattr(self.p, kind):
                if name in seen:
                    yield self.source.problem(
                        (kind, name),
                        f"{kind}.{name}: the name is already used in {seen[name]} (table names are unique)",
                    )
                seen.setdefault(name, kind)

    def _silver(
        self, where: tuple[str, str], name: str, table: EventTable | ChangeTable
    ) -> Iterator[Problem]:
        if name not in self.p.sources:
            yield self._unknown(
                where, "source", name, self.p.sources, f"{where[0]}.{name} (read from its source)"
            )
        names: dict[str, int] = {}
        for i, e in enumerate(table.expectations):
            at = (*where, "expectations", i)
            if e.resolved_name in names:
                yield self.source.problem(
                    at,
                    f"{where[0]}.{name}.expectations[{i}]: name {e.resolved_name!r} is used twice "
                    "(give it `name:`)",
                )
            names.setdefault(e.resolved_name, i)
            columns = list(table.fields)
            if isinstance(e, NotNull | InRange | InSet | Matches):
                yield from self._columns((*at, "column"), [e.column], columns, name)
            elif isinstance(e, Unique):
                yield from self._columns((*at, "columns"), e.columns, columns, name)
                if e.action == "quarantine":
                    yield self.source.problem(
                        (*at, "action"),
                        f"{where[0]}.{name}.expectations[{i}].action: uniqueness is checked on the written "
                        "table, so it can warn or fail but not quarantine a row",
                    )
            elif isinstance(e, Predicate):
                yield from self._expression((*at, "valid_when"), e.valid_when, columns, name)
            if isinstance(e, InRange) and e.min is None and e.max is None:
                yield self.source.problem(
                    at, f"{where[0]}.{name}.expectations[{i}]: a range needs min, max or both"
                )

    def _timestamp(
        self, where: tuple[Any, ...], column: str, table: EventTable, name: str
    ) -> Iterator[Problem]:
        if column not in table.fields:
            yield self._unknown_column(where, column, table.fields, name)
        elif table.fields[column] != "timestamp":
            yield self.source.problem(
                where,
                f"{_dotted(where)}: {column!r} is a {table.fields[column]}; the event time must be a "
                "timestamp",
            )

    # -- gold

    def _gold(self) -> Iterator[Problem]:
        deps: dict[str, list[str]] = {}
        for name, gold in self.p.gold_tables.items():
            where = ("gold_tables", name)
            inputs: list[tuple[tuple[Any, ...], str]] = []
            if isinstance(gold, WindowAggregate | AsOfJoin | Join):
                inputs.append(((*where, "from"), gold.input))
            if isinstance(gold, AsOfJoin | Join):
                inputs.append(((*where, "with"), gold.with_))
            if isinstance(gold, PythonTable):
                inputs.extend(((*where, "inputs", i), _bare(t)) for i, t in enumerate(gold.inputs))
            if isinstance(gold, SqlTable):
                tables = _sql_tables(gold.query)
                inputs.extend(((*where, "query"), _bare(t)) for t in tables or ())
            known = {**self.p.event_tables, **self.p.change_tables, **self.p.gold_tables}
            good = True
            for at, table in inputs:
                if table not in known:
                    good = False
                    yield self._unknown(at, "table", table, known, f"gold_tables.{name}")
            deps[name] = [t for _, t in inputs if t in self.p.gold_tables]
            if good:
                yield from self._gold_columns(where, name, gold)
            computed = table_columns(self.p, name, ordered=False)
            if gold.column_order and computed is not None and sorted(gold.column_order) != sorted(computed):
                missing = [c for c in computed if c not in gold.column_order]
                extra = [c for c in gold.column_order if c not in computed]
                yield self.source.problem(
                    (*where, "column_order"),
                    f"{_dotted(where)}.column_order: must list each column of the table once"
                    + (f"; missing {', '.join(missing)}" if missing else "")
                    + (f"; not a column: {', '.join(extra)}" if extra else ""),
                )
            if gold.chart is not None:
                if gold.chart.kind != "histogram" and gold.chart.y is None:
                    yield self.source.problem(
                        (*where, "chart"), f"{_dotted(where)}.chart: a {gold.chart.kind} needs y"
                    )
                columns = table_columns(self.p, name)
                if columns is not None:
                    for axis in ("x", "y", "series"):
                        value = getattr(gold.chart, axis)
                        if value is not None and value not in columns:
                            yield self._unknown_column((*where, "chart", axis), value, columns, name)
        yield from self._cycles(deps)

    def _gold_columns(self, where: tuple[str, str], name: str, gold: Any) -> Iterator[Problem]:
        if isinstance(gold, WindowAggregate):
            source = self.p.event_tables.get(gold.input)
            if source is None:
                yield self.source.problem(
                    (*where, "from"),
                    f"{_dotted(where)}.from: {gold.input!r} is not an event table (windows need event time)",
                )
                return
            if source.event_time is None:
                yield self.source.problem(
                    (*where, "from"),
                    f"{_dotted(where)}.from: event table {gold.input!r} declares no event_time to window by",
                )
            columns = list(source.fields)
            yield from self._columns((*where, "group_by"), gold.group_by, columns, gold.input)
            for agg_name, agg in gold.aggregates.items():
                if agg.expression != "*":
                    yield from self._expression(
                        (*where, "aggregates", agg_name), agg.expression, columns, gold.input
                    )
            yield from self._window(where, gold)
            result = [c for c in table_columns(self.p, name) or [] if c not in gold.columns]
            for column, expression in gold.columns.items():
                yield from self._expression((*where, "columns", column), expression, result, name)
        elif isinstance(gold, AsOfJoin | Join):
            left, right = table_columns(self.p, gold.input), table_columns(self.p, gold.with_)
            if isinstance(gold, AsOfJoin):
                change = self.p.change_tables.get(gold.with_)
                if change is None or change.scd_type != 2:
                    yield self.source.problem(
                        (*where, "with"), f"{_dotted(where)}.with: {gold.with_!r} is not an SCD2 change table"
                    )
                event = self.p.event_tables.get(gold.input)
                if event is None or event.event_time is None:
                    yield self.source.problem(
                        (*where, "from"),
                        f"{_dotted(where)}.from: {gold.input!r} is not an event table with an event_time",
                    )
            elif not self._daily(gold.input):
                yield self.source.problem(
                    (*where, "from"),
                    f"{_dotted(where)}.from: {gold.input!r} is kept whole, not by day; a join is partitioned "
                    "by the days of its `from` table (an event table with an event_time, or a gold table)",
                )
            for _side, columns, table in (("from", left, gold.input), ("with", right, gold.with_)):
                if columns is not None:
                    yield from self._columns((*where, "on"), gold.on, columns, table)
            if right is not None:
                yield from self._columns((*where, "columns"), gold.columns, right, gold.with_)
            for column in gold.columns if left is not None else ():
                if column in left:
                    yield self.source.problem(
                        (*where, "columns"),
                        f"{_dotted(where)}.columns: {column!r} is already a column of {gold.input!r}",
                    )

    def _daily(self, table: str) -> bool:
        """Whether a declared table is partitioned by day (every gold table is)."""
        events = self.p.event_tables.get(table)
        return table in self.p.gold_tables or (events is not None and events.event_time is not None)

    def _window(self, where: tuple[str, str], gold: WindowAggregate) -> Iterator[Problem]:
        w = gold.window
        at = (*where, "window")
        needs = {"tumbling": ("size",), "hopping": ("size", "hop"), "session": ("gap",)}[w.type]
        for key in needs:
            if getattr(w, key) in (None, 0):
                yield self.source.problem(at, f"{_dotted(at)}: a {w.type} window needs {key} (> 0)")
        for key in {"size", "hop", "gap"} - set(needs):
            if getattr(w, key) is not None:
                yield self.source.problem((*at, key), f"{_dotted(at)}.{key}: not used by a {w.type} window")
        if w.type == "hopping" and w.size and w.hop and w.hop > w.size:
            yield self.source.problem((*at, "hop"), f"{_dotted(at)}.hop: longer than the window's size")

    def _cycles(self, deps: dict[str, list[str]]) -> Iterator[Problem]:
        state: dict[str, int] = {}
        stack: list[str] = []

        def visit(node: str) -> list[str] | None:
            state[node] = 1
            stack.append(node)
            for nxt in deps.get(node, []):
                if state.get(nxt) == 1:
                    return [*stack[stack.index(nxt) :], nxt]
                if nxt not in state and (cycle := visit(nxt)):
                    return cycle
            stack.pop()
            state[node] = 2
            return None

        for node in deps:
            if node not in state and (cycle := visit(node)):
                yield self.source.problem(
                    ("gold_tables", cycle[0]), f"gold tables form a cycle: {' -> '.join(cycle)}"
                )
                return

    # -- python

    def _functions(self) -> Iterator[Problem]:
        targets: list[tuple[tuple[Any, ...], str]] = []
        if self.p.generator:
            targets.append((("generator",), self.p.generator))
        targets += [
            (("gold_tables", n, "function"), g.function)
            for n, g in self.p.gold_tables.items()
            if isinstance(g, PythonTable)
        ]
        targets += [(("edge_apps", n, "target"), a.target) for n, a in self.p.edge_apps.items()]
        for where, target in targets:
            if (error := resolve_problem(target, self.folder)) is not None:
                yield self.source.problem(where, f"{_dotted(where)}: {error}")

    # -- helpers

    def _columns(
        self, where: tuple[Any, ...], used: Iterable[str], columns: Iterable[str], table: str
    ) -> Iterator[Problem]:
        known = list(columns)
        for column in used:
            if column not in known:
                yield self._unknown_column(where, column, known, table)

    def _expression(
        self, where: tuple[Any, ...], sql: str, columns: list[str], table: str
    ) -> Iterator[Problem]:
        for column in _sql_columns(sql) or ():
            if column not in columns:
                yield self._unknown_column(where, column, columns, table)

    def _unknown_column(
        self, where: tuple[Any, ...], column: str, columns: Iterable[str], table: str
    ) -> Problem:
        return self._unknown(where, "column", column, columns, f"{_dotted(where)} (table {table})")

    def _unknown(
        self, where: tuple[Any, ...], what: str, name: str, known: Iterable[str], context: str
    ) -> Problem:
        import difflib

        options = sorted(known)
        hint = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
        tail = (
            f"; did you mean {hint[0]!r}?"
            if hint
            else (f"; declared: {', '.join(options)}" if options else "")
        )
        return self.source.problem(where, f"{context}: unknown {what} {name!r}{tail}")


def resolve_problem(target: str, folder: Path) -> str | None:
    """Why ``module:attr`` cannot be used (None when it can); the pipeline folder is importable."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        return f"expected MODULE:FUNCTION, got {target!r}"
    added = str(folder.resolve())
    sys.path.insert(0, added)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        return f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
    finally:
        if sys.path and sys.path[0] == added:
            sys.path.pop(0)
    if not hasattr(module, attr):
        return f"module {module_name!r} has no {attr!r}"
    return None


def _bare(table: str) -> str:
    """``silver.orders`` / ``gold.x`` / ``orders`` -> the table's declared name."""
    return table.split(".", 1)[1] if table.startswith(("silver.", "gold.")) else table


def _parse(sql: str) -> dict[str, Any] | None:
    import duckdb

    con = duckdb.connect()
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [sql]).fetchall()[0][0])
    finally:
        con.close()
    return None if tree.get("error") else tree


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _sql_columns(expression: str) -> list[str] | None:
    """The columns a SQL expression names (None: the parser cannot read it; Spark will judge it)."""
    tree = _parse(f"SELECT {expression}")
    if tree is None:
        return None
    return [n["column_names"][-1] for n in _walk(tree) if n.get("class") == "COLUMN_REF"]


def _sql_tables(query: str) -> list[str] | None:
    tree = _parse(query)
    if tree is None:
        return None
    ctes = {entry.get("key") for n in _walk(tree) for entry in (n.get("cte_map") or {}).get("map", [])}
    return [
        ".".join(p for p in (n.get("schema_name"), n.get("table_name")) if p)
        for n in _walk(tree)
        if n.get("type") == "BASE_TABLE" and not (not n.get("schema_name") and n.get("table_name") in ctes)
    ]


def _dotted(path: tuple[Any, ...]) -> str:
    from assets.pipeline.yaml_source import dotted

    return dotted(path)
