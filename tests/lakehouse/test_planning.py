"""Fast checks (no broker, no Spark): sample data determinism and affected-partition planning."""

from __future__ import annotations

from assets import sample_data
from assets.partitions import affected_days, contiguous_ranges


def test_sample_data_is_deterministic_and_injects_bad_records():
    a = sample_data.generate(1000, invalid_ratio=0.05, duplicate_ratio=0.05, late_ratio=0.1)
    b = sample_data.generate(1000, invalid_ratio=0.05, duplicate_ratio=0.05, late_ratio=0.1)
    assert a.records == b.records
    assert a.injected["orders"] == {"late": a.injected["orders"]["late"], "invalid": 25, "duplicate": 25}
    assert len(a.records["orders"]) == 500 + 25 + 25
    payloads = list(a.payloads("orders"))
    assert payloads.count(None) >= 1  # some are not even JSON
    assert all(r.timestamp_ms > 0 for r in a.records["clicks"])


def test_late_orders_arrive_late_by_after_their_event_time_not_at_the_end():
    """A late order is produced among the orders of its arrival time (event time + late_by), so it is
    late_by behind the newest order before it, never days; the others are in event-time order."""
    data = sample_data.generate(4000, days=3, late_ratio=0.05)
    times = [r.timestamp_ms for r in data.records["orders"]]
    late_ms, step = 6 * 3_600_000, 3 * 86_400_000 // 2000
    behind, newest = [], times[0]
    for ts in times:
        behind.append(newest - ts)
        newest = max(newest, ts)
    assert data.injected["orders"]["late"] == sum(1 for b in behind if b > 2 * step) > 50
    assert max(behind) <= late_ms + 2 * step  # at most late_by (plus the slots' jitter), not days
    # the late ones are spread over the batch, not appended at its end
    late_at = [i for i, b in enumerate(behind) if b > 2 * step]
    assert late_at[0] < len(times) // 4 and late_at[-1] > len(times) * 3 // 4


def test_affected_days_cover_window_spill_and_profile_changes():
    """Derived from the demo's declaration: an order reaches back into the evening's 10-minute hopping
    windows (D-1) and no further; a click also into the sessions either side of midnight."""
    assert affected_days({"orders": ["2026-01-06"]}) == ["2026-01-05", "2026-01-06"]
    assert affected_days({"clicks": ["2026-01-06"]}) == ["2026-01-05", "2026-01-06", "2026-01-07"]
    days = affected_days({"orders": ["2026-01-09"], "customers": ["2026-01-06"]})
    assert days == ["2026-01-06", "2026-01-07", "2026-01-08", "2026-01-09"]
    assert affected_days({"orders": ["2020-01-01"]}) == []  # before the partitions start
    assert contiguous_ranges(["2026-01-01", "2026-01-02", "2026-01-05"]) == [
        ("2026-01-01", "2026-01-02"),
        ("2026-01-05", "2026-01-05"),
    ]
