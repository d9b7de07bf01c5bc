"""Measure a suite where the data is: Spark SQL for large batches, DuckDB over Arrow for small ones.

One batch (a table, restricted to the days a run built, or whole) is measured with few queries: one
aggregate query for every row predicate, freshness column and the first uniqueness key (grouped by
that key, so one scan and one Spark job answer all three), one per further uniqueness key, one for
the quarantine counts, one per ``rows`` query; a sample of failing rows is fetched only for
expectations that fail. The result per expectation is an ``Outcome``; ``quality.gx`` turns them into
Great Expectations results.

Which engine: gold suites (``ARROW``) always run in DuckDB. A ``SPARK`` suite (bronze, silver) runs in
DuckDB too when its batch holds at most ``ARROW_MAX_ROWS`` rows by the Delta log's statistics: below
that size a Spark query costs more in job scheduling and a JVM scan of the files than DuckDB needs
for the whole suite (silver/orders at 200k events: 4.4 s in Spark, 0.2 s in DuckDB; see
docs/benchmarks.md, "Quality checks overhead"), and DuckDB reads the same Parquet files where they
are. Larger batches (backfills, bronze after months) stay on the Spark executors.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from quality.suites import ARROW, DROPPED, FRESHNESS, ROW, ROWS, SPARK, TYPE, UNIQUE, Expectation, Suite
from quality.verdict import verdict

SAMPLE_ROWS = 5
#: A ``SPARK`` suite's batch of at most this many rows is measured by DuckDB (0: always Spark).
ARROW_MAX_ROWS = 2_000_000


@dataclass
class Outcome:
    expectation: Expectation
    success: bool
    element_count: int
    failing_rows: int
    observed: Any
    sample: list[dict[str, Any]] = field(default_factory=list)
    #: False when the expectation could not be measured (its table or an optional input does not exist
    #: yet): then ``success`` is False too, since a check that compared nothing must never show as passed,
    #: but it is reported as a warning (never an error that blocks) and ``observed`` says why.
    compared: bool = True

    @property
    def verdict(self) -> str:
        """``passed``, ``warning`` or ``error`` (``quality.verdict``): the word every place shows."""
        return verdict(self.success, self.compared, self.expectation.action)

    @property
    def unexpected_percent(self) -> float:
        return 100.0 * self.failing_rows / self.element_count if self.element_count else 0.0


@dataclass
class Batch:
    """What was measured: the table, its version and the days (None: the whole table)."""

    table: str
    uri: str
    version: int | None
    days: list[date] | None
    rows: int = 0
    #: the engine that measured it: ``spark`` or ``arrow`` (DuckDB)
    engine: str = ""

    @property
    def label(self) -> str:
        if not self.days:
            return "all"
        days = sorted(self.days)
        return days[0].isoformat() if len(days) == 1 else f"{days[0].isoformat()}_{days[-1].isoformat()}"


class _Backend:
    """Runs SQL over named views; ``{name}`` placeholders in queries are replaced by the view names."""

    #: ``spark`` or ``arrow``: which SQL dialect the queries of ``quality.engine`` are written in
    dialect = ""

    def __init__(self) -> None:
        self.views: dict[str, str] = {}

    def register(self, alias: str, uri: str, partition: str | None, days: list[date] | None) -> bool:
        raise NotImplementedError

    def rows(self, sql: str) -> list[dict[str, Any]]:
        raise NotImplementedError

    def schema(self, alias: str) -> dict[str, str]:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def q(self, sql: str) -> str:
        """``{t}``/``{<alias>}``/``{days}`` → the registered relations; ``{c:<column>}`` → the column
        quoted for this dialect (``offset`` is a keyword in DuckDB, a string in Spark's double quotes)."""
        return sql.format(**self.views, c=_Quoted(self))

    def register_days(self, days: list[date] | None, partition: str | None) -> None:
        """``{days}``: the batch's days (column ``day``); the days present in the batch when it is
        the whole table."""
        if days:
            if self.dialect == ARROW:
                values = ", ".join(f"(DATE '{d.isoformat()}')" for d in days)
                self.views["days"] = f"(SELECT * FROM (VALUES {values}) v(day))"
            else:
                values = ", ".join(f"DATE'{d.isoformat()}'" for d in days)
                self.views["days"] = f"(SELECT explode(array({values})) AS day)"
        elif partition is not None:
            self.views["days"] = f"(SELECT DISTINCT {partition} AS day FROM {self.views['t']})"
        else:
            self.views["days"] = "(SELECT CAST(NULL AS DATE) AS day WHERE false)"

    def ident(self, column: str) -> str:
        """A quoted column name (``offset`` is a keyword in DuckDB)."""
        return f'"{column}"' if self.dialect == ARROW else f"`{column}`"


class _Quoted:
    """Formats ``{c:name}`` as the backend's quoted identifier."""

    def __init__(self, backend: _Backend) -> None:
        self.backend = backend

    def __format__(self, column: str) -> str:
        return self.backend.ident(column)


class SparkBackend(_Backend):
    dialect = SPARK

    def __init__(self, spark: Any) -> None:
        super().__init__()
        self.spark = spark
        self._tag = uuid.uuid4().hex[:8]
        self._frames: dict[str, Any] = {}

    def register(self, alias: str, uri: str, partition: str | None, days: list[date] | None) -> bool:
        from assets.delta import table_exists
        from assets.lineage import pinned_version, read_partitions

        if not table_exists(uri):
            return False
        df = read_partitions(
            self.spark, uri, version=pinned_version(uri), column=partition if days else None, values=days
        )
        view = f"_quality_{alias}_{self._tag}"
        df.createOrReplaceTempView(view)
        self.views[alias] = f"`{view}`"
        self._frames[alias] = df
        return True

    def rows(self, sql: str) -> list[dict[str, Any]]:
        return [r.asDict(recursive=True) for r in self.spark.sql(self.q(sql)).collect()]

    def schema(self, alias: str) -> dict[str, str]:
        return {f.name: f.dataType.simpleString() for f in self._frames[alias].schema.fields}

    def close(self) -> None:
        for view in self.views.values():
            self.spark.catalog.dropTempView(view.strip("`"))


class ArrowBackend(_Backend):
    """DuckDB over deltalake's Arrow dataset of the table (partition filters prune files)."""

    dialect = ARROW

    def __init__(self) -> None:
        import duckdb

        super().__init__()
        self.con = duckdb.connect()
        # Dates of UTC timestamps (CAST(event_time AS DATE)) must not follow the machine's zone.
        self.con.execute("SET TimeZone = 'UTC'")
        self._schemas: dict[str, dict[str, str]] = {}

    def register(self, alias: str, uri: str, partition: str | None, days: list[date] | None) -> bool:
        from assets.delta import table_exists
        from assets.delta.location import resolve
        from assets.delta.snapshot import open_table

        if not table_exists(uri):
            return False
        table = open_table(resolve(uri))
        filters = [(partition, "in", [d.isoformat() for d in days])] if days and partition else None
        dataset = table.to_pyarrow_dataset(partitions=filters)
        view = f"q_{alias}"
        self.con.register(view, dataset)
        self.views[alias] = view
        self._schemas[alias] = {f.name: str(f.type) for f in dataset.schema}
        return True

    def rows(self, sql: str) -> list[dict[str, Any]]:
        cur = self.con.execute(self.q(sql))
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def schema(self, alias: str) -> dict[str, str]:
        return self._schemas[alias]

    def close(self) -> None:
        self.con.close()


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, bytes | bytearray):
            v = bytes(v)[:200].decode("utf-8", "replace")
        elif isinstance(v, datetime | date):
            v = v.isoformat()
        elif isinstance(v, dict):
            v = _jsonable(v)
        elif v is not None and not isinstance(v, str | int | float | bool | list):
            v = str(v)
        out[k] = v
    return out


