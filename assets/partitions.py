"""Partitions of the lakehouse: daily by event date (UTC).

Silver and gold tables are partitioned by day in Delta as well, so a Dagster partition is exactly one
Delta partition and a run replaces it atomically with ``overwrite_where``. Backfills over a date range
run as one Spark job per run (``BackfillPolicy.multi_run``) that replaces all its dates in one commit.

The first day is the ``partitions_start`` setting. The asset definitions need it when they are
imported, and ``assets/`` must not import ``orchestration/`` where settings are parsed, so this one key
is read through the settings-free locator (:mod:`edge.home`), with the settings' precedence:
``STREAMHOUSE_PARTITIONS_START``, else ``partitions_start`` in ``$STREAMHOUSE_CONFIG``,
``./streamhouse.yaml`` or the project home's ``streamhouse.yaml``, else 2026-01-01. A malformed value
falls back to the default here; ``orchestration.definitions`` compares the start with the loaded
settings and fails with the message naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, timedelta

from dagster import BackfillPolicy, DailyPartitionsDefinition

from edge.home import config_value

DEFAULT_PARTITION_START = "2026-01-01"


def configured_start(environ: Mapping[str, str] | None = None) -> str:
    """``partitions_start`` as ISO date, with the settings' precedence (environment > file > default)."""
    raw = config_value("partitions_start", environ)
    if isinstance(raw, date):
        return raw.isoformat()
    try:
        return date.fromisoformat(str(raw)).isoformat() if raw else DEFAULT_PARTITION_START
    except ValueError:
        return DEFAULT_PARTITION_START


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

    An event on day D changes silver D, tumbling D, hopping windows starting on D-1 (late evening
    windows reach into D) and D, and sessions on D-1..D+1 (a late click can join or split sessions
    across midnight). A customer/product change on day D changes enriched orders from D on, up to the
    latest day with new events.
    """
    events = {d for topic, ds in event_dates.items() if topic in ("orders", "clicks") for d in ds}
    dims = {d for topic, ds in event_dates.items() if topic in ("customers", "products") for d in ds}
    days: set[str] = set()
    for d in events:
        day = to_date(d)
        days |= {(day + timedelta(days=i)).isoformat() for i in (-1, 0, 1)}
    if dims and events:
        last = max(to_date(d) for d in events)
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
