"""Expectation suites as code: one suite per bronze, silver and gold table.

A suite lists expectations, each with an action (``warn``, ``drop``, ``fail``; see
``assets.silver.expectations``) and the Great Expectations expectation it is (type + kwargs), so the
suite becomes a GX ``ExpectationSuite`` and every result a GX ``ExpectationValidationResult`` rendered
in Data Docs. Kinds of expectation and how they are measured (``quality.engine``):

* ``row``: a SQL predicate true for a failing row (``{c:<column>}`` quotes a column for the engine),
  counted over the batch in one aggregate query
  (not-null, ranges, value sets, referential integrity via the as-of join's result, ...);
* ``dropped``: a silver ``drop`` expectation: its failing rows were sent to quarantine while writing, so
  it is measured on ``quarantine/<topic>`` (rows whose ``failed_expectations`` name it);
* ``unique``: no two rows share the key columns;
* ``type``: the column's type in the Delta schema;
* ``freshness``: the newest value of a time column is at most ``max_age`` older than the reference time;
* ``rows``: a SQL query returning the unexpected rows (reconciliation with the layer below, missing
  windows); ``{t}`` is the batch, ``{<alias>}`` an input table restricted to the same days (widened by
  its ``before``/``after``), ``{days}`` a relation of the batch's days (column ``day``). Gold suites
  run in DuckDB, so their queries are DuckDB SQL.

Row-level rules of silver come from ``assets.silver.expectations`` (silver enforces them while
writing); ``quality/`` imports ``assets/``, never the other way round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from assets.pipeline.active import active_pipeline
from assets.pipeline.model import Unique
from assets.sample_data import CLICKS, EDGE_REVENUE_5M, ORDERS
from assets.silver.expectations import ACTION_OF, DROP, FAIL, WARN, RowExpectation
from assets.silver.transform import SPARK_TYPES, SPECS
from edge.errors import StreamhouseError

ROW = "row"
DROPPED = "dropped"
UNIQUE = "unique"
TYPE = "type"
FRESHNESS = "freshness"
ROWS = "rows"

SPARK = "spark"  # large tables: measured by Spark SQL on the executors
ARROW = "arrow"  # small tables: DuckDB over the Delta table's Arrow dataset, no JVM

# Gold table names (``assets.gold.assets``; repeated here so quality/ does not load the Dagster assets).
TUMBLING = "revenue_tumbling_5m"
HOPPING = "revenue_hopping_10m"
SESSIONS = "click_sessions"
ENRICHED = "orders_enriched"
#: The edge's closed 5-minute windows (``examples.revenue_windows``), as bronze ingests them.
EDGE_WINDOWS = f"bronze.{EDGE_REVENUE_5M}"


class UnknownTableError(StreamhouseError):
    pass


@dataclass(frozen=True)
class Expectation:
    name: str
    kind: str
    action: str
    gx_type: str
    gx_kwargs: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    #: ``row``: SQL predicate, true when the row fails; ``rows``: query returning the unexpected rows
    sql: str = ""
    #: ``unique``: key columns; ``type``: (column, Spark simple type); ``freshness``: (column,)
    columns: tuple[str, ...] = ()
    max_age: timedelta | None = None

    @property
    def severity(self) -> str:
        """ERROR for ``fail`` (blocking), WARN for ``warn`` and ``drop`` (reported)."""
        return "ERROR" if self.action == FAIL else "WARN"


@dataclass(frozen=True)
class Input:
    """Another table a ``rows`` expectation reads, restricted to the batch's days on ``partition``
    (widened by ``before``/``after`` days, for windows and sessions that cross midnight)."""

    table: str
    partition: str | None
    before: int = 0
    after: int = 0
    #: a missing optional table (an edge app not deployed) skips its expectations instead of failing
    optional: bool = False


@dataclass(frozen=True)
class Suite:
    table: str  # "silver.orders"
    engine: str
    #: the table's daily partition column (a run checks the days it built); None: the whole table
    partition: str | None
    expectations: tuple[Expectation, ...]
    inputs: Mapping[str, Input] = field(default_factory=dict)
    description: str = ""

    @property
    def layer(self) -> str:
        return self.table.split(".", 1)[0]

    @property
    def name(self) -> str:
        return self.table.split(".", 1)[1]

    @property
    def asset_key_path(self) -> list[str]:
        return [self.layer, self.name]

    def expectation(self, name: str) -> Expectation:
        for e in self.expectations:
            if e.name == name:
                return e
        raise KeyError(name)


def _from_row(exp: RowExpectation) -> Expectation:
    kind = DROPPED if exp.action == DROP else ROW
    return Expectation(
        exp.name,
        kind,
        exp.action,
        exp.gx_type,
        dict(exp.gx_kwargs),
        f"silver row rule ({exp.action}): fails when {exp.violation}",
        sql=exp.violation,
    )


def not_null(column: str, action: str = FAIL) -> Expectation:
    return Expectation(
        f"{column}_not_null",
        ROW,
        action,
        "expect_column_values_to_not_be_null",
        {"column": column},
        f"{column} is never null",
        sql=f"{{c:{column}}} IS NULL",  # quoted per engine: bronze has a column named offset
    )


def between(
    name: str, column: str, low: float | None = None, high: float | None = None, action: str = FAIL
) -> Expectation:
    parts = ([f"{column} < {low}"] if low is not None else []) + (
        [f"{column} > {high}"] if high is not None else []
    )
    kwargs: dict[str, Any] = {"column": column}
    if low is not None:
        kwargs["min_value"] = low
    if high is not None:
        kwargs["max_value"] = high
    return Expectation(
        name,
        ROW,
        action,
        "expect_column_values_to_be_between",
        kwargs,
        f"{column} within [{low}, {high}]",
        sql=" OR ".join(parts),
    )


def rule(name: str, violation: str, description: str, action: str = FAIL, **gx: Any) -> Expectation:
    """A row predicate with no dedicated GX expectation: shown as ``unexpected_rows_expectation``."""
    return Expectation(
        name,
        ROW,
        action,
        "unexpected_rows_expectation",
        {"unexpected_rows_query": f"SELECT * FROM {{batch}} WHERE {violation}", **gx},
        description,
        sql=violation,
    )


def unique(columns: tuple[str, ...], action: str = FAIL, name: str | None = None) -> Expectation:
    if len(columns) == 1:
        gx_type, kwargs = "expect_column_values_to_be_unique", {"column": columns[0]}
    else:
        gx_type, kwargs = "expect_compound_columns_to_be_unique", {"column_list": list(columns)}
    return Expectation(
        name or f"{'_'.join(columns)}_unique",
        UNIQUE,
        action,
        gx_type,
        kwargs,
        f"one row per {', '.join(columns)}",
        columns=columns,
    )


def column_type(column: str, spark_type: str, action: str = FAIL) -> Expectation:
    return Expectation(
        f"{column}_type",
        TYPE,
        action,
        "expect_column_values_to_be_of_type",
        {"column": column, "type_": spark_type},
        f"{column} is {spark_type}",
        columns=(column, spark_type),
    )


def freshness(column: str, max_age: timedelta, action: str = WARN) -> Expectation:
    return Expectation(
        f"{column}_fresh",
        FRESHNESS,
        action,
        "expect_column_max_to_be_between",
        {"column": column},
        f"newest {column} at most {max_age} before the reference time",
        columns=(column,),
        max_age=max_age,
    )


def rows(name: str, sql: str, description: str, action: str = FAIL) -> Expectation:
    return Expectation(
        name,
        ROWS,
        action,
        "unexpected_rows_expectation",
        {"unexpected_rows_query": sql},
        description,
        sql=sql,
    )


#: Bronze: the newest record may be at most this old when checked (reference: ``QualityResource.as_of``
#: or now). Reported (warn): a quiet topic must not stop the pipeline.
BRONZE_MAX_AGE = timedelta(days=1)


def _bronze(topic: str) -> Suite:
    # Freshness only for event topics (read by an event table with an event time): dimension topics
    # change rarely, edge outputs follow the edge.
    events = active_pipeline().event_tables.get(topic)
    fresh = (freshness("event_timestamp", BRONZE_MAX_AGE),) if events and events.event_time else ()
    return Suite(
        f"bronze.{topic}",
        SPARK,
        None,
        (
            not_null("topic"),
            not_null("partition"),
            not_null("offset"),
            not_null("event_timestamp"),
            not_null("value", WARN),
            unique(("topic", "partition", "offset"), name="kafka_position_unique"),
            *fresh,
        ),
        description="raw Kafka records: each Kafka position exactly once, and recent",
    )


def _silver(topic: str) -> Suite:
    spec = SPECS[topic]
    row_rules = tuple(_from_row(e) for e in spec.expectations)
    types = tuple(column_type(name, SPARK_TYPES[typ]) for name, typ in spec.contract.items())
    declared = active_pipeline().silver_tables()[topic].expectations
    extra: tuple[Expectation, ...] = tuple(
        unique(tuple(e.columns), ACTION_OF[e.action], e.resolved_name)
        for e in declared
        if isinstance(e, Unique)
    )
    key = spec.key
    if spec.scd_type == 2:
        key = (*spec.keys, "valid_from")
        extra += (rule("validity_interval_ordered", "valid_to <= valid_from", "valid_from < valid_to"),)
    return Suite(
        f"silver.{topic}",
        SPARK,
        "event_date" if spec.time_col is not None else None,
        (*row_rules, *types, unique(key), *extra),
        inputs={"quarantine": Input(f"quarantine.{topic}", "event_date" if spec.time_col else None)},
        description=f"typed {topic}: the contract, the row rules (drop → quarantine), one row per key",
    )


_TUMBLING_RECONCILE = """
WITH g AS (SELECT window_date AS day, sum(orders) AS orders, sum(units) AS units, sum(revenue) AS revenue,
                  count(*) AS windows FROM {t} GROUP BY 1),
     s AS (SELECT event_date AS day, count(*) AS orders, sum(quantity) AS units,
                  sum(quantity * unit_price) AS revenue FROM {silver_orders} GROUP BY 1)
