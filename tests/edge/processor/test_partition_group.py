"""PartitionGroup (Kafka's PartitionGroup/RecordQueue): lowest timestamp first, max.task.idle.ms, lags."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from edge.processor.partition_group import UNKNOWN, PartitionGroup


def _stamp(raw):
    """Raw records here are (name, timestamp); a negative timestamp is skipped, as the task does."""
    name, ts = raw
    return None if ts < 0 else SimpleNamespace(name=name, timestamp=ts)


def _group(idle: int = 0, lag: int = 0, partitions=("a", "b")) -> PartitionGroup:
    g = PartitionGroup(idle)
    for topic in partitions:
        g.add_partition(topic, 0, f"owner-{topic}", _stamp, lag=lag)
    return g


def _drain(g: PartitionGroup, now: int = 0) -> list[str]:
    out = []
    while g.ready(now):
        nxt = g.next_record()
        if nxt is None:
            break
        out.append(nxt[1].name)
    return out


def test_lowest_head_timestamp_first_offset_order_within_a_partition():
    g = _group(idle=-1)
    g.add_records("a", 0, [("a1", 5), ("a2", 1), ("a3", 9)])
    g.add_records("b", 0, [("b1", 3), ("b2", 7)])
    assert g.num_buffered() == 5
    order = []
    while (nxt := g.next_record()) is not None:
        order.append((nxt[0], nxt[1].name))
    # a2 (ts 1) waits behind a1 (ts 5): a partition is never reordered
    assert order == [
        ("owner-b", "b1"),
        ("owner-a", "a1"),
        ("owner-a", "a2"),
        ("owner-b", "b2"),
        ("owner-a", "a3"),
    ]
    assert g.num_buffered() == 0 and not g


def test_ties_go_to_the_partition_whose_head_arrived_first():
    g = _group(idle=-1)
    g.add_records("b", 0, [("b1", 4)])
    g.add_records("a", 0, [("a1", 4)])
    assert [g.next_record()[1].name, g.next_record()[1].name] == ["b1", "a1"]


def test_skipped_heads_are_replaced_and_records_added_after_a_take_are_seen():
    g = _group(idle=-1)
    g.add_records("a", 0, [("bad", -1), ("a1", 6)])
    g.add_records("b", 0, [("b1", 2)])
    assert g.next_record()[1].name == "b1"
    g.add_records("b", 0, [("b2", 1)])  # added while "b" is the taken queue
    assert [g.next_record()[1].name, g.next_record()[1].name] == ["b2", "a1"]
    assert g.next_record() is None


def test_empty_caught_up_partition_blocks_for_max_task_idle_ms_then_processing_is_enforced():
    g = _group(idle=100)
    g.add_records("a", 0, [("a1", 5), ("a2", 6)])
    assert not g.ready(1000)  # "b" is empty: deadline 1100
    assert not g.ready(1099)
    assert g.ready(1100) and g.enforced_processing == 1
    assert _drain(g, 1100) == ["a1", "a2"]
    assert not g.ready(1100)  # nothing buffered anywhere


def test_all_partitions_buffered_is_ready_and_resets_the_idle_deadline():
    g = _group(idle=100)
    g.add_records("a", 0, [("a1", 5)])
    assert not g.ready(0)  # deadline for "b": 100
    g.add_records("b", 0, [("b1", 9)])
    assert g.ready(50) and g.enforced_processing == 0
    assert g.next_record()[1].name == "a1"
    assert not g.ready(60)  # "a" empty again: a new deadline, 160
    assert g.ready(160)
    assert g.next_record()[1].name == "b1"


def test_zero_idle_waits_only_for_partitions_whose_lag_is_unknown_or_positive():
    g = _group(idle=0, lag=UNKNOWN)
    g.add_records("a", 0, [("a1", 5)])
    assert not g.ready(0)  # "b" not fetched yet: its data may be older
    g.set_lag("b", 0, 3)
    assert not g.ready(0)  # data known to be on the broker
    g.set_lag("b", 0, 0)
    assert g.ready(0)  # caught up: no wait with max.task.idle.ms=0
    assert g.lag("b", 0) == 0


def test_disabled_idle_never_waits():
    g = _group(idle=-1, lag=UNKNOWN)
    g.add_records("a", 0, [("a1", 5)])
    assert g.ready(0)
    assert _drain(g) == ["a1"]


def test_unknown_partition_and_clear():
    g = _group()
    with pytest.raises(KeyError, match="c-0"):
        g.add_records("c", 0, [("c1", 1)])
    g.add_records("a", 0, [("a1", 1), ("a2", 2)])
    g.next_record()
    g.clear()
    assert g.num_buffered() == 0 and g.next_record() is None


def test_take_sole_hands_over_every_record_of_the_only_partition_holding_any():
    """The batch path of a stream-table join once its table is caught up: the same records, in the same
    order, as ``next_record`` one by one; the stamped head first, then the raw records after it."""
    g = _group(idle=-1)
    g.add_records("a", 0, [("a1", 5), ("a2", 1)])
    g.add_records("b", 0, [("b1", 3)])
    assert g.take_sole() is None  # two partitions hold records: lowest timestamp first, one at a time
    assert g.next_record()[1].name == "b1"
    g.add_records("a", 0, [("a3", 2)])
    owner, head, raws = g.take_sole()
    assert (owner, head.name, raws) == ("owner-a", "a1", [("a2", 1), ("a3", 2)])
    assert g.num_buffered() == 0 and not g and g.next_record() is None and g.take_sole() is None
    # the group works on afterwards: nothing of the taken records is left in its heap
    g.add_records("b", 0, [("b2", 8)])
    g.add_records("a", 0, [("a4", 7)])
    assert [g.next_record()[1].name, g.next_record()[1].name] == ["a4", "b2"]


def test_take_sole_after_a_take_and_under_enforced_processing_counts_each_record():
    g = _group(idle=100)
    g.add_records("a", 0, [("a1", 5), ("a2", 6), ("a3", 7)])
    assert not g.ready(1000)  # "b" is empty and caught up: wait until 1100
    assert g.ready(1100) and g.enforced_processing == 1
    assert g.next_record()[1].name == "a1"  # "a" is now the taken queue: its next head is not stamped
    assert g.ready(1100)
    owner, head, raws = g.take_sole()
    assert (owner, head, raws) == ("owner-a", None, [("a2", 6), ("a3", 7)])
    # one enforced ready() per record, as next_record one by one would have counted
    assert g.enforced_processing == 3
