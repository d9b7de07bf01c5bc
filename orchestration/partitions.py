"""Partitions of the lakehouse: daily by event date (UTC).

Silver and gold tables are partitioned by day in Delta as well, so a Dagster partition is exactly one
Delta partition and a run replaces it atomically with ``overwrite_where``. Backfills over a date range
run as one Spark job per run (``BackfillPolicy.single_run``) that replaces all dates in one commit.
"""

from __future__ import annotations

from datetime import date, datetime

from dagster import BackfillPolicy, DailyPartitionsDefinition


def _configured_start() -> str:
    """``partitions_start`` (STREAMHOUSE_PARTITIONS_START / streamhouse.yaml), read when this module loads.

    Settings that do not load fall back to the default here; the Definitions load them again and fail
    with the message naming the key.
    """
    from orchestration.settings import Settings, SettingsError, load_settings

    try:
        return load_settings().partitions_start.isoformat()
    except SettingsError:
        return Settings.model_fields["partitions_start"].default.isoformat()


PARTITION_START = _configured_start()
DAILY = DailyPartitionsDefinition(start_date=PARTITION_START, timezone="UTC")
#: At most this many days per backfill run (bounded memory on small machines).
BACKFILL_POLICY = BackfillPolicy.multi_run(max_partitions_per_run=31)


def to_date(key: str) -> date:
    return datetime.strptime(key, "%Y-%m-%d").date()


def keys(dates: set[str] | list[str]) -> list[str]:
    """Partition keys that exist in ``DAILY`` (dates before its start are dropped)."""
    return sorted(d for d in dates if d >= PARTITION_START)


def affected_days(event_dates: dict[str, list[str] | set[str]]) -> list[str]:
    """Daily partitions to recompute after bronze received events on ``event_dates`` (per topic).

    An event on day D changes silver D, tumbling D, hopping windows starting on D-1 (late evening
    windows reach into D) and D, and sessions on D-1..D+1 (a late click can join or split sessions
    across midnight). A customer/product change on day D changes enriched orders from D on, up to the
    latest day with new events.
    """
    from datetime import timedelta

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
    from datetime import timedelta

    ranges: list[tuple[str, str]] = []
    for d in sorted(days):
        if ranges and to_date(ranges[-1][1]) + timedelta(days=1) == to_date(d):
            ranges[-1] = (ranges[-1][0], d)
        else:
            ranges.append((d, d))
    return ranges