SELECT coalesce(g.day, s.day) AS day, g.orders AS gold_orders, s.orders AS silver_orders,
       g.units AS gold_units, s.units AS silver_units,
       round(g.revenue, 2) AS gold_revenue, round(s.revenue, 2) AS silver_revenue
FROM g FULL OUTER JOIN s ON g.day = s.day
WHERE g.orders IS DISTINCT FROM s.orders OR g.units IS DISTINCT FROM s.units
   OR abs(coalesce(g.revenue, 0) - coalesce(s.revenue, 0)) > 0.005 * coalesce(g.windows, 0) + 0.01
"""

_ENRICHED_RECONCILE = """
WITH g AS (SELECT event_date AS day, count(*) AS n FROM {t} GROUP BY 1),
     s AS (SELECT event_date AS day, count(*) AS n FROM {silver_orders} GROUP BY 1)
SELECT coalesce(g.day, s.day) AS day, g.n AS gold_rows, s.n AS silver_rows
FROM g FULL OUTER JOIN s ON g.day = s.day
WHERE g.n IS DISTINCT FROM s.n
"""


#: Each order is in the 10 hopping windows starting in its minute and the 9 before; of those, the ones
#: starting on day D (minutes a .. a + 1439) number least(m, a + 1439) - greatest(m - 9, a) + 1 for an
#: order in minute m in a .. a + 1448: 10 inside the day, fewer in its first 9 minutes, and the first
#: 9 minutes of D + 1 still count (windows starting 23:51 .. 23:59 reach into them).
_HOPPING_RECONCILE = """
WITH g AS (SELECT window_date AS day, sum(orders) AS orders, sum(revenue) AS revenue, count(*) AS windows
           FROM {t} GROUP BY 1),
     o AS (SELECT CAST(floor(epoch_ms(event_time) / 60000) AS BIGINT) AS m, quantity * unit_price AS amount
           FROM {silver_orders}),
     r AS (SELECT day, CAST(epoch_ms(CAST(day AS TIMESTAMP)) // 60000 AS BIGINT) AS a FROM {days}),
     w AS (SELECT r.day, least(o.m, r.a + 1439) - greatest(o.m - 9, r.a) + 1 AS k, o.amount
           FROM r JOIN o ON o.m BETWEEN r.a AND r.a + 1448),
     s AS (SELECT day, sum(k) AS orders, sum(k * amount) AS revenue FROM w GROUP BY 1)
SELECT r.day, g.orders AS gold_order_windows, s.orders AS silver_order_windows,
       round(g.revenue, 2) AS gold_revenue, round(s.revenue, 2) AS silver_revenue
FROM r LEFT JOIN g ON g.day = r.day LEFT JOIN s ON s.day = r.day
WHERE coalesce(g.orders, 0) <> coalesce(s.orders, 0)
   OR abs(coalesce(g.revenue, 0) - coalesce(s.revenue, 0)) > 0.005 * coalesce(g.windows, 0) + 0.01
ORDER BY 1
"""

#: Sessions recomputed from silver/clicks (the day before and after included) by the gap rule alone: a
#: click starts a session when its user's previous click is more than 30 minutes earlier or absent; a
#: click belongs to the session of the latest start at or before it. Each gold session must be one of
#: them (same user, start, end and clicks) and each of them a gold session; mismatches are counted per
#: day of the session start.
_SESSIONS_RECONCILE = """
WITH c AS (SELECT user_id, event_id, event_time,
                  coalesce(epoch_ms(event_time) - epoch_ms(lag(event_time) OVER (
                      PARTITION BY user_id ORDER BY event_time, event_id)) > 1800000, true) AS is_start
           FROM {silver_clicks}),
     k AS (SELECT user_id, event_time,
                  max(CASE WHEN is_start THEN event_time END) OVER (
                      PARTITION BY user_id ORDER BY event_time, event_id
                      ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS started
           FROM c),
     s AS (SELECT user_id, started AS session_start, max(event_time) AS session_end, count(*) AS clicks
           FROM k GROUP BY 1, 2),
     j AS (SELECT CAST(coalesce(g.session_start, s.session_start) AS DATE) AS day,
                  g.clicks AS gold_clicks, s.clicks AS silver_clicks,
                  coalesce(g.session_end = s.session_end, false) AS same_end
           FROM {t} g FULL OUTER JOIN s ON g.user_id = s.user_id AND g.session_start = s.session_start)
SELECT d.day, count(j.gold_clicks) AS gold_sessions, count(j.silver_clicks) AS silver_sessions,
       sum(j.gold_clicks) AS gold_clicks, sum(j.silver_clicks) AS silver_clicks,
       count_if(j.gold_clicks IS DISTINCT FROM j.silver_clicks OR NOT j.same_end) AS sessions_differing
FROM {days} d JOIN j ON j.day = d.day
GROUP BY d.day HAVING count_if(j.gold_clicks IS DISTINCT FROM j.silver_clicks OR NOT j.same_end) > 0
ORDER BY 1
"""

#: The edge's windows as bronze holds them (the last copy of a window wins: an at-least-once restart may
#: emit it again), and per product the start of the last window it emitted: every window of that
#: product up to it has closed at the edge (one task owns a product, and closes its windows in time
#: order), later ones may still be open and are not compared.
_EDGE_RECONCILE = """
WITH raw AS (SELECT decode(value) AS v, "partition" AS p, "offset" AS o FROM {edge}),
     parsed AS (SELECT json_extract_string(v, '$.product_id') AS product_id,
                       CAST(json_extract(v, '$.window_start') AS BIGINT) AS ws,
                       CAST(json_extract(v, '$.orders') AS BIGINT) AS orders,
                       CAST(json_extract(v, '$.units') AS BIGINT) AS units,
                       CAST(json_extract(v, '$.revenue') AS DOUBLE) AS revenue, p, o FROM raw),
     latest AS (SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY product_id, ws
                                                            ORDER BY p DESC, o DESC) AS rn
                               FROM parsed) x WHERE rn = 1),
     h AS (SELECT product_id, max(ws) AS last_closed FROM latest GROUP BY 1),
     e AS (SELECT l.* FROM latest l JOIN {days} d
             ON l.ws >= epoch_ms(CAST(d.day AS TIMESTAMP))
            AND l.ws < epoch_ms(CAST(d.day AS TIMESTAMP)) + 86400000),
     g AS (SELECT product_id, epoch_ms(window_start) AS ws, orders, units, revenue FROM {t})
SELECT coalesce(g.product_id, e.product_id) AS product_id,
       make_timestamp(coalesce(g.ws, e.ws) * 1000) AS window_start,
       g.orders AS gold_orders, e.orders AS edge_orders, g.units AS gold_units, e.units AS edge_units,
       g.revenue AS gold_revenue, e.revenue AS edge_revenue
FROM g FULL OUTER JOIN e ON g.product_id = e.product_id AND g.ws = e.ws
JOIN h ON h.product_id = coalesce(g.product_id, e.product_id)
WHERE coalesce(g.ws, e.ws) <= h.last_closed
  AND (g.orders IS DISTINCT FROM e.orders OR g.units IS DISTINCT FROM e.units
       OR abs(coalesce(g.revenue, 0) - coalesce(e.revenue, 0)) > 0.0101)
ORDER BY 1, 2
"""


#: A missing window is one in which silver/orders has orders but gold has no row. A window without
#: orders is not missing: gold writes only windows that hold orders (``orders_positive``), so sparse data
#: has gaps between a day's first and last window that are no fault (counting those gaps, as this check
#: once did, failed the demo's own data). Tumbling: every (5-minute window, product) with orders.
_MISSING_TUMBLING = """
WITH s AS (SELECT DISTINCT CAST(floor(epoch_ms(event_time) / 300000) AS BIGINT) AS w, product_id
           FROM {silver_orders}),
     g AS (SELECT CAST(epoch_ms(window_start) // 300000 AS BIGINT) AS w, product_id FROM {t})
SELECT make_timestamp(s.w * 300000000) AS window_start, s.product_id
FROM s LEFT JOIN g ON g.w = s.w AND g.product_id = s.product_id
WHERE g.w IS NULL
ORDER BY 1, 2
"""

#: Hopping: every window starting on one of the batch's days (every minute, 10 minutes long) that holds
#: an order: an order in minute m is in the windows starting m - 9 .. m, so orders of D + 1's first
#: 9 minutes count for D's last windows.
_MISSING_HOPPING = """
WITH r AS (SELECT day, CAST(epoch_ms(CAST(day AS TIMESTAMP)) // 60000 AS BIGINT) AS a FROM {days}),
     o AS (SELECT DISTINCT CAST(floor(epoch_ms(event_time) / 60000) AS BIGINT) AS m FROM {silver_orders}),
     w AS (SELECT DISTINCT r.day, o.m - k.i AS start
           FROM r JOIN o ON o.m BETWEEN r.a AND r.a + 1448 CROSS JOIN range(10) k(i)
           WHERE o.m - k.i BETWEEN r.a AND r.a + 1439),
     g AS (SELECT CAST(epoch_ms(window_start) // 60000 AS BIGINT) AS start FROM {t})
SELECT w.day, make_timestamp(w.start * 60000000) AS window_start
FROM w LEFT JOIN g ON g.start = w.start
WHERE g.start IS NULL
ORDER BY 2
"""


_SILVER_ORDERS = {"silver_orders": Input(f"silver.{ORDERS}", "event_date")}


def _gold() -> list[Suite]:
    return [
        Suite(
            f"gold.{TUMBLING}",
            ARROW,
            "window_date",
            (
                not_null("window_start"),
                not_null("product_id"),
                unique(("window_start", "product_id"), name="one_row_per_window_and_product"),
                rule(
                    "window_is_5_minutes",
                    "window_end - window_start <> INTERVAL 5 MINUTE",
                    "5-minute windows",
                ),
                between("revenue_non_negative", "revenue", low=0),
                between("orders_positive", "orders", low=1),
                rule("units_at_least_orders", "units < orders", "every order has at least one unit"),
                rows(
                    "totals_match_silver",
                    _TUMBLING_RECONCILE,
                    "per day: orders, units and revenue equal silver/orders' totals of the same day",
                ),
                rows(
                    "no_missing_windows",
                    _MISSING_TUMBLING,
                    "every 5-minute window in which silver/orders has orders of a product has gold's row "
                    "for it (a window without orders is not missing: gold writes none)",
                    WARN,
                ),
                rows(
                    "edge_windows_match_gold",
                    _EDGE_RECONCILE,
                    "the latest value of every window the edge app examples.revenue_windows emitted "
                    "(bronze/edge_revenue_5m: product, window start, orders, units, revenue; closed windows "
                    "when it runs live, every update while the demo catches up on a backlog) equals gold's; "
                    "windows the edge has not emitted are not compared, and without the edge's table there "
                    "is nothing to compare",
                    WARN,
                ),
            ),
            inputs={
                **_SILVER_ORDERS,
                "edge": Input(EDGE_WINDOWS, "event_date", after=1, optional=True),
            },
        ),
        Suite(
            f"gold.{HOPPING}",
            ARROW,
            "window_date",
            (
                not_null("window_start"),
                unique(("window_start",), name="one_row_per_window"),
                between("orders_positive", "orders", low=1),
                rule("customers_at_most_orders", "customers > orders", "distinct customers <= orders"),
                rows(
                    "no_missing_windows",
                    _MISSING_HOPPING,
                    "every window (one starts each minute) that holds an order of silver/orders is in gold "
                    "(a window without orders is not missing: gold writes none)",
                    WARN,
                ),
                rows(
                    "totals_match_silver",
                    _HOPPING_RECONCILE,
                    "per day D: the orders and revenue summed over D's windows equal silver/orders counted "
                    "once per window holding them: 10 times inside D, (minute of day + 1) times in D's "
                    "first 9 minutes, and 9 down to 1 times in the first 9 minutes of D + 1 (windows "
                    "starting 23:51-23:59 reach into them); exact, whatever crosses midnight",
                ),
            ),
            inputs={"silver_orders": Input(f"silver.{ORDERS}", "event_date", after=1)},
        ),
        Suite(
            f"gold.{SESSIONS}",
            ARROW,
            "session_date",
            (
                not_null("user_id"),
                unique(("user_id", "session_start"), name="one_row_per_user_session"),
                rule(
                    "session_end_after_start", "session_end < session_start", "session_end >= session_start"
                ),
                between("clicks_positive", "clicks", low=1),
                rule("pages_at_most_clicks", "pages > clicks", "distinct pages <= clicks"),
                rule(
                    "sessions_within_gap_bounds",
                    "duration_s > (clicks - 1) * 1800",
                    "a session cannot last longer than (clicks - 1) x the 30-minute gap",
                ),
                rule(
                    "duration_s_truncates_duration_ms",
                    "duration_s <> duration_ms // 1000",
                    "duration_s is duration_ms in whole seconds, truncated (docs/data-contract.md, Sessions)",
                ),
                rows(
                    "sessions_match_silver",
                    _SESSIONS_RECONCILE,
                    "per day D (sessions by start date): every session equals the one silver/clicks "
                    "form by the gap rule alone (a click more than 30 minutes after its user's previous "
                    "click, or the first, starts one; the others join the latest start), with the same "
                    "user, start, end and clicks, and no session is missing on either side; D - 1 and "
                    "D + 1 are read, as gold reads them, so sessions crossing midnight are exact",
                ),
            ),
            inputs={"silver_clicks": Input(f"silver.{CLICKS}", "event_date", before=1, after=1)},
        ),
        Suite(
            f"gold.{ENRICHED}",
            ARROW,
            "event_date",
            (
                not_null("order_id"),
                unique(("order_id",)),
                rule(
                    "customer_exists_at_order_time",
                    "profile_valid_from IS NULL",
                    "every order's customer has a profile valid at the order's time in silver/customers",
                ),
                rule(
                    "product_exists",
                    "product_name IS NULL",
                    "every order's product exists in silver/products",
                ),
                rule(
                    "missing_dimensions_marked",
                    "list_contains(missing_dimensions, 'customer_profile') <> (profile_valid_from IS NULL) "
                    "OR list_contains(missing_dimensions, 'product') <> (product_name IS NULL)",
                    "missing_dimensions names exactly the dimensions the left join did not find "
                    "(docs/data-contract.md, Joins)",
                ),
                rows(
                    "orders_match_silver",
                    _ENRICHED_RECONCILE,
                    "per day: one enriched row per silver order",
                ),
            ),
            inputs=_SILVER_ORDERS,
        ),
    ]


def _declared_gold(name: str) -> Suite:
    """What a declared gold table promises by its kind: one row per window (or session, or joined
    event) and key, windows of the declared size, no row without its partition day."""
    from assets.gold.declared import gold_table
    from assets.pipeline.model import AsOfJoin, Join, WindowAggregate

    pipeline = active_pipeline()
    table = pipeline.gold_tables[name]
    partition = gold_table(pipeline, name).partition
    checks: list[Expectation] = [not_null(partition)]
    if isinstance(table, WindowAggregate):
        start = "session_start" if table.window.type == "session" else "window_start"
        checks += [not_null(start), *(not_null(c) for c in table.group_by)]
        checks.append(unique((start, *table.group_by), name="one_row_per_window_and_key"))
        if table.window.type == "session":
            checks.append(rule("session_ends_after_it_starts", "session_end < session_start", "end >= start"))
        elif (size := table.window.size or 0) % 1000 == 0:
            checks.append(
                rule(
                    "window_has_its_declared_size",
                    f"window_end - window_start <> INTERVAL {size // 1000} SECOND",
                    f"every window lasts {size // 1000} s",
                )
            )
    elif isinstance(table, AsOfJoin | Join) and table.input in pipeline.event_tables:
        key = tuple(pipeline.event_tables[table.input].key)
        checks += [*(not_null(c) for c in key), unique(key, name="one_row_per_event")]
    return Suite(f"gold.{name}", ARROW, partition, tuple(checks), description=table.description or name)


def _all() -> dict[str, Suite]:
    pipeline = active_pipeline()
    suites = [_bronze(t) for t in pipeline.sources]
    suites += [_silver(t) for t in SPECS]
    # The demo's own gold reconciliations (against silver and the edge; not yet declared checks), and
    # for every other declared gold table what its kind promises.
    demo = {s.name: s for s in _gold()} if pipeline.name == "demo" else {}
    suites += [demo.get(name) or _declared_gold(name) for name in pipeline.gold_tables]
    return {s.table: s for s in suites}


SUITES: dict[str, Suite] = _all()


def get_suite(table: str) -> Suite:
    """The suite of ``table`` (``silver.orders``; ``silver/orders`` is accepted too)."""
    name = table.replace("/", ".")
    if name not in SUITES:
        import difflib

        close = difflib.get_close_matches(name, list(SUITES), n=1)
        hint = f"; did you mean {close[0]}?" if close else f"; known: {', '.join(sorted(SUITES))}"
        raise UnknownTableError(f"no expectation suite for table {table}{hint}")
    return SUITES[name]


__all__ = [
    "ARROW",
    "CLICKS",
    "DROP",
    "FAIL",
    "SPARK",
    "SUITES",
    "WARN",
    "Expectation",
    "Input",
    "Suite",
    "get_suite",
]
