"""Partitions of the lakehouse: daily by event date (UTC).

Silver and gold tables are partitioned by day in Delta as well, so a Dagster partition is exactly one
Delta partition and a run replaces it atomically with ``overwrite_where``. Backfills over a date range
run as one Spark job per run (``BackfillPolicy.multi_run``) that replaces all its dates in one commit.

The first day is the ``partitions_start`` setting. The asset definitions need it when they are
imported, and ``assets/`` must not import ``orchestration/`` where settings are parsed, so this one key
is read through the settings-free locator (:mod:`edge.home`), with the settings' precedence:
``STREAMHOUSE_PARTITIONS_START``, else ``partitions_start`` in ``$STREAMHOUSE_CONFIG``,
``./streamhouse.yaml`` or the project home's ``streamhouse.yaml``, else the default below. A malformed
value falls back to the default here; ``orchestration.definitions`` compares the start with the loaded
settings and fails with the message naming the key.

Unset, the partitions start the day before the first day silver's event tables hold: that day's
hopping windows starting 23:51-23:59 already hold the first orders, and the pipeline builds it with the
first day. An empty lake starts ``RECENT_DAYS`` before today: the days the demo's data will fill. A
fixed default (it was 2026-01-01) made the UI show every day since as a partition: after a demo, "3
materialized, 325 missing" and a grey graph; a start a week back still showed "Missing (2)" for days
before the data. A day already built stays a partition however old it gets; data for an earlier day
is taken up when the definitions are next loaded (``make dagster`` loads them at start, the UI's
"Reload location" again).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, date, datetime, timedelta

from dagster import BackfillPolicy, DailyPartitionsDefinition

from assets.pipeline.active import active_pipeline
from edge.home import config_value, resolve_path

#: Without ``partitions_start``, on an empty lake: the partitions start this many days before today,
#: the days the demo fills: its three days ending last midnight, the day before (late events, 6 h
#: behind) and that day's evening windows (``LEAD_DAYS``).
RECENT_DAYS = 5
#: Partitions before the first day of data: its hopping windows starting the evening before hold data.
LEAD_DAYS = 1
#: Silver's event tables (the configured pipeline's, with an event time); their ``event_date=`` partition
#: directories say which days hold data.
EVENT_TABLES = tuple(f"silver/{name}" for name, t in active_pipeline().event_tables.items() if t.event_time)


def first_data_day(environ: Mapping[str, str] | None = None) -> date | None:
    """The first day silver's event tables hold, from their partition directories (the lake root as the
    settings resolve it). Directory names only: no Delta log is read when the definitions load. A
    directory left by a replaced partition (until vacuum) only makes the start earlier, never hides
    data. None for an empty lake or one that is not a local path."""
    value = config_value("lake_root", environ)
    root = str(value) if value else ".state/lake"
    if "://" in root:
        return None
    days = []
    for table in EVENT_TABLES:
        folder = resolve_path(root, environ) / table
        for child in folder.glob("event_date=*") if folder.is_dir() else ():
            try:
                days.append(date.fromisoformat(child.name.removeprefix("event_date=")))
            except ValueError:
                continue
    return min(days, default=None)


def default_start(environ: Mapping[str, str] | None = None, today: date | None = None) -> str:
    """The first partition when ``partitions_start`` is unset: ``LEAD_DAYS`` before the first day of
    data, or ``RECENT_DAYS`` before ``today`` (UTC) on an empty lake (see the module docstring)."""
    first = first_data_day(environ)
    if first is not None:
        return (first - timedelta(days=LEAD_DAYS)).isoformat()
    return ((today or datetime.now(UTC).date()) - timedelta(days=RECENT_DAYS)).isoformat()


def configured_start(environ: Mapping[str, str] | None = None) -> str:
    """``partitions_start`` as ISO date, with the settings' precedence (environment > file > default)."""
    raw = config_value("partitions_start", environ)
    if isinstance(raw, date):
        return raw.isoformat()
    try:
        return date.fromisoformat(str(raw)).isoformat() if raw else default_start(environ)
    except ValueError:
        return default_start(environ)


PARTITION_START = configured_start()
DAILY = DailyPartitionsDefinition(start_date=PARTITION_START, timezone="UTC")
#: At most this many days per backfill run (bounded memory on small machines).
BACKFILL_POLICY = BackfillPolicy.multi_run(max_partitions_per_run=31)


def to_date(key: str) -> date:
    return datetime.strptime(key, "%Y-%m-%d").date()


def keys(dates: set[str] | list[str]) -> list[str]:
    """Partition keys that exist in ``DAILY`` (dates before its start are dropped)."""
    return sorted(d for d in dates if d >= PARTITION_START)


def affected_days(event_dates: Mapping[str, list[str] | set[str]]) -> list[str]:
    """Daily partitions to recompute after bronze received events on ``event_dates`` (per topic).

    Derived from the configured pipeline (``assets.gold.declared.event_reach``): an event on day D
    changes its silver day and every gold day that reads D (the demo's: tumbling D, hopping windows
    starting on D-1, whose evening windows reach into D, and D, sessions on D-1..D+1). A change to a
    table kept whole (a change table, a dimension) on day D changes the days from D on, up to the
    latest day with new events.
    """
    from assets.gold.declared import event_reach

    pipeline = active_pipeline()
    reach = event_reach(pipeline)
    wholes = set(pipeline.silver_tables()) - set(reach)
    events = {(d, topic) for topic, ds in event_dates.items() if topic in reach for d in ds}
    dims = {d for topic, ds in event_dates.items() if topic in wholes for d in ds}
    days: set[str] = set()
    for d, topic in events:
        day = to_date(d)
        lo, hi = reach[topic]
        days |= {(day + timedelta(days=i)).isoformat() for i in range(lo, hi + 1)}
    if dims and events:
        last = max(to_date(d) for d, _ in events)
        first = max(min(to_date(d) for d in dims), to_date(PARTITION_START))
        day = first
        while day <= last:
            days.add(day.isoformat())
            day += timedelta(days=1)
    return keys(days)


def contiguous_ranges(days: list[str]) -> list[tuple[str, str]]:
    """[(start, end)] covering ``days``: one run per contiguous range of partition keys."""
    ranges: list[tuple[str, str]] = []
    for d in sorted(days):
        if ranges and to_date(ranges[-1][1]) + timedelta(days=1) == to_date(d):
            ranges[-1] = (ranges[-1][0], d)
        else:
            ranges.append((d, d))
    return ranges