def _as_utc(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return None


def widen(days: list[date] | None, before: int, after: int) -> list[date] | None:
    """``days`` and the ``before`` days preceding and ``after`` days following each of them."""
    if not days:
        return days
    return sorted({d + timedelta(days=k) for d in days for k in range(-before, after + 1)})


def batch_rows(uri: str, version: int | None, partition: str | None, days: list[date] | None) -> int | None:
    """Rows of the batch by the Delta log's per-file statistics (None: unknown or no table)."""
    from assets.delta.changes import WHOLE_TABLE, PartitionFiles, record_count

    if version is None:
        return None
    files = PartitionFiles.load(uri, version, partition if days else None)
    keys = [d.isoformat() for d in days] if days and partition else [WHOLE_TABLE]
    return record_count(files.of(keys))


def engine_for(suite: Suite, rows: int | None, arrow_max_rows: int) -> str:
    """``arrow`` for gold suites and for Spark suites whose batch is small (see the module docstring)."""
    if suite.engine == ARROW:
        return ARROW
    small = rows is not None and rows <= arrow_max_rows
    return ARROW if arrow_max_rows > 0 and small else SPARK


def not_compared(suite: Suite, reason: str) -> list[Outcome]:
    """Every expectation of ``suite`` as not measured, with ``reason`` as the observed value."""
    return [Outcome(e, False, 0, 0, reason, compared=False) for e in suite.expectations]


def measure(
    suite: Suite,
    lake_root: str,
    *,
    days: Sequence[date] | None = None,
    spark: Callable[[], Any] | None = None,
    as_of: datetime | None = None,
    sample_rows: int = SAMPLE_ROWS,
    arrow_max_rows: int = ARROW_MAX_ROWS,
) -> tuple[Batch, list[Outcome]]:
    """Measure every expectation of ``suite`` on ``<lake_root>/<layer>/<name>`` (the ``days`` of its
    partition column when given). ``spark`` returns the Spark session (called only when the batch is
    measured in Spark)."""
    from assets.lake.layout import table_uri
    from assets.lineage import pinned_version

    uri = table_uri(lake_root, suite.layer, suite.name)
    day_list = sorted(set(days)) if days and suite.partition else None
    batch = Batch(suite.table, uri, pinned_version(uri), day_list)
    if batch.version is None:
        # Nothing written yet (a topic without records): nothing was measured, so nothing passed either.
        return batch, not_compared(suite, f"not compared: no table {suite.table} yet")
    rows = None if suite.engine == ARROW else batch_rows(uri, batch.version, suite.partition, day_list)
    # Without a Spark session (``streamhouse check`` on a small lake) every batch goes to DuckDB.
    batch.engine = ARROW if spark is None else engine_for(suite, rows, arrow_max_rows)
    if batch.engine == ARROW:
        backend: _Backend = ArrowBackend()
    else:
        backend = SparkBackend(spark())
    try:
        if not backend.register("t", uri, suite.partition, day_list):
            return batch, not_compared(suite, f"not compared: no table {suite.table} yet")
        present = {}
        for alias, inp in suite.inputs.items():
            layer, name = inp.table.split(".", 1)
            span = widen(day_list, inp.before, inp.after)
            present[alias] = backend.register(alias, table_uri(lake_root, layer, name), inp.partition, span)
        backend.register_days(day_list, suite.partition)
        outcomes = _measure(suite, backend, present, as_of or datetime.now(UTC), sample_rows)
        batch.rows = outcomes.pop()  # type: ignore[assignment]
        return batch, outcomes  # type: ignore[return-value]
    finally:
        backend.close()


def _measure(suite: Suite, b: _Backend, present: dict[str, bool], now: datetime, n: int) -> list[Any]:
    exps = suite.expectations
    row_exps = [e for e in exps if e.kind == ROW]
    fresh = [e for e in exps if e.kind == FRESHNESS]
    # The first uniqueness key is answered by the same scan: the aggregates are computed per key
    # group, then summed; groups of more than one row are the duplicates.
    fused = next((e for e in exps if e.kind == UNIQUE), None)
    aggs = ["count(*) AS n"]
    aggs += [f"count_if(coalesce(({e.sql}), false)) AS r{i}" for i, e in enumerate(row_exps)]
    aggs += [f"max({e.columns[0]}) AS f{i}" for i, e in enumerate(fresh)]
    if fused is None:
        agg = b.rows(f"SELECT {', '.join(aggs)} FROM {{t}}")[0]
    else:
        key = ", ".join(b.ident(c) for c in fused.columns)
        outer = ["sum(n) AS n", "sum(CASE WHEN n > 1 THEN n ELSE 0 END) AS dup"]
        outer += [f"sum(r{i}) AS r{i}" for i in range(len(row_exps))]
        outer += [f"max(f{i}) AS f{i}" for i in range(len(fresh))]
        agg = b.rows(
            f"SELECT {', '.join(outer)} FROM (SELECT {', '.join(aggs)} FROM {{t}} GROUP BY {key}) g"
        )[0]
    total = int(agg["n"] or 0)
    results: dict[str, Outcome] = {}
    failing = [(i, e) for i, e in enumerate(row_exps) if agg[f"r{i}"]]
    samples: dict[int, list[dict[str, Any]]] = {i: [] for i, _ in failing}
    if failing:
        # One query for the samples of every failing rule: rows failing any, flagged per rule.
        flags = ", ".join(f"coalesce(({e.sql}), false) AS _v{i}" for i, e in failing)
        where = " OR ".join(f"coalesce(({e.sql}), false)" for _, e in failing)
        for row in b.rows(f"SELECT *, {flags} FROM {{t}} WHERE {where} LIMIT {n * len(failing) * 4}"):
            hits = [i for i, _ in failing if row[f"_v{i}"]]
            clean = {k: v for k, v in row.items() if not k.startswith("_v")}
            for i in hits:
                if len(samples[i]) < n:
                    samples[i].append(clean)
    for i, e in enumerate(row_exps):
        bad = int(agg[f"r{i}"] or 0)
        results[e.name] = Outcome(e, bad == 0, total, bad, f"{bad} of {total} rows fail", samples.get(i, []))
    for i, e in enumerate(fresh):
        newest = _as_utc(agg[f"f{i}"])
        age = None if newest is None else now - newest
        ok = age is not None and e.max_age is not None and age <= e.max_age
        results[e.name] = Outcome(e, ok, total, 0, freshness_observed(newest, now, e.max_age))
    for e in exps:
        if e.kind == UNIQUE:
            key = ", ".join(b.ident(c) for c in e.columns)
            dup = []
            if e is not fused or agg["dup"]:
                dup = b.rows(
                    f"SELECT {key}, c AS duplicate_rows, sum(c) OVER () AS _total FROM "
                    f"(SELECT {key}, count(*) AS c FROM {{t}} GROUP BY {key} HAVING count(*) > 1) d "
                    f"ORDER BY c DESC LIMIT {n}"
                )
            bad = int(dup[0]["_total"]) if dup else 0
            sample = [{k: v for k, v in r.items() if k != "_total"} for r in dup]
            results[e.name] = Outcome(e, bad == 0, total, bad, f"{bad} rows share a key", sample)
        elif e.kind == TYPE:
            column, wanted = e.columns
            actual = b.schema("t").get(column)
            ok = actual is not None and _same_type(actual, wanted)
            results[e.name] = Outcome(e, ok, total, 0 if ok else total, actual or "missing column")
        elif e.kind == ROWS:
            missing = [a for a, ok in present.items() if not ok and "{" + a + "}" in e.sql]
            optional = [a for a in missing if suite.inputs[a].optional]
            if optional:
                tables = ", ".join(suite.inputs[a].table for a in optional)
                results[e.name] = Outcome(
                    e, False, total, 0, f"not compared: no table {tables} yet", compared=False
                )
                continue
            if missing:
                results[e.name] = Outcome(e, False, total, 0, f"input table(s) missing: {missing}")
                continue
            found = b.rows(f"SELECT *, count(*) OVER () AS _total FROM ({e.sql}) u LIMIT {n}")
            bad = int(found[0]["_total"]) if found else 0
            sample = [{k: v for k, v in r.items() if k != "_total"} for r in found]
            results[e.name] = Outcome(e, bad == 0, total, bad, f"{bad} unexpected rows", sample)
    dropped = [e for e in exps if e.kind == DROPPED]
    if dropped:
        counts: dict[str, int] = {}
        dropped_samples: dict[str, list[dict[str, Any]]] = {}
        if present.get("quarantine"):
            # One query: rows per failed expectation and the first ``n`` of each (Kafka order).
            part, off = b.ident("partition"), b.ident("offset")
            if b.dialect == ARROW:  # the value stays bytes: decoded leniently by _jsonable
                exploded = "(SELECT unnest(failed_expectations) AS e, * FROM {quarantine}) x"
                value = "value"
            else:
                exploded = "{quarantine} LATERAL VIEW explode(failed_expectations) x AS e"
                value = "CAST(value AS STRING) AS value"
            q = (
                f"SELECT * FROM (SELECT e, topic, {part}, {off}, reason, failed_expectations, run_id, "
                f"{value}, count(*) OVER (PARTITION BY e) AS _c, "
                f"row_number() OVER (PARTITION BY e ORDER BY {part}, {off}) AS _rn "
                f"FROM {exploded}) s WHERE _rn <= {n}"
            )
            for r in b.rows(q):
                counts[r["e"]] = int(r["_c"])
                sample_row = {k: v for k, v in r.items() if k not in ("e", "_c", "_rn")}
                dropped_samples.setdefault(r["e"], []).append(sample_row)
        quarantined_total = sum(counts.values())
        for e in dropped:
            bad = counts.get(e.name, 0)
            sample = dropped_samples.get(e.name, [])
            results[e.name] = Outcome(
                e,
                bad == 0,
                total + quarantined_total,
                bad,
                f"{bad} rows dropped to quarantine",
                sample,
            )
    ordered: list[Any] = [results[e.name] for e in exps]
    for o in ordered:
        o.sample = [_jsonable(r) for r in o.sample]
    ordered.append(total)
    return ordered


def span(delta: timedelta) -> str:
    """A non-negative duration as people say it: ``333 days 4 h 12 min``, ``5 min 3 s``, ``0 s``."""
    seconds = int(delta.total_seconds())
    days, rest = divmod(seconds, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days} day{'s' if days != 1 else ''}"] if days else []
    parts += [f"{n} {unit}" for n, unit in ((hours, "h"), (minutes, "min")) if n]
    if secs and not days:
        parts.append(f"{secs} s")
    return " ".join(parts) or "0 s"


def freshness_observed(newest: datetime | None, now: datetime, max_age: timedelta | None) -> str:
    """What a freshness expectation saw, in words. The newest value may lie after the reference time
    (``--as-of`` before the data, or clocks apart): that is said so, never as a negative age (the check
    once passed with "newest ..., -333 days, ... before ..."); such data is as fresh as it gets."""
    if newest is None:
        return "no rows"
    limit = f"at most {span(max_age)} allowed" if max_age is not None else "no limit"
    if newest > now:
        return (
            f"newest is {span(newest - now)} after the reference time {now.isoformat()}: newer than it "
            f"({limit}); newest {newest:%F %T}"
        )
    before = span(now - newest)
    return f"newest is {before} before the reference time {now.isoformat()} ({limit}); newest {newest:%F %T}"


def _same_type(actual: str, wanted: str) -> bool:
    aliases = {"int": {"int", "integer", "int32"}, "bigint": {"bigint", "long", "int64"}}
    actual = actual.lower()
    if wanted in aliases:
        return actual in aliases[wanted]
    if wanted == "timestamp":
        return actual.startswith("timestamp")
    return actual == wanted or (wanted == "string" and actual in {"large_string", "utf8"})
