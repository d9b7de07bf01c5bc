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


def _drain_as_the_runtime_does(g: PartitionGroup, out: list[str], now: int = 0) -> None:
    """``RecordRouter.process_buffered``: the sole partition's batch, the all-buffered drain, else one
    record at a time."""
    while g.ready(now):
        sole = g.take_sole()
        if sole is not None:
            _, head, raws = sole
            if head is not None:
                out.append(head.name)
            out.extend(name for name, ts in raws if ts >= 0)
            continue
        if g.all_buffered():
            # 0 when the taken partition held only records its stamp drops: it is empty now
            g.drain_while_all_buffered(lambda owner, rec: out.append(rec.name))
            continue
        nxt = g.next_record()
        if nxt is None:
            break
        out.append(nxt[1].name)


def test_drain_while_all_buffered_stops_when_a_partition_runs_dry():
    g = _group(idle=0)  # zero idle: an empty partition of unknown lag blocks
    g.add_records("a", 0, [("a1", 1), ("a2", 2), ("a3", 9)])
    g.add_records("b", 0, [("b1", 3), ("b2", 4)])
    g.set_lag("a", 0, UNKNOWN)
    g.set_lag("b", 0, UNKNOWN)
    assert g.all_buffered()
    seen = []
    assert g.drain_while_all_buffered(lambda owner, rec: seen.append((owner, rec.name))) == 4
    # b2 went, "b" is empty and its lag unknown: a3 (ts 9) waits for b's next fetch
    assert seen == [("owner-a", "a1"), ("owner-a", "a2"), ("owner-b", "b1"), ("owner-b", "b2")]
    assert not g.all_buffered() and not g.ready(0) and g.num_buffered() == 1
    g.add_records("b", 0, [("b3", 5)])
    assert g.all_buffered()
    assert g.drain_while_all_buffered(lambda owner, rec: seen.append((owner, rec.name))) == 1
    assert seen[-1] == ("owner-b", "b3")


def test_drain_while_all_buffered_skips_heads_the_stamp_drops():
    g = _group(idle=-1)
    g.add_records("a", 0, [("a1", 1), ("bad", -1), ("a2", 6)])
    g.add_records("b", 0, [("b1", 3), ("b2", 8)])
    out: list[str] = []
    _drain_as_the_runtime_does(g, out)
    assert out == ["a1", "b1", "a2", "b2"]


@pytest.mark.parametrize("seed", range(40))
def test_the_runtime_loop_hands_out_exactly_next_records_order(seed):
    """Random interleavings, ties, skipped records and records added between passes, on 2-3 partitions:
    the drain and the sole batch give the same order as ``next_record`` one at a time."""
    import random

    rnd = random.Random(seed)
    topics = ("a", "b", "c")[: rnd.choice((2, 3))]
    chunks = []
    for _ in range(rnd.randint(1, 6)):
        chunk = []
        for topic in topics:
            n = rnd.randint(0, 12)
            timestamps = [rnd.choice((-1, *range(0, 15))) for _ in range(n)]  # -1: the stamp drops it
            chunk.append((topic, [(f"{topic}{rnd.random():.9f}", ts) for ts in timestamps]))
        chunks.append(chunk)
    reference, runtime = _group(idle=-1, partitions=topics), _group(idle=-1, partitions=topics)
    want: list[str] = []
    got: list[str] = []
    for chunk in chunks:
        for topic, records in chunk:
            reference.add_records(topic, 0, records)
            runtime.add_records(topic, 0, records)
        # a pass may stop early (here: never, idle -1) -- take a random number of records one by one first
        for _ in range(rnd.randint(0, 3)):
            nxt = reference.next_record()
            nxt2 = runtime.next_record()
            if nxt is None:
                assert nxt2 is None
                break
            want.append(nxt[1].name)
            got.append(nxt2[1].name)
        while (nxt := reference.next_record()) is not None:
            want.append(nxt[1].name)
        _drain_as_the_runtime_does(runtime, got)
    assert got == want
