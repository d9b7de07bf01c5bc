"""Cooperative rebalancing (KIP-429) and warm-ups (KIP-441) end to end: a third instance joins a running
pair while input flows; the tasks that stay must not pause, the state must be exact afterwards, and a
joining instance takes a stateful task only once its warm-up copy has caught up.

The pause of a task is the longest gap between two of its outputs as a reader sees them, with input
arriving for every task every 20 ms (see :mod:`tests.edge.runtime.join_load`).
"""

from __future__ import annotations

import time

import pytest

from tests.edge.runtime.harness import wait_assignment
from tests.edge.runtime.join_load import JoinLoad, split_pauses

pytestmark = [pytest.mark.broker, pytest.mark.slow, pytest.mark.timeout(240)]

PARTITIONS = 6


def test_a_joining_instance_pauses_only_the_tasks_that_move(kafka_broker, make_topic, unique_name, spawn):
    src, out = make_topic("in", PARTITIONS), make_topic("out", PARTITIONS)
    app = unique_name("app")
    a = spawn(app, src, out, name="a", max_warmup_replicas=0)
    b = spawn(app, src, out, name="b", max_warmup_replicas=0)
    before = wait_assignment([a, b], PARTITIONS)
    with JoinLoad(kafka_broker, src, out, unique_name("reader"), PARTITIONS) as load:
        load.run_for(3.0)
        joined_at = load.now()
        wall = time.time()
        c = spawn(app, src, out, name="c", max_warmup_replicas=0)
        after = load.run_until(lambda: wait_assignment([a, b, c], PARTITIONS, timeout=0.5), timeout=90)
        load.run_for(3.0)
        load.stop_and_drain()
        pauses = load.pauses(since=joined_at)
        stayed, _moved = split_pauses(pauses, before, after)
        assert after[c.server], f"the third instance got no task: {after}"
        assert stayed, f"every task moved: {before} -> {after}"
        # the tasks that stay keep running: no gap beyond a commit's (eager: every task stops for
        # the whole rebalance, seconds)
        assert max(stayed.values()) < 1.0, (load.worst_gaps(joined_at), load.max_latency(wall), before, after)
        # exact counts: nothing lost nor counted twice through the hand-over
        assert load.reader.latest() == load.expected(), "counts differ after the join"
